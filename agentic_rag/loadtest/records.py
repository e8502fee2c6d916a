"""What a load test records: every measured request, each step's window, and the replica timeline.

The worker and the sampler write these as JSON Lines while they run; the command reads them back into
one :class:`LoadTestRun`, from which every report and target check is computed (and can be recomputed).
Times are Unix epoch seconds, so records from different processes line up.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

from agentic_rag.loadtest.plan import Lane, LoadPlan, Step

M = TypeVar("M", bound=BaseModel)


class RequestSample(BaseModel):
    """One request of the measured window, as the client saw it."""

    model_config = ConfigDict(extra="forbid")

    lane: Lane
    start: float = Field(description="When it was sent (epoch seconds).")
    latency_ms: float = Field(ge=0, description="Until the whole response was read, or the failure.")
    ok: bool
    error: str | None = Field(None, description="The kind of failure: http_503:overloaded, timeout, invalid_body, ...")
    status_code: int = Field(0, description="HTTP status; 0 when no response came.")
    run_status: str | None = Field(None, description="search_ai: how the run ended (answered, not_found, ...).")
    turns: int | None = Field(None, description="search_ai: loop turns the run used.")
    timings: dict[str, float] = Field(default_factory=dict, description="search_ai: the run's per-stage ms.")

    @property
    def end(self) -> float:
        return self.start + self.latency_ms / 1000


class StepRecord(BaseModel):
    """One step as it ran: its measured window and the requests sent in it (each followed to its end)."""

    model_config = ConfigDict(extra="forbid")

    step: Step
    started: float = Field(description="When its clients started (warm-up begins).")
    window_start: float = Field(description="End of warm-up: requests sent from here on are measured.")
    window_end: float = Field(description="End of the measured window: no request sent after it is counted.")
    ended: float = Field(description="When the last measured request had answered (or was cut off).")
    ended_early: str | None = Field(None, description="Why the window closed before its duration, if it did.")
    cut_off: int = Field(0, description="Measured requests still unanswered when the drain time ran out.")
    samples: list[RequestSample] = Field(default_factory=list, description="The measured requests.")
    warmup: list[RequestSample] = Field(
        default_factory=list, description="Requests sent during warm-up: not measured, kept for the in-flight plot.")

    @property
    def window_s(self) -> float:
        return max(self.window_end - self.window_start, 1e-9)


class ReplicaSample(BaseModel):
    """The service at one instant: replicas per deployment and state, and the runs in flight."""

    model_config = ConfigDict(extra="forbid")

    t: float
    replicas: dict[str, dict[str, int]] | None = Field(
        None, description="Deployment -> replica state (RUNNING, STARTING, STOPPING, ...) -> count.")
    runs_in_flight: float | None = Field(None, description="agentic_rag_runs_in_flight from /metrics.")
    serve_latency: dict[str, dict[str, list[float]]] | None = Field(
        None, description="Serve's processing-latency counters: deployment -> replica -> [sum ms, requests].")
    memory_mb: dict[str, float] | None = Field(
        None, description="Deployment (and Serve's controller and proxy) -> resident memory of its replicas' "
                          "processes on the sampler's machine, MB, summed.")
    open_fds: dict[str, int] | None = Field(
        None, description="Deployment -> open file descriptors of its replicas' processes (sockets included).")
    db_connections: int | None = Field(None, description="Connections to the app's database (pg_stat_activity).")
    trajectories: int | None = Field(None, description="Trajectory rows in the app's database.")

    def running(self, deployment: str) -> int | None:
        if self.replicas is None or deployment not in self.replicas:
            return None
        return self.replicas[deployment].get("RUNNING", 0)


class ReplicaTimeline(BaseModel):
    """Replica counts over the whole test; ``available`` is false when no Ray Serve could be read."""

    model_config = ConfigDict(extra="forbid")

    available: bool = False
    reason: str | None = Field(None, description="Why replica counts are missing, when they are.")
    samples: list[ReplicaSample] = Field(default_factory=list)

    def deployments(self) -> list[str]:
        return sorted({d for s in self.samples if s.replicas for d in s.replicas})

    def peak(self) -> dict[str, int]:
        """The most RUNNING replicas each deployment had at once."""
        out: dict[str, int] = {}
        for s in self.samples:
            for d in s.replicas or {}:
                out[d] = max(out.get(d, 0), s.running(d) or 0)
        return out

    def final(self) -> dict[str, int]:
        """RUNNING replicas per deployment in the last sample that read Serve."""
        last = next((s for s in reversed(self.samples) if s.replicas is not None), None)
        return {d: last.running(d) or 0 for d in last.replicas or {}} if last else {}


class LoadTestRun(BaseModel):
    """A whole load test: the plan, its steps, and what the sampler saw, before, during and after the load."""

    model_config = ConfigDict(extra="forbid")

    plan: LoadPlan
    started: float
    load_ended: float = Field(description="When the last step ended; the sampler ran on for the cool-down.")
    finished: float
    steps: list[StepRecord]
    replicas: ReplicaTimeline


def read_jsonl(path: Path, model: type[M]) -> list[M]:
    """Every record of a JSON Lines file (a missing file holds none; a torn last line is skipped)."""
    if not path.exists():
        return []
    out: list[M] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            out.append(model.model_validate_json(line))
        except ValueError:
            if i == len(lines) - 1:  # a process killed mid-write leaves half a line
                continue
            raise
    return out
