"""The Serve application against the same loop in-process, in one run: cold start, and search_ai latency.

    .venv/bin/python scripts/bench_serve.py [--config configs/local.yaml] [--concurrency 1,64] [--rounds 2]

On the catalog of the configured database (run ``agentic-rag ingest`` first), with the configured
models (default heuristic). First the questions of the demo eval set run in-process
(``open_runtime``) at each concurrency, then the runtime closes (Qdrant local mode allows one process
per storage path), Ray starts, the config is deployed, and the time from ``ray.init`` to the first
answer over HTTP is the cold start. Then the same questions go through ``POST /v1/search_ai`` at each
concurrency. Prints one Markdown table: p50/p95 per path and concurrency, and the HTTP/in-process
ratio, which is what Serve (proxy, handles, replica hops) adds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

from agentic_rag.deployments import launch
from agentic_rag.eval import load_demo_questions
from agentic_rag.eval.metrics import percentile
from agentic_rag.orchestrator.runtime import open_runtime
from agentic_rag.settings import Settings


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1), as the eval harness computes percentiles."""
    return percentile(values, q * 100) or 0.0


async def timed_batch(ask: Callable[[str], Awaitable[None]], questions: list[str], concurrency: int) -> list[float]:
    """Latency of each question, with ``concurrency`` of them in flight at once (closed loop)."""
    gate = asyncio.Semaphore(concurrency)
    out: list[float] = []

    async def one(q: str) -> None:
        async with gate:
            t0 = time.perf_counter()
            await ask(q)
            out.append((time.perf_counter() - t0) * 1000)

    await asyncio.gather(*(one(q) for q in questions))
    return out


async def in_process(questions: list[str], levels: list[int]) -> dict[int, list[float]]:
    results: dict[int, list[float]] = {}
    async with open_runtime(Settings()) as rt:
        async def ask(q: str) -> None:
            await rt.orchestrator.run(q, tenant="bench")

        await timed_batch(ask, questions[:8], 4)  # warm-up, excluded
        for c in levels:
            results[c] = await timed_batch(ask, questions, c)
    return results


async def over_http(url: str, questions: list[str], levels: list[int]) -> dict[int, list[float]]:
    results: dict[int, list[float]] = {}
    limits = httpx.Limits(max_connections=max(levels) + 8)
    async with httpx.AsyncClient(base_url=url, timeout=120.0, limits=limits) as client:
        async def ask(q: str) -> None:
            r = await client.post("/v1/search_ai", json={"question": q}, headers={"X-Tenant": "bench"})
            r.raise_for_status()

        await timed_batch(ask, questions[:8], 4)
        for c in levels:
            results[c] = await timed_batch(ask, questions, c)
    return results


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
    print("| concurrency | in-process p50 ms | p95 ms | HTTP via Serve p50 ms | p95 ms | ratio p50 | ratio p95 |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for c in levels:
        a, b = local[c], served[c]
        print(f"| {c} | {pct(a, .5):.0f} | {pct(a, .95):.0f} | {pct(b, .5):.0f} | {pct(b, .95):.0f} | "
              f"{pct(b, .5) / pct(a, .5):.1f}x | {pct(b, .95) / pct(a, .95):.1f}x |")
    print(f"\nmean in-process {statistics.fmean(local[levels[0]]):.0f} ms at concurrency {levels[0]}")


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=launch.DEFAULT_CONFIG)
    parser.add_argument("--concurrency", default="1,64")
    parser.add_argument("--rounds", type=int, default=2, help="Passes over the question set per level.")
    args = parser.parse_args()
    main(args.config, [int(x) for x in args.concurrency.split(",")], args.rounds)
