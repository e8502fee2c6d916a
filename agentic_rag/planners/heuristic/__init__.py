"""The heuristic model: all five roles, deterministic, no model at all.

It follows the same protocol as the LLM backends (it takes the role's typed input and returns the
requested contract), so the loop cannot tell the difference. It is the default when no
model is configured and the baseline the models are evaluated against.
"""

from __future__ import annotations

import time
from typing import TypeVar, cast

from pydantic import BaseModel

from agentic_rag.models.base import Generation, Usage
from agentic_rag.planners.heuristic.context import names_match, words
from agentic_rag.planners.heuristic.planner import select
from agentic_rag.planners.heuristic.writer import draft
from agentic_rag.protocol import DocumentGrade, GradeReport, QueryRewrite, RetrievalMode, SufficiencyReport
from agentic_rag.protocol.limits import max_len
from agentic_rag.protocol.reading import Analysis
from agentic_rag.protocol.roles import (
    DraftInput,
    GradeInput,
    RewriteInput,
    RoleInput,
    SelectInput,
    ValidateInput,
    role_of,
)
from agentic_rag.protocol.vocabulary import EDGE_TYPE_BY_NAME
from agentic_rag.understanding.reading import reading_of

T = TypeVar("T", bound=BaseModel)
MODE: dict[str, RetrievalMode] = {"relation": "hybrid", "compare": "hybrid", "lookup": "vector", "chain": "hybrid",
                                  "attribute": "hybrid", "aggregate": "hybrid", "filter": "graph"}
SNIPPET_CHARS = 200  # characters of an item's snippet whose words count toward its relevance
_REWRITTEN = max_len(QueryRewrite, "rewritten_query")
_MENTIONS = max_len(QueryRewrite, "mentions")
_MENTION = max_len(QueryRewrite, "mentions", item=True)
_MISSING = max_len(SufficiencyReport, "missing")
_MISSING_ITEM = max_len(SufficiencyReport, "missing", item=True)


def rewrite(inp: RewriteInput) -> QueryRewrite:
    a = reading_of(inp)
    question = " ".join(inp.question.split())[:_REWRITTEN] or "?"
    return QueryRewrite(rewritten_query=question, needs_external_context=True,
                        retrieval_mode=MODE.get(a.intent, "hybrid"),
                        mentions=[m[:_MENTION] for m in a.mentions][:_MENTIONS], rationale=f"{a.intent} question")


def _said(text: str) -> set[str]:
    """The words of ``text``, a possessive said as its name ("Jet's arm": jet)."""
    return {w[:-2] if w.endswith("'s") else w for w in words(text)}


def grade(inp: GradeInput) -> GradeReport:
    a = reading_of(inp)
    asked = set().union(*(_said(m) for m in a.mentions)) if a.mentions else _said(inp.question)
    # lenient on purpose: resolution (context.resolve) is the strict test of what a mention names
    return GradeReport(grades=[
        DocumentGrade(index=item.index, relevant=any(names_match(m, item.entity) for m in a.mentions)
                      or bool(asked & _said(item.entity.name)) or bool(asked & _said(item.snippet[:SNIPPET_CHARS])))
        for item in inp.items
    ])


def answer_types(a: Analysis) -> set[str]:
    """The entity types the answer of a chain question can be: where its last hop leads (none: any)."""
    if a.attr is not None or not a.hops or a.intent != "chain":
        return set()
    last = a.hops[-1]
    # who a record describes beside the name, searched before the chain the encoder read (which is the fallback)
    described = set(a.described) if a.mentions else set()
    if last.node_types:
        return set(last.node_types) | described
    types = {t for e in last.edges if e in EDGE_TYPE_BY_NAME for t in EDGE_TYPE_BY_NAME[e].dst} | described
    # an original anime comes from no manga: the people who created it are where it comes from
    return types | {"person"} if last.edges == ("adapted_from",) else types


def validate(inp: ValidateInput) -> SufficiencyReport:
    d = inp.draft
    a = reading_of(inp)
    # an answer that neither names nor rests on the kind of entity asked (a character where the question asks
    # who directed) answers nothing yet
    if d.only_unrecorded and (d.source_entities or a.unrecorded):
        # the record asked about is found and the value or relation asked is not in it: nothing more will be
        return SufficiencyReport(sufficient=True, rationale="the catalog has the record, not what is asked of it")
    wanted = answer_types(a)
    quoted = {e.ref.id for c in inp.cards if c.data.get("quote") for e in c.entities}
    if wanted and d.result_entities and all(e.id in quoted for e in d.result_entities) and d.confidence >= 0.6:
        # what the graph does not record, said by the record's own sentence nearest the question (a work's synopsis
        # saying who it is about): all the catalog holds
        return SufficiencyReport(sufficient=True, rationale="the record's own words are all the catalog says of it")
    if wanted and d.result_entities and not any(e.entity_type in wanted
                                                for e in (*d.result_entities, *d.source_entities)):
        return SufficiencyReport(sufficient=False, rationale="the draft's answer is not the kind of entity asked",
                                 missing=[f"the {' or '.join(sorted(wanted))} the question asks for"])
    if d.result_entities and d.confidence >= 0.6:
        return SufficiencyReport(sufficient=True, rationale="the draft names its answer entities from context")
    if d.confidence >= 0.8 and d.evidence.facts:
        return SufficiencyReport(sufficient=True, rationale="the draft states the asked value from context")
    found = {e.id for e in d.source_entities}
    named = [m for m in a.mentions if not any(names_match(m, e) for c in inp.cards for e in c.entities
                                              if e.ref.id in found)]
    what = a.intent.replace("_", " ")
    missing = named or ([f"the {what} of {' and '.join(a.mentions)}"] if a.mentions else ["an answer to the question"])
    return SufficiencyReport(sufficient=False, rationale="the draft does not answer the question yet",
                             missing=[m[:_MISSING_ITEM] for m in missing][:_MISSING])


class HeuristicModel:
    """A :class:`~agentic_rag.models.base.StructuredModel` that plays every role without a model."""

    name = "heuristic"

    async def generate(self, inp: RoleInput, output_type: type[T], *, max_tokens: int = 512,
                       temperature: float = 0.0) -> Generation[T]:
        t0 = time.perf_counter()
        role_of(inp, output_type)
        out: BaseModel
        if isinstance(inp, RewriteInput):
            out = rewrite(inp)
        elif isinstance(inp, SelectInput):
            out = select(inp)
        elif isinstance(inp, DraftInput):
            out = draft(inp)
        elif isinstance(inp, GradeInput):
            out = grade(inp)
        else:
            out = validate(inp)
        return Generation(output=cast(T, out), usage=Usage(attempts=1, latency_ms=(time.perf_counter() - t0) * 1000))


__all__ = ["HeuristicModel", "draft", "grade", "rewrite", "select", "validate"]
