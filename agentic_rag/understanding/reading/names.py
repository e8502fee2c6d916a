"""The names a question is about: their readings, a type word or a year next to them, repeats, one name told
apart by two years, and adding a name to a plan."""

from __future__ import annotations

import itertools
import re

from agentic_rag.protocol import LinkCandidate, LinkedMention
from agentic_rag.protocol.reading import Analysis, Hop
from agentic_rag.protocol.vocabulary import EntityType
from agentic_rag.understanding import cues as C
from agentic_rag.understanding.text import (
    Token,
)

_YEAR = re.compile(r"^(?:19|20)\d\d$")


YEARS_AFTER = 10  # words after a name two years may follow in, to tell two of its works apart


def _qualifier(tokens: list[Token], m: LinkedMention) -> tuple[EntityType | None, int]:
    """The type a word right next to the mention names ("the X manga", "anime X", "X (the studio)"), and
    where that word is (-1: none)."""
    after = [t for t in tokens if t.start >= m.end][:2]
    before = [t for t in tokens if t.end <= m.start][-2:][::-1]
    near = [t for t in after if t.key not in C.ARTICLES][:1] + [t for t in before if t.key not in C.ARTICLES][:1]
    for t in near:
        if t.key in C.TYPE_WORD and any(c.entity.entity_type == C.TYPE_WORD[t.key] for c in m.candidates):
            return C.TYPE_WORD[t.key], t.start
    # ... or a verb right before it that only one reading takes ("where can I read X", "should I watch X")
    for t in [t for t in before if t.key not in C.ARTICLES][:1]:
        if (said := C.VERB_TYPE.get(t.key)) and any(c.entity.entity_type == said for c in m.candidates):
            return said, t.start
    # ... or a word said apart from it: "tite kubo started bleach in which year? the manga I mean"
    keys = [t.key for t in tokens]
    for i, k in enumerate(keys):
        near_mean = ["i", "mean"] in (keys[i + 1:i + 3], keys[max(i - 2, 0):i], keys[max(i - 3, 0):i - 1])
        if k in ("manga", "anime") and any(c.entity.entity_type == k for c in m.candidates) and (
                near_mean or (keys[i + 1:i + 2] in (["one"], ["version"]) and keys[i - 1:i] == ["the"])):
            return C.TYPE_WORD[k], tokens[i].start
    # ... or a later word that points back at it: "I just started X, who are the main people in the show"
    for i, t in enumerate(tokens):
        said = C.TYPE_WORD.get(t.key)
        if t.start > m.end and said in ("anime", "manga") and keys[i - 1:i] in (["the"], ["this"], ["that"]) and \
                keys[i - 2:i - 1] in (["in"], ["of"], ["from"], ["for"]) and keys[i + 1:i + 2] != ["of"] and \
                any(c.entity.entity_type == said for c in m.candidates):
            return said, t.start
    return None, -1


def _type_word(tokens: list[Token], m: LinkedMention) -> tuple[EntityType | None, bool]:
    """The type a qualifying word names, and whether it says movie."""
    said, at = _qualifier(tokens, m)
    return said, any(t.start == at and t.key in C.MOVIE_WORDS for t in tokens)


_FILLER = frozenset(("version", "of", "the", "series", "adaptation", "anime", "remake", "one", "from", "in"))


def _year_near(tokens: list[Token], m: LinkedMention) -> int | None:
    """A year next to the name, over filler words ("the 2011 version of Hunter x Hunter"), that one of its
    readings has."""
    before = [t.key for t in tokens if t.end <= m.start][-4:][::-1]
    after = [t.key for t in tokens if t.start >= m.end][:4]
    near = list(itertools.takewhile(lambda w: not _YEAR.match(w) and w in _FILLER, before))
    near_after = list(itertools.takewhile(lambda w: not _YEAR.match(w) and w in _FILLER, after))
    for w in before[:max(2, len(near) + 1)] + after[:max(2, len(near_after) + 1)]:
        if _YEAR.match(w) and any(c.year == int(w) for c in m.candidates):
            return int(w)
    return None


def _best(m: LinkedMention, entity_type: EntityType, year: int | None, movie: bool) -> LinkCandidate | None:
    cands = [c for c in m.candidates if c.entity.entity_type == entity_type]
    if not cands:
        return None
    # match quality first (the list's order), then the year and format the question names
    return min(cands, key=lambda c: (c.year != year if year else False, movie and c.format != "movie",
                                     cands.index(c)))


def _kin_of(tokens: list[Token], m: LinkedMention) -> str | None:
    """The family word a possessive name is followed by ("naruto's son" -> "son"), singular."""
    before = next((t for t in reversed(tokens) if t.start < m.end), None)
    following = [t for t in tokens if t.start >= m.end][:2]
    if before is None or not following or not before.possessive:
        return None
    # the word right after, or the one after a word that says which ("older brother", "adoptive father")
    for after in following:
        word = _singular(after.key)
        if word in C.FAMILY and word not in ("family", "married", "related"):
            return word
    return None


# the family words people say for the ones a relation's detail uses
_KIN_SAID = {"dad": "father", "mom": "mother", "grandpa": "grandfather", "grandma": "grandmother"}


def _singular(word: str) -> str:
    return word[:-1] if word.endswith("s") and word[:-1] in C.FAMILY else word


