"""The load-test report and target check, computed from recorded samples: no service, no locust, no Ray."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import httpx
import pytest

from agentic_rag.loadtest import serve_sampler
from agentic_rag.loadtest.plan import LoadPlan, Step, parse_levels, typeahead_queries
from agentic_rag.loadtest.records import (
    LoadTestRun,
    ReplicaSample,
    ReplicaTimeline,
    RequestSample,
    StepRecord,
    read_jsonl,
)
from agentic_rag.loadtest.report import build_report, write_report
from agentic_rag.loadtest.stats import client_in_flight, find_knee, summarize
from agentic_rag.loadtest.targets import Objective, Targets, check, load_targets

ROOT = Path(__file__).resolve().parents[3]
T0 = 1_700_000_000.0


def run_sample(start: float, ms: float, *, turns: int = 2, ok: bool = True, error: str | None = None,
               timings: dict[str, float] | None = None) -> RequestSample:
    return RequestSample(lane="search_ai", start=start, latency_ms=ms, ok=ok, error=error,
                         status_code=200 if ok else 503, run_status="answered" if ok else None,
                         turns=turns if ok else None,
                         timings=timings if timings is not None else {"planner_llm_ms": ms / 10, "qdrant_ms": ms / 2,
                                                                      "pg_graph_ms": 0.0, "total_ms": ms})


def record(users: int, latencies: Sequence[float], *, window_s: float = 10.0, extra: list[RequestSample] | None = None,
           cut_off: int = 0, start: float = T0) -> StepRecord:
    samples = [run_sample(start + 1 + i * window_s / len(latencies), ms) for i, ms in enumerate(latencies)]
    return StepRecord(step=Step(mode="closed", users=users), started=start, window_start=start + 1,
                      window_end=start + 1 + window_s, ended=start + 2 + window_s, cut_off=cut_off,
                      samples=samples + (extra or []))


def plan(steps: list[Step]) -> LoadPlan:
    return LoadPlan(url="http://svc", steps=steps, warmup_s=1, duration_s=10, max_requests=1000, timeout_s=60,
                    questions=["q"], typeahead=["lufy"], typeahead_share=0.25)


def timeline(orchestrator: list[int]) -> ReplicaTimeline:
    return ReplicaTimeline(available=True, samples=[
        ReplicaSample(t=T0 + i, replicas={"Orchestrator": {"RUNNING": n}, "Ingress": {"RUNNING": 1}},
                      runs_in_flight=float(n * 10)) for i, n in enumerate(orchestrator)])


def test_step_summary_percentiles_throughput_and_errors() -> None:
    failures = [run_sample(T0 + 2, 5, ok=False, error="http_503:overloaded"),
                RequestSample(lane="search", start=T0 + 3, latency_ms=4, ok=False, error="timeout")]
    typeahead = [RequestSample(lane="search", start=T0 + 2 + i / 10, latency_ms=10, ok=True) for i in range(10)]
    s = summarize(record(8, [float(ms) for ms in range(1, 101)], extra=failures + typeahead, cut_off=2))
    ai = s.lanes["search_ai"]
    # latency over successful runs only: 1..100 ms
    assert ai.latency.n == 100 and ai.latency.p50_ms == pytest.approx(50.5)
    assert ai.latency.p95_ms == pytest.approx(95.05) and ai.latency.p99_ms == pytest.approx(99.01)
    # two runs cut off at the end of the drain count as errors of the agent lane
    assert ai.requests == 103 and ai.errors == 3
    assert ai.errors_by_kind == {"cut_off": 2, "http_503:overloaded": 1}
    assert s.lanes["search"].errors_by_kind == {"timeout": 1}
    assert s.requests == 114 and s.errors == 4 and s.error_rate == pytest.approx(4 / 114)
    assert s.throughput_rps == pytest.approx(112 / 10) and ai.ok_rps == pytest.approx(10.0)
    assert s.turns is not None and s.turns.histogram == {2: 100} and s.run_statuses == {"answered": 100}


def test_stage_latency_counts_only_runs_that_entered_the_stage() -> None:
    runs = [run_sample(T0 + 1, 100, timings={"planner_llm_ms": 10, "pg_graph_ms": 40, "total_ms": 100}),
            run_sample(T0 + 2, 200, timings={"planner_llm_ms": 30, "pg_graph_ms": 0, "total_ms": 200,
                                             "embed_ms": 7})]
    stages = summarize(record(1, [], extra=runs)).stages
    # the order a reader expects; a stage the harness does not know yet still shows up, after the known ones
    assert list(stages) == ["planner_llm_ms", "pg_graph_ms", "total_ms", "embed_ms"]
    assert stages["pg_graph_ms"].n == 1 and stages["pg_graph_ms"].p50_ms == 40
    assert stages["planner_llm_ms"].mean_ms == 20
    assert stages["pg_graph_ms"].share == pytest.approx((40 / 2) / 150)


def test_knee_is_where_throughput_stops_buying_latency() -> None:
    # service time 100 ms, capacity 40 runs/s: latency flat until ~4 users... (Little's law beyond)
    levels = {1: (10, 100), 8: (38, 210), 32: (40, 800), 64: (40, 1600)}
    steps = []
    for users, (rps, ms) in levels.items():
        steps.append(summarize(record(users, [ms] * rps * 10)))
    knee = find_knee(steps)
    assert knee is not None and knee.label == "c8" and knee.level == 8
    assert knee.peak_label in ("c32", "c64") and knee.peak_rps == pytest.approx(40)
    assert knee.saturation_level == pytest.approx(40 * 0.1)
    assert find_knee(steps[:1]) is None


def test_targets_pass_fail_and_missing_evidence(tmp_path: Path) -> None:
    steps = [summarize(record(64, [900.0] * 50)), summarize(record(8, [100.0] * 50))]
    targets = Targets(objectives=[Objective(metric="p95_ms", max=1000, concurrency=64, lane="search_ai"),
                                  Objective(metric="error_rate", max=0)],
                      min_replicas_reached={"Orchestrator": 2}, max_replicas_at_end={"Orchestrator": 1})
    report = check(targets, steps, timeline([1, 2, 3, 2, 1]))
    assert report.passed, report
    # stays scaled out: the gate fails on scale-in only
    stuck = check(targets, steps, timeline([1, 3, 3]))
    assert not stuck.passed and [r.passed for r in stuck.results] == [True, True, True, False]
    # a tighter latency objective, a step that was not run, replica counts that could not be read
    strict = Targets(objectives=[Objective(metric="p95_ms", max=500, concurrency=64),
                                 Objective(metric="throughput_rps", min=1, concurrency=128)],
                     min_replicas_reached={"Orchestrator": 2})
    failed = check(strict, steps, ReplicaTimeline(available=False, reason="no Ray cluster"))
    assert [r.passed for r in failed.results] == [False, False, False]
    assert "c64: 900" in failed.results[0].observed
    assert failed.results[1].observed == "no such step was run"
    assert "unavailable" in failed.results[2].observed
    assert check(Targets(), steps, ReplicaTimeline()).passed


def test_target_files_load_and_are_checked(tmp_path: Path) -> None:
    shipped = load_targets(ROOT / "configs" / "loadtest-targets.yaml")
    assert any(o.concurrency == 64 and o.metric == "p95_ms" for o in shipped.objectives)
    assert shipped.min_replicas_reached.get("Orchestrator", 0) >= 2
    bad = tmp_path / "bad.yaml"
    bad.write_text("objectives:\n  - {metric: p95_ms}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.yaml: objectives.0.*give max, min or both"):
        load_targets(bad)
    bad.write_text("objectives:\n  - {metric: p42_ms, max: 1}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"objectives\.0\.metric"):
        load_targets(bad)


def test_replica_timeline_peak_and_final() -> None:
    tl = timeline([1, 2, 3, 2, 1])
    tl.samples.append(ReplicaSample(t=T0 + 10, replicas=None))  # a tick where Serve did not answer
    assert tl.peak() == {"Orchestrator": 3, "Ingress": 1}
    assert tl.final() == {"Orchestrator": 1, "Ingress": 1}
    assert tl.deployments() == ["Ingress", "Orchestrator"]


def test_client_in_flight() -> None:
    samples = [run_sample(T0, 1000), run_sample(T0 + 0.5, 1000), run_sample(T0 + 3, 500)]
    assert client_in_flight(samples, [T0 - 1, T0 + 0.1, T0 + 0.6, T0 + 1.2, T0 + 2, T0 + 3.2]) == [0, 1, 2, 1, 0, 1]


def test_levels_and_typeahead_mix() -> None:
    assert parse_levels("1, 8,32") == [1, 8, 32]
    assert parse_levels("0.5,2", kind=float) == [0.5, 2]
    for bad in ("", "8,x", "0"):
        with pytest.raises(ValueError):
            parse_levels(bad)
    queries = typeahead_queries(["Monkey D. Luffy", "Monkey D. Luffy", "Nami"], seed=1)
    assert "Monkey D. Luffy" in queries and "Nami" in queries
    # a prefix and a one-letter typo of each long enough name, deterministic for a seed
    assert any(q != "monkey d. luffy" and len(q) == len("monkey d. luffy") - 1 for q in queries)
    assert queries == typeahead_queries(["Monkey D. Luffy", "Nami"], seed=1)


def test_written_report_json_csv_html(tmp_path: Path) -> None:
    steps = [Step(mode="closed", users=1), Step(mode="closed", users=8)]
    records = [record(1, [100.0] * 20, start=T0), record(8, [300.0] * 60, start=T0 + 15)]
    run = LoadTestRun(plan=plan(steps), started=T0 - 3, load_ended=T0 + 28, finished=T0 + 40, steps=records,
                      replicas=timeline([1] * 10 + [2] * 15 + [1] * 15))
    targets = Targets(objectives=[Objective(metric="p95_ms", max=200, concurrency=8)])
    report = build_report(run, targets)
    page = write_report(report, run, tmp_path)
    body = json.loads((tmp_path / "report.json").read_text())
    assert [s["label"] for s in body["steps"]] == ["c1", "c8"]
    assert body["replicas"]["peak"]["Orchestrator"] == 2 and body["replicas"]["final"]["Orchestrator"] == 1
    assert body["targets"]["passed"] is False and body["knee"]["label"] in ("c1", "c8")
    with (tmp_path / "steps.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 6 and {r["lane"] for r in rows} == {"all", "search_ai", "search"}
    assert float(next(r for r in rows if r["step"] == "c8" and r["lane"] == "search_ai")["p95_ms"]) == 300.0
    assert sum(1 for _ in (tmp_path / "samples.csv").open()) == 1 + 80
    assert (tmp_path / "replicas.csv").read_text().count("Orchestrator") == 40
    html = page.read_text()
    assert "Targets: FAILED" in html and "replicas_over_time.png" in html
    for png in ("latency_vs_load.png", "throughput_vs_load.png", "replicas_over_time.png", "in_flight_over_time.png"):
        assert (tmp_path / png).read_bytes()[:4] == b"\x89PNG"


def test_read_jsonl_skips_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "replicas.jsonl"
    good = ReplicaSample(t=T0, runs_in_flight=3).model_dump_json()
    path.write_text(good + "\n" + good[:10], encoding="utf-8")
    assert [s.runs_in_flight for s in read_jsonl(path, ReplicaSample)] == [3]
    assert read_jsonl(tmp_path / "absent.jsonl", ReplicaSample) == []


def test_the_command_and_the_report_never_import_locust_or_ray() -> None:
    # locust monkey-patches the standard library on import: only the worker process may import it
    code = ("import sys, agentic_rag.cli, agentic_rag.loadtest.harness, agentic_rag.loadtest.report; "
            "print(sorted(m for m in ('locust', 'gevent', 'ray') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_deployment_latency_from_serve_counters() -> None:
    rec = record(8, [100.0] * 10)  # window T0+1 .. T0+11

    def at(t: float, counters: dict[str, dict[str, list[float]]]) -> ReplicaSample:
        return ReplicaSample(t=t, replicas={"Embedder": {"RUNNING": 1}}, serve_latency=counters)

    tl = ReplicaTimeline(available=True, samples=[
        at(T0, {"Embedder": {"a": [1000.0, 100.0]}, "Orchestrator": {"o1": [50.0, 1.0]}}),
        ReplicaSample(t=T0 + 5, replicas={}),  # a tick without counters
        # a second Orchestrator replica started in the window: it counts from zero
        at(T0 + 12, {"Embedder": {"a": [1600.0, 130.0]}, "Orchestrator": {"o1": [350.0, 3.0], "o2": [100.0, 1.0]}}),
    ])
    got = summarize(rec, tl).serve_latency
    assert got["Embedder"].requests == 30 and got["Embedder"].mean_ms == pytest.approx(20.0)
    assert got["Orchestrator"].requests == 3 and got["Orchestrator"].mean_ms == pytest.approx(400 / 3)
    assert summarize(rec, ReplicaTimeline()).serve_latency == {}


def test_sampler_reads_the_gauge_and_serves_latency_counters() -> None:
    ray_text = "\n".join([
        "# HELP ray_serve_deployment_processing_latency_ms The latency for queries to be processed.",
        "# TYPE ray_serve_deployment_processing_latency_ms histogram",
        'ray_serve_deployment_processing_latency_ms_bucket{deployment="Embedder",replica="a",route="/",le="5.0"} 2.0',
        'ray_serve_deployment_processing_latency_ms_sum{deployment="Embedder",replica="a",route="/"} 30.0',
        'ray_serve_deployment_processing_latency_ms_count{deployment="Embedder",replica="a",route="/"} 3.0',
        'ray_serve_deployment_processing_latency_ms_sum{deployment="Embedder",replica="a",route="/x"} 10.0',
        'ray_serve_deployment_processing_latency_ms_count{deployment="Embedder",replica="a",route="/x"} 1.0',
        'ray_serve_replica_processing_queries{deployment="Embedder",replica="a"} 4.0',
    ])
    app_text = "# TYPE agentic_rag_runs_in_flight gauge\nagentic_rag_runs_in_flight 7.0\n"

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text=ray_text if request.url.host == "ray" else app_text)

    with httpx.Client(transport=httpx.MockTransport(answer)) as client:
        assert serve_sampler.runs_in_flight(client, "http://svc/") == 7.0
        # summed over the replica's routes
        assert serve_sampler.serve_latency(client, ["http://ray/metrics"]) == {"Embedder": {"a": [40.0, 4.0]}}
    read, urls, reason = serve_sampler.connect_serve("none")
    assert read is None and urls() == [] and reason is not None and "turned off" in reason


def test_a_bare_deployment_name_finds_it_among_several_applications() -> None:
    # with the GraphQL application beside the agent, the sampler names each deployment app:deployment
    two_apps = ReplicaTimeline(available=True, samples=[
        ReplicaSample(t=T0 + i, replicas={"agentic_rag:Orchestrator": {"RUNNING": n}, "graphql:GraphQL": {"RUNNING": 1},
                                          "agentic_rag:Ingress": {"RUNNING": 1}, "other:Ingress": {"RUNNING": 2}})
        for i, n in enumerate([1, 3, 1])])
    targets = Targets(min_replicas_reached={"Orchestrator": 2, "agentic_rag:Ingress": 1},
                      max_replicas_at_end={"Orchestrator": 1, "Ingress": 1, "Planner": 1})
    results = check(targets, [], two_apps).results
    assert [(r.passed, r.observed) for r in results] == [
        (True, "peak 3"), (True, "peak 1"), (True, "final 1"),
        (False, "ambiguous: agentic_rag:Ingress, other:Ingress; name one as application:deployment"),
        (False, "no such deployment")]


def test_the_sampler_reads_a_process_s_memory_and_descriptors_and_skips_one_gone() -> None:
    """Issue 41, point 4 (the soak's evidence): resident memory and open descriptors from /proc, per group."""
    from agentic_rag.loadtest.serve_sampler import process_usage

    memory, fds = process_usage({"me": [os.getpid()], "gone": [2**22 + 7]})  # above Linux's pid_max default
    assert memory["me"] > 10 and fds["me"] >= 3 and "gone" not in memory


def test_the_report_draws_memory_descriptors_and_connections_over_time(tmp_path: Path) -> None:
    steps = [Step(mode="open", users=8, rate=4.0)]
    samples = [ReplicaSample(t=T0 + i, replicas={"Embedder": {"RUNNING": 1}},
                             memory_mb={"Embedder": 500.0 + i, "Ingress": 200.0}, open_fds={"Ingress": 40 + i % 3},
                             db_connections=12, trajectories=100 + i) for i in range(20)]
    run = LoadTestRun(plan=plan(steps), started=T0 - 3, load_ended=T0 + 12, finished=T0 + 20,
                      steps=[record(8, [100.0] * 20, start=T0)], replicas=ReplicaTimeline(available=True,
                                                                                          samples=samples))
    write_report(build_report(run), run, tmp_path)
    assert (tmp_path / "resources_over_time.png").read_bytes()[:4] == b"\x89PNG"
