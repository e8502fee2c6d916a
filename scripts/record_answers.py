"""Record every eval set's answers, question by question, in one process (the behaviour a change must keep).

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/record_answers.py --out DIR [--stress FILE] [SET.jsonl ...]

Writes ``DIR/<set>.jsonl`` (``agentic-rag eval --answers``'s format) for every set named, by default every set
under ``agentic_rag/eval/data`` and the stress file when given, and prints each set's accuracy. Compare two
recordings with ``scripts/compare_answers.py``. Uses the settings of the environment (``RAG_DATABASE_URL``,
``RAG_QDRANT_PATH``: a catalog with more titles loaded is recorded the same way).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import time
from pathlib import Path

from agentic_rag.cli._app import load_settings, with_dev_database
from agentic_rag.eval import compute_report, load_questions, resolve_gold, run_eval
from agentic_rag.eval.answers import write_answers
from agentic_rag.orchestrator.runtime import open_runtime

DATA = Path(__file__).resolve().parents[1] / "agentic_rag" / "eval" / "data"


async def record(sets: list[Path], out: Path, concurrency: int) -> None:
    settings = await asyncio.to_thread(with_dev_database, load_settings())
    async with open_runtime(settings) as rt:
        for path in sets:
            qs = load_questions(path)
            async with rt.pool.acquire() as conn:
                gold = await resolve_gold(conn, qs, source=None)
            t0 = time.perf_counter()
            outcomes = await run_eval(qs, functools.partial(rt.orchestrator.run, tenant="eval"),
                                      concurrency=concurrency, progress=False)
            write_answers(out / path.name, outcomes)
            report = compute_report(outcomes, gold, mode="agentic")
            print(f"{path.name:24} {report.overall.correct:4}/{report.n:<4} {report.overall.accuracy:6.1%}  "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sets", nargs="*", type=Path, help="question sets (default: every set under eval/data)")
    ap.add_argument("--out", type=Path, required=True, help="folder the answers files go to")
    ap.add_argument("--stress", type=Path, help="a stress set to record too (agentic-rag eval-set stress --out ...)")
    ap.add_argument("--concurrency", type=int, default=4)
    args = ap.parse_args()
    sets = args.sets or sorted(DATA.glob("*.jsonl"))
    if args.stress:
        sets.append(args.stress)
    args.out.mkdir(parents=True, exist_ok=True)
    asyncio.run(record(sets, args.out, args.concurrency))


if __name__ == "__main__":
    main()
