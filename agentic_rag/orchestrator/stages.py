"""Retrieve, grade and observe: one step's intents run concurrently and become context cards.

A step carries at most :data:`~agentic_rag.protocol.MAX_BATCH` independent intents; they go to the retrieval
together (:meth:`~agentic_rag.orchestrator.retrieval.Retrieval.execute`: concurrently, and served, one call per
retriever deployment). A failing branch becomes a warning and an error event, never a failed run:
the other branches' cards are kept. The warning and the event say what failed in our
own words (a dead replica's or a driver's message goes to the server log, never to the client). Search
results are graded for relevance in ONE batched validator call; irrelevant items are dropped
from their cards.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from agentic_rag import tracing
from agentic_rag.orchestrator.cards import from_graph, from_query, from_search, from_similar
from agentic_rag.orchestrator.retrieval import Executed, Found, Retrieval
from agentic_rag.orchestrator.state import RunState, dependency_of, describe, failure_text, source_of, step_key
from agentic_rag.orchestrator.trajectory import EventType
from agentic_rag.protocol import (
    MAX_BATCH,
    BatchIntent,
    GradeReport,
    GraphIntent,
    NextStep,
    RetrievalResult,
    SearchIntent,
    SimilarIntent,
    StructuredQuery,
)
from agentic_rag.protocol.limits import max_len
from agentic_rag.protocol.roles import CardEntity, ContextCard, GradeInput, GradeItem, StepStatus
from agentic_rag.retrievers.dsl import QueryResult
from agentic_rag.settings import Settings

log = logging.getLogger(__name__)

TIMING = {"qdrant_search": "qdrant_ms", "pg_graph": "pg_graph_ms", "pg_query": "pg_query_ms", "similar": "similar_ms"}
EXECUTORS = {"qdrant_search": "the vector search", "pg_graph": "the graph retriever", "pg_query": "the catalog query",
             "similar": "the recommender"}
LOGGED_IDS = 20  # entity ids an observation event lists per card (its count says how many there were)
INTENT_IN_WARNING = 100  # characters of an intent's description in a failure warning, leaving room for why
GRADE_ITEMS = max_len(GradeInput, "items")
_SNIPPET = max_len(GradeItem, "snippet")
_SUMMARY = max_len(ContextCard, "summary")


class RunContext(Protocol):
    """What these stages need of a run (the loop's ``RunContext`` is one): its state, its settings, the retrieval
    seam, the trajectory, and the validator's grading and the planner's rewriting for when too little is relevant."""

    s: RunState
    settings: Settings

    @property
    def retrieval(self) -> Retrieval: ...

    async def event(self, stage: str, type_: EventType, payload: dict[str, Any],
                    latency_ms: float | None = None) -> None: ...

    async def grade(self, items: list[GradeItem]) -> GradeReport: ...

    async def rewrite_again(self) -> None: ...


async def run_step(run: RunContext, step: NextStep) -> bool:
    """Run a step's intents not executed before. False when there were none (the loop repeats itself)."""
    s = run.s
    intents = step.intents()[:MAX_BATCH]
    fresh = [i for i in intents if step_key(i) not in s.executed]
    if len(fresh) < len(intents):
        await run.event("select", "decision", {
            "loop_detected": [describe(i) for i in intents if step_key(i) in s.executed]})
    if not fresh:
        s.repeats += 1
        s.last_step = StepStatus(action=source_of(intents[0]), status="error", count=0,
                                 note="this exact step already ran: choose a different step, or finish")
        return False
    await retrieve(run, fresh)
    return True


async def retrieve(run: RunContext, intents: list[BatchIntent]) -> list[ContextCard]:
    """Execute intents together (one call to the retrieval, which runs them concurrently; the searches by meaning
    with the question's image, if one came with it), grade the searches, and add the cards to the context."""
    with tracing.span("retrieve", {"agentic_rag.intents": len(intents),
                                   "agentic_rag.sources": sorted({source_of(i) for i in intents})}) as span:
        cards = await _retrieve(run, intents)
        span.set_attributes({"agentic_rag.rows": sum(c.count for c in cards),
                             "agentic_rag.failed": len(intents) - len(cards)})
        return cards


async def _retrieve(run: RunContext, intents: list[BatchIntent]) -> list[ContextCard]:
    s = run.s
    intents = [s.attach_image(i) for i in intents]
    for intent in intents:
        # the image is kept out of the trajectory: its size and hash say which one was searched
        action: dict[str, Any] = {"source": source_of(intent),
                                  "intent": intent.model_dump(mode="json", exclude={"image_query"})}
        if isinstance(intent, SearchIntent) and intent.image_query is not None and s.image is not None:
            action["image"] = s.image.note()
        await run.event("retrieve", "action", action)
    outcomes = await run.retrieval.execute(intents)
    results = [await _observed(run, i, o) for i, o in zip(intents, outcomes, strict=True)]
    cards = await _grade(run, [(i, c) for i, c in zip(intents, results, strict=True) if c is not None])
    for intent in intents:
        s.executed.add(step_key(intent))
        s.tried.append(describe(intent))
    s.cards.extend(cards)
    found = sum(c.count for c in cards)
    failed = len(intents) - len(cards)
    status = "ok" if found else ("error" if failed == len(intents) else "empty")
    note = f"{failed} of {len(intents)} intents failed" if failed else (
        "" if found else "nothing found: broaden the search or change approach")
    s.last_step = StepStatus(action=source_of(intents[0]), status=status, count=found, note=note)
    if not found:
        s.failed_steps += 1
    await run.event("observe", "observation", {
        "cards": [{"source": c.source, "request": c.request, "count": c.count,
                   "ids": [e.ref.id for e in c.entities[:LOGGED_IDS]]} for c in cards],
        "status": status, "failed_steps": s.failed_steps,
    })
    return cards


def _card(turn: int, intent: BatchIntent, found: Found | None) -> ContextCard:
    """What an intent found, as a context card (a result of the wrong shape for the intent is a failure)."""
    if isinstance(intent, SearchIntent) and isinstance(found, RetrievalResult):
        return from_search(turn, intent, found)
    if isinstance(intent, GraphIntent) and isinstance(found, tuple):
        result, names = found
        return from_graph(turn, intent, result, names)
    if isinstance(intent, SimilarIntent) and isinstance(found, RetrievalResult):
        return from_similar(turn, intent, found)
    if isinstance(intent, StructuredQuery) and isinstance(found, QueryResult):
        return from_query(turn, intent, found)
    raise TypeError(f"{type(found).__name__} is not what {type(intent).__name__} finds")


async def _observed(run: RunContext, intent: BatchIntent, outcome: Executed) -> ContextCard | None:
    """One intent's card; a failure is reported (warning, trajectory, readiness), not raised, so its siblings'
    cards stand."""
    s = run.s
    source = source_of(intent)
    s.timings[TIMING[source]] += outcome.ms
    exc = outcome.error
    if exc is None:
        try:
            card = _card(s.turn, intent, outcome.found)
        except Exception as bad:  # a result no card can be made of: the step failed
            exc = bad
    if exc is not None:
        s.errors += 1
        s.degraded.add(dependency_of(source, exc))
        what = failure_text(EXECUTORS[source], exc)
        log.warning("%s failed (%s)", describe(intent), what, exc_info=exc)
        s.warn(f"{describe(intent)[:INTENT_IN_WARNING]} failed: {what}")
        await run.event("retrieve", "error", {"source": source, "error": what, "exception": type(exc).__name__},
                        latency_ms=outcome.ms)
        return None
    await run.event("retrieve", "observation", {"source": source, "count": card.count,
                                                "ids": [e.ref.id for e in card.entities[:LOGGED_IDS]]},
                    latency_ms=outcome.ms)
    return card


def _graded(intent: BatchIntent, card: ContextCard) -> bool:
    """Semantic searches are graded; fetches by id and graph or query results are exact already, and a search
    by an image is not for the validator to judge: it reads text and never sees the picture."""
    return isinstance(intent, SearchIntent) and not intent.filters.id and intent.image_query is None \
        and card.count > 0


async def _grade(run: RunContext, done: list[tuple[BatchIntent, ContextCard]]) -> list[ContextCard]:
    items: list[GradeItem] = []
    owner: list[tuple[int, CardEntity]] = []
    for n, (intent, card) in enumerate(done):
        if not _graded(intent, card):
            continue
        rows = [r for r in card.data.get("rows", []) if isinstance(r, dict)]
        snippets = {r.get("id"): str(r.get("snippet", "")) for r in rows}
        # an entry whose own prose shares the question's rare words (retrievers/prose.py: two at least) is relevant by
        # those words, whatever its snippet shows (a relation's detail is in the prose, not the snippet: Envy is
        # "Maes Hughes: his killer"); only what meaning alone found is graded
        worded = {r.get("id") for r in rows if r.get("text_words")}
        for e in card.entities:
            if len(items) < GRADE_ITEMS and e.ref.id not in worded:
                items.append(GradeItem(index=len(items), entity=e, snippet=snippets.get(e.ref.id, "")[:_SNIPPET]))
                owner.append((n, e))
    if not items:
        return [c for _, c in done]
    report = await run.grade(items)
    # an item the grader did not mention is kept: only an explicit "not relevant" drops a result
    dropped = {g.index for g in report.grades if not g.relevant and g.index < len(items)}
    drop_ids: dict[int, set[str]] = {}
    for index in dropped:
        n, e = owner[index]
        drop_ids.setdefault(n, set()).add(e.ref.id)
    cards = [_without(card, drop_ids.get(n, set())) for n, (_, card) in enumerate(done)]
    graded = [c for n, c in enumerate(cards) if _graded(done[n][0], done[n][1])]
    short = [c.count for c in graded if c.count < run.settings.agent_min_relevant]
    if short:
        # documented (docs/architecture.md, "Grading drops"): too few relevant results rewrite the query
        await run.event("grade", "decision", {"rewrite": "too few relevant results; rewriting the query",
                                              "relevant": short, "min_relevant": run.settings.agent_min_relevant})
        await run.rewrite_again()
    return cards


def _without(card: ContextCard, ids: set[str]) -> ContextCard:
    """The card with the graded-irrelevant entities removed from its entities, rows and summary."""
    if not ids:
        return card
    kept = [e for e in card.entities if e.ref.id not in ids]
    rows = [r for r in card.data.get("rows", []) if not (isinstance(r, dict) and r.get("id") in ids)]
    lines = card.summary.splitlines()
    body = [line for line in lines[1:] if not any(i in line for i in ids)]
    head = f"{len(kept)} relevant of {card.count} result(s) ({card.request}):" if kept else \
        f"No relevant result for {card.request} ({card.count} found, none relevant)."
    return card.model_copy(update={"entities": kept, "count": len(kept), "summary": "\n".join([head, *body])[:_SUMMARY],
                                   "data": {**card.data, "rows": rows, "dropped": len(ids)}})
