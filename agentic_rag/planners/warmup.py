"""A model's warm-up: one call of each kind its role makes, before it takes a question.

A model replica is ready only once its weights are loaded, its first forward passes have run (torch picks its
kernels and allocates its caches then) and its output constraints are built (xgrammar's tokenizer tables, each
schema's grammar). Without a warm-up the first user's question pays for all of it: 30 s for SmolLM2 on a 2-core
machine, past the loop's deadline. The inputs are a fixed question's, built by the heuristic (which needs no
catalog), so every call has the shape a run's calls have.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from pydantic import BaseModel

from agentic_rag.models.base import GenerationError, ModelRole, StructuredModel
from agentic_rag.planners.heuristic import HeuristicModel
from agentic_rag.protocol import DraftAnswer, EntityRef, GradeReport, NextStep, QueryRewrite, SufficiencyReport
from agentic_rag.protocol.roles import (
    CardEntity,
    DraftInput,
    GradeInput,
    GradeItem,
    RewriteInput,
    RoleInput,
    SelectInput,
    ValidateInput,
)

log = logging.getLogger(__name__)

QUESTION = "who directed Death Note?"
# a made-up entity for the grader to judge: the warm-up never reads the catalog
_ENTITY = CardEntity(ref=EntityRef(entity_type="anime", id="00000000-0000-4000-8000-000000000001"), name="Death Note",
                     detail="2006")
MAX_TOKENS = 64  # enough to run the constraint through a few states; a warm-up's output is thrown away


@dataclass(frozen=True)
class WarmUpCall:
    """How one warm-up call went."""

    output: str
    ok: bool
    ms: float
    error: str = ""


async def _calls(role: ModelRole) -> list[tuple[RoleInput, type[BaseModel]]]:
    """The role's calls for :data:`QUESTION`, each with the input a run would give it."""
    h = HeuristicModel()
    rewrite = (await h.generate(RewriteInput(question=QUESTION), QueryRewrite)).output
    if role == "planner":
        return [(RewriteInput(question=QUESTION), QueryRewrite),
                (SelectInput(question=QUESTION, rewrite=rewrite, turn=0, max_turns=4), NextStep),
                (DraftInput(question=QUESTION, rewrite=rewrite), DraftAnswer)]
    draft = (await h.generate(DraftInput(question=QUESTION, rewrite=rewrite), DraftAnswer)).output
    return [(GradeInput(question=QUESTION, items=[GradeItem(index=0, entity=_ENTITY, snippet="A 2006 anime.")]),
             GradeReport),
            (ValidateInput(question=QUESTION, rewrite=rewrite, draft=draft), SufficiencyReport)]


async def warm_up(model: StructuredModel, role: ModelRole) -> list[WarmUpCall]:
    """One call of each kind ``role`` makes, on ``model``. A call that gives no valid output is reported, not
    raised: a warm-up is for the machinery (weights, kernels, grammars), and a real run's failed call falls back to
    the heuristic anyway. Anything else the model raises (it cannot run at all) is raised."""
    done: list[WarmUpCall] = []
    for inp, output_type in await _calls(role):
        t0 = time.perf_counter()
        try:
            await model.generate(inp, output_type, max_tokens=MAX_TOKENS)
            done.append(WarmUpCall(output_type.__name__, True, (time.perf_counter() - t0) * 1000))
        except GenerationError as exc:  # no valid output within the attempts
            done.append(WarmUpCall(output_type.__name__, False, (time.perf_counter() - t0) * 1000, str(exc)[:200]))
    log.info("warm-up of the %s model %s: %s", role, model.name,
             ", ".join(f"{c.output} {c.ms:.0f} ms{'' if c.ok else ' (no valid output)'}" for c in done))
    return done
