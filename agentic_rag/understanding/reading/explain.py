"""Explanations: "why is Al's soul in a suit of armour?", "how are Eren and Zeke related exactly?", "how did denji
actually turn into chainsaw man?".

An explanation is read by its cue words (``cues.EXPLAIN``: why, how come, how a thing came to be, what a thing
actually is) over the plan the other passes made. Two names keep their relation (the answer states it, and the
entity it goes through), and a third person named beside them is related to the first too ("why does luffy call
ace and sabo his brothers"); "how is X related to Y" asks the relation alone unless a word insists ("exactly",
"even"), and is answered in the one turn a relation takes. One name keeps what the words outside the explanation
ask of it ("opm season 2 studio?? why does it look so different"); what the explanation's own words say ("in a
suit of armour", "fight") is the why, not a relation asked, so otherwise the plan is the name itself. Either way
``Analysis.explain`` carries the asking words: the answer quotes the sentences of the records' descriptions
nearest to them in meaning.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from agentic_rag.protocol import LinkedMention
from agentic_rag.protocol.reading import Analysis
from agentic_rag.protocol.vocabulary import EntityType
from agentic_rag.understanding import cues as C
from agentic_rag.understanding.reading.coerce import _pick_type
from agentic_rag.understanding.reading.focus import _Question
from agentic_rag.understanding.reading.names import _add, _readings
from agentic_rag.understanding.text import tokenize

MAX_RELATED = 3  # more people a relation explained relates the first name to ("ace and sabo")
_CLAUSE_END = re.compile(r"[.!?;\n]")
_PEOPLE: tuple[EntityType, ...] = ("character", "person")
_ASKED = ("hops", "attr", "filter")  # what a plan asks beyond the name itself
# "how is X related to Y" asks a state, the relation; "how did X end up as Y's vessel" an event, which is explained
_HOW_RELATED = re.compile(r"how (?:is|are|was|were)\b", re.IGNORECASE)
_PERSONAL = re.compile(r"\b(?:he|she|him|her|his|hers|himself|herself)\b", re.IGNORECASE)


def _explained(q: _Question, a: Analysis, plan: Callable[[str], Analysis]) -> Analysis:
    """``a`` as an explanation, when the question's words ask for one; ``plan`` reads a text with the question's
    names (the question with the explanation's words left out)."""
    cue = C.EXPLAIN.search(q.text)
    if cue is None or a.filter is not None or not q.mentions:
        return a
    words = {t.key for t in tokenize(q.whole)}  # "how is X Y's brother?? they're not even related": the whole message
    if a.intent == "relation" and _HOW_RELATED.match(cue.group()) and not words & C.INSISTED and (
            _between_people(a)) and _relation_said(q.text[cue.start():]):
        # "how is X related to Y" asks the relation, which the answer states with its detail; between two works
        # ("how does Death & Rebirth relate to The End of Evangelion") the relation alone says little: their
        # synopses say how, and are quoted
        return a
    a.explain = _asking(q, cue.start(), joined=a.intent == "compare")
    if a.intent in ("relation", "compare"):
        _more_related(q, a)
        return a
    if a.more or len(a.mentions) > 1:
        return a
    outside = plan(_without(q, cue.start()))
    if any(getattr(outside, x) for x in _ASKED) or outside.intent in ("relation", "compare"):
        return a  # "opm season 2 studio?? why does it look so different": the studio is asked, and the why
    anchor = _subject(q, a)
    if anchor is None:
        return a
    said = a.types.get(a.mentions[0], ())[:1] if a.mentions and a.mentions[0] in a.fixed else ()
    scene = _scene(q, anchor)
    if ("character" in _readings(anchor) and scene is not None) or (_PERSONAL.search(q.whole) and any(
            c.entity.entity_type == "character" for c in anchor.candidates)):
        # "In W, why is Boruto treated as a fugitive": the character, in that work; "what made Frieren set out
        # ... her motivation": a work is never "she"
        said = ("character",)
    one = Analysis(intent="lookup", mentions=[], explain=a.explain, exclude=a.exclude)
    _add(one, q.tokens, anchor, said[0] if said else None, fixed=bool(said))
    if scene is not None:  # the work it is set in is quoted too: its synopsis tells what happens there
        _add(one, q.tokens, scene, _pick_type(scene, ("manga", "anime", "franchise"), None), fixed=True)
        one.together = True
    return one


# "In W, ...", "W: ...": a work said first and set apart, the scene of what is asked
_SCENE_AFTER = re.compile(r"\b(?:in|during|throughout)\s+(?:the\s+)?$", re.IGNORECASE)
_SCENE_END = re.compile(r"^\s*(?:[,:\u2014-]|\s-\s)")


def _scene(q: _Question, anchor: LinkedMention) -> LinkedMention | None:
    """The work a question sets its explanation in: named before ``anchor`` and set apart from the rest by a comma
    or a colon ("In Boruto: Two Blue Vortex, why is Boruto ..."), a different entity from it."""
    before = [m for m in q.mentions if m.end <= anchor.start]
    # (the work a character is said to be in is set aside as a setting: it is among the linked names only)
    after = next((m for m in q.linked if m.start >= anchor.end and _SCENE_AFTER.search(q.whole[:m.start])), None)
    if not before and after is not None and _readings(after) & {"anime", "manga", "franchise"} and \
            not _readings(after) & set(_PEOPLE) and not any(c.entity.id in {x.entity.id for x in anchor.candidates}
                                                            for c in after.candidates):
        return after  # "why is goku a little kid again in dragon ball gt": the work it happens in, said after
    if not before:
        return None
    m = before[-1]
    ids = {c.entity.id for c in anchor.candidates}
    if not _readings(m) & {"anime", "manga", "franchise"} or _readings(m) & set(_PEOPLE) or any(
            c.entity.id in ids for c in m.candidates):
        return None
    return m if _SCENE_END.match(q.whole[m.end:anchor.start]) else None


# what ends the clause a "how is X ..." asks in: a condition or a contrast after it ("how was reiner the armored titan
# if he trained with eren the whole time"), whose own relation words are not what is asked
_CONDITION = re.compile(r"[,;?!.]|\b(?:if|when|while|since|because|though|although|even though|yet|but)\b",
                        re.IGNORECASE)
_RELATION_WORDS = C.RELATED | C.FAMILY | C.MENTOR | C.STUDENTS | C.RIVAL | C.ENEMY | C.ALLY | C.TEAMMATE


def _relation_said(asked: str) -> bool:
    """Whether "how is X ..." says a relation in its own clause ("how is choso yuji's brother", "how are X and Y
    related"), not only after it: then it asks the relation."""
    end = _CONDITION.search(asked, 4)
    return bool({t.key for t in tokenize(asked[:end.start() if end else len(asked)])} & _RELATION_WORDS)


_OWNER_SAID = re.compile(r"\b(?:his|her|their)\s+$", re.IGNORECASE)


def _between_people(a: Analysis) -> bool:
    """Whether a relation's names are read as people (a character, a person), not works."""
    return any(a.types.get(m, ("anime",))[0] in _PEOPLE for m in a.mentions)


def _asking(q: _Question, at: int, *, joined: bool = False) -> str:
    """The asking sentence that holds the cue, as typed: what the quoted sentences are chosen by; ``joined``: after
    the asking sentences before it (a comparison: "What's actually different about X compared to Y? Why would I
    watch it instead?": the why is of the difference)."""
    lo, hi = next(((lo, hi) for lo, hi in q.asked if lo <= at < hi), (0, len(q.whole)))
    if joined:
        lo = min([a for a, b in q.asked if b <= lo and a < lo] + [lo])
    return " ".join(q.whole[lo:hi].split()) or " ".join(q.whole.split())


def _without(q: _Question, at: int) -> str:
    """The question less the explanation's own words (from its cue to the end of its clause), its names kept."""
    end = _CLAUSE_END.search(q.whole, at)
    hi = end.start() if end is not None else len(q.whole)
    kept = [c if any(m.start <= i < m.end for m in q.linked) else " " for i, c in enumerate(q.whole[at:hi], at)]
    return q.whole[:at] + "".join(kept) + q.whole[hi:]


def _subject(q: _Question, a: Analysis) -> LinkedMention | None:
    """The one entity an explanation is about: the name the plan read, unless another name the question says is
    one of its readings ("how did denji turn into chainsaw man": Chainsaw Man is Denji, not the manga)."""
    named = [m for m in q.mentions if m.text in a.mentions or (m.candidates and m.candidates[0].name in a.mentions)]
    if not named:
        return None
    if _readings(named[0]) & {"anime", "manga", "franchise"} and _OWNER_SAID.search(q.whole[:named[0].start]) and (
            owner := next((m for m in reversed(q.mentions) if m.end <= named[0].start
                           and "character" in _readings(m)), None)) is not None:
        return owner  # "why did ryuk drop his death note": the notebook is his, the why is Ryuk's
    others = [m for m in q.mentions if m not in named and len({c.entity.id for c in m.candidates}) == 1]
    for m in others:
        if any(c.entity.id == m.candidates[0].entity.id for c in named[0].candidates):
            return m  # the plan's name is another name of this one
    return named[0]


def _more_related(q: _Question, a: Analysis) -> None:
    """A third person named beside two related ones is related to the first too ("ace and sabo")."""
    people = [m for m in q.mentions if _readings(m) & set(_PEOPLE)]
    if a.intent != "relation" or len(people) < 3 or not a.mentions or people[0].text != a.mentions[0]:
        return
    for m in people[2:2 + MAX_RELATED]:
        b = Analysis(intent="relation", mentions=[], explain=a.explain)
        _add(b, q.tokens, people[0], _pick_type(people[0], _PEOPLE, None), fixed=True)
        _add(b, q.tokens, m, _pick_type(m, _PEOPLE, None), fixed=True)
        a.more.append(b)
