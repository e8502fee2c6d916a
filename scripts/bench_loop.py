"""The loop's own cost, and the evaluation in agentic and linear mode, in one run.

    .venv/bin/python scripts/bench_loop.py [--questions FILE] [--repeat 3]

Runs every question of the set (default: the shipped demo set) through the in-process orchestrator
with the configured models (default: heuristic), in agentic and then linear mode, on the catalog in
the configured database (run ``agentic-rag ingest`` first). Prints the eval table of each mode as
Markdown, then the orchestrator's overhead per turn: a run's total time minus its model and retrieval
time (what is left is our own work: guards, prompts, cards, loop bookkeeping, trajectory writes),
divided by its turns. Trajectory writes are shown on their own as well.
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
from agentic_rag.orchestrator.loop import RunResult
from agentic_rag.orchestrator.runtime import open_runtime
from agentic_rag.orchestrator.state import Mode
from agentic_rag.settings import Settings

EXTERNAL = ("planner_llm_ms", "validator_llm_ms", "qdrant_ms", "pg_graph_ms", "pg_query_ms")


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1), as the eval harness computes percentiles."""
    return percentile(values, q * 100) or 0.0


async def main(questions: Path | None, repeat: int) -> None:
    settings = Settings()
    qs = load_questions(questions) if questions else load_demo_questions()
    async with open_runtime(settings) as rt:
        async with rt.pool.connection() as conn:
            gold = await resolve_gold(conn, qs, source="demo" if questions is None else None)
        modes: tuple[Mode, ...] = ("agentic", "linear")
        for mode in modes:
            outcomes = await run_eval(qs, functools.partial(rt.orchestrator.run, mode=mode, tenant="bench"),
                                      progress=False)
            print(f"\n### {mode}\n")
            print(render_markdown(compute_report(outcomes, gold, mode=mode)))
        runs: list[RunResult] = []
        for _ in range(repeat):
            for q in qs:
                runs.append(await rt.orchestrator.run(q.question, tenant="bench"))
    per_turn = [(r.timings["total_ms"] - sum(r.timings[k] for k in EXTERNAL)) / r.turns for r in runs if r.turns]
    traj_per_turn = [r.timings["trajectory_ms"] / r.turns for r in runs if r.turns]
    external = [sum(r.timings[k] for k in EXTERNAL) / r.turns for r in runs if r.turns]
    print(f"\n### orchestrator overhead per turn ({len(per_turn)} runs with >= 1 turn, "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores)\n")
    print("| | p50 ms | p95 ms | mean ms |")
    print("|---|---:|---:|---:|")
    for name, values in (("overhead (total - models - retrieval)", per_turn),
                         ("of which trajectory writes", traj_per_turn),
                         ("models + retrieval (excluded)", external)):
        print(f"| {name} | {pct(values, 0.5):.2f} | {pct(values, 0.95):.2f} | {statistics.fmean(values):.2f} |")


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=3, help="Passes over the set for the overhead figures.")
    args = parser.parse_args()
    asyncio.run(main(args.questions, args.repeat))