# ... and the words a relation's detail uses for those a family word groups ("goku's kids": his sons and daughters)
# (the group word too: a detail may say it, "younger sibling")
_KIN_MEMBERS = {"child": ("child", "son", "daughter"), "children": ("child", "son", "daughter"),
                "kid": ("child", "son", "daughter"), "parent": ("parent", "father", "mother"),
                "sibling": ("sibling", "brother", "sister"), "spouse": ("spouse", "wife", "husband"),
                "grandchild": ("grandchild", "grandson", "granddaughter"),
                "grandparent": ("grandparent", "grandfather", "grandmother")}


def kin_role(word: str) -> tuple[str, ...]:
    """The relation detail's words for a family word ("dad": father; "kids": son, daughter)."""
    return _KIN_MEMBERS.get(word) or (_KIN_SAID.get(word, word),)


def _add(a: Analysis, tokens: list[Token], m: LinkedMention, first: EntityType | None, *, fixed: bool) -> None:
    said, movie = _type_word(tokens, m)
    # the seasons inside a range share its last number's words ("seasons 1-3"): each goes by its own name
    key = m.text if m.text not in a.types or not m.candidates else m.candidates[0].name
    if fixed or said:
        a.fixed.add(key)
    year = _year_near(tokens, m)
    dated = {c.year for c in m.candidates if c.entity.entity_type == (first or "anime")}
    if year is None and len(dated) == 1 and len(m.candidates) == 1:
        year = next(iter(dated))  # a name told apart by a year further on ("..., the 1999 one or the 2011 one")
    order = [first] if first else []
    order += [c.entity.entity_type for c in m.candidates]
    types = tuple(dict.fromkeys(t for t in order if t))
    a.mentions.append(key)
    a.types[key] = types
    if year:
        a.years[key] = year
    a.linked[key] = {t: c for t in types if (c := _best(m, t, year, movie)) is not None}


def _same_start(a: Analysis, hops: list[Hop]) -> Analysis:
    """Another reading from the same names as ``a``, along other hops."""
    return Analysis(intent="chain", mentions=list(a.mentions), types=dict(a.types), years=dict(a.years),
                    linked={k: dict(v) for k, v in a.linked.items()}, fixed=set(a.fixed), hops=hops)


def _distinct(mentions: list[LinkedMention]) -> list[LinkedMention]:
    """The mentions less repeats of one name ("Khara ... the studio Khara"): the first of each is kept."""
    seen: set[tuple[str, ...]] = set()
    out: list[LinkedMention] = []
    for m in mentions:
        key = tuple(c.entity.id for c in m.candidates)
        if key not in seen:
            seen.add(key)
            out.append(m)
    return out


def _readings(m: LinkedMention) -> set[EntityType]:
    """The types of the mention's best matches (an exact title outranks a character's alias)."""
    rank = m.candidates[0].match if m.candidates else None
    return {c.entity.entity_type for c in m.candidates if c.match == rank}


def _by_years(tokens: list[Token], mentions: list[LinkedMention]) -> list[LinkedMention]:
    """"hxh 1999 vs 2011": one name, two of its works told apart by year, is two mentions."""
    out: list[LinkedMention] = []
    for i, m in enumerate(mentions):
        # "hxh 1999 vs 2011", "which hxh is longer, the 1999 one or the 2011 one": two years after the name,
        # joined by "or", "vs", "and", before any other name
        stop = mentions[i + 1].start if i + 1 < len(mentions) else None
        after = [t for t in tokens if m.end <= t.start and (stop is None or t.start < stop)][:YEARS_AFTER]
        at = [j for j, t in enumerate(after) if _YEAR.match(t.key)]
        if len(at) == 2 and any(t.key in ("vs", "versus", "or", "and") for t in after[at[0] + 1:at[1]]):
            y1, y2 = int(after[at[0]].key), int(after[at[1]].key)
            first = [c for c in m.candidates if c.year == y1]
            second = [c for c in m.candidates if c.year == y2]
            if first and second:
                t2 = after[at[1]]
                out += [m.model_copy(update={"candidates": first}),
                        LinkedMention(text=t2.raw, start=t2.start, end=t2.end, candidates=second)]
                continue
        out.append(m)
    return out


def _told_apart(mentions: list[LinkedMention], linked: list[LinkedMention]) -> tuple[list[LinkedMention], set[str]]:
    """A name several entities of one type share ("ed": Edward Elric, Edward Wong) read as the one whose franchise
    another name of the message has ("rewatching fmab rn. why does ed have a metal arm"); and the mentions so
    narrowed (no clarification asks which)."""
    out: list[LinkedMention] = []
    told: set[str] = set()
    for m in mentions:
        rank = m.candidates[0].match if m.candidates else None
        strong = [c for c in m.candidates if c.match == rank]
        around = {f for o in linked if o.text != m.text and o.candidates
                  for c in o.candidates if c.match == o.candidates[0].match for f in c.franchises}
        kept = [c for c in strong if around & set(c.franchises)]
        if len({c.entity.id for c in strong}) < 2 or len({c.entity.entity_type for c in strong}) > 1 or len(kept) != 1:
            out.append(m)
            continue
        out.append(m.model_copy(update={"candidates": [*kept, *(c for c in m.candidates if c not in strong)]}))
        told.add(m.text)
    return out, told
