"""The loop's own cost, and the evaluation in agentic and linear mode, in one run.

    .venv/bin/python scripts/bench_loop.py [--questions FILE] [--repeat 3]

Runs every question of the set (default: the shipped demo set) through the in-process orchestrator
with the configured models (default: heuristic), in agentic and then linear mode, on the catalog in
the configured database (run ``agentic-rag ingest`` first). Prints the eval table of each mode as
Markdown, then the orchestrator's overhead per turn: a run's total time minus its model and retrieval
time (what is left is our own work: guards, prompts, cards, loop bookkeeping, trajectory writes),
per turn and per run. Trajectory writes are shown on their own as well, for each way of writing them
(``--writes turn,event``: the same runs, interleaved).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import platform
import statistics
from pathlib import Path

from agentic_rag.eval import compute_report, load_demo_questions, load_questions, resolve_gold, run_eval
from agentic_rag.eval.metrics import percentile
from agentic_rag.eval.report import render_markdown
from agentic_rag.orchestrator.loop import Orchestrator, RunResult
from agentic_rag.orchestrator.runtime import open_runtime
from agentic_rag.orchestrator.trajectory import TrajectoryStore
from agentic_rag.protocol import Mode
from agentic_rag.settings import Settings

# the models (the planner, the validator, and the encoder that reads what a question asks) and the stores
EXTERNAL = ("planner_llm_ms", "validator_llm_ms", "asks_ms", "qdrant_ms", "pg_graph_ms", "pg_query_ms")


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1), as the eval harness computes percentiles."""
    return percentile(values, q * 100) or 0.0


async def main(questions: Path | None, repeat: int, writes: list[str]) -> None:
    settings = Settings()
    qs = load_questions(questions) if questions else load_demo_questions()
    async with open_runtime(settings) as rt:
        async with rt.pool.acquire() as conn:
            gold = await resolve_gold(conn, qs, source="demo" if questions is None else None)
        modes: tuple[Mode, ...] = ("agentic", "linear")
        for mode in modes:
            outcomes = await run_eval(qs, functools.partial(rt.orchestrator.run, mode=mode, tenant="bench"),
                                      progress=False)
            print(f"\n### {mode}\n")
            print(render_markdown(compute_report(outcomes, gold, mode=mode)))
        # the same runs under each way of writing the trajectory, interleaved so both see the same machine
        variants = {w: Orchestrator(settings.model_copy(update={"trajectory_writes": w}), planner=o.planner,
                                    validator=o.validator, fallback=o.fallback, retrieval=o.retrieval,
                                    store=TrajectoryStore(rt.pool, settings.model_copy(
                                        update={"trajectory_writes": w})), policy=o.policy)
                    for o in (rt.orchestrator,) for w in writes}
        runs: dict[str, list[RunResult]] = {w: [] for w in writes}
        for _ in range(repeat):
            for q in qs:
                for w, orch in variants.items():
                    runs[w].append(await orch.run(q.question, tenant="bench"))
    print(f"\n### orchestrator overhead ({platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
          f"{repeat} passes, trajectory written per {' vs per '.join(writes)})\n")
    print("| trajectory writes | | per | runs | p50 ms | p95 ms | mean ms |")
    print("|---|---|---|---:|---:|---:|---:|")
    for w, rs in runs.items():
        done = [r for r in rs if r.turns]
        for per, div in (("turn", lambda r: r.turns), ("run", lambda r: 1)):
            rows = (("overhead (total - models - retrieval)",
                     [(r.timings["total_ms"] - sum(r.timings[k] for k in EXTERNAL)) / div(r) for r in done]),
                    ("of which trajectory writes", [r.timings["trajectory_ms"] / div(r) for r in done]),
                    ("models + retrieval (excluded)", [sum(r.timings[k] for k in EXTERNAL) / div(r) for r in done]))
            for name, values in rows:
                print(f"| per {w} | {name} | {per} | {len(values)} | {pct(values, 0.5):.2f} | "
                      f"{pct(values, 0.95):.2f} | {statistics.fmean(values):.2f} |")


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=3, help="Passes over the set for the overhead figures.")
    parser.add_argument("--writes", default="turn,event",
                        help="Ways of writing the trajectory to compare (turn: one round trip a turn; event: each).")
    args = parser.parse_args()
    asyncio.run(main(args.questions, args.repeat, args.writes.split(",")))
