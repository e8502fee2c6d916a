"""The load-test report: JSON for machines, CSV for spreadsheets, an HTML page with plots for people.

Files written into the output directory::

    report.json    every step's summary, the knee, the replica timeline's peaks, the target check
    steps.csv      one row per step and lane (all, search_ai, search)
    stages.csv     one row per step and stage of the agent runs
    replicas.csv   one row per sample and deployment: replica states, runs in flight
    samples.csv    one row per measured request
    report.html    the tables and the plots (*.png beside it)
"""

from __future__ import annotations

import csv
import html
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from agentic_rag.loadtest.plan import LANES
from agentic_rag.loadtest.plots import draw_all
from agentic_rag.loadtest.records import LoadTestRun
from agentic_rag.loadtest.stats import STAGES, Knee, LaneSummary, StepSummary, find_knee, summarize
from agentic_rag.loadtest.targets import TargetReport, Targets, check

REPLICA_STATES = ("RUNNING", "STARTING", "STOPPING")


class ReplicaSummary(BaseModel):
    available: bool
    reason: str | None
    peak: dict[str, int] = Field(description="Most RUNNING replicas per deployment at once.")
    final: dict[str, int] = Field(description="RUNNING replicas per deployment in the last sample.")
    max_runs_in_flight: float | None = Field(None, description="Highest runs-in-flight gauge seen on /metrics.")


class Report(BaseModel):
    """What report.json holds."""

    url: str
    started: str
    duration_s: float
    settings: dict[str, object] = Field(description="Warm-up, window, bounds and mix of the plan.")
    steps: list[StepSummary]
    knee: Knee | None
    replicas: ReplicaSummary
    targets: TargetReport | None = None


def build_report(run: LoadTestRun, targets: Targets | None = None) -> Report:
    """Summaries, knee, replica peaks and (given targets) the target check of a recorded run."""
    steps = [summarize(rec, run.replicas) for rec in run.steps]
    gauge = [s.runs_in_flight for s in run.replicas.samples if s.runs_in_flight is not None]
    plan = run.plan
    return Report(
        url=plan.url, started=datetime.fromtimestamp(run.started, UTC).isoformat(timespec="seconds"),
        duration_s=run.finished - run.started,
        settings={"warmup_s": plan.warmup_s, "duration_s": plan.duration_s, "max_requests": plan.max_requests,
                  "timeout_s": plan.timeout_s, "typeahead_share": plan.typeahead_share, "run_mode": plan.run_mode,
                  "questions": len(plan.questions), "typeahead_queries": len(plan.typeahead)},
        steps=steps, knee=find_knee(steps),
        replicas=ReplicaSummary(available=run.replicas.available, reason=run.replicas.reason,
                                peak=run.replicas.peak(), final=run.replicas.final(),
                                max_runs_in_flight=max(gauge) if gauge else None),
        targets=check(targets, steps, run.replicas) if targets is not None else None,
    )


def _num(x: float | None, digits: int = 1) -> str:
    return "" if x is None else f"{x:.{digits}f}"


def _lane_cells(lane: LaneSummary) -> list[str]:
    lat = lane.latency
    return [str(lane.requests), str(lane.ok), str(lane.errors), _num(lane.error_rate, 4), _num(lane.throughput_rps, 2),
            _num(lane.ok_rps, 2), _num(lat.p50_ms), _num(lat.p95_ms), _num(lat.p99_ms), _num(lat.mean_ms),
            _num(lat.max_ms), ";".join(f"{k}={v}" for k, v in lane.errors_by_kind.items())]


def _by_lane(step: StepSummary) -> list[tuple[str, LaneSummary]]:
    """Both lanes together ("all"), then each lane."""
    return [("all", step), *((lane, step.lanes[lane]) for lane in LANES)]


LANE_HEAD = ["requests", "ok", "errors", "error_rate", "throughput_rps", "ok_rps", "p50_ms", "p95_ms", "p99_ms",
             "mean_ms", "max_ms", "errors_by_kind"]


