"""What tracing costs the served path: the same app and load with tracing off and on, side by side in one run.

    .venv/bin/python scripts/bench_tracing.py [--config configs/local.yaml] [--concurrency 64] [--rounds 2]
                                              [--sittings 2] [--ratio 1.0]

Each sitting deploys the config on a fresh local Ray twice, tracing off (no OTLP endpoint named: what every user
runs by default) and then on (``OTEL_EXPORTER_OTLP_ENDPOINT`` at an OTLP/HTTP receiver this script runs,
``RAG_TRACE_RATIO`` sampled), and drives ``POST /v1/search_ai`` with the demo questions, ``--concurrency`` in
flight (closed loop), after a warm-up. Prints one Markdown row per deployment: throughput, p50 and p95, the machine's
CPU a request, spans received; then the on/off ratios over the sittings (the medians of each side). Off and on
alternate so that drift in this shared machine's speed falls on both sides alike.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from bench_serve import Sample, cpu_seconds, first_answer, outcome, pct, timed_batch

from agentic_rag import tracing
from agentic_rag.eval import load_demo_questions
from agentic_rag.loadtest.otlp import OtlpReceiver, receiving
from agentic_rag.serve import launch

TRACING_ENV = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_BSP_SCHEDULE_DELAY", "RAG_TRACE_RATIO")


@dataclass
class Level:
    tracing: str
    sitting: int
    runs: int
    wall_s: float
    cpu_ms: float
    p50: float
    p95: float
    spans: int
    ok: int

    @property
    def per_s(self) -> float:
        return self.runs / self.wall_s


async def load(url: str, questions: list[str], concurrency: int) -> tuple[list[Sample], float]:
    import httpx

    limits = httpx.Limits(max_connections=concurrency + 8)
    async with httpx.AsyncClient(base_url=url, timeout=120.0, limits=limits) as client:
        async def ask(q: str) -> Sample:
            r = await client.post("/v1/search_ai", json={"question": q}, headers={"X-Tenant": "bench"})
            r.raise_for_status()
            body = r.json()
            return Sample(0.0, body["timings"], outcome(body["status"], body["response"]["warnings"]))

        await timed_batch(ask, questions[:16], 8)  # warm-up, excluded
        t0 = time.perf_counter()
        samples = await timed_batch(ask, questions, concurrency)
        return samples, time.perf_counter() - t0


def deployment(config: Path, questions: list[str], concurrency: int, traced: bool, sitting: int,
               receiver: OtlpReceiver, ratio: float) -> Level:
    for key in TRACING_ENV:
        os.environ.pop(key, None)
    if traced:  # before Ray starts: every process of the app inherits it
        os.environ.update({"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "RAG_TRACE_RATIO": str(ratio)})
    receiver.clear()
    launch.start_ray()
    cfg = launch.load_config(config)
    try:
        launch.deploy(cfg)
        url = launch.app_url(cfg)
        first_answer(url)
        c0 = cpu_seconds()
        samples, wall = asyncio.run(load(url, questions, concurrency))
        cpu_ms = (cpu_seconds() - c0) * 1000 / max(len(samples), 1)
        time.sleep(1.0)  # the replicas' last batches of spans
    finally:
        launch.shutdown()
    ms = [s.client_ms for s in samples]
    return Level("on" if traced else "off", sitting, len(samples), wall, cpu_ms, pct(ms, .5), pct(ms, .95),
                 len(receiver.spans), sum(s.status == "answered" for s in samples))


def off_cost_ns(n: int = 200_000) -> float:
    """What one span costs the code when tracing is off (in this process it is: no endpoint is named here), in
    nanoseconds: a span of the loop's shape, opened and closed, with its attributes."""
    assert not tracing.enabled()
    t0 = time.perf_counter_ns()
    for i in range(n):
        with tracing.span("turn", {"agentic_rag.turn": i, "agentic_rag.role": "planner"}) as span:
            span.set_attribute("agentic_rag.rows", i)
    return (time.perf_counter_ns() - t0) / n


def main(config: Path, concurrency: int, rounds: int, sittings: int, ratio: float) -> None:
    print(f"tracing off: a span costs {off_cost_ns():.0f} ns (opened, its attributes set, closed)", flush=True)
    questions = [q.question for q in load_demo_questions()] * rounds
    levels: list[Level] = []
    with receiving() as receiver:
        for sitting in range(1, sittings + 1):
            for traced in (False, True):
                level = deployment(config, questions, concurrency, traced, sitting, receiver, ratio)
                print(f"sitting {sitting}, tracing {level.tracing}: {level.per_s:.1f} runs/s, p95 {level.p95:.0f} ms, "
                      f"{level.spans} spans", flush=True)
                levels.append(level)
    print(f"\n{len(questions)} questions a deployment at concurrency {concurrency}; {os.cpu_count()} cores; "
          f"ratio {ratio}\n")
    print("| sitting | tracing | runs/s | p50 ms | p95 ms | CPU ms a run | spans received (with the warm-up's) "
          "| answered |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for lv in levels:
        print(f"| {lv.sitting} | {lv.tracing} | {lv.per_s:.1f} | {lv.p50:.0f} | {lv.p95:.0f} | {lv.cpu_ms:.0f} | "
              f"{lv.spans} | {lv.ok}/{lv.runs} |")

    def median(side: str, value: str) -> float:
        return statistics.median(getattr(lv, value) for lv in levels if lv.tracing == side)

    print("\non / off (medians over the sittings): "
          f"throughput {median('on', 'per_s') / median('off', 'per_s'):.2f}x, "
          f"p50 {median('on', 'p50') / median('off', 'p50'):.2f}x, "
          f"p95 {median('on', 'p95') / median('off', 'p95'):.2f}x, "
          f"CPU a run {median('on', 'cpu_ms') / median('off', 'cpu_ms'):.2f}x")


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=launch.DEFAULT_CONFIG)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2, help="Passes over the question set a deployment.")
    parser.add_argument("--sittings", type=int, default=2, help="Off-then-on pairs.")
    parser.add_argument("--ratio", type=float, default=1.0, help="RAG_TRACE_RATIO when tracing is on.")
    args = parser.parse_args()
    main(args.config, args.concurrency, args.rounds, args.sittings, args.ratio)
