"""How many questions make linking embed them: the share whose reading turns to what they ask by meaning.

    .venv/bin/python scripts/bench_asks.py agentic_rag/eval/data/demo.jsonl [more question sets ...]

Links each question against the catalog (run ``agentic-rag ingest`` first) and asks
its reading (:func:`~agentic_rag.understanding.reading.read`, ``by_meaning``) whether it reaches a name no cue word says
anything about, the only questions linking now embeds (one MiniLM pass and, in Serve, one Embedder call each).
Prints a markdown row per set: the share, and the reading's own time a question.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import make_pool, resolve_dsn
from agentic_rag.understanding.linker import link
from agentic_rag.understanding.reading import read


async def main(paths: list[Path]) -> None:
    settings = Settings()
    pool = await make_pool(resolve_dsn(settings), settings)
    print("| set | questions | turn to their meaning | reading a question |\n|---|---:|---:|---:|")
    try:
        for path in paths:
            questions = [json.loads(line)["question"] for line in path.read_text().splitlines() if line.strip()]
            consulted, spent = 0, 0.0
            async with pool.acquire() as conn:
                for question in questions:
                    links = await link(conn, question)
                    t0 = time.perf_counter()
                    consulted += read(question, links).by_meaning
                    spent += time.perf_counter() - t0
            n = max(len(questions), 1)
            print(f"| {path.name} | {len(questions)} | {consulted} ({100 * consulted / n:.1f}%) | "
                  f"{1000 * spent / n:.2f} ms |")
    finally:
        await pool.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+", type=Path, help="JSON Lines question files (a 'question' field each).")
    asyncio.run(main(parser.parse_args().sets))
