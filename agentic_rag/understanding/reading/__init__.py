"""Reading a question: the linked names, plus what the words around them ask for, become a plan.

No whole-question templates. The names come from :mod:`~agentic_rag.understanding.linker`; what is
asked comes from cue words anywhere in the rest of the question (:mod:`~agentic_rag.understanding.cues`);
hops compose by entity type: a relation that starts from an anime, asked of a character, first
follows the character to the anime it appears in ("the studio of Luffy's show"), and a relation
that starts from a manga, asked of an anime, first follows the anime to its source.

The reader is passes over one question, each a module named for its concern; :func:`_read` says their order:
focus (:mod:`.focus`, :mod:`.asides`, :mod:`.words`, :mod:`.names`), sums of several works (:mod:`.counts`),
pairs (:mod:`.pairs`), conditions on the catalog (:mod:`.catalog`), and what is asked of one name
(:mod:`.anchor`, :mod:`.ask`, :mod:`.relations`, :mod:`.counts`), its hops typed by coercion (:mod:`.coerce`);
an explanation asked is read over that plan (:mod:`.explain`). A message in two parts is read part by part
(:mod:`.parts`); a choice among listed names by a predicate, said or negated, is read before all of them
(:mod:`.among`), and a request for recommendations before the parts (:mod:`.recommend`)."""

from __future__ import annotations

import re

from agentic_rag.protocol import EntityLinks
from agentic_rag.protocol.reading import ANY_TYPE, Analysis, Attr
from agentic_rag.protocol.roles import RoleInput
from agentic_rag.protocol.vocabulary import hop_range
from agentic_rag.understanding import cues as C
from agentic_rag.understanding.reading.among import _among
from agentic_rag.understanding.reading.anchor import _anchored, _lookup
from agentic_rag.understanding.reading.asides import _except
from agentic_rag.understanding.reading.catalog import _catalog, asks_who, beside_words, described_beside
from agentic_rag.understanding.reading.counts import _together
from agentic_rag.understanding.reading.explain import _explained
from agentic_rag.understanding.reading.focus import _focus, _Question
from agentic_rag.understanding.reading.members import members_asked
from agentic_rag.understanding.reading.minus import read_minus
from agentic_rag.understanding.reading.pairs import _forms, _guess, _read_pair
from agentic_rag.understanding.reading.parts import _read_parts
from agentic_rag.understanding.reading.recommend import read_recommendation
from agentic_rag.understanding.text import asking


def read(question: str, links: EntityLinks | None) -> Analysis:
    """The plan of ``question`` given the names linked in it; a question in two parts ("who directed X, and
    which studio made it?") is a plan with one more in ``more``, or one longer chain ("which studio made
    X, and when was that studio founded?").

    ``by_meaning`` says whether any reading it took (a part's too) turned to what is asked by meaning
    (``links.asks``, the MiniLM encoder's nearest exemplars): only a name no cue word says anything about does.
    Read without them, a question that never gets there reads the same with them, so linking embeds only the
    questions that do, and reads those again with what they ask.

    A question that picks among names it lists by a predicate ("which of these is NOT in X: A, B or C?") is read
    whole, first (:mod:`.among`): its list is no set of parts, and its "not" no aside."""
    if (choice := _among(question, links)) is not None:
        return choice
    if (difference := read_minus(question, links)) is not None:
        return difference
    said = links.mentions if links is not None else []
    question, links, excluded = _except(question, links)
    # a studio left out ("made by some studio other than Madhouse"): a condition on recommended works
    studio_out = any(m.candidates[0].entity.entity_type == "studio" and m.candidates[0].entity.id in excluded
                     for m in said if m.candidates)
    reads: list[Analysis] = []

    def one(text: str, part_links: EntityLinks | None) -> Analysis:
        reads.append(_read(text, part_links))
        return reads[-1]

    a = read_recommendation(question, links, one, excluded=bool(excluded), studio_out=studio_out) or \
        _read_parts(question, links, one)
    a.by_meaning = any(r.by_meaning for r in reads)
    # (a reading the encoder's nearest question made counts as the lookup it is without it: that plan is the fallback;
    # read again only for a "who" question, the one kind this reads)
    asks_whom = links is not None and asks_who(question)
    plain = _read(question, links.model_copy(update={"asks": []})) if asks_whom and a.by_meaning and \
        links is not None and not a.more else a
    if (group := members_asked(question, plain, links)) and not a.more:
        # "who are the hashira in demon slayer": the work's characters whose records say the group
        a.members = group
    elif asks_whom and links is not None and described_beside(question, plain, links):
        # "who gave luffy the straw hat": searched without the work it is set in ("... in death note"), whose words
        # every character of that work shares
        a.described, a.description = ("character",), beside_words(question, links)
    for x in (a, *a.more):
        x.exclude |= excluded
    return _unrecorded(question, _what_they_do(question, a))


