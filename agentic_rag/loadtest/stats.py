"""Summaries of recorded requests: latency percentiles, throughput, errors by kind, turns, per-stage latency, the knee.

Latency percentiles are over the requests that succeeded (a failure's latency is how fast it failed, which
says nothing of the service's speed); failures are counted in ``errors`` and ``errors_by_kind``. Throughput
is requests answered per second of the measured window.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Sequence

from pydantic import BaseModel, Field

from agentic_rag.eval.metrics import percentile
from agentic_rag.loadtest.plan import LANES, Lane, LoopMode
from agentic_rag.loadtest.records import ReplicaSample, ReplicaTimeline, RequestSample, StepRecord

# The run's timing keys in the order a reader expects them (api/http/metrics.py exports the same);
# any other *_ms key a run reports follows these, so a new stage shows up without a change here.
STAGES = ("planner_llm_ms", "validator_llm_ms", "qdrant_ms", "pg_graph_ms", "pg_query_ms", "total_ms")
CUT_OFF = "cut_off"


class LatencyStats(BaseModel):
    n: int = 0
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    mean_ms: float | None = None
    max_ms: float | None = None

    @classmethod
    def of(cls, values: Sequence[float]) -> LatencyStats:
        if not values:
            return cls()
        return cls(n=len(values), p50_ms=percentile(values, 50), p95_ms=percentile(values, 95),
                   p99_ms=percentile(values, 99), mean_ms=sum(values) / len(values), max_ms=max(values))


class StageStats(LatencyStats):
    share: float | None = Field(None, description="Mean time in this stage over the mean run's total_ms.")


class TurnStats(BaseModel):
    mean: float
    p50: float
    max: int
    histogram: dict[int, int] = Field(description="Turns -> runs.")


class DeploymentLatency(BaseModel):
    """A deployment's mean processing latency over a step's window, from Serve's own counters.

    Approximate twice over: the counters are sampled every few seconds (and exported by Ray with a lag), and
    Ray 2.60 computes a histogram's sum from bucket midpoints (1-2-5 ms steps up to 5-10-20 s), so a mean can
    be off by up to half a bucket's width. Good for which deployment takes the time, not for its exact value.
    """

    requests: int = Field(description="Requests its replicas finished in the window.")
    mean_ms: float = Field(description="Their mean processing latency, at bucket-midpoint resolution.")


class LaneSummary(BaseModel):
    requests: int
    ok: int
    errors: int
    error_rate: float
    throughput_rps: float = Field(description="Requests answered (ok or not) per second of the window.")
    ok_rps: float = Field(description="Successful requests per second of the window.")
    latency: LatencyStats
    errors_by_kind: dict[str, int]


class StepSummary(LaneSummary):
    """One step, both lanes together, with the lanes apart and the agent runs' turns and stages."""

    label: str
    mode: LoopMode
    users: int
    rate: float | None
    level: float
    window_s: float
    ended_early: str | None
    warmup_requests: int
    lanes: dict[Lane, LaneSummary]
    turns: TurnStats | None
    stages: dict[str, StageStats]
    run_statuses: dict[str, int] = Field(description="search_ai: how the answered runs ended.")
    serve_latency: dict[str, DeploymentLatency] = Field(
        default_factory=dict, description="Per deployment (Embedder, GraphRetriever, ...), read from Serve.")


class Knee(BaseModel):
    """Where latency turns up: the step of highest power (throughput / mean latency of the agent lane).

    Below the knee, more load buys throughput at little cost in latency; past it, throughput stalls and
    latency grows with the load (Little's law: R = N / X). ``saturation_level`` is where the two
    asymptotes meet, N* = X_max x R_min: the concurrency at which the service starts queueing. With
    autoscaling, capacity grows with the load, so throughput may climb again past the knee: ``peak_*``
    is where it stopped climbing, beyond which more load only adds latency.
    """

    label: str
    level: float
    power: dict[str, float] = Field(description="Step label -> runs/s per second of mean latency.")
    saturation_level: float | None = None
    peak_label: str = Field(description="The step with the most successful runs per second.")
    peak_level: float
    peak_rps: float


def _lane(samples: Sequence[RequestSample], window_s: float, cut_off: int = 0) -> LaneSummary:
    errors = Counter(s.error or "error" for s in samples if not s.ok)
    if cut_off:
        errors[CUT_OFF] += cut_off
    requests = len(samples) + cut_off
    n_err = sum(errors.values())
    ok = requests - n_err
    return LaneSummary(
        requests=requests, ok=ok, errors=n_err, error_rate=n_err / requests if requests else 0.0,
        throughput_rps=len(samples) / window_s, ok_rps=ok / window_s,
        latency=LatencyStats.of([s.latency_ms for s in samples if s.ok]),
        errors_by_kind=dict(errors.most_common()),
    )


