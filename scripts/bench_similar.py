"""The similar step's latency (retrievers/similar.py) over a large synthetic catalog: Qdrant's recommendation query
with filters, fused with the graph's evidence from PostgreSQL.

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/bench_similar.py --entities 1000000
    HF_HUB_OFFLINE=1 .venv/bin/python scripts/bench_similar.py --entities 0          # the demo catalog as loaded

Loads the synthetic catalog into its own database (as bench_retrieval.py does; skipped when that catalog is there)
and indexes its anime and manga into a qdrant-edge store of their own under ``.data/bench_similar/`` (payloads as
``catalog/index.py`` builds them, so every filter the step compiles has its field; HNSW built by ``optimize``;
kept and reused while the catalog is the same). The vectors are random unit vectors, not embeddings: this measures
latency alone (embedding 200,000 synopses takes hours on these cores, and what the picks are is measured on the
real catalog by the eval sets); random 384-d vectors are the hard case for an HNSW graph. ``--entities 0`` uses
the configured catalog and Qdrant as they are (real vectors).

Each query is the step as a run asks it: one or two examples sampled from the anime (repeatable), five picks,
with no filter, and with the filters a wish sets (finished, TV, from a decade). Each runs a first pass and a warm
one. Prints a markdown table: p50 / p95 / max in milliseconds, and how many picks came back.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
from bench_retrieval import database
from qdrant_client import models

from agentic_rag.catalog.index import DOCUMENTS, RECORD_SQL
from agentic_rag.catalog.synthetic import load_synthetic
from agentic_rag.cli._app import load_settings, with_dev_database
from agentic_rag.models.embeddings import Embedder
from agentic_rag.protocol import EntityRef, SimilarIntent
from agentic_rag.retrievers.similar import SimilarRetriever
from agentic_rag.retrievers.vector import QdrantExecutor
from agentic_rag.settings import Settings
from agentic_rag.storage.edge import EdgeStore
from agentic_rag.storage.postgres import close_pool, connect, make_pool, resolve_dsn
from agentic_rag.storage.qdrant import INTEGER_FIELDS, KEYWORD_FIELDS, collection_name, open_qdrant

DIM = 384
BATCH = 2000
ROOT = Path(".data/bench_similar")
FILTERS: dict[str, dict[str, Any]] = {
    "no filter": {},
    "finished, TV, 2000-2009": {"finished": True, "format": ["tv"], "year_min": 2000, "year_max": 2009},
}
# A wish in words as well: embedded beside the examples, and its genres ("psychological") found in the catalog's own
# genres by index probes (0014_genre_indexes.sql) and kept as a filter: the whole cost a wish adds.
WISHES: dict[str, str | None] = {"no filter": None, "finished, TV, 2000-2009": None,
                                 "wish: a dark psychological thriller": "a dark psychological thriller"}


def stats(lat: list[float]) -> dict[str, float]:
    lat = sorted(lat)
    return {"p50": statistics.median(lat), "p95": lat[int(0.95 * (len(lat) - 1))], "max": lat[-1]}


async def index_random(dsn: str, settings: Settings, store: EdgeStore, seed: int) -> int:
    """The catalog's anime and manga as points with random unit vectors; the count indexed."""
    rng = np.random.default_rng(seed)
    conn = await connect(dsn)
    total = 0
    try:
        for entity_type in ("anime", "manga"):
            name = collection_name(settings, entity_type)
            store.create_collection(name, vectors_config=models.VectorParams(size=DIM,
                                                                            distance=models.Distance.COSINE))
            for field in KEYWORD_FIELDS:
                store.create_payload_index(name, field, models.PayloadSchemaType.KEYWORD)
            for field in INTEGER_FIELDS:
                store.create_payload_index(name, field, models.PayloadSchemaType.INTEGER)
            rows = await conn.fetch(RECORD_SQL[entity_type])
            for i in range(0, len(rows), BATCH):
                docs = [DOCUMENTS[entity_type](r) for r in rows[i:i + BATCH]]
                vecs = rng.standard_normal((len(docs), DIM)).astype(np.float32)
                vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
                store.upsert(name, [models.PointStruct(id=d.id, vector=v.tolist(), payload=d.payload)
                                    for d, v in zip(docs, vecs, strict=True)])
            t0 = time.perf_counter()
            store.optimize(name)
            print(f"indexed {len(rows):,} {entity_type} (HNSW built in {time.perf_counter() - t0:.0f} s)", flush=True)
            total += len(rows)
    finally:
        await conn.close()
    return total


