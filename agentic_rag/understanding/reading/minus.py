"""Set differences over what retrieval returns: "which demon slayer anime is zenitsu missing from", "which of the jjk
season 1 main characters don't show up in the jjk 0 movie".

No list is typed (that is :mod:`.among`): one name's set is asked for, less another name's. Two names and a negated
membership ("not in", "missing from", "doesn't show up in", "never appears in") read as two chains whose results
the answer subtracts (``Analysis.minus``):

- a character and a franchise or work, works asked ("which X anime is C missing from"): the franchise's anime (or the
  work's franchise's), less the anime the character appears in;
- two works, characters asked ("which of A's main characters aren't in B"): A's characters (its main cast when the
  words say main), less B's.
"""

from __future__ import annotations

import re

from agentic_rag.protocol import EntityLinks, LinkedMention
from agentic_rag.protocol.reading import Analysis
from agentic_rag.protocol.vocabulary import EntityType
from agentic_rag.understanding import cues as C
from agentic_rag.understanding.reading.hops import APPEARS, CAST, INCLUDES, MAIN_CAST, PART_OF
from agentic_rag.understanding.reading.names import _add, _readings
from agentic_rag.understanding.text import Token, tokenize

# a membership denied: the one named before it is not among the other's
_MISSING = re.compile(r"(?:n['\u2019]?t|\bnot|\bnever)\s+(?:even\s+)?"
                      r"(?:(?:show|shows|turn|turns) up|appears?|features?|make it)?\s*(?:at all\s+)?(?:in|from)\b|"
                      r"\b(?:missing|absent|left out)\s+(?:from|in)\b", re.IGNORECASE)
_WHICH = re.compile(r"\b(?:which|what|who)\b", re.IGNORECASE)
_WORKS_ASKED = re.compile(r"\b(?:anime|animes|shows?|series|seasons?|arcs?|movies?|films?|entries|parts?)\b",
                          re.IGNORECASE)
_CHARACTERS_ASKED = re.compile(r"\b(?:characters?|chars|cast|members?|protagonists?|mcs?)\b", re.IGNORECASE)
_WORKS: frozenset[EntityType] = frozenset(("anime", "manga", "franchise"))


def read_minus(question: str, links: EntityLinks | None) -> Analysis | None:
    """The set difference ``question`` asks for, or None when it asks for none."""
    if links is None or len(links.mentions) != 2 or not _WHICH.search(question):
        return None
    missing = _MISSING.search(question)
    if missing is None:
        return None
    first, second = sorted(links.mentions, key=lambda m: m.start)
    tokens = tokenize(question)
    people = [m for m in (first, second) if "character" in _readings(m)]
    works = [m for m in (first, second) if _readings(m) & _WORKS]
    if _WORKS_ASKED.search(question[:missing.start()]) and len(people) == 1 and \
            (work := next((m for m in works if m is not people[0]), None)) is not None:
        return _works_without(tokens, work, people[0])
    if _CHARACTERS_ASKED.search(question[:missing.start()]) and all(_readings(m) & _WORKS for m in (first, second)) \
            and second.start >= missing.end():
        return _cast_without(tokens, first, second, main=bool({t.key for t in tokens} & C.MAIN))
    return None


def _works_without(tokens: list[Token], work: LinkedMention, person: LinkedMention) -> Analysis:
    """The franchise's anime less the character's ("which demon slayer anime is zenitsu missing from")."""
    franchise = any(c.entity.entity_type == "franchise" for c in work.candidates)
    a = Analysis(intent="chain", mentions=[], hops=[INCLUDES] if franchise else [PART_OF, INCLUDES], minus=True)
    _add(a, tokens, work, "franchise" if franchise else None, fixed=True)
    b = Analysis(intent="chain", mentions=[], hops=[APPEARS])
    _add(b, tokens, person, "character", fixed=True)
    a.more = [b]
    return a


def _cast_without(tokens: list[Token], kept: LinkedMention, other: LinkedMention, *, main: bool) -> Analysis:
    """One work's characters less another's ("which of A's main characters don't show up in B")."""
    a = Analysis(intent="chain", mentions=[], hops=[MAIN_CAST if main else CAST], minus=True)
    _add(a, tokens, kept, "anime", fixed=True)
    b = Analysis(intent="chain", mentions=[], hops=[CAST])
    _add(b, tokens, other, "anime", fixed=True)
    a.more = [b]
    return a
