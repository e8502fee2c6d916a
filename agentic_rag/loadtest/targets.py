"""A target file: the objectives a load test must meet, so that a run can gate a release.

::

    objectives:
      - {metric: p95_ms, max: 10000, concurrency: 64, lane: search_ai}
      - {metric: error_rate, max: 0}
    min_replicas_reached: {Orchestrator: 2}
    max_replicas_at_end: {Orchestrator: 1}

An objective without ``concurrency`` or ``rate`` applies to every step. Missing evidence fails: an
objective whose step did not run, a latency with no successful request, or a replica objective when
replica counts could not be read from Serve.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agentic_rag.loadtest.records import ReplicaTimeline
from agentic_rag.loadtest.stats import LaneSummary, StepSummary

Metric = Literal["p50_ms", "p95_ms", "p99_ms", "mean_ms", "max_ms", "error_rate", "errors", "throughput_rps",
                 "ok_rps", "turns_mean"]
LATENCY: frozenset[str] = frozenset({"p50_ms", "p95_ms", "p99_ms", "mean_ms", "max_ms"})


class Objective(BaseModel):
    """One bound on one metric, at some or all steps, for one lane or both."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    metric: Metric
    max: float | None = Field(None, description="The metric must be at most this.")
    min: float | None = Field(None, description="The metric must be at least this.")
    concurrency: int | None = Field(None, ge=1, description="Only the closed-loop step with this many users.")
    rate: float | None = Field(None, gt=0, description="Only the open-loop step at this rate.")
    lane: Literal["all", "search_ai", "search"] = Field("all", description="Which requests: both lanes, or one.")

    @model_validator(mode="after")
    def _bounded(self) -> Objective:
        if self.max is None and self.min is None:
            raise ValueError(f"objective {self.metric}: give max, min or both")
        if self.concurrency is not None and self.rate is not None:
            raise ValueError(f"objective {self.metric}: give concurrency or rate, not both")
        return self

    def describe(self) -> str:
        bounds = " and ".join(b for b in (f"<= {self.max:g}" if self.max is not None else "",
                                          f">= {self.min:g}" if self.min is not None else "") if b)
        where = (f" at concurrency {self.concurrency}" if self.concurrency is not None
                 else f" at rate {self.rate:g}/s" if self.rate is not None else " at every step")
        lane = "" if self.lane == "all" else f" ({self.lane})"
        return f"{self.metric}{lane} {bounds}{where}"

    def applies_to(self, step: StepSummary) -> bool:
        if self.concurrency is not None:
            return step.mode == "closed" and step.users == self.concurrency
        if self.rate is not None:
            return step.mode == "open" and step.rate is not None and abs(step.rate - self.rate) < 1e-9
        return True

    def value(self, step: StepSummary) -> float | None:
        lane: LaneSummary = step if self.lane == "all" else step.lanes[self.lane]
        if self.metric in LATENCY:
            return getattr(lane.latency, self.metric)  # type: ignore[no-any-return]
        if self.metric == "turns_mean":
            return step.turns.mean if step.turns else None
        return float(getattr(lane, self.metric))

    def holds(self, value: float) -> bool:
        return (self.max is None or value <= self.max) and (self.min is None or value >= self.min)


class Targets(BaseModel):
    """The objectives of a target file."""

    model_config = ConfigDict(extra="forbid")

    objectives: list[Objective] = Field(default_factory=list)
    min_replicas_reached: dict[str, int] = Field(
        default_factory=dict, description="Deployment -> RUNNING replicas it must reach at some point.")
    max_replicas_at_end: dict[str, int] = Field(
        default_factory=dict, description="Deployment -> RUNNING replicas it may have at the end (scaled back in).")


class TargetResult(BaseModel):
    objective: str
    passed: bool
    observed: str = Field(description="What was measured, for people.")


class TargetReport(BaseModel):
    passed: bool
    results: list[TargetResult]


def load_targets(path: Path) -> Targets:
    """Read and validate a target file; a ValueError names the file and what is wrong."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        return Targets.model_validate(raw or {})
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: not YAML: {exc}") from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "file"
        raise ValueError(f"{path}: {where}: {first['msg']}") from exc


def _fmt(value: float | None) -> str:
    return "none" if value is None else f"{value:.6g}"


def _objective(obj: Objective, steps: list[StepSummary]) -> TargetResult:
    chosen = [s for s in steps if obj.applies_to(s)]
    if not chosen:
        return TargetResult(objective=obj.describe(), passed=False, observed="no such step was run")
    values = {s.label: obj.value(s) for s in chosen}
    passed = all(v is not None and obj.holds(v) for v in values.values())
    return TargetResult(objective=obj.describe(), passed=passed,
                        observed=", ".join(f"{label}: {_fmt(v)}" for label, v in values.items()))


def _replicas(kind: str, wanted: dict[str, int], seen: dict[str, int], timeline: ReplicaTimeline) -> list[TargetResult]:
    out: list[TargetResult] = []
    for deployment, n in wanted.items():
        reached = kind == "min_replicas_reached"
        text = f"{deployment} replicas {'reach' if reached else 'at the end'} {'>=' if reached else '<='} {n}"
        if not timeline.available:
            out.append(TargetResult(objective=text, passed=False,
                                    observed=f"replica counts unavailable: {timeline.reason or 'no samples'}"))
            continue
        got, missing = _count(deployment, seen)
        passed = got is not None and (got >= n if reached else got <= n)
        label = "peak" if reached else "final"
        out.append(TargetResult(objective=text, passed=passed,
                                observed=f"{label} {got}" if got is not None else missing))
    return out


def _count(deployment: str, seen: dict[str, int]) -> tuple[int | None, str]:
    """The replicas of ``deployment`` as a target file names it: exactly, or bare when several applications run
    (the sampler then names each ``app:deployment``) and exactly one of them has a deployment of that name."""
    if deployment in seen:
        return seen[deployment], ""
    named = sorted(k for k in seen if ":" not in deployment and k.split(":", 1)[-1] == deployment)
    if len(named) == 1:
        return seen[named[0]], ""
    if named:
        return None, f"ambiguous: {', '.join(named)}; name one as application:deployment"
    return None, "no such deployment"


def check(targets: Targets, steps: list[StepSummary], timeline: ReplicaTimeline) -> TargetReport:
    """Every objective against the run; the run passes when all do (an empty target file passes)."""
    results = [_objective(o, steps) for o in targets.objectives]
    results += _replicas("min_replicas_reached", targets.min_replicas_reached, timeline.peak(), timeline)
    results += _replicas("max_replicas_at_end", targets.max_replicas_at_end, timeline.final(), timeline)
    return TargetReport(passed=all(r.passed for r in results), results=results)
