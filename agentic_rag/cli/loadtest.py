"""``agentic-rag loadtest``: load a running service, report latency, throughput, errors and scaling, check targets."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, cast, get_args

import httpx
import typer
from rich.table import Table

from agentic_rag.cli._app import app, console, err, fail
from agentic_rag.eval.questions import QuestionSetError, load_demo_questions, load_questions
from agentic_rag.loadtest import harness
from agentic_rag.loadtest.plan import LoadPlan, Step, mix_from, parse_levels
from agentic_rag.loadtest.report import Report, build_report, write_report
from agentic_rag.loadtest.targets import Targets, load_targets
from agentic_rag.protocol import Mode

DEFAULT_LEVELS = "1,8,32,64,128"
COLUMNS = ("step", "requests", "errors", "req/s", "runs/s", "p50 ms", "p95 ms", "p99 ms", "turns", "typeahead p95")


def _steps(concurrency: str | None, rate: str | None, users: int) -> list[Step]:
    if concurrency is not None and rate is not None:
        raise ValueError("give --concurrency (closed loop) or --rate (open loop), not both")
    if rate is not None:
        return [Step(mode="open", users=users, rate=r) for r in parse_levels(rate, kind=float)]
    return [Step(mode="closed", users=int(c)) for c in parse_levels(concurrency or DEFAULT_LEVELS)]


def _check_reachable(url: str) -> None:
    try:
        httpx.get(f"{url.rstrip('/')}/healthz", timeout=10.0).raise_for_status()
    except httpx.HTTPError as exc:
        raise ValueError(f"the service at {url} does not answer /healthz: {exc}") from None


def _print_summary(report: Report, page: Path) -> None:
    table = Table(title=f"load test of {report.url} (search_ai latency over successful runs)")
    for col in COLUMNS:
        table.add_column(col, justify="right")
    for s in report.steps:
        ai = s.lanes["search_ai"]
        table.add_row(s.label, str(s.requests), f"{s.errors} ({s.error_rate:.1%})", f"{s.throughput_rps:.2f}",
                      f"{ai.ok_rps:.2f}", *(f"{v:.0f}" if v is not None else "-" for v in (
                          ai.latency.p50_ms, ai.latency.p95_ms, ai.latency.p99_ms)),
                      f"{s.turns.mean:.2f}" if s.turns else "-",
                      f"{s.lanes['search'].latency.p95_ms:.0f}" if s.lanes["search"].latency.p95_ms else "-")
    console.print(table)
    for s in report.steps:
        if s.errors_by_kind:
            kinds = ", ".join(f"{k} x{v}" for k, v in s.errors_by_kind.items())
            console.print(f"[yellow]{s.label} errors:[/] {kinds}", highlight=False)
    if report.knee is not None:
        k = report.knee
        console.print(f"knee: [bold]{k.label}[/] (highest runs/s per second of latency); throughput peak: "
                      f"{k.peak_label} ({k.peak_rps:.2f} runs/s)")
    r = report.replicas
    if r.available:
        console.print("replicas (peak -> final): " + ", ".join(f"{d} {n} -> {r.final.get(d, '?')}"
                                                               for d, n in r.peak.items()))
    else:
        console.print(f"replicas: unavailable ({r.reason})")
    if report.targets is not None:
        for t in report.targets.results:
            mark = "[green]pass[/]" if t.passed else "[red]FAIL[/]"
            console.print(f"{mark} {t.objective}: {t.observed}", highlight=False)
        verdict = "[bold green]targets met[/]" if report.targets.passed else "[bold red]targets NOT met[/]"
        console.print(verdict)
    console.print(f"report: {page}")


@app.command()
def loadtest(
    url: Annotated[str | None, typer.Option(help="Base URL of the service, e.g. http://127.0.0.1:8000.")] = None,
    concurrency: Annotated[str | None, typer.Option(
        help=f"Closed loop: concurrent clients per step, comma-separated (default {DEFAULT_LEVELS}).")] = None,
    rate: Annotated[str | None, typer.Option(
        help="Open loop instead: requests per second per step, comma-separated (paced over --users clients).")] = None,
    users: Annotated[int, typer.Option(min=1, help="Open loop: clients that carry the arrival rate.")] = 256,
    duration: Annotated[float, typer.Option(min=1, help="Seconds measured per step.")] = 30.0,
    warmup: Annotated[float, typer.Option(min=0, help="Seconds of load per step before measuring.")] = 10.0,
    max_requests: Annotated[int, typer.Option(min=1, help="A step's window closes at this many answers.")] = 100_000,
    timeout: Annotated[float, typer.Option(min=1, help="Seconds per request (and to drain a step).")] = 60.0,
    typeahead_share: Annotated[float, typer.Option(
        min=0, max=0.95, help="Fraction of requests that are typeahead (/v1/search).")] = 0.25,
    questions: Annotated[Path | None, typer.Option(help="A JSON Lines question file (default: the demo set).")] = None,
    mode: Annotated[str, typer.Option(help="agentic or linear runs.")] = "agentic",
    seed: Annotated[int, typer.Option(help="Seed of the query choice.")] = 0,
    out: Annotated[Path | None, typer.Option(help="Report directory (default .data/loadtest/<time>).")] = None,
    targets: Annotated[Path | None, typer.Option(help="A target file; exit status 1 when the run misses it.")] = None,
    ray_address: Annotated[str, typer.Option(help="Ray cluster to read replica counts from; 'none': don't.")] = "auto",
    sample_interval: Annotated[float, typer.Option(min=0.2, help="Seconds between replica samples.")] = 1.0,
    cooldown: Annotated[float, typer.Option(
        min=0, help="After the load, sample replicas up to this long, until every deployment has scaled back in.",
    )] = 120.0,
    dsn: Annotated[str | None, typer.Option(
        help="The app's database: its connections and trajectory rows are sampled too (a soak's evidence).",
    )] = None,
    from_run: Annotated[Path | None, typer.Option(
        "--from", help="Rebuild the report (and check --targets) from a run recorded in this directory; no load.",
    )] = None,
) -> None:
    """Load the service with locust (closed-loop sweeps or open-loop rates), report, and check targets."""
    try:
        goals: Targets | None = load_targets(targets) if targets is not None else None
        if from_run is not None:
            run = harness.load_run(from_run)
            out = out or from_run
        else:
            if url is None:
                raise ValueError("give --url (or --from DIR to report on a recorded run)")
            if mode not in get_args(Mode):
                raise ValueError(f"--mode must be agentic or linear, not {mode!r}")
            steps = _steps(concurrency, rate, users)
            qs = load_questions(questions) if questions is not None else load_demo_questions()
            asks, typeahead = mix_from(qs, seed=seed)
            plan = LoadPlan(url=url.rstrip("/"), steps=steps, warmup_s=warmup, duration_s=duration,
                            max_requests=max_requests, timeout_s=timeout, questions=asks, typeahead=typeahead,
                            typeahead_share=typeahead_share, run_mode=cast(Mode, mode),
                            seed=seed)
            _check_reachable(plan.url)
            out = out or Path(".data/loadtest") / time.strftime("%Y%m%d-%H%M%S")
            err.print(f"load test of {plan.url}: {len(steps)} step(s), at most {plan.time_bound_s():.0f} s of load; "
                      f"report in {out}")
            run = harness.run(plan, out, ray_address=ray_address, interval_s=sample_interval, cooldown_s=cooldown,
                              say=err.print, dsn=dsn)
    except (ValueError, QuestionSetError, harness.HarnessError) as exc:
        raise fail(exc) from None
    report = build_report(run, goals)
    page = write_report(report, run, out)
    _print_summary(report, page)
    if report.targets is not None and not report.targets.passed:
        raise typer.Exit(code=1)
