"""The Serve application against the same loop in-process, in one run: cold start, and search_ai latency.

    .venv/bin/python scripts/bench_serve.py [--config configs/local.yaml] [--concurrency 1,64] [--rounds 2]

On the catalog of the configured database (run ``agentic-rag ingest`` first), with the configured
models (default heuristic). First the questions of the demo eval set run in-process
(``open_runtime``) at each concurrency, then the runtime closes (Qdrant local mode allows one process
per storage path), Ray starts, the config is deployed, and the time from ``ray.init`` to the first
answer over HTTP is the cold start. Then the same questions go through ``POST /v1/search_ai`` at each
concurrency. Prints one Markdown table: p50/p95 per path and concurrency, the CPU a request costs the whole
machine (every process's: the client's, Ray's, PostgreSQL's) on each path, and the HTTP/in-process
ratio, which is what Serve (proxy, handles, replica hops) adds, and how the runs ended on each path (the
same questions should end the same way: a path whose runs failed faster is not a faster path).

Then the cost account of a served run at each concurrency (means per run): the client's time, the app's
(the Ingress's ``Server-Timing`` ``app``), the loop's own total (the run's ``latency_ms``), and each
deployment hop the run made (``Server-Timing``, :mod:`agentic_rag.api.costs`): calls, wall time at
the caller, time inside the called method, and the difference, the hop's own cost (routing,
serialization, queueing). The same stages of the loop in-process are beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

from agentic_rag.api import costs
from agentic_rag.eval import load_demo_questions
from agentic_rag.eval.metrics import percentile
from agentic_rag.orchestrator.runtime import open_runtime
from agentic_rag.orchestrator.state import TIMING_KEYS
from agentic_rag.serve import launch
from agentic_rag.settings import Settings

CPU_MS: dict[tuple[str, int], float] = {}  # (path, concurrency) -> the machine's CPU ms a request


def cpu_seconds() -> float:
    """CPU seconds the whole machine has spent (every process: the client, Ray's, PostgreSQL's): on a quiet
    machine, what a level costs whichever processes did the work."""
    t = psutil.cpu_times()
    return float(t.user + t.system + getattr(t, "nice", 0.0) + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0))


async def measured(path: str, concurrency: int, batch: Awaitable[list[Sample]]) -> list[Sample]:
    """A level's samples, its CPU a request recorded in :data:`CPU_MS`."""
    t0 = cpu_seconds()
    samples = await batch
    CPU_MS[(path, concurrency)] = (cpu_seconds() - t0) * 1000 / max(len(samples), 1)
    return samples


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1), as the eval harness computes percentiles."""
    return percentile(values, q * 100) or 0.0


@dataclass
class Sample:
    """One run: the client's time, and what the run says about itself."""

    client_ms: float
    timings: dict[str, float]
    status: str
    app_ms: float = 0.0
    hops: costs.Ledger = field(default_factory=dict)


async def timed_batch(ask: Callable[[str], Awaitable[Sample | None]], questions: list[str],
                      concurrency: int) -> list[Sample]:
    """Each question's sample, with ``concurrency`` of them in flight at once (closed loop)."""
    gate = asyncio.Semaphore(concurrency)
    out: list[Sample] = []

    async def one(q: str) -> None:
        async with gate:
            t0 = time.perf_counter()
            sample = await ask(q)
            if sample is not None:
                sample.client_ms = (time.perf_counter() - t0) * 1000
                out.append(sample)

    await asyncio.gather(*(one(q) for q in questions))
    return out


async def in_process(questions: list[str], levels: list[int]) -> dict[int, list[Sample]]:
    results: dict[int, list[Sample]] = {}
    async with open_runtime(Settings()) as rt:
        async def ask(q: str) -> Sample:
            result = await rt.orchestrator.run(q, tenant="bench")
            return Sample(0.0, result.timings, outcome(result.response.status, result.response.warnings))

        await timed_batch(ask, questions[:8], 4)  # warm-up, excluded
        for c in levels:
            results[c] = await measured("in-process", c, timed_batch(ask, questions, c))
    return results


async def over_http(url: str, questions: list[str], levels: list[int]) -> dict[int, list[Sample]]:
    results: dict[int, list[Sample]] = {}
    limits = httpx.Limits(max_connections=max(levels) + 8)
    async with httpx.AsyncClient(base_url=url, timeout=120.0, limits=limits) as client:
        async def ask(q: str) -> Sample:
            r = await client.post("/v1/search_ai", json={"question": q}, headers={"X-Tenant": "bench"})
            r.raise_for_status()
            app_ms, hops = costs.parse_server_timing(r.headers.get("server-timing", ""))
            body = r.json()
            return Sample(0.0, body["timings"], outcome(body["status"], body["response"]["warnings"]), app_ms, hops)

        await timed_batch(ask, questions[:8], 4)
        for c in levels:
            results[c] = await measured("served", c, timed_batch(ask, questions, c))
    return results


def outcome(status: str, warnings: list[str]) -> str:
    """How a run ended, and whether it warned (a dependency failed): the two paths must agree to compare."""
    return f"{status}{' with warnings' if warnings else ''}"


