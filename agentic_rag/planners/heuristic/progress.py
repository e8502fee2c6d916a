"""Where a plan stands, read from the cards alone: what is resolved, which hops ran, what runs next.

The planner and the writer both call :func:`progress`, so they always agree: the planner turns
``steps`` into the next :class:`~agentic_rag.protocol.NextStep`, the writer drafts from the levels
and the final card once ``steps`` is empty. Nothing is remembered between calls but the cards.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentic_rag.planners.heuristic.context import (
    Resolution,
    bare,
    qualifiers,
    resolve,
    row_of,
    search_cards,
    year_of,
)
from agentic_rag.planners.heuristic.groups import group_words, record_says
from agentic_rag.protocol import (
    FIELDS,
    MAX_BATCH,
    NAME_FIELD,
    BatchIntent,
    EntityRef,
    GraphIntent,
    SearchFilters,
    SearchIntent,
    SimilarFilters,
    SimilarIntent,
    StructuredQuery,
)
from agentic_rag.protocol.limits import max_len
from agentic_rag.protocol.query import describe
from agentic_rag.protocol.reading import Analysis, Hop
from agentic_rag.protocol.roles import CardEntity, ContextCard
from agentic_rag.protocol.vocabulary import EntityType
from agentic_rag.understanding.cues import CUES
from agentic_rag.understanding.filters import FACETS, facet_matches
from agentic_rag.understanding.linker import STOP
from agentic_rag.understanding.text import english_words, fold, tokenize

MAX_SOURCES = MAX_BATCH  # entities one hop expands from (the nearest, earliest ones)
CHAIN_HOPS = 4  # hops one k_hop traversal asks for
LISTED = 12  # rows a count names beside its number
RANKED = 3  # rows a superlative reads: the first, and the runners-up to show it is the first
MAX_CHAIN_ROUNDS = 2  # traversals a chain may continue with, from its end
QUOTED_NAME = 200  # characters of a name a rationale quotes (rationales are 300)
NAMES_IN_QUERY = 20  # names one "in" condition lists
_QUERY = max_len(SearchIntent, "query")
_IDS = max_len(SearchFilters, "id")
_WHERE = max_len(StructuredQuery, "where")
_REQUEST = max_len(ContextCard, "request")  # a query card's request is its description, cut to this
_RATIONALE = max_len(SimilarIntent, "rationale")


@dataclass(slots=True)
class Progress:
    steps: list[BatchIntent] = field(default_factory=list)
    found: list[Resolution] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    levels: list[list[CardEntity]] = field(default_factory=list)
    details: dict[str, str] = field(default_factory=dict)  # entity id -> edge qualifier (role, "main", ...)
    card: ContextCard | None = None  # the final path, compare or query card
    listing: ContextCard | None = None  # the rows a count counted, when there are few enough to name
    starts: list[CardEntity] = field(default_factory=list)  # the entities a described start found
    facets: list[str] = field(default_factory=list)
    creators: list[CardEntity] = field(default_factory=list)  # of an original anime, when its source was asked
    quotes: list[ContextCard] = field(default_factory=list)  # an explanation's records, with their nearest sentences
    forms: set[str] = field(default_factory=set)  # ... of them, the other forms of a title left open (its manga)
    kin: set[str] = field(default_factory=set)  # ... of them, the people the one character explained is related to
    described: set[str] = field(default_factory=set)  # ... of them, whom a chain reached, asked about (a.describe)

    @property
    def pending(self) -> bool:
        return bool(self.steps)


CREATORS = Hop(("staff",), ("original_creator",))
WORKS = Hop(("appears_in",), node_types=("anime", "manga"))  # a character's works, whose synopses may say why
QUOTED_TYPES: tuple[EntityType, ...] = ("character", "anime", "manga", "franchise")  # the records with a description
QUOTED_WORKS = 3  # works of the named characters an explanation quotes, those they share first, then the earliest
# the people one character explained is related to, whose descriptions may say why
KIN = Hop(("family", "romantic", "rival", "enemy", "ally", "teammate", "mentor_of", "student_of"),
          node_types=("character",))
QUOTED_KIN = 8
QUOTED_REACHED = 2  # of whom a chain reached, the records whose description is quoted for what is asked of them
ALTERNATIVES = Hop(("alternative_version",), node_types=("anime",))
# a question that names nothing mostly describes one of these
DESCRIBED: tuple[EntityType, ...] = ("anime", "manga", "character", "person")
# cosine similarity a described entity must reach to be offered (as a guess): MiniLM puts right and wrong
# answers to descriptions at 0.4-0.57 alike (docs/benchmarks.md), so only a clearly closer entry is offered
SEMANTIC_MIN = 0.6
DESCRIBED_LIMIT = 6  # entries per collection: enough to hold the runner-up of another franchise


# A description's own words pick out an entry (retrievers/prose.py) when the weight of the words its prose
# shares reaches TEXT_MIN and is TEXT_MARGIN times that of any entry of another franchise (docs/benchmarks.md)
# and three words at least (two rare words can be a coincidence: "kyoto" and "year" in a character's)
TEXT_MIN = 6.0
TEXT_MARGIN = 1.5
TEXT_WORDS = 3
# ... and two beside a name the question gives: the name is one of the words a record about that person says
# ("who took Jet Black's arm": Jet and arm)
BESIDE_WORDS = 2
NAME_PREFIX = 4  # letters a shared (stemmed) word and a word of the name agree on to be the name's ("luffi", "luffy")


def identified(kinds: Sequence[EntityType], cards: list[ContextCard], skip: frozenset[str] = frozenset(),
               words: int = TEXT_WORDS, names: Sequence[str] = (), by_words: bool = False) -> CardEntity | None:
    """The entry a description's words pick out, of the first of ``kinds`` that has one; the entries ``skip`` names
    (the names the question gives) are none, and one that shares only the words of ``names`` is none either (kin
    name each other: "remind me who zeke yeager is" is not his father's record). ``by_words``: among one work's own
    characters (the search kept to them), an entry that shares more of the words than any other also stands out
    ("who leads the phantom troupe": Chrollo, "Leader of the Phantom Troupe", beside its members)."""
    said = {w[:NAME_PREFIX] for n in names for w in re.findall(r"[a-z0-9]+", n.lower())}
    picked: dict[str, CardEntity] = {}
    for c in cards:
        if c.source != "qdrant_search" or c.data.get("match") != "semantic":
            continue
        rows = [r for r in c.data.get("rows", [])
                if isinstance(r, dict) and isinstance(r.get("text_score"), int | float) and r.get("id") not in skip]
        if not rows:
            continue
        # beside a name, only a record that says more than the name's words can be meant ("who raised Gon Freecss":
        # Mito, who raised him, not Ging, whose record says "Gon" and "Freecss" louder)
        own = [r for r in rows if _own_words(r, said)] if said else rows
        top = max(own or rows, key=lambda r: float(r["text_score"]))  # the first of equals: the nearer in meaning
        rival = max((float(r["text_score"]) for r in rows if _kin(r) != _kin(top)), default=0.0)
        score = float(top["text_score"])
        entity = next((e for e in c.entities if e.ref.id == top.get("id")), None)
        shared = [str(w) for w in top.get("text_words") or ()]
        most = max((len(r.get("text_words") or ()) for r in rows if r is not top), default=0)
        # (beside a name, the words of its own are what set a record apart: the name's are every kin's and friend's)
        others = max((_own_words(r, said) for r in rows if _kin(r) != _kin(top)), default=0)
        apart = score >= TEXT_MARGIN * rival or (by_words and len(shared) > most) or (
            bool(said) and _own_words(top, said) > 0 and others == 0)
        # beside a name, the record says the name and something of its own besides (not only the name's words, as
        # kin's records do, nor only the question's other words, as a stranger's may)
        beside = not said or by_words or any(w[:NAME_PREFIX] in said for w in shared)
        if entity is not None and score >= TEXT_MIN and apart and len(shared) >= words and beside and \
                any(w[:NAME_PREFIX] not in said for w in shared):
            picked.setdefault(entity.ref.entity_type, entity)
    return next((picked[k] for k in kinds if k in picked), None)


def _own_words(row: dict[str, Any], said: set[str]) -> int:
    """The words a search row shares with the question that are no word of the names it gives."""
    return sum(str(w)[:NAME_PREFIX] not in said for w in row.get("text_words") or ())


def described_start(a: Analysis, cards: list[ContextCard]) -> CardEntity | None:
    """The entry a question that names nothing describes, once searched for; what the question asks of it
    was read for the kind it names first ("the show where ..."), so only an entry of that kind can answer it."""
    return identified(a.described[:1] if a.hops or a.attr else a.described, cards) if a.described else None


def _kin(row: dict[str, Any]) -> str:
    """Entries of one franchise share its description's words: they are one candidate, not rivals."""
    return str(row.get("franchise_id") or row.get("id"))


def unknown_names(question: str) -> list[str]:
    """The words of a question that look like a name (no English word, or capitalised inside the sentence)
    when nothing in it linked: "who is naoko yamada?" names someone, "the anime about a pirate boy" does not."""
    words = tokenize(question)
    return [t.raw for i, t in enumerate(words) if t.key not in STOP and t.key not in CUES and not t.key.isdigit()
            and (t.key not in english_words() or (i > 0 and t.raw[:1].isupper() and not t.upper))]


def describe_search(question: str) -> list[SearchIntent]:
    """The whole question searched by meaning (never as a name) in each described collection."""
    return [SearchIntent(rationale=f"no name linked: search {t} by meaning", entity_type=t,
                         query=" ".join(question.split())[:_QUERY] or "?", limit=DESCRIBED_LIMIT, match="semantic")
            for t in DESCRIBED]


def searched_by_meaning(cards: list[ContextCard]) -> bool:
    return any(c.source == "qdrant_search" and c.data.get("match") == "semantic" for c in cards)


def described(cards: list[ContextCard]) -> list[tuple[float, CardEntity]]:
    """Entities the meaning searches found, most similar first, those above :data:`SEMANTIC_MIN` only."""
    found: list[tuple[float, CardEntity]] = []
    for c in cards:
        if c.source != "qdrant_search" or c.data.get("match") != "semantic":
            continue
        scores = {r.get("id"): r.get("score") for r in c.data.get("rows", []) if isinstance(r, dict)}
        found += [(float(s), e) for e in c.entities if isinstance(s := scores.get(e.ref.id), int | float)
                  and s >= SEMANTIC_MIN]
    return sorted(found, key=lambda x: -x[0])


def _search(entity_type: str, mention: str, year: int | None, linked: str | list[str] | None) -> SearchIntent:
    if linked is not None:  # entity linking found it: fetch it by id, under the name the user typed
        ids = [linked] if isinstance(linked, str) else linked[:_IDS]  # (or each of its readings)
        return SearchIntent.model_validate({"rationale": f"fetch '{mention[:QUOTED_NAME]}', linked to a {entity_type}",
                                            "entity_type": entity_type, "query": mention[:_QUERY],
                                            "filters": {"id": ids}, "limit": len(ids)})
    return SearchIntent.model_validate({"rationale": f"resolve '{mention[:QUOTED_NAME]}' as {entity_type}",
                                        "entity_type": entity_type, "query": mention[:_QUERY],
                                        "limit": 10 if year else 5})


def _graph(kind: str, start: EntityRef, *, end: EntityRef | None = None, hop: Hop | None = None) -> GraphIntent:
    edges = list(hop.edges) if hop else []
    return GraphIntent.model_validate({
        "rationale": f"{kind} from the resolved entity" + (f" via {', '.join(edges)}" if edges else ""),
        "query_type": kind, "start": start.model_dump(), "end": end.model_dump() if end else None,
        "edge_types": edges, "max_hops": CHAIN_HOPS if kind in ("k_hop", "path") else 1,
        "filters": {"node_types": list(hop.node_types)} if hop and hop.node_types else {},
        "limits": {"max_results": 50}})


def _query(q: dict[str, Any]) -> StructuredQuery:
    return StructuredQuery.model_validate({"rationale": "read the asked values from the catalog", **q})


def _works_on_row(hop: Hop) -> bool:
    """A hop to the anime a character appears in, which its search row lists (but the earliest or latest is picked
    by year, which only the graph's names carry)."""
    return (hop.edges == ("appears_in",) and hop.node_types == ("anime",) and not hop.roles
            and hop.kind == "neighbors" and not hop.first and not hop.last)


def _fetch_works(cards: list[ContextCard], source: CardEntity, hop: Hop) -> SearchIntent | None:
    """Seed 001 section 8: the anime a character appears in are already listed on its search row
    (``anime_ids``), so fetch them by id instead of traversing ``appears_in``."""
    if not _works_on_row(hop):
        return None
    ids = [str(i) for i in (row_of(cards, source.ref.id).get("anime_ids") or [])][:_IDS]
    if source.ref.entity_type != "character" or not ids:
        return None
    return SearchIntent(rationale=f"fetch the anime {source.name[:QUOTED_NAME]} appears in, by id", entity_type="anime",
                        query=f"anime featuring {source.name}"[:_QUERY], filters=SearchFilters(id=ids), limit=50)


def _card_for(cards: list[ContextCard], intent: BatchIntent) -> ContextCard | None:
    if isinstance(intent, SearchIntent):
        return next((c for c in cards if c.source == "qdrant_search" and c.data.get("ids") == list(intent.filters.id)
                     and c.data.get("entity_type") == intent.entity_type
                     and bool(c.data.get("quote")) == intent.quote), None)
    if isinstance(intent, StructuredQuery):
        want = describe(intent)[:_REQUEST]
        return next((c for c in cards if c.source == "pg_query" and c.request == want), None)
    if isinstance(intent, SimilarIntent):
        return next((c for c in cards if c.source == "similar" and c.data.get("asked") == intent.asked()), None)
    assert isinstance(intent, GraphIntent)
    for c in cards:
        if (c.source == "pg_graph" and c.data.get("kind") == intent.query_type
                and c.data.get("start") == intent.start.id
                and c.data.get("end") == (intent.end.id if intent.end else None)
                and list(c.data.get("edge_types") or []) == list(intent.edge_types)):
            return c
    return None


def beside_search(question: str, anime: str | None = None) -> SearchIntent:
    """The question searched by meaning and by its words among the characters (a character its record picks out
    beside the name it names: "who gave luffy the straw hat"), those of the ``anime`` it names when it names only a
    work ("who's the captain of the 6th division in bleach")."""
    return SearchIntent(rationale="a character described beside a name: search characters by meaning",
                        entity_type="character", query=" ".join(question.split())[:_QUERY] or "?",
                        limit=DESCRIBED_LIMIT, match="semantic",
                        filters=SearchFilters(anime_id=anime) if anime else SearchFilters())


def _people(a: Analysis) -> bool:
    """Whether a question names a person or a character."""
    return any(c.entity.entity_type in ("character", "person")
               for m in a.mentions for c in a.linked.get(m, {}).values())


def _set_in(a: Analysis) -> str | None:
    """The anime a question is set in when it names no person or character, only that work (its anime reading)."""
    types = {c.entity.entity_type for m in a.mentions for c in a.linked.get(m, {}).values()}
    anime = {c.entity.id for m in a.mentions for t, c in a.linked.get(m, {}).items() if t == "anime"}
    return next(iter(anime)) if len(anime) == 1 and not types & {"character", "person"} else None


MEMBERS_LIMIT = 50  # a work's characters searched for a group's members: every one, for a work of the catalog's size


def members_search(group: str, anime: str) -> SearchIntent:
    """One work's characters, searched by the group's words (every one of them comes back, the nearest first)."""
    return SearchIntent(rationale="a group's members among one work's characters", entity_type="character",
                        query=group[:_QUERY] or "?", limit=MEMBERS_LIMIT, match="semantic",
                        filters=SearchFilters(anime_id=anime))


def members(a: Analysis, cards: list[ContextCard]) -> list[CardEntity] | None:
    """The characters whose own records say the group ``a.members``, of its search's card (None: not searched)."""
    card = next((c for c in cards if c.source == "qdrant_search" and c.data.get("query") == a.members[:_QUERY]
                 and c.data.get("entity_type") == "character"), None)
    if card is None:
        return None
    group = group_words(a.members)
    rows = {str(r.get("id")): r for r in card.data.get("rows", []) if isinstance(r, dict)}
    return [e for e in card.entities if record_says(rows.get(e.ref.id, {}), e.name, group)]


def progress(a: Analysis, cards: list[ContextCard], question: str = "") -> Progress:
    """The state of ``a`` over ``cards``: the next intents to run, or everything needed to answer."""
    p = Progress()
    if a.members and (anime := _set_in(a)) is not None:
        # a group's members among one work's characters: those whose records say it; else the work's own plan
        found = members(a, cards)
        if found is None:
            p = progress(dataclasses.replace(a, members=""), cards, question)
            p.steps = [members_search(a.members, anime), *p.steps][:MAX_BATCH]
            return p
        if found:
            p.starts = found
            return p
        return progress(dataclasses.replace(a, members=""), cards, question)
    if a.described and a.mentions and not _people(a) and _set_in(a) is None:
        # one of a work's characters, described, where the work has no one anime to search within: the name's plan
        return progress(dataclasses.replace(a, described=()), cards, question)
    if a.described and a.mentions:
        # a character its record describes, beside the name the question gives ("who gave luffy the straw hat"):
        # the one the words of the records pick out, when that is no name the question gives; else the name's plan
        if not searched_by_meaning(cards):
            p = progress(dataclasses.replace(a, described=()), cards, question)
            p.steps = [beside_search(a.description or question, _set_in(a)), *p.steps][:MAX_BATCH]
            return p
        named = frozenset(c.entity.id for m in a.mentions for c in a.linked.get(m, {}).values())
        start = identified(a.described, cards, named, BESIDE_WORDS,
                           [*a.mentions, *(c.name for m in a.mentions for c in a.linked.get(m, {}).values())],
                           by_words=_set_in(a) is not None)
        if start is not None:
            p.starts = [start]
            return p
        return progress(dataclasses.replace(a, described=()), cards, question)
    if a.recommend is not None and not a.mentions:  # "something dark and brutal": the wish alone
        return _need(p, cards, [similar(a, [], question)], final=True)
    if not a.mentions and a.filter is None:
        # a description: once the search by meaning has picked out its entry, the plan goes on from it
        start = described_start(a, cards)
        if start is None:
            return p
        p.starts = [start]
        return _walk(a, cards, p, p.starts) if a.hops or a.attr else p
    if a.filter is not None:
        p = _filter(a, cards, p)
        if not a.hops or p.steps or p.missing or p.card is None:
            return p
        # a chain from the entities a description picks ("the manga serialized in Ura Sunday"): the rows found
        p.starts, p.card = list(p.card.entities)[:MAX_SOURCES], None
        if not p.starts:
            p.missing.append(_described(a))
            return p
        return _walk(a, cards, p, p.starts)
    for mention in a.mentions:
        others = [m for m in a.mentions if m != mention]
        r = resolve(cards, mention, a.types.get(mention, ()), a.years.get(mention), others)
        p.found.append(r)
        if r.entity is None:
            left = [t for t in a.types.get(mention, ()) if t not in r.tried]
            if left:
                linked = a.linked.get(mention, {}).get(left[0])
                ids = list(a.among.readings.get(mention, ())) if a.among else []
                p.steps.append(_search(left[0], mention, a.years.get(mention),
                                       ids or (linked.entity.id if linked else None)))
            else:
                p.missing.append(mention)
    if a.among is not None and a.among.readings and not p.steps:
        _by_company(a.among.readings, cards, p.found)
    if p.steps or p.missing:
        if not p.missing:
            p.steps += _ahead(a, cards, p)
        p.steps = p.steps[:MAX_BATCH]
        return p
    return _resolved(a, cards, p, [r.entity for r in p.found if r.entity is not None], question)


def _resolved(a: Analysis, cards: list[ContextCard], p: Progress, ents: list[CardEntity],
              question: str = "") -> Progress:
    """What the question asks of the entities its names resolved to (and, for an explanation, what is quoted; for a
    relation of one character the graph does not have, what its own record says nearest the question)."""
    p = _asked(a, cards, p, ents)
    if a.explain and not p.missing:
        return _explained(a, cards, p, ents)
    if a.describe and not p.steps and not p.missing and p.levels and p.levels[-1]:
        p.described = {e.ref.id for e in p.levels[-1][:QUOTED_REACHED]}
        return _said_of(cards, p, p.levels[-1][:QUOTED_REACHED], a.describe)
    if question and ents and _reached_nothing(a, p) and (ents[0].ref.entity_type == "character" or (
            ents[0].ref.entity_type in ("anime", "manga") and a.hops[0].edges == ("features",))):
        # (a work whose cast the catalog does not record: its synopsis may say who it is about)
        return _said_of(cards, p, ents[:1], question)
    return p


def _reached_nothing(a: Analysis, p: Progress) -> bool:
    """Whether ``a``'s one relation hop, asked of one name, reached nothing (and nothing more is pending)."""
    return not p.steps and not p.missing and len(a.hops) == 1 and a.attr is None and a.among is None and \
        a.recommend is None and a.intent not in ("relation", "compare") and p.card is None and \
        (not p.levels or not p.levels[-1])


def _said_of(cards: list[ContextCard], p: Progress, entities: list[CardEntity], question: str) -> Progress:
    """A relation the graph does not record for one character ("what does illumi fight with" read as his enemies), or
    a work's cast it does not record ("who's the main character of Before the Fall"):
    its description's sentences, scored by meaning against the question, so the answer can quote the one that says
    it ("a ruthless assassin who uses needles"), cited, beside saying the relation is not recorded."""
    query = " ".join(question.split())[:_QUERY]
    kind = entities[0].ref.entity_type
    ids = [e.ref.id for e in entities if e.ref.entity_type == kind]
    intent = SearchIntent(rationale="quote what the catalog says of it, nearest the question", entity_type=kind,
                          query=query, filters=SearchFilters(id=ids), limit=len(ids), quote=True)
    card = _card_for(cards, intent)
    if card is None:
        p.steps = [intent]
    else:
        p.quotes = [card]
    return p


def _asked(a: Analysis, cards: list[ContextCard], p: Progress, ents: list[CardEntity]) -> Progress:
    if a.among is not None:  # a choice among listed names: the predicate tested for each
        return _need(p, cards, among_tests(a, ents), final=False)
    if a.intent == "compare" and len({e.ref.id for e in ents}) >= 3:
        return _need(p, cards, [_ranking(a, ents)], final=True)
    if a.intent in ("relation", "compare") and len(ents) >= 2:
        kind = "path" if a.intent == "relation" else "compare"
        if ents[0].ref == ents[1].ref:
            return p
        # ("someone who worked on both": the path through the people credited, not the studio both share)
        staff = a.hops[0] if a.intent == "relation" and a.hops and a.hops[0].edges == ("staff", "worked_on") \
            else None
        step = _graph(kind, ents[0].ref, end=ents[1].ref, hop=staff)
        return _need(p, cards, [step.model_copy(update={"max_hops": 2}) if staff else step], final=True)
    return _walk(a, cards, p, ents if a.together else ents[:1])


def _explained(a: Analysis, cards: list[ContextCard], p: Progress, ents: list[CardEntity]) -> Progress:
    """An explanation quotes what the catalog says: the sentences nearest in meaning to the question of the named
    entities' descriptions, of the entities a relation between them goes through, and of the works the named
    characters appear in (those they share first). Their works are found beside the plan's own steps; the quotes
    once the plan and they are in."""
    people = [e for e in ents[:2] if e.ref.entity_type == "character"]
    steps: list[BatchIntent] = [_graph("neighbors", e.ref, hop=WORKS) for e in people]
    # one character explained: the people it is related to, whose own descriptions may say the why ("the hitman
    # responsible for the loss of Jet's arm"); the writer quotes one only when it says more of what is asked
    kin_steps: list[BatchIntent] = [_graph("neighbors", people[0].ref, hop=KIN)] \
        if a.intent != "relation" and len(people) == 1 else []
    got = [_card_for(cards, i) for i in steps]
    kin = [_card_for(cards, i) for i in kin_steps]
    p.steps += [i for i, c in zip([*steps, *kin_steps], [*got, *kin], strict=True) if c is None]
    if p.steps:
        return p
    related = [e for c in kin if c is not None for e in c.entities if e.ref.id != c.data.get("start")][:QUOTED_KIN]
    p.kin = {e.ref.id for e in related}
    through = [CardEntity(ref=n, name="") for path in (p.card.paths[:1] if p.card is not None and a.intent ==
                                                        "relation" else []) for n in path.nodes[1:-1]]
    shared: dict[str, tuple[int, CardEntity]] = {}
    for c in got:
        assert c is not None
        for e in c.entities:
            if e.ref.id != c.data.get("start"):
                shared[e.ref.id] = (shared.get(e.ref.id, (0, e))[0] + 1, e)
    works = [e for _, e in sorted(shared.values(), key=lambda x: (-x[0], year_of(x[1].name) or 9999))]
    # the other forms of a title explained (its manga and franchise beside the anime): the story is told in each
    # (only of a title no word or year settled: "the 2003 fma" is that anime's own story)
    forms = [CardEntity(ref=c.entity, name=c.name) for m in a.mentions[:1] for c in a.linked.get(m, {}).values()
             if m not in a.fixed and m not in a.years and c.name == bare(ents[0].name)] \
        if ents and ents[0].ref.entity_type in ("anime", "manga", "franchise") else []
    p.forms = {e.ref.id for e in forms}
    records = list({e.ref.id: e for e in [*ents[:2], *forms, *through, *works[:QUOTED_WORKS], *related]
                    if e.ref.entity_type in QUOTED_TYPES}.values())
    query = " ".join(a.explain.split())[:_QUERY]
    quotes = [SearchIntent(rationale="quote what the catalog says that explains it", entity_type=t, query=query,
                           filters=SearchFilters(id=ids), limit=len(ids), quote=True)
              for t in QUOTED_TYPES if (ids := [e.ref.id for e in records if e.ref.entity_type == t][:_IDS])]
    found = [_card_for(cards, i) for i in quotes]
    p.steps = [i for i, c in zip(quotes, found, strict=True) if c is None]
    p.quotes = [c for c in found if c is not None]
    return p


def among_tests(a: Analysis, ents: list[CardEntity]) -> list[BatchIntent]:
    """The steps that test a choice's predicate (``a.among``), one per listed name: its hop from that name (``ents``
    is in the order of ``a.mentions``: the listed names first). A group's words need none: the record each name was
    fetched with says them or not."""
    among = a.among
    if among is None or among.hop is None:
        return []
    return [_graph("neighbors", e.ref, hop=among.hop) for e in ents[:len(among.candidates)]]


def _by_company(readings: dict[str, tuple[str, ...]], cards: list[ContextCard], found: list[Resolution]) -> None:
    """A listed name with several readings ("annie" beside "reiner, bertholdt"): the reading whose works (a
    character's anime, a work's franchise, the work itself) most of the question's other names share; the best
    linked on a tie."""
    def company(entity_id: str) -> set[str]:
        row = row_of(cards, entity_id)
        return {entity_id, *(str(x) for x in row.get("anime_ids") or []),
                *([str(row["franchise_id"])] if row.get("franchise_id") else [])}

    for r in found:
        ids = readings.get(r.mention, ())
        card = next((c for c in search_cards(cards, r.mention) if c.data.get("ids") == list(ids)), None)
        if card is None or r.entity is None:
            continue
        around = [company(o.entity.ref.id) for o in found if o.entity is not None and o is not r]
        shared = {e.ref.id: sum(bool(company(e.ref.id) & x) for x in around) for e in card.entities}
        r.entity = max(card.entities, key=lambda e: (shared[e.ref.id], -ids.index(e.ref.id) if e.ref.id in ids
                                                     else -len(ids)))


def _ahead(a: Analysis, cards: list[ContextCard], p: Progress) -> list[BatchIntent]:
    """The steps that follow resolution, in the same turn as the fetches they wait for, when those fetches cannot
    change them: every name still unresolved is being fetched by the id entity linking gave it, so the entity each
    fetch returns is known already, and a step from it needs only its id and name. "Which studio animated Death
    Note" fetches the anime and its neighbours in one turn, not two (each turn is a plan, a draft and a judgement
    more). A step that reads the fetched row (a character's works, listed on it) waits for it."""
    if a.among is not None and a.among.readings:
        return []  # which reading a listed name has waits for the rows of the names beside it
    ents: list[CardEntity] = []
    for r in p.found:
        if r.entity is not None:
            ents.append(r.entity)
            continue
        left = [t for t in a.types.get(r.mention, ()) if t not in r.tried]
        linked = a.linked.get(r.mention, {}).get(left[0]) if left else None
        if linked is None:
            return []  # found by a search by name: which entity it finds is not known yet
        ents.append(CardEntity(ref=linked.entity, name=linked.name))
    if a.hops and _works_on_row(a.hops[0]) and any(e.ref.entity_type == "character" for e in ents):
        return []
    later = _resolved(a, cards, Progress(), ents)
    return [] if later.missing else later.steps


def ranked_field(a: Analysis, entity_type: EntityType) -> str:
    """The number three or more entities are put in order by: the one asked, else when they began."""
    field = a.compare_field or ""
    if field not in FIELDS[entity_type] or FIELDS[entity_type][field].kind != "numeric":  # "studios": no order
        field = "founded" if entity_type == "studio" else "year"
    return field


def _ranking(a: Analysis, ents: list[CardEntity]) -> StructuredQuery:
    """Three or more works side by side: their rows, ordered by the field compared."""
    et = ents[0].ref.entity_type
    field = ranked_field(a, et)
    names = _names([e for e in ents if e.ref.entity_type == et], et)
    return _query({"entity_type": et, "where": [{"field": NAME_FIELD[et], "op": "in", "value": names}],
                   "limit": len(names) + 4, "order_by": [{"field": field, "direction": "asc"}]})


def _described(a: Analysis) -> str:
    f = a.filter
    assert f is not None
    said = [f"{c['field']} {c['op']} {c['value']}" for c in f.where] + ([f.words] if f.words else [])
    return f"the {f.entity_type} matching {', '.join(said)}"


def _walk(a: Analysis, cards: list[ContextCard], p: Progress, frontier: list[CardEntity]) -> Progress:
    """Follow ``a``'s hops from ``frontier``, then read its attribute: the next intents, or the answer's parts."""
    seen = {e.ref.id for e in frontier}
    for at, hop in enumerate(a.hops):
        sources = frontier[:MAX_SOURCES]
        intents: list[BatchIntent] = [_fetch_works(cards, e, hop) or _graph(hop.kind, e.ref, hop=hop) for e in sources]
        got = [_card_for(cards, i) for i in intents]
        for _ in range(MAX_CHAIN_ROUNDS if hop.kind == "k_hop" else 0):
            # a chain longer than one traversal goes on from where the last one stopped (MHA's eight seasons)
            ends = [end for c in got[-len(intents):] if c is not None and (end := _chain_end(c)) is not None]
            more: list[BatchIntent] = [_graph("k_hop", end.ref, hop=hop) for end in ends]
            if not more:
                break
            intents, got = more, got + [_card_for(cards, i) for i in more]
        if any(c is None for c in got):
            p.steps = [i for i in intents if _card_for(cards, i) is None]
            return p
        nxt: list[CardEntity] = list(sources) if hop.include_start else []
        other_kin: list[CardEntity] = []
        for c in got:
            assert c is not None
            details = c.data.get("meta", {}).get("details", {}) or {}
            for e in c.entities:
                if e.ref.id == c.data.get("start") or (hop.exclude_seen and e.ref.id in seen):
                    continue
                d = str(details.get(e.ref.id, ""))
                if hop.roles and not set(hop.roles) & qualifiers(d):
                    if "family" in hop.edges:
                        other_kin.append(e)
                        p.details[e.ref.id] = d
                    continue
                if d:
                    p.details[e.ref.id] = d
                if e.ref.id not in a.exclude or hop.kind == "k_hop":  # a chain goes on through what is left out
                    nxt.append(e)
        if not nxt and other_kin and at == len(a.hops) - 1:
            # "gon's father" where the catalog says "guardian" or nothing: the family it has, said as such
            nxt, hop = other_kin, dataclasses.replace(hop, roles=())
            a.hops[at] = hop
        nxt = list({e.ref.id: e for e in nxt}.values())
        if hop.last and nxt:
            nxt = sorted(nxt, key=lambda e: year_of(e.name) or 0)[-1:]
        if (hop.first or hop.count) and nxt:
            starts = {e.ref.id for e in sources} if hop.include_start else set()
            nxt = sorted(nxt, key=lambda e: (e.ref.id not in starts, year_of(e.name) or 9999))[
                :1 if hop.first else hop.count]
        if a.period is not None and hop is a.hops[-1]:  # "what did X's studio make before 2010"
            nxt = [e for e in nxt if (y := year_of(e.name)) is None or a.period[0] <= y <= a.period[1]]
        seen |= {e.ref.id for e in nxt}
        p.levels.append(nxt)
        frontier = nxt
        if not frontier and hop.edges == ("adapted_from",) and sources[0].ref.entity_type == "anime":
            return _creators(cards, p, sources[0])  # an original anime: who created it is where it comes from
        if not frontier:
            return p
    if a.attr == "sum_episodes" and a.fmt == "tv" and a.hops and a.hops[-1].kind == "k_hop":
        frontier, p.steps = _tv_versions(cards, frontier)
        if p.steps:
            return p
    if a.exclude and p.levels:
        frontier = p.levels[-1] = [e for e in frontier if e.ref.id not in a.exclude]
        if not frontier:
            return p
    if a.recommend is not None:  # works like where the plan got to
        return _need(p, cards, [similar(a, frontier)], final=True)
    q = _attribute_query(a, frontier)
    return _final(p, cards, q) if q else p


# "something short": at most this many episodes (anime) or volumes (manga)
SHORT_LENGTH = {"anime": 13, "manga": 10}
LONG_LENGTH = {"anime": 50, "manga": 30}  # "something long": at least this many
LIKE_TYPES = ("anime", "manga", "franchise", "studio", "person", "character")
_LIKE = max_len(SimilarIntent, "like")
_EXCLUDE = max_len(SimilarIntent, "exclude")
_WISH = max_len(SimilarIntent, "query")


def similar(a: Analysis, frontier: list[CardEntity], question: str = "") -> SimilarIntent:
    """The recommendation ``a`` asks for, of works like ``frontier`` (none: like the wish alone, or else the
    question's own words)."""
    r = a.recommend
    assert r is not None
    like = [e.ref for e in frontier if e.ref.entity_type in LIKE_TYPES][:_LIKE]
    wish = r.wish or (None if like else " ".join(question.split())[:_WISH] or "popular")
    lo, hi = (None if y is None else min(max(y, 1900), 2100) for y in (r.year_min, r.year_max))
    if lo is not None and hi is not None and lo > hi:
        lo = hi = None  # "after 2020 and before 2010": no year can be both; the years are not a wish then
    filters = SimilarFilters(
        year_min=lo, year_max=hi, format=list(r.formats) if r.entity_type == "anime" else [], finished=r.finished,
        max_length=r.most or (SHORT_LENGTH[r.entity_type] if r.short else None),
        min_length=r.least or (LONG_LENGTH[r.entity_type] if r.long and not r.short else None))
    if filters.min_length is not None and filters.max_length is not None and filters.min_length > filters.max_length:
        filters = filters.model_copy(update={"min_length": None})  # "long, under 30 episodes": the number said wins
    names = ", ".join(e.name for e in frontier[:3])[:QUOTED_NAME]
    return SimilarIntent(rationale=f"recommend {r.entity_type} like {names or repr(wish)}"[:_RATIONALE],
                         entity_type=r.entity_type, like=like, query=wish[:_WISH] if wish else None,
                         filters=filters, exclude=sorted(a.exclude)[:_EXCLUDE], limit=r.limit)


def _tv_versions(cards: list[ContextCard], chain: list[CardEntity]) -> tuple[list[CardEntity], list[BatchIntent]]:
    """A chain's TV episodes include the TV cut of a film in it (Demon Slayer's Mugen Train film was re-aired
    as a TV arc): the TV alternative versions of its works that are not TV series. Returns the chain with them,
    or the steps still needed."""
    rows_q = _query({"entity_type": "anime", "limit": 50,
                     "where": [{"field": "title", "op": "in", "value": _names(chain, "anime")}]})
    rows = _card_for(cards, rows_q)
    if rows is None:
        return chain, [rows_q]
    not_tv = {r.get("id") for r in rows.data.get("rows", []) if isinstance(r, dict) and r.get("format") != "tv"}
    films = [e for e in chain if e.ref.id in not_tv][:MAX_SOURCES]
    steps: list[BatchIntent] = [_graph("neighbors", e.ref, hop=ALTERNATIVES) for e in films]
    got = [_card_for(cards, i) for i in steps]
    if any(c is None for c in got):
        return chain, [i for i, c in zip(steps, got, strict=True) if c is None]
    more = [e for c in got if c is not None for e in c.entities if e.ref.id != c.data.get("start")]
    return list({e.ref.id: e for e in [*chain, *more]}.values()), []


def _creators(cards: list[ContextCard], p: Progress, work: CardEntity) -> Progress:
    """The original creators credited on an anime that adapts no manga ("is Cowboy Bebop an original?")."""
    step = _graph("neighbors", work.ref, hop=CREATORS)
    card = _card_for(cards, step)
    if card is None:
        p.steps = [step]
        return p
    details = card.data.get("meta", {}).get("details", {}) or {}
    p.creators = [e for e in card.entities if e.ref.id != card.data.get("start") and set(CREATORS.roles) & qualifiers(
        str(details.get(e.ref.id, "")))]
    return p


def _final(p: Progress, cards: list[ContextCard], q: StructuredQuery) -> Progress:
    """The answer's query; a count with, in the same step, the rows it counts."""
    listing = _listing(q)
    p = _need(p, cards, [q] if listing is None else [listing, q], final=True)
    p.listing = _card_for(cards, listing) if listing is not None else None
    return p


def _ranked(entity_type: str, where: list[dict[str, Any]], rank: tuple[str, str]) -> StructuredQuery:
    """The first rows by a field ("the most episodes", "the oldest"), none without a value."""
    has_value = {"field": rank[0], "op": "gte", "value": 0}
    return _query({"entity_type": entity_type, "where": [*where[: _WHERE - 1], has_value],
                   "limit": RANKED, "order_by": [{"field": rank[0], "direction": rank[1]}]})


def _listing(q: StructuredQuery) -> StructuredQuery | None:
    """The rows a count counts, to name them beside the number ("credited on 2 manga: ... and ...")."""
    if q.aggregate is None or q.aggregate.op != "count" or q.group_by is not None:
        return None
    order = {"anime": "year", "manga": "year", "studio": "founded", "episode": "number"}.get(q.entity_type, "name")
    return _query({"entity_type": q.entity_type, "where": [c.model_dump() for c in q.where], "limit": LISTED,
                   "order_by": [{"field": order, "direction": "asc"}]})


def _chain_end(card: ContextCard) -> CardEntity | None:
    """The entity a k_hop traversal reached at its last allowed hop, if any: the chain may go on from it."""
    meta = card.data.get("meta", {}) or {}
    limit = (meta.get("clamped", {}) or {}).get("max_hops", [None, CHAIN_HOPS])[1]
    ends = {path.nodes[-1].id for path in card.paths if len(path.rels) >= limit}
    deepest = [e for e in card.entities if e.ref.id in ends]
    return deepest[0] if len(deepest) == 1 else None


def _need(p: Progress, cards: list[ContextCard], intents: Sequence[BatchIntent], *, final: bool) -> Progress:
    got = [_card_for(cards, i) for i in intents]
    p.steps = [i for i, c in zip(intents, got, strict=True) if c is None]
    if final and not p.steps:
        p.card = got[-1]
    return p


def _names(entities: list[CardEntity], entity_type: str) -> list[str]:
    from agentic_rag.planners.heuristic.context import bare

    return list(dict.fromkeys(bare(e.name) for e in entities if e.ref.entity_type == entity_type))[:NAMES_IN_QUERY]


def _attribute_query(a: Analysis, frontier: list[CardEntity]) -> StructuredQuery | None:
    if a.attr is None or not frontier:
        return None
    et = frontier[0].ref.entity_type
    names = _names(frontier, et)
    if not names or et not in NAME_FIELD:
        return None
    one = names[0]
    if a.attr == "first_episode":
        return _query({"entity_type": "episode", "where": [{"field": "anime", "op": "eq", "value": one},
                                                           {"field": "number", "op": "eq", "value": a.episode}],
                       "limit": 5})
    if a.attr == "count_studio":
        return _query({"entity_type": "anime", "where": [{"field": "studio", "op": "eq", "value": one}],
                       "aggregate": {"op": "count"}})
    if a.attr == "count_author":
        return _query({"entity_type": "manga", "where": [{"field": "author", "op": "eq", "value": one}],
                       "aggregate": {"op": "count"}})
    if a.attr in ("count_franchise", "franchise_works", "sum_franchise"):
        where: list[dict[str, Any]] = [{"field": "franchise", "op": "eq", "value": one}]
        if a.fmt:
            where.append({"field": "format", "op": "eq", "value": a.fmt})
        if a.attr == "franchise_works" and a.rank is not None:  # "which dragon ball series has the most episodes"
            return _ranked(a.counted, where, a.rank)
        if a.attr == "franchise_works":
            return _query({"entity_type": a.counted, "where": where, "limit": 50,
                           "order_by": [{"field": "year", "direction": "asc"}]})
        if a.attr == "sum_franchise":
            return _query({"entity_type": "anime", "where": where,
                           "aggregate": {"op": "sum", "field": "episode_count"}})
        return _query({"entity_type": a.counted, "where": where, "aggregate": {"op": "count"}})
    if a.attr == "count_characters" and et in ("anime", "manga"):
        return _query({"entity_type": "character", "where": [{"field": et, "op": "eq", "value": one}],
                       "aggregate": {"op": "count"}})
    if a.attr == "sum_volumes":
        where = [{"field": "title", "op": "in", "value": names}]
        if a.finished is not None:
            where.append({"field": "finished", "op": "eq", "value": a.finished})
        return _query({"entity_type": "manga", "where": where, "aggregate": {"op": "sum", "field": "volumes"}})
    if a.attr == "sum_episodes":
        where = [{"field": "title", "op": "in", "value": names}]
        if a.fmt:
            where.append({"field": "format", "op": "eq", "value": a.fmt})
        return _query({"entity_type": "anime", "where": where, "aggregate": {"op": "sum", "field": "episode_count"}})
    if a.attr == "count":
        return None  # counted from the last hop
    return _query({"entity_type": et, "where": [{"field": NAME_FIELD[et], "op": "in", "value": names}],
                   "limit": 20})


def _filter(a: Analysis, cards: list[ContextCard], p: Progress) -> Progress:
    f = a.filter
    assert f is not None
    if f.kind == "top" and f.group_by:
        q = _query({"entity_type": f.entity_type, "group_by": f.group_by, "aggregate": {"op": "count"},
                    "order_by": [{"field": "value", "direction": "desc"}], "limit": 3})
        return _need(p, cards, [q], final=True)
    where = list(f.where)
    if f.words:
        facets = [_query({"entity_type": f.entity_type, "group_by": g, "limit": 100})
                  for g in FACETS.get(f.entity_type, ())]
        _need(p, cards, facets, final=False)
        if p.steps:
            return p
        for g, fq in zip(FACETS.get(f.entity_type, ()), facets, strict=True):
            card = _card_for(cards, fq)
            values = [str(r.get("group_key")) for r in (card.data.get("rows", []) if card else [])
                      if isinstance(r, dict) and r.get("group_key")]
            for v in facet_matches(f.words, values):
                where.append({"field": g, "op": "contains" if g == "genres" else "eq", "value": v})
                p.facets.append(v)
        # two or more words that look like a name ("makoto shinkai films", "Vinland Saga") and match no facet
        # value name something the catalog lacks when nothing else narrows the list: no list of every film
        # answers them
        named = [x for x in f.words.split() if x[:1].isupper() or fold(x) not in english_words()]
        loose = all(c["field"] == "format" for c in f.where)
        if not p.facets and f.rank is None and (not f.where or (loose and len(named) >= 2)):
            p.missing.append(" ".join(named) if f.where else f.words)
            return p
    if f.count:
        count = _query({"entity_type": f.entity_type, "where": where[:_WHERE], "aggregate": {"op": "count"}})
        return _final(p, cards, count)
    if f.total:  # the sum, and in the same step the rows it adds up
        rows = _query({"entity_type": f.entity_type, "where": where[:_WHERE], "limit": LISTED,
                       "order_by": [{"field": "year", "direction": "asc"}]})
        p = _need(p, cards, [rows, _query({"entity_type": f.entity_type, "where": where[:_WHERE],
                                           "aggregate": {"op": "sum", "field": f.total}})], final=True)
        p.listing = _card_for(cards, rows)
        return p
    if f.rank is not None:  # "which finished TV anime has the most episodes": the top rows by that field
        return _need(p, cards, [_ranked(f.entity_type, where, f.rank)], final=True)
    q = _query({"entity_type": f.entity_type, "where": where[:_WHERE], "limit": 50,
                "order_by": [{"field": "founded" if f.entity_type == "studio" else "year", "direction": "asc"}]})
    return _need(p, cards, [q], final=True)
