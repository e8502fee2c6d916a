"""Parts: a message split into clauses that each ask something, read as one chain or as two readings."""

from __future__ import annotations

import re
from collections.abc import Callable

from agentic_rag.protocol import EntityLinks
from agentic_rag.protocol.reading import Analysis, Hop
from agentic_rag.protocol.vocabulary import EntityType, hop_range
from agentic_rag.understanding.reading.ask import _ask
from agentic_rag.understanding.reading.catalog import _period
from agentic_rag.understanding.reading.coerce import _coerce, _fits_type
from agentic_rag.understanding.reading.words import _rest
from agentic_rag.understanding.text import (
    focus,
    tokenize,
)

MAX_PARTS = 4  # clauses of one message read as questions of their own (the first, and three more at most)


def _read_parts(question: str, links: EntityLinks | None,
                _read: Callable[[str, EntityLinks | None], Analysis]) -> Analysis:
    """A message in parts read as a chain or as several readings; ``_read`` reads one part. A third part and after
    that names nothing of its own asks about what the first part is about ("how many episodes does X have, which
    studio made it, and who composed its music?"), and is one more reading."""
    whole = _read(question, links)
    linked = list(links.mentions) if links else []
    text = focus(question, [(m.start, m.end) for m in linked])
    parts = _clauses(text)
    if len(parts) < 2 or whole.filter is not None or whole.intent in ("relation", "compare"):
        return whole
    first, second = parts[0], parts[1]
    own = [m for m in linked if first[0] <= m.start < first[1]]
    if not own or any(second[0] <= m.start < second[1] for m in linked):
        return whole  # each part names its own entities, or the first names none: read as one
    a1 = _read(_only(text, [first]), EntityLinks(mentions=own))
    # the second part is about what the first is about ("... and who illustrates its source?")
    anchor = next((m for m in own if a1.mentions[:1] == [m.text]), own[-1])
    a = _two_parts(text, whole, a1, _read(_only(text, [second, (anchor.start, anchor.end)]),
                                          EntityLinks(mentions=[anchor])), second)
    for later in parts[2:MAX_PARTS]:
        if any(later[0] <= m.start < later[1] for m in linked):
            break  # a part that names its own entities is read with the whole
        more = _read(_only(text, [later, (anchor.start, anchor.end)]), EntityLinks(mentions=[anchor]))
        read = {x.attr for x in (a, *a.more)} | {v for x in (a, *a.more) for v in x.also}
        asked = [h for x in (a, *a.more) for h in x.hops]
        if more.mentions and more.filter is None and (
                (more.hops and not all(any(_covers(h, m) for h in asked) for m in more.hops))
                or (not more.hops and more.attr and more.attr not in read)):
            a.more.append(more)  # (a part the readings before already ask, "... who did the art", is no more)
    return a


def _covers(h: Hop, m: Hop) -> bool:
    """Whether following ``h`` finds what ``m`` asks: the same edges, and every credit ``m`` keeps (none: all)."""
    return h.edges == m.edges and h.node_types == m.node_types and (not h.roles or set(m.roles) <= set(h.roles)) \
        and bool(m.roles or not h.roles)


def _two_parts(text: str, whole: Analysis, a1: Analysis, a2: Analysis, second: tuple[int, int]) -> Analysis:
    """The first two parts: one chain, two readings, or the whole read as one."""
    if not (a1.hops or a1.attr) or a1.filter:
        return whole
    if a1.mentions[:1] != whole.mentions[:1]:
        return whole  # the first part alone is about another name than the question: read it whole
    reached = hop_range(a1.hops[-1].edges) if a1.hops and a1.attr is None else None
    later = text[second[0]:second[1]].lower()
    # a work the first part reached is "it" too ("what's the sequel of X and who directed it"); a person or a
    # studio is not ("who directed X, and which studio made it": it is X)
    # ("what should he watch next, and what comes after that": "that" alone is the work just reached)
    pronoun = {"anime": "|it|its|that", "manga": "|it|its|that", "person": "|he|him|his|she|her",
               "studio": "|its|their",
               "character": "|he|him|his|she|her"}.get(
        reached or "", "")
    back = re.search(rf"\b(?:(?:that|this|same|its|their|those|these) (?:{_BACK[reached]})s?|those|these|them|they"
                     rf"{pronoun})\b", later) if reached is not None else None
    if reached is not None and back is not None:
        # "... and when was that studio founded", "... and what studios animated those": the second part
        # starts where the first ended
        later = later[:back.start()] + " " * (back.end() - back.start()) + later[back.end():]
        tokens = tokenize(later)
        ask = _ask(_rest(later, tokens, []), {reached})
        # a bare "that" goes on along a chain ("... and what comes after that"); "how many episodes would that
        # come to" asks of the whole question, not of the work the first part reached
        if ask is not None and _fits_type(reached, ask.domain) and (ask.hops or back.group() != "that"):
            a1.hops += _coerce(reached, ask)
            a1.attr, a1.also = ask.attr, ask.also
            if a1.attr in (None, "year") and hop_range(a1.hops[-1].edges) in ("anime", "manga") and (
                    period := _period(later, set())) is not None:
                a1.period, a1.attr = period, None  # "... which of its anime came out between 2003 and 2011"
            return a1
    if not (a2.hops or a2.attr) or a2.filter or not a2.mentions or not (a1.hops or a2.hops):
        return whole  # (two attributes of one entity: the whole reading reads both off one row)
    if a2.attr == "episode_count" and not a2.hops and a1.hops and a1.hops[-1].kind == "k_hop" and \
            a1.hops[-1].include_start:
        return whole  # "all three seasons of X ..., how many episodes would that come to": one sum
    a1.more = [a2]
    return a1


# words that point back at what the first part of a question found ("that studio", "the same director")
_BACK: dict[EntityType, str] = {"studio": "studio|company|animation studio", "person": "director|composer|person|"
                                "guy|author|mangaka|artist|writer|creator|man|woman", "anime": "show|series|anime|"
                                "season|movie|film", "manga": "manga|comic", "character": "character|guy|girl"}


_CLAUSE = re.compile(r"(?:,\s*(?:and|but|also)\s+|[,:]\s*(?=(?:who|whom|what|which|when|where|how)\b)|;\s*|\?\s+|"
                     r"\s+and\s+(?=(?:who|whom|what|which|when|where|how|is|are|was|were|did|does|do)\b))",
                     re.IGNORECASE)


_POINTS_BACK = re.compile(r"\b(?:he|she|him|his|her|it|its|they|them|their|those|these|that)\b")


def _clauses(text: str) -> list[tuple[int, int]]:
    """The parts of a question that each ask something, split at ", and", ";" or "?" before a question word."""
    out, start = [], 0
    for m in _CLAUSE.finditer(text):
        rest = text[m.end():].lstrip().lower()
        if m.group().strip() in (",", ":") and not _POINTS_BACK.search(rest):
            continue  # "X's director, what else has he directed" is two parts; "..., how many episodes" is one
        # (a question word may follow its preposition: "..., and in which film is he the lead")
        if re.match(r"(?:(?:in|on|for|from|by|with|at)\s+(?=wh))?(?:who|whom|whose|what|which|when|where|how|is|are|"
                    r"was|were|did|does|do|can|could)\b", rest):
            out.append((start, m.start()))
            start = m.end()
    out.append((start, len(text)))
    return [(a, b) for a, b in out if text[a:b].strip()]


def _only(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with everything outside ``spans`` blanked (offsets kept)."""
    out = list(re.sub(r"\S", " ", text))
    for a, b in spans:
        out[a:b] = text[a:b]
    return "".join(out)
