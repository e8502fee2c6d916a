"""Clarify: ask instead of guessing when a bare name has several strong readings (the run asks, a resume answers).

A reading is strong when entity linking found an entity whose name or alias is the mention. The
question's own wording narrows the types first ("Which anime is Luffy in?" wants a character,
"the sequel of Naruto" an anime), so only a name with no such context, such as "Tell me about
Naruto" (an anime, a manga and a character), gets a clarification. This is code, not a model
decision: it is cheap, deterministic, and the same whichever planner runs.

Only a question whose answer depends on the reading is asked: "is death note finished?" names an anime and a
manga that are both finished, so the loop reads the asked value off each reading's record
(:func:`readings_to_weigh`, :func:`same_answer`) and answers. Readings of one type are different things (two
characters named "Ed") and are asked about.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from agentic_rag.protocol import (
    Clarification,
    ClarificationChoice,
    EntityLinks,
    EntityRef,
    LinkCandidate,
    LinkedMention,
)
from agentic_rag.protocol.limits import max_len
from agentic_rag.protocol.reading import Analysis
from agentic_rag.protocol.vocabulary import hop_range
from agentic_rag.understanding.linker import SEASON_SUFFIX
from agentic_rag.understanding.reading import open_types
from agentic_rag.understanding.text import link_key
from agentic_rag.understanding.unknown import SCOPE_BEFORE

MAX_CHOICES = max_len(Clarification, "choices")
_LABEL = max_len(ClarificationChoice, "label")
_QUESTION = max_len(Clarification, "question")
# what the answer to an asked value is, per record: a status answers "is it finished?" (airing and ongoing alike
# say no), a year "when did it start?"; None: not recorded
_SAME: dict[str, Callable[[Any], object]] = {
    "status": lambda v: None if v is None else v == "finished",
    "year": lambda v: v,
}


def _label(c: LinkCandidate) -> str:
    year = f", {c.year}" if c.year and c.entity.entity_type in ("anime", "manga") else ""
    return f"{c.name} ({c.entity.entity_type}{year})"[:_LABEL]


def clarification(a: Analysis, links: EntityLinks, question: str = "") -> tuple[Clarification, str] | None:
    """A clarification for the first mention with several strong readings the question (as read: ``a``) allows,
    with that mention (the resumed run fetches the chosen entity under it), else None; ``question``: the words
    the mentions' offsets are in."""
    if a.unrecorded:
        return None  # what the catalog records of nothing is not recorded of any reading ("who voices frieren")
    for m in links.mentions:
        if m.text not in a.mentions or (a.among is not None and m.text in a.among.readings):
            continue  # (a listed name's reading is the one that shares works with the other names listed)
        allowed = open_types(a, m.text)
        # as strong as the best reading: exact names and aliases, or (a typo in the name) equally near misses
        best = "alias" if m.candidates and m.candidates[0].match in ("exact", "alias") else m.candidates[0].match
        strong = [c for c in m.candidates if (c.match in ("exact", "alias") if best == "alias" else c.match == best)
                  and c.entity.entity_type in allowed]
        if best == "partial":  # one word of a longer name ("bebop") means the plainest name holding it, not
            # a film or season titled after it ("Cowboy Bebop", not "Cowboy Bebop: The Movie")
            fewest = min((len(c.name.split()) for c in strong), default=0)
            strong = [c for c in strong if len(c.name.split()) == fewest]
        # a season or sequel titled after a work is not another reading of the work's name: "spy family" is
        # "Spy x Family", not "Spy x Family Season 2" (whose native title links the same)
        strong = [c for c in strong if not (c.entity.entity_type in ("anime", "manga") and any(
            o is not c and o.entity.entity_type == c.entity.entity_type and c.name.startswith(f"{o.name} ")
            and SEASON_SUFFIX.fullmatch(f" {link_key(c.name[len(o.name):])}") for o in strong))]
        # a franchise named after its first work is not another reading of the name ("Cowboy Bebop")
        works = {c.name for c in strong if c.entity.entity_type != "franchise"}
        strong = [c for c in strong if c.entity.entity_type != "franchise" or c.name not in works]
        if len({c.entity.id for c in strong}) < 2 or _context_only(a, links, m, strong) or \
                _where_asked(a, question, m, strong):
            continue
        choices = [ClarificationChoice(label=_label(c), entity=c.entity) for c in strong[:MAX_CHOICES]]
        return Clarification(question=f"Which {m.text!r} do you mean?"[:_QUESTION], choices=choices), m.text
    return None