async def measure(settings: Settings, store: Any, n_queries: int, seed: int) -> list[tuple[str, str, dict[str, float],
                                                                                            float]]:
    pool = await make_pool(resolve_dsn(settings), settings)
    embedder = Embedder(settings)
    vector = QdrantExecutor(store, embedder.aembed, settings)
    retriever = SimilarRetriever(pool, vector)
    rng = random.Random(seed)
    try:
        async with pool.acquire() as conn:
            # a repeatable sample at any size (the same examples on every run over the same catalog)
            ids = [r[0] for r in await conn.fetch(
                "SELECT id::text FROM anime ORDER BY md5(id::text || $1::text) LIMIT $2", str(seed), 2 * n_queries)]
        examples = [[ids[(2 * i + j) % len(ids)] for j in range(rng.choice((1, 2)))] for i in range(n_queries)]
        await vector.embed_query("warm up")  # the model loads once, as a served Embedder's does before it is ready
        out = []
        for label, wish in WISHES.items():
            flt = FILTERS.get(label, {})
            for run in ("first pass", "warm"):
                lat, picks = [], []
                for like in examples:
                    intent = SimilarIntent(rationale="bench", entity_type="anime", filters=flt, query=wish,
                                           like=[EntityRef(entity_type="anime", id=i) for i in like])
                    t0 = time.perf_counter()
                    result = await retriever.execute(intent)
                    lat.append((time.perf_counter() - t0) * 1000)
                    picks.append(result.count)
                out.append((label, run, stats(lat), statistics.mean(picks)))
        return out
    finally:
        await close_pool(pool)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--entities", type=int, default=1_000_000, help="0: the configured catalog and Qdrant")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.entities == 0:
        settings = with_dev_database(load_settings())
        store: Any = open_qdrant(settings)
        where = "the configured catalog and its Qdrant (real vectors)"
    else:
        base = load_settings()
        dsn = database(base, f"bench_similar_{args.entities}")
        t0 = time.perf_counter()
        report = await load_synthetic(dsn, args.entities, args.seed)
        print(f"synthetic catalog: {args.entities:,} entities ({'kept' if report.skipped else 'loaded'}, "
              f"{time.perf_counter() - t0:.0f} s)", flush=True)
        settings = base.model_copy(update={"database_url": dsn})
        path = ROOT / f"{args.entities}-{args.seed}"
        marker = path / "indexed"
        if not marker.exists():
            shutil.rmtree(path, ignore_errors=True)
            store = EdgeStore(path)
            marker.write_text(str(await index_random(dsn, settings, store, args.seed)))
        else:
            store = EdgeStore(path)
        where = f"synthetic {args.entities:,} entities ({marker.read_text()} anime and manga points, random vectors)"
    try:
        rows = await measure(settings, store, args.queries, args.seed)
    finally:
        store.close()
    print(f"\n{where}; {args.queries} queries; {os.cpu_count()} cores; dsn {resolve_dsn(settings)}\n")
    print("| filters | pass | p50 ms | p95 ms | max ms | picks (mean) |\n|---|---|---:|---:|---:|---:|")
    for label, run, s, picks in rows:
        print(f"| {label} | {run} | {s['p50']:.1f} | {s['p95']:.1f} | {s['max']:.1f} | {picks:.1f} |")


if __name__ == "__main__":
    asyncio.run(main())
