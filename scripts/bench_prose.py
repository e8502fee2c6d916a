"""Full-text search over descriptions (retrievers/prose.py): latency, and how often it picks out the entry
meant, on the demo catalog and on a large synthetic one.

    .venv/bin/python scripts/bench_prose.py --entities 1000000

Demo catalog: every question of the shipped sets that links no name (what the reader searches by
description), searched in the anime, manga and character prose as a run does. Synthetic catalog (its
own database, loaded as bench_linking.py does, skipped when already there): descriptions made from
sampled anime synopses (up to eight words of one). Synthetic synopses are made from a few short word
lists, so thousands of entries share every word: this is the worst case for the bounds (every pair of
words matches, the candidates are capped), and says nothing of accuracy, only whether the entry the
words came from is among those returned. Each query runs twice, a first pass and a warm one. Prints a
markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import time
from importlib import resources
from typing import Any

from bench_retrieval import database, latency_table, stats

from agentic_rag.catalog.synthetic import load_synthetic
from agentic_rag.eval.questions import load_questions
from agentic_rag.retrievers.prose import PROSE_TYPES, prose_search
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import connect, migrate, resolve_dsn
from agentic_rag.storage.sql import Conn
from agentic_rag.understanding.linker import link


async def timed_search(conn: Conn, texts: list[str], types: tuple[str, ...]
                       ) -> tuple[dict[str, dict[str, float]], list[list[Any]]]:
    out: dict[str, dict[str, float]] = {}
    hits: list[list[Any]] = []
    for run_name in ("first pass", "warm"):
        lat: list[float] = []
        hits = []
        for text in texts:
            t0 = time.perf_counter()
            found = [h for t in types for h in await prose_search(conn, text, t, limit=10)]
            lat.append((time.perf_counter() - t0) * 1000)
            hits.append(found)
        out[run_name] = stats(lat)
    return out, hits


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--entities", type=int, default=1_000_000, help="0: the demo catalog only")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    settings = Settings()
    rows: list[tuple[str, int, dict[str, float], str]] = []

    data = resources.files("agentic_rag.eval").joinpath("data")
    questions = [q.question for f in sorted(p.name for p in data.iterdir() if p.name.endswith(".jsonl"))
                 for q in load_questions(str(data.joinpath(f)))]
    conn = await connect(resolve_dsn(settings))
    try:
        unlinked = [q for q in questions if not (await link(conn, q)).mentions]
        demo, hits = await timed_search(conn, unlinked, PROSE_TYPES)
    finally:
        await conn.close()
    some = sum(bool(h) for h in hits)
    for name, v in demo.items():
        rows.append((f"demo catalog, the {len(unlinked)} shipped questions that name nothing, 3 types ({name})",
                     int(v["n"]), v, f"{some} with an entry sharing 2+ words"))

    if args.entities:
        dsn = database(settings, f"agentic_rag_bench_{args.entities}")
        t0 = time.perf_counter()
        report = await load_synthetic(dsn, args.entities, args.seed)
        await migrate(dsn)  # a catalog loaded before migration 0010 gets its prose views here
        print(f"catalog: {'already loaded' if report.skipped else f'loaded in {time.perf_counter() - t0:.0f} s'}")
        rng = random.Random(args.seed)
        conn = await connect(dsn)
        try:
            sampled = await conn.fetch(
                "SELECT id::text, synopsis FROM anime TABLESAMPLE SYSTEM (1) REPEATABLE ($1) "
                "WHERE synopsis IS NOT NULL ORDER BY id LIMIT $2", args.seed, args.queries)
            texts, wanted = [], []
            for eid, synopsis in sampled:
                words = str(synopsis).split()
                at = rng.randrange(max(len(words) - 8, 1))
                texts.append("the show where " + " ".join(words[at:at + 8]))
                wanted.append(eid)
            synth, hits = await timed_search(conn, texts, ("anime",))
        finally:
            await conn.close()
        among = sum(eid in {x.id for x in h} for h, eid in zip(hits, wanted, strict=True))
        for name, v in synth.items():
            rows.append((f"synthetic {args.entities:,} entities, 8 words of a sampled synopsis, anime ({name})",
                         int(v["n"]), v, f"source entry returned {among}/{len(wanted)}"))
    latency_table("one statement per entity type", ("catalog, queries", "found"), rows)


if __name__ == "__main__":
    asyncio.run(main())
