"""The question as the passes read it: the sentences that ask, asides left out, the names and the words around them."""

from __future__ import annotations

from dataclasses import dataclass, field

from agentic_rag.protocol import EntityLinks, LinkedMention
from agentic_rag.protocol.vocabulary import EntityType
from agentic_rag.understanding.reading.asides import _UNASKED, _WHO_IS_HE, _owned, _settings
from agentic_rag.understanding.reading.names import _by_years, _distinct, _readings, _told_apart
from agentic_rag.understanding.reading.words import _asked_words, _rest, _Words
from agentic_rag.understanding.text import Token, asking, focus, questioning, referent, tokenize


@dataclass(slots=True)
class _Question:
    """One question (or one part of it) as every pass reads it."""

    whole: str  # as asked
    text: str  # the asking sentences, with asides and words that ask nothing blanked (offsets kept)
    links: EntityLinks | None
    linked: list[LinkedMention]  # every name linked in it
    asked: list[tuple[int, int]]  # the sentences that ask
    dropped: list[tuple[int, int]]  # the asides left out
    tokens: list[Token]
    mentions: list[LinkedMention]  # the names it is about
    w: _Words  # the words no name covers
    kinds: list[set[EntityType]]  # each name's best readings
    # a pass reached a name no cue word says anything about, where what is asked is read by meaning (links.asks)
    by_meaning: bool = False
    told: set[str] = field(default_factory=set)  # names whose one reading the message's other names pick


def _focus(question: str, links: EntityLinks | None) -> _Question:
    """The names a question is about and the words that ask about them."""
    linked = list(links.mentions) if links else []
    whole = question
    # a long message: read the sentences that ask (and the one naming what they ask about), not the story
    asked = asking(question)
    question = focus(question, [(m.start, m.end) for m in linked])
    present = [m for m in linked if question[m.start:m.end].strip()]
    distinct = _distinct(present)
    # a name said again ("X - who's the new character in X") is the name once: its words ask nothing ("film"); a
    # work said again is "it" there, as it would be typed
    repeats = [m for m in present if m not in distinct]
    kept, dropped = _settings(question, distinct)
    if kept and not any(a <= m.start < b for a, b in asked for m in kept):
        # the asking sentences name nothing: "he", "that series" say which of the names before they mean
        refers: set[str] = {"person": {"person", "character"}, "work": {"anime", "manga", "franchise"}}.get(
            referent(" ".join(question[a:b] for a, b in asked)) or "", set())
        kept = [m for m in kept if _readings(m) & refers] or kept
    for lo, hi in dropped:
        question = question[:lo] + " " * (hi - lo) + question[hi:]
    for m in repeats:
        said = "it" if _readings(m) & {"anime", "manga", "franchise"} and m.end - m.start >= 2 else ""
        question = question[:m.start] + said.ljust(m.end - m.start) + question[m.end:]
    # "the manga one rather than the anime", "before it ended": words that ask for nothing
    question = _UNASKED.sub(lambda x: " " * len(x.group()), question)
    tokens = tokenize(question)
    mentions, told = _told_apart(_owned(question, _by_years(tokens, kept)), linked)
    if len(mentions) >= 2 and (pronoun := _WHO_IS_HE.search(question)) is not None:
        # "Frieren keeps remembering this Himmel dude, who is he again": the one he stands for, the nearest before
        said_before = [m for m in mentions if m.end <= pronoun.start() and _readings(m) & {"character", "person"}]
        mentions = said_before[-1:] or mentions
    w = _rest(question, _asked_words(tokens, questioning(whole), mentions), mentions)
    kinds = [_readings(m) for m in mentions]
    return _Question(whole, question, links, linked, asked, dropped, tokens, mentions, w, kinds, told=told)
