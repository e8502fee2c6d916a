"""Ingestion throughput: the demo catalog and a synthetic catalog, into fresh scratch databases.

    .venv/bin/python scripts/bench_ingest.py --synthetic 100000

Prints a markdown table (rows/s into PostgreSQL, embeddings/s into Qdrant local mode) for
docs/benchmarks.md. Uses its own databases and a temporary Qdrant path; touches nothing else.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import tempfile
import time
from pathlib import Path

from agentic_rag.catalog.ingest import index_catalog, ingest_demo
from agentic_rag.catalog.synthetic import load_synthetic
from agentic_rag.dsn import with_database
from agentic_rag.models.embeddings import Embedder
from agentic_rag.settings import Settings
from agentic_rag.storage.devcluster import dev_dsn
from agentic_rag.storage.postgres import connect
from agentic_rag.storage.sql import ident


async def fresh_database(settings: Settings, name: str) -> str:
    server = await asyncio.to_thread(dev_dsn, settings.model_copy(update={"database_name": "postgres"}))
    conn = await connect(server)
    try:
        await conn.execute(f"DROP DATABASE IF EXISTS {ident(name)} WITH (FORCE)")
        await conn.execute(f"CREATE DATABASE {ident(name)}")
    finally:
        await conn.close()
    return with_database(server, name)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--synthetic", type=int, default=100_000, help="synthetic entities (0: skip)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    rows: list[tuple[str, str, str, str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(qdrant_path=Path(tmp) / "qdrant")
        embedder = Embedder(settings)
        embedder.embed(["warm-up"])  # model load is not ingestion

        dsn = await fresh_database(settings, "agentic_rag_bench_demo")
        report = await ingest_demo(dsn, settings, index=False)
        index, index_s = await index_catalog(dsn, settings, embedder=embedder)
        points = sum(c.upserted for c in index.values())
        embed_s = sum(c.embed_seconds for c in index.values())
        rows.append(("demo catalog", f"{report.rows:,}", f"{report.rows / report.pg_seconds:,.0f}",
                     f"{points:,}", f"{points / embed_s:,.0f} ({points / index_s:,.0f} end to end)"))
        t0 = time.perf_counter()
        again = await ingest_demo(dsn, settings, index=True)
        rows.append(("demo, second run (no-op)", f"{again.rows:,}", f"{time.perf_counter() - t0:.2f} s total",
                     "0" if not again.changed else "CHANGED", "-"))

        if args.synthetic:
            dsn = await fresh_database(settings, "agentic_rag_bench_synthetic")
            syn = await load_synthetic(dsn, args.synthetic, args.seed)
            settings_syn = settings.model_copy(update={"qdrant_path": Path(tmp) / "qdrant-syn"})
            index, index_s = await index_catalog(dsn, settings_syn, embedder=embedder)
            points = sum(c.upserted for c in index.values())
            embed_s = sum(c.embed_seconds for c in index.values())
            total = syn.rows
            rows.append((f"synthetic {args.synthetic:,} entities", f"{total:,}",
                         f"{total / syn.seconds:,.0f}", f"{points:,}",
                         f"{points / embed_s:,.0f} ({points / index_s:,.0f} end to end)"))

    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores\n")
    print("| load | rows into PostgreSQL | rows/s | points into Qdrant | embeddings/s |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    asyncio.run(main())
