"""Entity linking latency (and how often it finds the entity meant) on the demo and a large synthetic catalog.

    .venv/bin/python scripts/bench_linking.py --entities 1000000

The demo catalog (database of the settings, loaded by `agentic-rag ingest`) is linked against the
shipped question sets. The synthetic catalog is loaded into its own database (as bench_retrieval.py
does, skipped when already there); its questions are made from names sampled from the catalog, in
a few phrasings, half of them with one typo in a name (the same sample for the same --seed, so two
runs compare on the same questions). Each question is linked twice: a first pass
that reads index pages from disk, and a warm pass. Prints a markdown table for docs/benchmarks.md.
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
from agentic_rag.settings import Settings
from agentic_rag.storage.devcluster import dev_dsn
from agentic_rag.storage.postgres import connect, migrate
from agentic_rag.understanding.linker import link
from agentic_rag.understanding.text import link_key

PHRASINGS = ("who is {n}?", "so um which studio animated {n}", "{n} - how many episodes?", "tell me about {n} thanks",
             "how is {n} related to {m}")
SETS = ("demo.jsonl", "holdout.jsonl", "typed_dev.jsonl")


def typo(name: str, rng: random.Random) -> str:
    """One letter dropped from one word of five letters or more (the name unchanged when it has none)."""
    words = name.split()
    long = [i for i, w in enumerate(words) if len(w) >= 5]
    if not long:
        return name
    i = rng.choice(long)
    j = rng.randrange(1, len(words[i]) - 1)
    words[i] = words[i][:j] + words[i][j + 1:]
    return " ".join(words)


async def run(dsn: str, questions: list[str]) -> tuple[dict[str, dict[str, float]], list[Any]]:
    out: dict[str, dict[str, float]] = {}
    links: list[Any] = []
    conn = await connect(dsn)
    try:
        for run_name in ("first pass", "warm"):
            lat: list[float] = []
            links = []
            for q in questions:
                t0 = time.perf_counter()
                links.append(await link(conn, q))
                lat.append((time.perf_counter() - t0) * 1000)
            out[run_name] = stats(lat)
    finally:
        await conn.close()
    return out, links


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--entities", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--queries", type=int, default=300)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    settings = Settings()
    rng = random.Random(args.seed)
    rows: list[tuple[str, int, dict[str, float], str]] = []

    demo_dsn = dev_dsn(settings)
    data = resources.files("agentic_rag.eval").joinpath("data")
    demo_qs = [q.question for s in SETS for q in load_questions(str(data.joinpath(s)))]
    demo, _ = await run(demo_dsn, demo_qs)
    for name, v in demo.items():
        rows.append((f"demo catalog, shipped question sets ({name})", int(v["n"]), v, ""))

    dsn = database(settings, f"agentic_rag_bench_{args.entities}")
    t0 = time.perf_counter()
    report = await load_synthetic(dsn, args.entities, args.seed)
    await migrate(dsn)
    print(f"catalog: {'already loaded' if report.skipped else f'loaded in {time.perf_counter() - t0:.0f} s'}")
    conn = await connect(dsn)
    try:
        sampled = await conn.fetch(
            "SELECT name, entity_id::text FROM entity_name TABLESAMPLE SYSTEM (1) REPEATABLE ($1) "
            "WHERE kind = 'primary' AND entity_type IN ('anime', 'manga', 'character', 'person', 'studio') "
            "ORDER BY entity_id LIMIT $2",  # the same names for the same seed: runs compare on one sample
            args.seed, args.queries * 2)
    finally:
        await conn.close()
    pairs = [(sampled[i], sampled[i + 1]) for i in range(0, len(sampled) - 1, 2)][: args.queries]
    questions, wanted = [], []
    for k, ((name, eid), (other, _)) in enumerate(pairs):
        shown = typo(name, rng) if k % 2 else name
        questions.append(rng.choice(PHRASINGS).format(n=shown.lower() if k % 3 == 0 else shown, m=other))
        wanted.append(eid)
    synth, links = await run(dsn, questions)
    # the name meant is linked (a synthetic name is often shared by many entities: the candidates keep the
    # most popular ten, so the entity itself is counted apart)
    names = [link_key(p[0][0]) for p in pairs]
    found = sum(any(link_key(c.matched) == n for m in lk.mentions for c in m.candidates)
                for lk, n in zip(links, names, strict=True))
    exact = sum(any(c.entity.id == eid for m in lk.mentions for c in m.candidates)
                for lk, eid in zip(links, wanted, strict=True))
    for name, v in synth.items():
        rows.append((f"synthetic {args.entities:,} entities, sampled names, half with a typo ({name})", int(v["n"]),
                     v, f"name {found}/{len(wanted)}, entity {exact}/{len(wanted)}"))
    latency_table("linking = two round trips (word probe, name probe), a third for seasons",
                  ("catalog, questions", "linked"), rows)


if __name__ == "__main__":
    asyncio.run(main())
