"""SmolLM2 as the planner under concurrent runs, its calls decoded one at a time or batched (issue 39).

    .venv/bin/python scripts/bench_batching.py --concurrency 1,4,16 --runs 8,16,32

The in-process loop (the same TransformersBackend a PlannerModel replica holds) with SmolLM2-135M-Instruct as the
planner (transformers on CPU, xgrammar, compact forms) and the heuristic validator, twice in one sitting: with
``transformers_batch_size`` 1 (each call decoded alone, behind the one before it) and with batching on. At each
concurrency the given number of runs (demo questions in turn) go through ``--concurrency`` workers; the loop's
deadline and the model call's limit are raised out of the way (``--deadline-s``), so a run's time is the model's,
not a fallback's. Prints one markdown table: runs/s, p50 and p95 per run, the planner calls left to the heuristic,
and the mean batch the model decoded.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from dataclasses import dataclass

from agentic_rag.eval import load_demo_questions
from agentic_rag.eval.metrics import percentile
from agentic_rag.models.base import StructuredGenerator
from agentic_rag.models.packaged import fetch
from agentic_rag.models.transformers_backend import TransformersBackend
from agentic_rag.orchestrator.runtime import open_runtime
from agentic_rag.planners.warmup import warm_up
from agentic_rag.settings import Settings


@dataclass
class Level:
    mode: str
    concurrency: int
    runs: int
    wall_s: float
    latencies_ms: list[float]
    fallbacks: int
    batches: list[int]


async def _level(rt: object, backend: TransformersBackend, questions: list[str], concurrency: int,
                 runs: int, mode: str) -> Level:
    orchestrator = rt.orchestrator  # type: ignore[attr-defined]
    todo = asyncio.Queue[str]()
    for n in range(runs):
        todo.put_nowait(questions[n % len(questions)])
    latencies: list[float] = []
    fallbacks = 0
    backend.batches = []

    async def worker(w: int) -> None:
        nonlocal fallbacks
        while not todo.empty():
            question = todo.get_nowait()
            t0 = time.perf_counter()
            result = await orchestrator.run(question, tenant=f"bench-batching-{w}")
            latencies.append((time.perf_counter() - t0) * 1000)
            fallbacks += sum("planner model" in x and "heuristic" in x for x in result.response.warnings)

    t0 = time.perf_counter()
    await asyncio.gather(*(worker(w) for w in range(concurrency)))
    return Level(mode, concurrency, runs, time.perf_counter() - t0, latencies, fallbacks, list(backend.batches))


async def _mode(mode: str, batch_size: int, levels: list[tuple[int, int]], questions: list[str],
                deadline_s: float, dtype: str = "auto") -> list[Level]:
    settings = Settings(planner_backend="transformers", planner_model="smollm2", transformers_constraint="xgrammar",
                        transformers_batch_size=batch_size, transformers_dtype=dtype,  # type: ignore[arg-type]
                        agent_deadline_ms=int(deadline_s * 1000),
                        generation_timeout_ms=int(deadline_s * 1000), log_level="WARNING")
    fetch("smollm2", settings)
    out = []
    async with open_runtime(settings) as rt:
        planner = rt.orchestrator.planner
        assert isinstance(planner, StructuredGenerator) and isinstance(planner.backend, TransformersBackend)
        await warm_up(planner, "planner")
        for concurrency, runs in levels:
            level = await _level(rt, planner.backend, questions, concurrency, runs, mode)
            print(f"{mode} c={concurrency}: {runs / level.wall_s:.3f} runs/s", flush=True)
            out.append(level)
    return out


def _table(levels: list[Level]) -> str:
    lines = ["| batching | concurrency | runs | runs/s | p50 s | p95 s | planner calls left to the heuristic "
             "| mean batch |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for lv in levels:
        mean_batch = statistics.fmean(lv.batches) if lv.batches else 1.0
        lines.append(f"| {lv.mode} | {lv.concurrency} | {lv.runs} | {lv.runs / lv.wall_s:.3f} | "
                     f"{(percentile(lv.latencies_ms, 50) or 0) / 1000:.1f} | "
                     f"{(percentile(lv.latencies_ms, 95) or 0) / 1000:.1f} | "
                     f"{lv.fallbacks} | {mean_batch:.1f} |")
    base = {lv.mode: lv.runs / lv.wall_s for lv in levels if lv.concurrency == min(x.concurrency for x in levels)}
    top = max(x.concurrency for x in levels)
    for lv in levels:
        if lv.concurrency == top and lv.mode in base:
            lines.append(f"\n{lv.mode}: throughput at {top} is {lv.runs / lv.wall_s / base[lv.mode]:.2f}x "
                         f"its throughput at {min(x.concurrency for x in levels)}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--concurrency", default="1,4,16")
    ap.add_argument("--runs", default="8,16,32", help="runs at each concurrency")
    ap.add_argument("--batch-size", type=int, default=16, help="transformers_batch_size with batching on")
    ap.add_argument("--deadline-s", type=float, default=600.0)
    ap.add_argument("--modes", default="off,on",
                    help="off (one call at a time), on (batched); :DTYPE sets transformers_dtype (on:bfloat16)")
    args = ap.parse_args()
    levels = list(zip((int(c) for c in args.concurrency.split(",")), (int(r) for r in args.runs.split(",")),
                      strict=True))
    questions = [q.question for q in load_demo_questions()][:48]
    done: list[Level] = []
    for mode in args.modes.split(","):
        batching, _, dtype = mode.partition(":")
        done += asyncio.run(_mode(mode, 1 if batching == "off" else args.batch_size, levels, questions,
                                  args.deadline_s, dtype or "auto"))
    print(_table(done))


if __name__ == "__main__":
    main()