def outcomes(samples: list[Sample]) -> str:
    counts: dict[str, int] = {}
    for s in samples:
        counts[s.status] = counts.get(s.status, 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))


def account(local: list[Sample], served: list[Sample]) -> None:
    """Where a served run's time goes, beside the same stages in-process (means per run, ms)."""
    n = len(served)

    def mean(values: Iterable[float], count: int = n) -> float:
        return sum(values) / max(count, 1)

    client, app = mean(s.client_ms for s in served), mean(s.app_ms for s in served)
    loop_total = mean(s.timings.get("total_ms", 0.0) for s in served)
    print("| where | in-process ms | served ms |")
    print("|---|---:|---:|")
    print(f"| client wall time | {mean((s.client_ms for s in local), len(local)):.1f} | {client:.1f} |")
    print(f"| proxy and HTTP (client - app) | | {client - app:.1f} |")
    print(f"| the app (Ingress, Server-Timing app) | | {app:.1f} |")
    print(f"| the loop's total (the run's latency_ms) | "
          f"{mean((s.timings.get('total_ms', 0.0) for s in local), len(local)):.1f} | {loop_total:.1f} |")
    for key in TIMING_KEYS[:-1]:
        print(f"| loop stage {key} | {mean((s.timings.get(key, 0.0) for s in local), len(local)):.1f} | "
              f"{mean(s.timings.get(key, 0.0) for s in served):.1f} |")
    names = sorted({k for s in served for k in s.hops})
    print("\n| hop | calls per run | wall ms per run | inside ms per run | hop's own ms per run | per call |")
    print("|---|---:|---:|---:|---:|---:|")
    total = 0.0
    for name in names:
        hops = [s.hops[name] for s in served if name in s.hops]
        calls = mean(h.calls for h in hops)
        own = mean(h.transport_ms for h in hops)
        total += own
        print(f"| {name} | {calls:.2f} | {mean(h.wall_ms for h in hops):.1f} | {mean(h.inside_ms for h in hops):.1f} "
              f"| {own:.1f} | {own / calls if calls else 0.0:.2f} |")
    print(f"| all hops | {mean(sum(h.calls for h in s.hops.values()) for s in served):.2f} | | | {total:.1f} | |")


def first_answer(url: str, deadline_s: float = 300.0) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < deadline_s:
        try:
            r = httpx.post(f"{url}/v1/search_ai", json={"question": "Which anime is Luffy in?"}, timeout=60.0)
            if r.status_code == 200:
                return time.monotonic()
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise TimeoutError("no answer from the app")


def main(config: Path, levels: list[int], rounds: int) -> None:
    questions = [q.question for q in load_demo_questions()] * rounds
    local = asyncio.run(in_process(questions, levels))
    t0 = time.monotonic()
    launch.start_ray()
    cfg = launch.load_config(config)
    launch.deploy(cfg)
    url = launch.app_url(cfg)
    try:
        cold = first_answer(url) - t0
        served = asyncio.run(over_http(url, questions, levels))
    finally:
        launch.shutdown()
    print(f"\ncold start (ray.init -> first answer over HTTP): {cold:.1f} s; {len(questions)} questions per level; "
          f"{os.cpu_count()} cores\n")
    print("| concurrency | in-process p50 ms | p95 ms | HTTP via Serve p50 ms | p95 ms | ratio p50 | ratio p95 "
          "| CPU ms a request, in-process | served | ratio CPU |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for c in levels:
        a, b = [s.client_ms for s in local[c]], [s.client_ms for s in served[c]]
        cpu_a, cpu_b = CPU_MS[("in-process", c)], CPU_MS[("served", c)]
        print(f"| {c} | {pct(a, .5):.0f} | {pct(a, .95):.0f} | {pct(b, .5):.0f} | {pct(b, .95):.0f} | "
              f"{pct(b, .5) / pct(a, .5):.1f}x | {pct(b, .95) / pct(a, .95):.1f}x | {cpu_a:.0f} | {cpu_b:.0f} | "
              f"{cpu_b / cpu_a:.1f}x |")
    print(f"\nmean in-process {statistics.fmean(s.client_ms for s in local[levels[0]]):.0f} ms at concurrency "
          f"{levels[0]}; Ray Serve flags: {serve_flags()}")
    for c in levels:
        print(f"\noutcomes at concurrency {c}: in-process {outcomes(local[c])}; served {outcomes(served[c])}")
    for c in levels:
        print(f"\n### Cost account at concurrency {c} (means per run)\n")
        account(local[c], served[c])


def serve_flags() -> str:
    """The Ray Serve performance settings this run's cluster started with (launch.start_ray sets the defaults)."""
    return ", ".join(f"{k}={os.environ[k]}" for k in sorted(os.environ) if k.startswith("RAY_SERVE_")) or "none"


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=launch.DEFAULT_CONFIG)
    parser.add_argument("--concurrency", default="1,64")
    parser.add_argument("--rounds", type=int, default=2, help="Passes over the question set per level.")
    args = parser.parse_args()
    main(args.config, [int(x) for x in args.concurrency.split(",")], args.rounds)