def stage_stats(runs: Sequence[RequestSample]) -> dict[str, StageStats]:
    """Per-stage latency of successful runs. A stage a run never entered says nothing of that stage's latency."""
    keys = {k for r in runs for k in r.timings if k.endswith("_ms")}
    ordered = [k for k in STAGES if k in keys] + sorted(keys - set(STAGES))
    totals = [r.timings.get("total_ms", 0.0) for r in runs]
    mean_total = sum(totals) / len(totals) if totals else 0.0
    out: dict[str, StageStats] = {}
    for key in ordered:
        values = [r.timings[key] for r in runs if key in r.timings and (r.timings[key] > 0 or key == "total_ms")]
        base = LatencyStats.of(values)
        spent = sum(values) / len(runs) if runs else 0.0
        out[key] = StageStats(**base.model_dump(), share=spent / mean_total if mean_total else None)
    return out


def turn_stats(runs: Sequence[RequestSample]) -> TurnStats | None:
    turns = [r.turns for r in runs if r.turns is not None]
    if not turns:
        return None
    return TurnStats(mean=sum(turns) / len(turns), p50=percentile([float(t) for t in turns], 50) or 0.0,
                     max=max(turns), histogram=dict(sorted(Counter(turns).items())))


def serve_latency(record: StepRecord, timeline: ReplicaTimeline) -> dict[str, DeploymentLatency]:
    """Each deployment's mean latency over the window: the change of Serve's counters between its two ends.

    Counters are per replica: a replica started in the window counts from zero; one gone by its end is lost.
    """
    read = [s for s in timeline.samples if s.serve_latency]
    before = next((s for s in reversed(read) if s.t <= record.window_start), read[0] if read else None)
    after = next((s for s in read if s.t >= record.window_end), read[-1] if read else None)
    if before is None or after is None or after.t <= before.t:
        return {}
    return _counter_change(before, after)


def _counter_change(before: ReplicaSample, after: ReplicaSample) -> dict[str, DeploymentLatency]:
    out: dict[str, DeploymentLatency] = {}
    for deployment, replicas in (after.serve_latency or {}).items():
        start = (before.serve_latency or {}).get(deployment, {})
        total_ms = count = 0.0
        for replica, (ms, n) in replicas.items():
            ms0, n0 = start.get(replica, (0.0, 0.0))
            if n >= n0:
                total_ms, count = total_ms + ms - ms0, count + n - n0
        if count >= 1:
            out[deployment] = DeploymentLatency(requests=round(count), mean_ms=total_ms / count)
    return out


def summarize(record: StepRecord, timeline: ReplicaTimeline | None = None) -> StepSummary:
    """The numbers of one step; requests cut off at the end of the drain count as errors of the agent lane."""
    window = record.window_s
    by_lane = {lane: [s for s in record.samples if s.lane == lane] for lane in LANES}
    lanes = {lane: _lane(by_lane[lane], window, record.cut_off if lane == "search_ai" else 0) for lane in LANES}
    total = _lane(record.samples, window, record.cut_off)
    runs = [s for s in by_lane["search_ai"] if s.ok]
    step = record.step
    return StepSummary(
        **total.model_dump(), label=step.label, mode=step.mode, users=step.users, rate=step.rate, level=step.level,
        window_s=window, ended_early=record.ended_early, warmup_requests=len(record.warmup),
        lanes=lanes, turns=turn_stats(runs), stages=stage_stats(runs),
        run_statuses=dict(Counter(s.run_status or "?" for s in runs).most_common()),
        serve_latency=serve_latency(record, timeline) if timeline is not None else {},
    )


def find_knee(steps: Sequence[StepSummary]) -> Knee | None:
    """The knee of a sweep (see :class:`Knee`); None with fewer than two levels or no successful runs."""
    usable = sorted((s for s in steps if s.lanes["search_ai"].latency.mean_ms), key=lambda s: s.level)
    if len(usable) < 2:
        return None
    power = {s.label: s.lanes["search_ai"].ok_rps / ((s.lanes["search_ai"].latency.mean_ms or 1.0) / 1000)
             for s in usable}
    best = max(usable, key=lambda s: power[s.label])
    saturation = None
    if usable[0].mode == "closed":
        x_max = max(s.lanes["search_ai"].ok_rps for s in usable)
        r_min = min(s.lanes["search_ai"].latency.mean_ms or 0.0 for s in usable) / 1000
        saturation = x_max * r_min
    peak = max(usable, key=lambda s: s.lanes["search_ai"].ok_rps)
    return Knee(label=best.label, level=best.level, power=power, saturation_level=saturation,
                peak_label=peak.label, peak_level=peak.level, peak_rps=peak.lanes["search_ai"].ok_rps)


def client_in_flight(samples: Sequence[RequestSample], times: Sequence[float]) -> list[int]:
    """How many of ``samples`` were outstanding (sent, not yet answered) at each of ``times``."""
    starts = sorted(s.start for s in samples)
    ends = sorted(s.end for s in samples)
    return [bisect.bisect_right(starts, t) - bisect.bisect_right(ends, t) for t in times]