def _write_csv(path: Path, head: list[str], rows: list[list[str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(head)
        w.writerows(rows)


def write_csvs(report: Report, run: LoadTestRun, out: Path) -> None:
    rows: list[list[str]] = []
    for s in report.steps:
        base = [s.label, s.mode, str(s.users), _num(s.rate, 2), _num(s.window_s)]
        turns = _num(s.turns.mean, 2) if s.turns else ""
        rows += [[*base, lane, *_lane_cells(summary), turns if lane != "search" else ""]
                 for lane, summary in _by_lane(s)]
    _write_csv(out / "steps.csv", ["step", "mode", "users", "rate", "window_s", "lane", *LANE_HEAD, "turns_mean"],
               rows)
    _write_csv(out / "stages.csv", ["step", "stage", "runs", "p50_ms", "p95_ms", "p99_ms", "mean_ms", "share"],
               [[s.label, k, str(v.n), _num(v.p50_ms), _num(v.p95_ms), _num(v.p99_ms), _num(v.mean_ms),
                 _num(v.share, 3)] for s in report.steps for k, v in s.stages.items()]
               # Serve's view: each deployment's mean over the window (no percentiles from counters)
               + [[s.label, f"serve:{d}", str(v.requests), "", "", "", _num(v.mean_ms), ""]
                  for s in report.steps for d, v in s.serve_latency.items()])
    t0 = run.started
    replica_rows = []
    for sample in run.replicas.samples:
        t, flight = _num(sample.t - t0, 2), _num(sample.runs_in_flight, 0)
        if sample.replicas is None:  # Serve not read: the runs in flight only
            replica_rows.append([t, "", *([""] * (len(REPLICA_STATES) + 1)), flight])
        for name, states in (sample.replicas or {}).items():
            other = sum(n for st, n in states.items() if st not in REPLICA_STATES)
            replica_rows.append([t, name, *(str(states.get(st, 0)) for st in REPLICA_STATES), str(other), flight])
    _write_csv(out / "replicas.csv", ["t_s", "deployment", *(st.lower() for st in REPLICA_STATES), "other",
                                      "runs_in_flight"], replica_rows)
    seen = {k for rec in run.steps for smp in rec.samples for k in smp.timings}
    stage_cols = [k for k in STAGES if k in seen] + sorted(seen - set(STAGES))
    _write_csv(out / "samples.csv",
               ["step", "lane", "t_s", "latency_ms", "ok", "error", "status_code", "run_status", "turns", *stage_cols],
               [[rec.step.label, s.lane, _num(s.start - t0, 3), _num(s.latency_ms), str(int(s.ok)), s.error or "",
                 str(s.status_code), s.run_status or "", "" if s.turns is None else str(s.turns),
                 *(_num(s.timings.get(k)) for k in stage_cols)] for rec in run.steps for s in rec.samples])


def _table(head: list[str], rows: list[list[str]]) -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    trs = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"


def render_html(report: Report, images: list[str]) -> str:
    steps = _table(["step", "lane", *LANE_HEAD, "turns_mean"], [
        [s.label, lane, *_lane_cells(summary), _num(s.turns.mean, 2) if s.turns and lane != "search" else ""]
        for s in report.steps for lane, summary in _by_lane(s)])
    stages = _table(["step", "stage", "runs", "p50_ms", "p95_ms", "p99_ms", "mean_ms", "share of total"], [
        [s.label, k, str(v.n), _num(v.p50_ms), _num(v.p95_ms), _num(v.p99_ms), _num(v.mean_ms), _num(v.share, 3)]
        for s in report.steps for k, v in s.stages.items()])
    turns = _table(["step", "mean", "p50", "max", "histogram (turns: runs)", "run statuses"], [
        [s.label, _num(s.turns.mean, 2), _num(s.turns.p50, 1), str(s.turns.max),
         ", ".join(f"{k}: {v}" for k, v in s.turns.histogram.items()),
         ", ".join(f"{k}: {v}" for k, v in s.run_statuses.items())] for s in report.steps if s.turns])
    served = _table(["step", "deployment", "requests", "mean_ms"], [
        [s.label, d, str(v.requests), _num(v.mean_ms)] for s in report.steps for d, v in s.serve_latency.items()])
    r = report.replicas
    replicas = (_table(["deployment", "peak RUNNING", "final RUNNING"],
                       [[d, str(n), str(r.final.get(d, ""))] for d, n in r.peak.items()])
                if r.available else f"<p>Replica counts unavailable: {html.escape(r.reason or '')}</p>")
    knee = "<p>No knee: fewer than two load levels.</p>"
    if report.knee is not None:
        sat = (f"; Little's-law saturation point N* = X_max x R_min = {report.knee.saturation_level:.1f}"
               if report.knee.saturation_level is not None else "")
        k = report.knee
        knee = (f"<p><b>Knee: {html.escape(k.label)}</b> (highest power, agent runs/s per second of "
                f"mean latency{html.escape(sat)}). Throughput peak: {html.escape(k.peak_label)}, "
                f"{k.peak_rps:.2f} runs/s; beyond it more load only adds latency.</p>")
    gate = ""
    if report.targets is not None:
        verdict = "PASSED" if report.targets.passed else "FAILED"
        gate = (f"<h2>Targets: {verdict}</h2>" + _table(["objective", "result", "observed"], [
            [t.objective, "pass" if t.passed else "FAIL", t.observed] for t in report.targets.results]))
    settings = ", ".join(f"{k} {v}" for k, v in report.settings.items())
    figs = "".join(f'<figure><img src="{html.escape(i)}" alt="{html.escape(i)}"></figure>' for i in images)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>agentic-rag load test</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:1200px}}table{{border-collapse:collapse;margin:1em 0}}
td,th{{border:1px solid #ccc;padding:2px 6px;text-align:right;font-size:13px}}img{{max-width:100%}}</style>
</head><body>
<h1>Load test of {html.escape(report.url)}</h1>
<p>Started {html.escape(report.started)}, {report.duration_s:.0f} s in all. {html.escape(settings)}.
Latency percentiles are over successful requests; failures are counted under errors.</p>
{gate}
<h2>Steps</h2>{steps}
{knee}
<h2>Turns per run</h2>{turns}
<h2>Per-stage latency of agent runs</h2>
<p>From each run's timings (its trajectory); a stage counts only the runs that entered it.</p>{stages}
<h2>Per-deployment latency read from Serve</h2>
<p>Mean processing latency of the requests each deployment finished in the window, from Serve's counters
(the Embedder's is the embedding stage). Approximate: the counters are sampled every few seconds, and Ray
sums its latency histogram by bucket midpoints, so a mean may be off by up to half a bucket (e.g. 5-10 s).</p>
{served}
<h2>Replicas (read from Serve)</h2>{replicas}
<h2>Plots</h2>{figs}
</body></html>
"""


def write_report(report: Report, run: LoadTestRun, out: Path) -> Path:
    """Every file of the report into ``out``; returns the HTML page's path."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(report.model_dump_json(indent=2), encoding="utf-8")
    write_csvs(report, run, out)
    images = draw_all(run, report.steps, report.knee, out)
    page = out / "report.html"
    page.write_text(render_html(report, images), encoding="utf-8")
    return page
