"""The answer for the entities a model picked: the model's choice, in the writer's sentences.

A model planner's draft role decides what to say: which of the entities its steps found answer the question
(a compact form's picks, a full-style draft's ``result_entities``). It does not write the words: a small model
handed its context copies the cards' lines ("animated_by: Madhouse (studio)", "Luffy --teammate--> Nami"),
which no person writes. :func:`write` says the picks with the heuristic writer's own sentences, each by the step
that found it: a relation step's sentence ("Cowboy Bebop was animated by Sunrise."), a path as a chain of
relations, a comparison field by field, a record's asked values or what the entity is. The picks are model
output, so they are checked against the context first: when one is no entity the cards hold, every pick is
refused and the writer's own answer (:func:`~agentic_rag.planners.heuristic.writer.draft`) stands.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentic_rag.planners.heuristic.context import bare, qualifiers
from agentic_rag.planners.heuristic.sentences import (
    attribute_sentence,
    compare_sentence,
    fact_sentence,
    hop_sentence,
    path_sentence,
)
from agentic_rag.planners.heuristic.writer import ATTRS, about, draft
from agentic_rag.protocol import DraftAnswer, EntityRef, Evidence, GraphPath
from agentic_rag.protocol.limits import max_len
from agentic_rag.protocol.reading import Analysis, Hop
from agentic_rag.protocol.roles import CardEntity, ContextCard, DraftInput
from agentic_rag.understanding.reading import reading_of

PICKED_CONFIDENCE = 0.8  # a compact form's picks: the model's choice, said from the context
NOT_ANSWERED = "The context found so far does not answer the question."
MAX_PATHS_SAID = 3  # paths of a connection an answer says
COMPARED = ("year", "episode_count", "volumes", "studios", "authors")  # what works are compared by, when unasked
# Where a pick is best said from, by the kind of step that found it: as the end of a relation (what a
# relation step found), in a connection or comparison, by its record, by a search hit, as a relation's start.
_RELATION, _PAIR, _RECORD, _HIT, _START = range(5)
_ANSWER = max_len(DraftAnswer, "answer")
_ENTITIES = min(max_len(DraftAnswer, "source_entities"), max_len(DraftAnswer, "result_entities"))
_PATHS = max_len(Evidence, "paths")
_FACTS, _FACT = max_len(Evidence, "facts"), max_len(Evidence, "facts", item=True)
_CITATIONS, _CITATION = max_len(DraftAnswer, "citations"), max_len(DraftAnswer, "citations", item=True)


def context_ids(cards: Sequence[ContextCard]) -> set[str]:
    """The entities the cards hold: the only ones a pick may name."""
    return {e.ref.id for c in cards for e in c.entities}


def write(inp: DraftInput, picks: Sequence[EntityRef], *, confidence: float = PICKED_CONFIDENCE) -> DraftAnswer:
    """The draft for ``picks`` (the entities a model says answer the question, best first), in sentences.

    No pick: the model found nothing that answers, said so. A pick the cards do not hold: refused, the
    heuristic writer's own answer instead. The writer's own choice: its own answer (it says the chain that
    led there). Anything else: each pick said by the step that found it."""
    chosen = list(dict.fromkeys(p.id for p in picks))
    if not chosen:
        return DraftAnswer(answer=NOT_ANSWERED, confidence=min(confidence, 0.1))
    own = draft(inp)
    if not set(chosen) <= context_ids(inp.cards) or set(chosen) == {r.id for r in own.result_entities}:
        return own
    return _said(inp, reading_of(inp), chosen, confidence)


def _standing(card: ContextCard, entity_id: str) -> int:
    if card.source == "pg_graph" and card.data.get("kind") in ("neighbors", "k_hop"):
        return _START if entity_id == card.data.get("start") else _RELATION
    if card.source == "pg_graph":
        return _PAIR
    return _RECORD if card.source == "pg_query" else _HIT


def _home(cards: list[ContextCard], entity_id: str) -> int:
    """The card a pick is said from: the best standing it has in any, the latest such card."""
    held = [(_standing(c, entity_id), -n) for n, c in enumerate(cards)
            if any(e.ref.id == entity_id for e in c.entities)]
    return -min(held)[1]


def _said(inp: DraftInput, a: Analysis, chosen: list[str], confidence: float) -> DraftAnswer:
    cards = [c for c in inp.cards if c.source != "request"]  # an attached image's card found nothing
    named: dict[str, CardEntity] = {}
    for c in cards:
        for e in c.entities:
            named.setdefault(e.ref.id, e)
    for m in inp.links.mentions if inp.links is not None else []:  # a step's start, by the name linking found
        for cand in m.candidates:
            named.setdefault(cand.entity.id, CardEntity(ref=cand.entity, name=cand.name))
    homes: dict[int, list[CardEntity]] = {}
    for i in chosen:
        homes.setdefault(_home(cards, i), []).append(named[i])
    lines: list[str] = []
    sources: list[EntityRef] = []
    paths: list[GraphPath] = []
    total = 0
    for n in sorted(homes):
        card, members = cards[n], homes[n]
        if card.source == "pg_graph" and card.data.get("kind") in ("neighbors", "k_hop"):
            start = named.get(str(card.data.get("start")))
            ends = [e for e in members if start is None or e.ref.id != start.ref.id]
            if start is not None and ends:
                lines += _relation(a, card, start, ends)
                sources.append(start.ref)
                paths += [p for p in card.paths if p.nodes[-1].id in {e.ref.id for e in ends}]
                answers = {e.ref.id for e in card.entities} - {start.ref.id}
                total += card.count if answers <= {e.ref.id for e in ends} else len(ends)
                members = [e for e in members if e not in ends]
        elif card.source == "pg_graph" and (said := _pair(a, card, named)):
            lines += said
            paths += card.paths[:MAX_PATHS_SAID]
            members = []
        lines += [_record(inp, a, card, e) for e in members]
        # a pick a relation or comparison said: the values the question asks of it too, from any record of it
        lines += [v for e in homes[n] if e not in members for v in _values(a, e, _rows(inp.cards, e.ref.id))]
    if a.attr is not None and a.attr.startswith("count") and total:
        lines.append(f"That is {total} in total.")
    refs = [named[i].ref for i in chosen]
    cited = [bare(e.name) for e in [*(named[s.id] for s in sources), *(named[i] for i in chosen)]]
    return DraftAnswer(
        answer=" ".join(dict.fromkeys(lines))[:_ANSWER], result_entities=refs[:_ENTITIES], confidence=confidence,
        source_entities=list(dict.fromkeys([*sources, *refs]))[:_ENTITIES],
        evidence=Evidence(paths=paths[:_PATHS], facts=[f[:_FACT] for f in lines][:_FACTS]),
        citations=[c[:_CITATION] for c in dict.fromkeys(cited)][:_CITATIONS])


def _relation(a: Analysis, card: ContextCard, start: CardEntity, ends: list[CardEntity]) -> list[str]:
    """What a relation step found, one sentence per relation, as the question's own hop says it (its roles,
    "the latest") when the question asks for that relation."""
    edges: list[str] = list(card.data.get("edge_types") or [])
    rel_of = {p.nodes[-1].id: p.rels[-1] for p in card.paths if p.rels}
    by_rel: dict[str, list[CardEntity]] = {}
    for e in ends:
        by_rel.setdefault(edges[0] if len(edges) == 1 else rel_of.get(e.ref.id, "related"), []).append(e)
    asked = [h for x in (a, *a.more) for h in x.hops]
    details = {str(k): str(v) for k, v in (card.data.get("meta", {}).get("details") or {}).items()}
    out = []
    for rel, level in by_rel.items():
        hop = next((h for h in asked if h.edges[:1] == (rel,)), None)
        if hop is None or (hop.roles and not all(set(hop.roles) & qualifiers(details.get(e.ref.id, ""))
                                                 for e in level)):
            # a pick the question's roles do not describe ("main" for a supporting character): said plainly
            hop = Hop(edges=(rel,), kind=str(card.data.get("kind")))
        out.append(hop_sentence(hop, [start], level, details))
    return out


def _pair(a: Analysis, card: ContextCard, named: dict[str, CardEntity]) -> list[str]:
    """A connection (its people's relations, then its paths) or a comparison (the asked field, else the ones
    works are compared by)."""
    name = {i: bare(e.name) for i, e in named.items()}
    meta: dict[str, Any] = card.data.get("meta", {})
    if card.data.get("kind") == "compare":
        left, right = meta.get("a", {}), meta.get("b", {})
        x, y = name.get(str(card.data.get("start")), "the first"), name.get(str(card.data.get("end")), "the second")
        asked = a.compare_field
        fields = [asked] if asked is not None and asked in left else [f for f in COMPARED if f in left] or [
            f for f in left if f not in ("name", "id")]
        return [compare_sentence(f, x, y, left.get(f), right.get(f)) for f in fields]
    said = [s for f in meta.get("facts", []) if (s := fact_sentence(str(f)))]
    chains = [path_sentence([name.get(n.id, n.id) for n in p.nodes], list(p.rels)) for p in card.paths]
    return said[:2] + chains[:MAX_PATHS_SAID]


def _rows(cards: Sequence[ContextCard], entity_id: str) -> list[dict[str, Any]]:
    return [r for c in cards for r in c.data.get("rows", []) if isinstance(r, dict) and r.get("id") == entity_id]


def _values(a: Analysis, entity: CardEntity, rows: list[dict[str, Any]]) -> list[str]:
    """The values the question asks of ``entity`` (its episode count, its year, ...), each from the first of
    ``rows`` that records it."""
    said = []
    for attr in dict.fromkeys(x for x in (a.attr, *a.also) if x in ATTRS):
        row = next((r for r in rows if r.get(attr) not in (None, "", [])), None)
        if row is not None:
            said.append(attribute_sentence(attr, row, entity.ref.entity_type))
    return said


def _record(inp: DraftInput, a: Analysis, card: ContextCard, entity: CardEntity) -> str:
    """One entity by its record: the values the question asks of it (its own card's row first), else what it
    is (from a search hit, whose row holds its story, where a step found one)."""
    rows = _rows([card], entity.ref.id) + _rows(inp.cards, entity.ref.id)
    if said := _values(a, entity, rows):
        return " ".join(said)
    return about(inp, entity)
