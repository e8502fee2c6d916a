"""Prometheus metrics of one app: requests, runs and their per-stage timings, in a registry of its own.

A registry per app (not the process-global one) so several apps in one process (tests, or an ingress
replica rebuilt in place) never collide on metric names.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from agentic_rag.orchestrator.loop import RunResult

# The run's timing keys exported as stages (the rest, guard_ms and the like, stay in the trajectory).
STAGES = ("planner_llm_ms", "validator_llm_ms", "qdrant_ms", "pg_graph_ms", "pg_query_ms", "total_ms")
METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
TURN_BUCKETS = (0, 1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32)


class ApiMetrics:
    """The app's metrics. Labels are bounded: route templates (not paths), known methods, run statuses."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("agentic_rag_http_requests", "HTTP requests by route, method and status.",
                                ["route", "method", "status"], registry=r)
        self.request_seconds = Histogram("agentic_rag_http_request_duration_seconds",
                                         "HTTP request latency (a streamed run: until its stream ends).",
                                         ["route", "method"], buckets=LATENCY_BUCKETS, registry=r)
        self.stage_seconds = Histogram("agentic_rag_run_stage_duration_seconds",
                                       "Time a finished run spent per stage (planner_llm, qdrant, ..., total).",
                                       ["stage"], buckets=LATENCY_BUCKETS, registry=r)
        self.runs_in_flight = Gauge("agentic_rag_runs_in_flight", "Agent runs being served now.", registry=r)
        self.turns = Histogram("agentic_rag_run_turns", "Loop turns per finished run.", buckets=TURN_BUCKETS,
                               registry=r)
        self.runs = Counter("agentic_rag_runs", "Agent runs by how they ended (response status, or "
                            "error, timeout, cancelled).", ["status", "mode"], registry=r)

    def request(self, route: str, method: str, status: int, seconds: float) -> None:
        method = method if method in METHODS else "OTHER"
        self.requests.labels(route, method, str(status)).inc()
        self.request_seconds.labels(route, method).observe(seconds)

    def run_finished(self, result: RunResult) -> None:
        self.runs.labels(result.response.status, result.mode).inc()
        self.turns.observe(result.turns)
        for key in STAGES:
            ms = result.timings.get(key, 0.0)
            # a stage the run never entered says nothing about that stage's latency
            if ms > 0 or key == "total_ms":
                self.stage_seconds.labels(key.removesuffix("_ms")).observe(ms / 1000)

    def run_failed(self, outcome: str, mode: str) -> None:
        self.runs.labels(outcome, mode).inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
