"""Reading a question: the linked names, plus what the words around them ask for, become a plan.

No whole-question templates. The names come from :mod:`~agentic_rag.understanding.linker`; what is
asked comes from cue words anywhere in the rest of the question (:mod:`~agentic_rag.understanding.cues`);
hops compose by entity type: a relation that starts from an anime, asked of a character, first
follows the character to the anime it appears in ("the studio of Luffy's show"), and a relation
that starts from a manga, asked of an anime, first follows the anime to its source.

The reader is passes over one question, each a module named for its concern; :func:`_read` says their order:
focus (:mod:`.focus`, :mod:`.asides`, :mod:`.words`, :mod:`.names`), sums of several works (:mod:`.counts`),
pairs (:mod:`.pairs`), conditions on the catalog (:mod:`.catalog`), and what is asked of one name
(:mod:`.anchor`, :mod:`.ask`, :mod:`.relations`, :mod:`.counts`), its hops typed by coercion (:mod:`.coerce`).
A message in two parts is read part by part (:mod:`.parts`)."""

from __future__ import annotations

from agentic_rag.protocol import EntityLinks
from agentic_rag.understanding.plan import ANY_TYPE, Analysis
from agentic_rag.understanding.reading.anchor import _CONSULTED, _anchored, _lookup
from agentic_rag.understanding.reading.asides import _except
from agentic_rag.understanding.reading.catalog import _catalog
from agentic_rag.understanding.reading.counts import _together
from agentic_rag.understanding.reading.focus import _focus
from agentic_rag.understanding.reading.pairs import _guess, _read_pair
from agentic_rag.understanding.reading.parts import _read_parts


def consults_asks(question: str, links: EntityLinks | None) -> bool:
    """Whether reading ``question`` would act on what it asks by meaning (``links.asks``, the MiniLM encoder's
    nearest exemplars): only a name no cue word says anything about turns to it. Read without them, a question
    that never reaches that point reads the same with them, so linking embeds only the questions that do."""
    seen: list[bool] = []
    token = _CONSULTED.set(seen)
    try:
        read(question, links.model_copy(update={"asks": []}) if links is not None else None)
    finally:
        _CONSULTED.reset(token)
    return bool(seen)


def read(question: str, links: EntityLinks | None) -> Analysis:
    """The plan of ``question`` given the names linked in it; a question in two parts ("who directed X, and
    which studio made it?") is a plan with one more in ``more``, or one longer chain ("which studio made
    X, and when was that studio founded?")."""
    question, links, excluded = _except(question, links)
    a = _read_parts(question, links, _read)
    for x in (a, *a.more):
        x.exclude |= excluded
    return a


def _read(question: str, links: EntityLinks | None) -> Analysis:
    """One question (or one part of it), pass by pass: the first pass that reads it says what it asks."""
    q = _focus(question, links)  # the asking sentences, less asides, and the names they are about
    for read_pass in (_together, _read_pair, _guess):  # sums of several works, pairs, a guess checked
        if (a := read_pass(q)) is not None:
            return a
    a, f = _catalog(q)  # conditions on the whole catalog, or a work described and not named
    if a is not None:
        return a
    a = _anchored(q)  # what is asked of one name
    return a if a is not None else _lookup(q, f)  # else the catalog filter, or the name itself


def open_types(a: Analysis, mention: str) -> tuple[str, ...]:
    """The entity types ``mention`` may still be: every type of a bare name ("Tell me about Naruto"),
    else the one the question's reading chose (a type word or the relation asked); none with a year."""
    if mention in a.years:
        return ()
    if mention in a.open:
        return a.open[mention]
    types = a.types.get(mention, ())
    return types[:1] if mention in a.fixed else types


__all__ = ["ANY_TYPE", "consults_asks", "open_types", "read"]
