"""A soak: the served app held at about 60% of its measured capacity for 20 minutes, and whether anything grows.

    .venv/bin/python scripts/soak.py [--config configs/local.yaml] [--minutes 20] [--share 0.6] [--out DIR]

Deploys the config over the configured database (run ``agentic-rag ingest`` first). Measures capacity first: a
closed loop of ``--probe-users`` clients for ``--probe`` seconds, the answers a second it sustains. Then an open
loop at ``--share`` of that rate for ``--minutes``, through the load-test harness (locust, the demo mix with a
quarter typeahead), its sampler reading every 5 s the resident memory and open descriptors of each Serve
process on this machine, the database's connections and its trajectory rows. Writes the harness's report
(with ``resources_over_time.png``) into ``--out`` and prints one Markdown table: each quantity over the first
and the last two minutes, and the search_ai p95 of each 5-minute window (the drift).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from agentic_rag.eval import load_demo_questions
from agentic_rag.eval.metrics import percentile
from agentic_rag.loadtest import harness
from agentic_rag.loadtest.plan import LoadPlan, Step, mix_from
from agentic_rag.loadtest.records import LoadTestRun, ReplicaSample
from agentic_rag.loadtest.report import build_report, write_report
from agentic_rag.serve import launch
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import resolve_dsn

EDGE_S = 120.0  # the first and last this many seconds of the soak are compared
WINDOW_S = 300.0  # the p95 drift: one figure per window


def plan(url: str, step: Step, warmup_s: float, duration_s: float) -> LoadPlan:
    asks, typeahead = mix_from(load_demo_questions())
    return LoadPlan(url=url, steps=[step], warmup_s=warmup_s, duration_s=duration_s, max_requests=10_000_000,
                    timeout_s=60, questions=asks, typeahead=typeahead, typeahead_share=0.25)


def capacity(url: str, users: int, seconds: float, out: Path) -> float:
    """Answers a second a closed loop of ``users`` sustains (both lanes, as the soak's mix)."""
    probe = harness.run(plan(url, Step(mode="closed", users=users), 10, seconds), out, cooldown_s=0,
                        say=lambda _: None)
    record = probe.steps[0]
    return sum(1 for s in record.samples if s.ok) / record.window_s


def mean_of(samples: list[ReplicaSample], read: str) -> dict[str, float]:
    """Each key's mean over ``samples`` of the mapping (or number) field ``read``."""
    values: dict[str, list[float]] = {}
    for s in samples:
        got = getattr(s, read)
        for k, v in (got.items() if isinstance(got, dict) else [("", got)] if got is not None else []):
            values.setdefault(k, []).append(float(v))
    return {k: statistics.fmean(v) for k, v in values.items()}


def table(run: LoadTestRun) -> str:
    record = run.steps[0]
    start, end = record.window_start, record.window_end
    samples = run.replicas.samples
    first = [s for s in samples if start <= s.t < start + EDGE_S]
    last = [s for s in samples if end - EDGE_S <= s.t <= end]
    lines = ["| quantity | first 2 min | last 2 min | change |", "|---|---:|---:|---:|"]
    for field, unit in (("memory_mb", "MB"), ("open_fds", "fds"), ("db_connections", "connections")):
        a, b = mean_of(first, field), mean_of(last, field)
        for k in sorted(a):
            name = f"{k} {unit}" if k else unit
            lines.append(f"| {name} | {a[k]:.0f} | {b.get(k, 0):.0f} | {b.get(k, 0) - a[k]:+.0f} |")
    rows = [s.trajectories for s in samples if start <= s.t <= end and s.trajectories is not None]
    answered = sum(1 for s in record.samples if s.ok and s.lane == "search_ai")
    if rows:
        lines.append(f"| trajectory rows | {rows[0]} | {rows[-1]} | {rows[-1] - rows[0]:+d} "
                     f"({answered} runs answered) |")
    lines += ["", "| window | search_ai answers | p50 ms | p95 ms |", "|---|---:|---:|---:|"]
    t = start
    while t < end - 1:
        ms = [s.latency_ms for s in record.samples if s.lane == "search_ai" and s.ok and t <= s.start < t + WINDOW_S]
        lines.append(f"| {(t - start) / 60:.0f}-{min(t + WINDOW_S, end) / 60 - start / 60:.0f} min | {len(ms)} | "
                     f"{percentile(ms, 50) or 0:.0f} | {percentile(ms, 95) or 0:.0f} |")
        t += WINDOW_S
    errors = sum(1 for s in record.samples if not s.ok)
    lines.append(f"\n{len(record.samples)} requests in the window, {errors} failed")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, default=launch.DEFAULT_CONFIG)
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--share", type=float, default=0.6, help="Of the measured capacity.")
    parser.add_argument("--probe", type=float, default=30.0, help="Seconds of the capacity probe.")
    parser.add_argument("--probe-users", type=int, default=64)
    parser.add_argument("--out", type=Path, default=Path(".data/soak") / time.strftime("%Y%m%d-%H%M%S"))
    args = parser.parse_args()
    dsn = resolve_dsn(Settings())
    cfg = launch.load_config(args.config, args={"database_url": dsn, "log_level": "WARNING"})
    launch.start_ray(log_to_driver=False)
    try:
        launch.deploy(cfg)
        launch.wait_until_running(cfg, timeout_s=300)
        url = launch.app_url(cfg)
        rate = capacity(url, args.probe_users, args.probe, args.out / "capacity")
        soak_rate = round(rate * args.share, 1)
        print(f"capacity {rate:.1f} answers/s (closed loop, {args.probe_users} clients); soaking at {soak_rate}/s "
              f"for {args.minutes:g} min", file=sys.stderr)
        step = Step(mode="open", users=max(64, round(soak_rate * 4)), rate=soak_rate)
        run = harness.run(plan(url, step, 30, args.minutes * 60), args.out, cooldown_s=0, interval_s=1.0,
                          say=lambda m: print(m, file=sys.stderr), dsn=dsn)
    finally:
        launch.shutdown()
    page = write_report(build_report(run), run, args.out)
    print(f"capacity {rate:.1f}/s; soak at {soak_rate}/s ({args.share:.0%}) for {args.minutes:g} min; report {page}\n")
    print(table(run))
    return 0


if __name__ == "__main__":
    sys.exit(main())
