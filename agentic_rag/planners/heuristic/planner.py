"""The heuristic planner's select role: run what :func:`~agentic_rag.planners.heuristic.progress.progress`
says is missing (resolving searches, graph hops, the final structured query), as one bounded batch
of independent intents per turn, then finish. A name no searched type matches ends the run with an
explicit not-found; nothing is ever asked twice, because progress is read from the cards.
"""

from __future__ import annotations

from agentic_rag.planners.heuristic.context import norm
from agentic_rag.planners.heuristic.pictured import image_attached, image_search, searched_by_image
from agentic_rag.planners.heuristic.progress import (
    describe_search,
    described_start,
    progress,
    searched_by_meaning,
    unknown_names,
)
from agentic_rag.protocol import MAX_BATCH, GraphIntent, NextStep, SearchIntent, SimilarIntent, StructuredQuery
from agentic_rag.protocol.limits import max_len
from agentic_rag.protocol.roles import SelectInput
from agentic_rag.understanding.reading import reading_of

_RATIONALE = max_len(NextStep, "rationale")


def finish(why: str) -> NextStep:
    return NextStep(action="finish", rationale=why[:_RATIONALE])


def select(inp: SelectInput) -> NextStep:
    a = reading_of(inp)
    if not a.mentions and a.filter is None and image_attached(inp.cards):
        # "what anime is this from?": the question is about the attached image
        if searched_by_image(inp.cards):
            return finish("searched by the attached image")
        search = image_search(inp.question)
        return NextStep(action="qdrant_search", rationale=search.rationale, search_intent=search)
    if a.among is not None and not a.mentions:
        return finish("none of the names listed is in the catalog")
    if not a.mentions and a.filter is None and a.recommend is None:
        # no name linked: search by meaning, once, in the collections a description usually names; but a
        # question naming something the catalog lacks ("who is Satoshi Kon?") is no description
        if not searched_by_meaning(inp.cards):
            # a word no dictionary knows names something ("who is naoko yamada?"), unless it is in a description
            if not a.description and (unknown := unknown_names(inp.question)):
                return finish(f"no catalog entity matches {' '.join(unknown)}")
            search, *others = describe_search(a.description or inp.question)
            return NextStep(action="qdrant_search", rationale=search.rationale, search_intent=search, also=others)
        if described_start(a, inp.cards) is None:
            return finish("no name in the question is in the catalog; searched by meaning")
        # the description picked out an entry: what the question asks of it, below
    # a question in parts: the steps of every part, in one batch where they fit
    ps = [progress(x, inp.cards, inp.question) for x in (a, *a.more)]
    if missing := [m for p in ps for m in p.missing]:
        return finish(f"no catalog entity matches {', '.join(dict.fromkeys(missing))}")
    steps = list({s.model_dump_json(): s for p in ps for s in p.steps}.values())[:MAX_BATCH]
    if not steps:
        return finish("the context holds what the question asks")
    first, *rest = steps
    why = first.rationale
    if isinstance(first, SearchIntent):
        return NextStep(action="qdrant_search", rationale=why, search_intent=first, also=rest)
    if isinstance(first, GraphIntent):
        return NextStep(action="pg_graph", rationale=why, graph_intent=first, also=rest)
    if isinstance(first, SimilarIntent):
        return NextStep(action="similar", rationale=why, similar_intent=first, also=rest)
    assert isinstance(first, StructuredQuery)
    return NextStep(action="pg_query", rationale=why, structured_query=first, also=rest)


__all__ = ["norm", "select"]
