"""Scoring: per-question judgments and the per-type report. Pure functions, no I/O.

Definitions (what the report's numbers mean):

- **answer accuracy**: a question is correct when the run's status equals ``expect_status`` and,
  unless a clarification was expected, every ``answer_contains`` string occurs in the answer.
  Matching ignores case and accents ("Saitō" matches "saito"). An errored run is incorrect.
- **entity recall**: per question, the share of its gold entities with an id among the run's
  result or source entities; the mean over the questions that have gold entities (questions
  without any are left out, so a type with none reports ``None``).
- **turns**, **latency p50/p95**: over runs that did not error. Percentiles interpolate linearly
  between closest ranks (numpy's default method, Hyndman-Fan type 7).
- **clarification rate**: the share of runs that asked the user to clarify.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agentic_rag.eval.questions import QUESTION_TYPES, EvalQuestion, GoldKey
from agentic_rag.protocol import ResponseStatus

OutcomeStatus = ResponseStatus | Literal["error"]


class QuestionOutcome(BaseModel):
    """What one run produced for one question."""

    model_config = ConfigDict(frozen=True)

    question: EvalQuestion
    status: OutcomeStatus = Field(description="The response status, or 'error' when the run raised.")
    answer: str = Field("", description="The answer text.")
    result_entities: list[str] = Field(default_factory=list, description="Ids of the primary result entities.")
    source_entities: list[str] = Field(default_factory=list, description="Ids of the entities the answer used.")
    turns: int = Field(0, ge=0, description="Loop turns the run took.")
    latency_ms: float = Field(0.0, ge=0.0, description="Wall time of the run.")
    clarification_asked: bool = Field(False, description="The run asked the user to choose a reading.")
    error: str | None = Field(None, description="The error message when status is 'error'.")


class TypeMetrics(BaseModel):
    """The scores of one question type (or of all questions)."""

    model_config = ConfigDict(frozen=True)

    n: int = Field(description="Questions scored.")
    correct: int = Field(description="Questions answered correctly.")
    accuracy: float = Field(description="correct / n.")
    entity_recall: float | None = Field(description="Mean gold-entity recall; None when no question has gold.")
    mean_turns: float | None = Field(description="Mean loop turns of the runs that did not error.")
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    clarification_rate: float = Field(description="Share of runs that asked for clarification.")
    errors: int = Field(0, description="Runs that raised instead of answering.")


class Failure(BaseModel):
    """A question judged incorrect, and why."""

    model_config = ConfigDict(frozen=True)

    id: str
    type: str
    reason: str


class EvalReport(BaseModel):
    """The result of an evaluation run."""

    model_config = ConfigDict(frozen=True)

    mode: str = Field(description="How the questions were answered, e.g. 'agentic' or 'linear'.")
    n: int = Field(description="Questions scored.")
    overall: TypeMetrics
    per_type: dict[str, TypeMetrics] = Field(description="Scores per question type, in the canonical type order.")
    failures: list[Failure] = Field(default_factory=list, description="Incorrect questions, in input order.")


def fold(text: str) -> str:
    """Case- and accent-insensitive form used for answer matching."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) by linear interpolation between closest ranks; None if empty."""
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be within 0..100, got {q}")
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def judge(outcome: QuestionOutcome) -> str | None:
    """None when the outcome is correct, else the reason it is not."""
    q = outcome.question
    if outcome.status == "error":
        return f"error: {outcome.error or 'unknown error'}"
    reasons: list[str] = []
    if outcome.status != q.expect_status:
        reasons.append(f"status {outcome.status!r}, expected {q.expect_status!r}")
    if q.expect_status != "needs_clarification":
        answer = fold(outcome.answer)
        lacking = [s for s in q.answer_contains if fold(s) not in answer]
        if lacking:
            reasons.append("answer lacks " + ", ".join(repr(s) for s in lacking))
        named = sum(fold(s) in answer for s in q.answer_any)
        if q.answer_any and named < q.min_any:
            reasons.append(f"answer names {named} of the acceptable {len(q.answer_any)}, fewer than {q.min_any}")
    return "; ".join(reasons) or None


def question_recall(outcome: QuestionOutcome, gold: Mapping[GoldKey, Sequence[str]]) -> float | None:
    """Share of the question's gold entities found among the run's entities; None without gold."""
    entities = outcome.question.gold_entities
    if not entities:
        return None
    found = set(outcome.result_entities) | set(outcome.source_entities)
    hits = 0
    for g in entities:
        if g.key not in gold:
            raise ValueError(f"{outcome.question.id}: gold entity {g.entity_type}:{g.name!r} was not resolved")
        hits += any(i in found for i in gold[g.key])
    return hits / len(entities)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _metrics(outcomes: Sequence[QuestionOutcome], gold: Mapping[GoldKey, Sequence[str]]) -> TypeMetrics:
    ran = [o for o in outcomes if o.status != "error"]
    recalls = [r for o in outcomes if (r := question_recall(o, gold)) is not None]
    correct = sum(judge(o) is None for o in outcomes)
    latencies = [o.latency_ms for o in ran]
    n = len(outcomes)
    return TypeMetrics(
        n=n,
        correct=correct,
        accuracy=correct / n if n else 0.0,
        entity_recall=_mean(recalls),
        mean_turns=_mean([float(o.turns) for o in ran]),
        latency_p50_ms=percentile(latencies, 50),
        latency_p95_ms=percentile(latencies, 95),
        clarification_rate=sum(o.clarification_asked for o in outcomes) / n if n else 0.0,
        errors=n - len(ran),
    )


def compute_report(
    outcomes: Sequence[QuestionOutcome], gold: Mapping[GoldKey, Sequence[str]], *, mode: str
) -> EvalReport:
    """Score ``outcomes`` per question type and overall.

    ``gold`` maps each gold entity to its ids (see :func:`agentic_rag.eval.resolve_gold`); a gold
    entity missing from it is a ``ValueError``, so an unresolved name cannot pass as a miss.
    """
    by_type: dict[str, list[QuestionOutcome]] = {}
    for o in outcomes:
        by_type.setdefault(o.question.type, []).append(o)
    per_type = {t: _metrics(by_type[t], gold) for t in QUESTION_TYPES if t in by_type}
    failures = [
        Failure(id=o.question.id, type=o.question.type, reason=reason)
        for o in outcomes
        if (reason := judge(o)) is not None
    ]
    return EvalReport(mode=mode, n=len(outcomes), overall=_metrics(outcomes, gold), per_type=per_type,
                      failures=failures)