def _context_only(a: Analysis, links: EntityLinks, m: LinkedMention, strong: list[LinkCandidate]) -> bool:
    """Whether ``m`` is only where the question's subject is: one title's anime, manga and franchise, in an
    explanation ("what is Light Yagami trying to do with the Death Note?", "how does the notebook in death note
    kill"); what is explained is the same in either form of the story."""
    if not a.explain or a.hops or a.attr is not None:
        return False  # (a relation or a value asked of the title: "the director of X" is the anime's)
    if {c.entity.entity_type for c in strong} - {"anime", "manga", "franchise"} or len({c.name for c in strong}) > 1:
        return False
    # the story asked about is told the same in each form ("how does the notebook in death note kill"): the answer
    # quotes every reading's record; another work named beside it is a different thing, asked apart
    return not any(x is not m and x.candidates and x.candidates[0].entity.entity_type in ("anime", "manga")
                   for x in links.mentions)


_ASKS_WHO = re.compile(r"^\W*(?:\w+\s+(?:question|q)\W+|(?:ok(?:ay)?|so|and|also|new question|"
                       r"(?:completely|totally) (?:different|unrelated)(?: thing| question)?|unrelated)\W+)*"
                       r"(?:who|whom|list|name)\b", re.IGNORECASE)


def _where_asked(a: Analysis, question: str, m: LinkedMention, strong: list[LinkCandidate]) -> bool:
    """Whether ``m`` is only the story a question about its people is set in ("who leads the phantom troupe in
    hunter x hunter?", "list the hashira in demon slayer"), or whose people are asked ("who's the main character of
    mob psycho 100?"): the works of one franchise tell of the same people, so which form or which adaptation is
    meant changes nothing asked. A relation or a value asked of the title ("who directed X") is the title's own."""
    cast = bool(a.hops) and hop_range(a.hops[-1].edges) == "character"
    if not question or a.attr is not None or (a.hops and not cast):
        return False
    # its people asked of it ("who's the main character of mob psycho 100"), or a who-question set in it
    if not cast and (not _ASKS_WHO.match(question) or not SCOPE_BEFORE.search(question[:m.start])):
        return False  # (its characters are asked: "who leads the phantom troupe" reads as who leads the cast)
    if any(c.entity.entity_type not in ("anime", "manga", "franchise") for c in strong):
        return False
    shared = set.intersection(*(set(c.franchises) for c in strong)) if strong else set()
    return bool(shared)


def readings_to_weigh(a: Analysis, asked: Clarification) -> list[EntityRef]:
    """The readings of a clarification whose answers may make it needless: a title shared by works of different
    types (an anime and its manga) when the question asks a value each of them has (is it finished, when did it
    start). Two works of one type ("Hunter x Hunter" (1999) and (2011)), or a character beside the works, are
    different things: asked about, whatever their values."""
    refs = [c.entity for c in asked.choices]
    types = [r.entity_type for r in refs]
    if a.attr not in _SAME or set(types) - {"anime", "manga"} or len(set(types)) < len(types):
        return []
    return refs


def same_answer(a: Analysis, rows: list[dict[str, Any]], readings: int) -> bool:
    """Whether every reading's record gives the question the same answer (both finished, both from 2003), so the
    answer does not depend on which is meant and nothing need be asked; a reading whose record lacks the value
    asked, or was not found, is asked about."""
    if a.attr not in _SAME or len(rows) != readings:
        return False
    said = {_SAME[a.attr](row.get(a.attr)) for row in rows}
    return len(said) == 1 and None not in said