# what someone does or is about, asked of whom a relation reaches ("what does yor's brother do", "what's his dad's
# deal"): the catalog says it only in their description
_WHAT_DO = re.compile(r"\bwhat\s+(?:does|did|do|is|was)\b[^?.!]*\bdo(?:ing)?\b(?:\s+for\s+(?:a\s+)?(?:living|work))?"
                      r"(?:\s+(?:now|these days|exactly|again))?\s*[?.!]*\s*$|"
                      r"\bwhat(?:['\u2019]?s| is| was)\s+(?:\S+\s+){0,4}?\S+['\u2019]s\s+"
                      r"(?:deal|job|story|role|thing|backstory|position|occupation)\b", re.IGNORECASE)


def _what_they_do(question: str, a: Analysis) -> Analysis:
    """``a``, asking besides what the reached people's descriptions say of what they do, when its words ask that of
    whom its one relation reaches."""
    if a.more or a.attr is not None or a.explain or a.describe or not a.hops or a.among is not None or \
            hop_range(a.hops[-1].edges) not in ("character", "person") or _WHAT_DO.search(question) is None:
        return a
    a.describe = " ".join(question.split())
    return a


def _unrecorded(question: str, a: Analysis) -> Analysis:
    """``a``, or, when its asking sentences ask what the catalog records of nothing ("who voices levi"), the lookup
    of the names it gives, to say that it is not recorded (a message in parts keeps its plan: its other parts are
    answered)."""
    if a.more or a.recommend is not None or a.among is not None:
        return a
    # (the last asking sentence: "who voiced... no wait, who directed it" asks who directed it)
    asked = next((question[x:y] for x, y in reversed(asking(question))), question)
    said = next((what for rx, what in C.UNRECORDED if rx.search(asked)), "")
    if said:
        a.unrecorded, a.intent, a.hops, a.attr, a.filter, a.described = said, "lookup", [], None, None, ()
        a.members = ""  # ("who voices frieren in X": no group "voices")
        a.compare_field, a.also = None, []
    return a


def reading_of(inp: RoleInput) -> Analysis:
    """The reading a role input carries (the question is read once a run, where it is linked); read here only
    for an input built without one (a prompt an outside client sent to the chat route, a test)."""
    return inp.reading if inp.reading is not None else read(inp.question, inp.links)


def _read(question: str, links: EntityLinks | None) -> Analysis:
    """One question (or one part of it), pass by pass: the first pass that reads it says what it asks; an
    explanation asked ("why ...", "how did ...") is read over that plan."""
    q = _focus(question, links)  # the asking sentences, less asides, and the names they are about
    # the question less the explanation's words is read without what it asks by meaning: those words were the why
    unhinted = links.model_copy(update={"asks": []}) if links is not None else None
    a = _explained(q, _plan(q), lambda text: _plan(_focus(text, unhinted)))
    for x in (a, *a.more):
        x.picked |= q.told & set(x.mentions)
    return a


def _plan(q: _Question) -> Analysis:
    """What the first pass that reads ``q`` makes of it."""
    # sums of several works, pairs, one title's two forms side by side, a guess checked
    for read_pass in (_together, _read_pair, _forms, _guess):
        if (a := read_pass(q)) is not None:
            return a
    a, f = _catalog(q)  # conditions on the whole catalog, or a work described and not named
    if a is not None:
        return a
    a = _anchored(q)  # what is asked of one name
    a = a if a is not None else _lookup(q, f)  # else the catalog filter, or the name itself
    a.by_meaning = q.by_meaning
    return a


def open_types(a: Analysis, mention: str) -> tuple[str, ...]:
    """The entity types ``mention`` may still be: every type of a bare name ("Tell me about Naruto"),
    else the one the question's reading chose (a type word or the relation asked); none with a year, or when the
    question's other names pick one reading."""
    if mention in a.years or mention in a.picked:
        return ()
    if mention in a.open:
        return a.open[mention]
    types = a.types.get(mention, ())
    return types[:1] if mention in a.fixed else types


# what a length is, by the type a clarification settles: "how long is X" asks an anime's episodes, a manga's volumes
_LENGTH: dict[str, Attr] = {"anime": "episode_count", "manga": "volumes"}


def settled(a: Analysis, mention: str | None, entity_type: str) -> Analysis:
    """``a`` once a clarification chose ``entity_type`` for the open ``mention``: a length asked of it is read off
    that type ("how long is X?" "the manga": its volumes)."""
    if mention is not None and mention in a.open and a.attr in _LENGTH.values() and entity_type in _LENGTH:
        a.attr = _LENGTH[entity_type]
    return a


__all__ = ["ANY_TYPE", "open_types", "read", "reading_of", "settled"]
