"""Vector search that scales (issue 14): qdrant-client local mode beside Qdrant Edge, in one run.

    .venv/bin/python scripts/bench_vectors.py --embed-only                  # embed for 15 min more (cached), stop
    .venv/bin/python scripts/bench_vectors.py --embed-budget-s 0 --reuse    # measure with what is cached
    .venv/bin/python scripts/bench_vectors.py                               # both in one run

Points are catalog documents of the synthetic catalog (seed 0, 1,340,000 entities): its 134,000 anime,
67,000 manga and 804,000 characters, written as ``catalog/index.py`` writes them (name, other titles, what
and when, genres, synopsis or description), with payload ``type``, ``genres`` and ``year`` (characters
have neither genres nor year). A fixed shuffle puts them in one order: the first ``--queries`` are held
out as queries (their synopsis or description, never indexed), the next 1,000,000 are the points.

Vectors are real MiniLM embeddings (``models/embeddings.py``) of as many point texts, in that order, as
``--embed-budget-s`` allows, cached under ``.data/bench_vectors/`` (a later run goes on after what is
cached, for its own budget; each fill's throughput is kept beside the cache). A point past the
embedded ones gets a derived vector: ``normalize(l*a + (1-l)*b)`` of two embedded points ``a``, ``b``
of its own type and first genre, ``l`` uniform in [0.6, 0.9] (seeded), so it lies near a real text,
towards another of its kind. Queries are always real embeddings.

For each size in ``--sizes`` both engines get the same first ``size`` points (local mode in memory,
edge on disk with payload indexes on type, genres and year, its HNSW graph built by ``optimize``);
``--edge-sizes`` are measured on edge alone. Each query runs top-10 three ways: no filter; a keyword
filter (``type`` = anime and ``genres`` any of one genre); an integer range (``year`` within 5 years).
Recall@10 is against exact search: brute force in numpy over the same vectors, same filter. Before it is
measured, each edge store answers the held-out queries that are not measured, once (a serving replica's
pages are in memory; this run's store may come from disk). Edge runs once per ``--ef`` value (its
search beam; 0: unset, Qdrant's default). ``--reuse`` keeps the largest edge store under the cache and
reuses it while it holds the same points and graph parameters (building the graph of a million points
takes about half an hour on two cores). Prints markdown tables.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from qdrant_client import QdrantClient, models
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from agentic_rag.catalog.synthetic import SyntheticCatalog
from agentic_rag.models.embeddings import Embedder
from agentic_rag.settings import Settings
from agentic_rag.storage.edge import EdgeStore
from agentic_rag.storage.qdrant import INTEGER_FIELDS, KEYWORD_FIELDS

F32 = npt.NDArray[np.float32]
CATALOG_ENTITIES = 1_340_000  # 134k anime + 67k manga + 804k characters: 1,005,000 documents
SEED = 0
MAX_POINTS = 1_000_000
MAX_QUERIES = 500
CHUNK = 4096  # texts per cached embedding file
COLLECTION = "bench"
console = Console(stderr=True)


def progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    TimeRemainingColumn(), console=console)


# -- the documents ----------------------------------------------------------------------------------

@dataclass(slots=True)
class Docs:
    texts: list[str]  # what a point embeds
    queries: list[str]  # what a held-out entity is searched by
    types: npt.NDArray[np.int8]  # 0 anime, 1 manga, 2 character
    genres: list[list[str]]
    years: npt.NDArray[np.int32]  # 0: none


TYPES = ("anime", "manga", "character")


def _join(*parts: Any) -> str:
    return ". ".join(str(p) for p in parts if p)


def build_docs() -> Docs:
    """Every document in the fixed order: held-out queries first, then the points."""
    cat = SyntheticCatalog(CATALOG_ENTITIES, seed=SEED)
    texts: list[str] = []
    queries: list[str] = []
    types: list[int] = []
    genres: list[list[str]] = []
    years: list[int] = []
    with progress() as bar:
        task = bar.add_task("documents", total=sum(cat.entities[t] for t in TYPES))
        for code, table in enumerate(TYPES):
            for chunk in cat.chunks(table):
                for r in chunk:
                    if table == "anime":
                        others = ", ".join([*r[6], r[4], r[5]])
                        texts.append(_join(r[3], others, f"{r[7].upper()} anime from {r[8]}",
                                           "Genres: " + ", ".join(r[12]), r[14]))
                        queries.append(r[14])
                        genres.append(list(r[12]))
                        years.append(r[8])
                    elif table == "manga":
                        others = ", ".join([*r[6], r[4], r[5]])
                        texts.append(_join(r[3], others, f"Manga from {r[7]}", f"Serialized in {r[11]}",
                                           "Genres: " + ", ".join(r[12]), r[14]))
                        queries.append(r[14])
                        genres.append(list(r[12]))
                        years.append(r[7])
                    else:
                        texts.append(_join(r[3], ", ".join([*r[5], r[4]]), r[6]))
                        queries.append(f"{r[3]}, {r[6][:1].lower()}{r[6][1:]}")
                        genres.append([])
                        years.append(0)
                    types.append(code)
                bar.advance(task, len(chunk))
    order = np.random.default_rng(SEED).permutation(len(texts))
    return Docs(texts=[texts[i] for i in order], queries=[queries[i] for i in order],
                types=np.asarray(types, dtype=np.int8)[order], genres=[genres[i] for i in order],
                years=np.asarray(years, dtype=np.int32)[order])


# -- real embeddings, cached ----------------------------------------------------------------------

class EmbeddingCache:
    """Embeddings of the point texts in order, in files of CHUNK rows, and of the held-out queries."""

    def __init__(self, root: Path, docs: Docs) -> None:
        key = hashlib.sha256("\n".join(docs.texts[:1000]).encode()).hexdigest()[:12]
        self.root = root / f"minilm-{key}"
        self.root.mkdir(parents=True, exist_ok=True)
        self.docs = docs

    def _chunk(self, k: int) -> Path:
        return self.root / f"points-{k:04d}.npy"

    def cached_points(self) -> int:
        k = 0
        while self._chunk(k).exists():
            k += 1
        return k * CHUNK

    def fill(self, embedder: Embedder, budget_s: float) -> dict[str, float]:
        """Embed queries (if missing), then point chunks until the budget is spent; returns throughput."""
        queries = self.root / "queries.npy"
        if not queries.exists():
            np.save(queries, embedder.embed(self.docs.queries[:MAX_QUERIES]))
        start = self.cached_points()
        total = MAX_POINTS + MAX_QUERIES
        done, t0 = 0, time.perf_counter()
        with progress() as bar:
            task = bar.add_task(f"embedding (budget {budget_s:.0f} s)", total=MAX_POINTS, completed=start)
            for lo in range(MAX_QUERIES + start, total, CHUNK):
                if time.perf_counter() - t0 >= budget_s:
                    break
                texts = self.docs.texts[lo:min(lo + CHUNK, total)]
                np.save(self._chunk((lo - MAX_QUERIES) // CHUNK), embedder.embed(texts))
                done += len(texts)
                bar.advance(task, len(texts))
        seconds = time.perf_counter() - t0
        log = self.root / "throughput.json"  # every fill so far: what the cached embeddings cost
        runs = json.loads(log.read_text()) if log.exists() else []
        if done:
            runs.append({"texts": done, "seconds": round(seconds, 1), "texts_per_s": round(done / seconds, 1)})
            log.write_text(json.dumps(runs, indent=1))
        texts, secs = sum(r["texts"] for r in runs), sum(r["seconds"] for r in runs)
        return {"embedded_now": done, "embedded_total": texts, "seconds_total": secs,
                "texts_per_s": texts / secs if secs else 0.0}

    def load(self) -> tuple[F32, F32]:
        """(point embeddings in order, query embeddings)."""
        n = self.cached_points() // CHUNK
        points = np.concatenate([np.load(self._chunk(k)) for k in range(n)]) if n else np.zeros((0, 384), np.float32)
        return points.astype(np.float32), np.load(self.root / "queries.npy").astype(np.float32)


def derive(real: F32, docs: Docs, size: int) -> F32:
    """``size`` point vectors: the real ones, then derived ones (see the module docstring)."""
    if size <= len(real):
        return real[:size]
    rng = np.random.default_rng(SEED + 1)
    types = docs.types[MAX_QUERIES:MAX_QUERIES + size]
    first_genre = np.array([g[0] if g else "" for g in docs.genres[MAX_QUERIES:MAX_QUERIES + size]], dtype=object)
    pools: dict[tuple[int, str], npt.NDArray[np.int64]] = {}
    # sorted: the draws below must not depend on set order (str hashes differ between processes)
    for key in sorted({(int(t), str(g)) for t, g in zip(types[:len(real)], first_genre[:len(real)], strict=True)}):
        pools[key] = np.flatnonzero((types[:len(real)] == key[0]) & (first_genre[:len(real)] == key[1]))
    out = np.empty((size, real.shape[1]), dtype=np.float32)
    out[:len(real)] = real
    rest = np.arange(len(real), size)
    lam = rng.uniform(0.6, 0.9, len(rest)).astype(np.float32)
    for key, pool in pools.items():
        members = rest[(types[rest] == key[0]) & (first_genre[rest] == key[1])]
        a = pool[rng.integers(0, len(pool), len(members))]
        b = pool[rng.integers(0, len(pool), len(members))]
        w = lam[members - len(real)][:, None]
        v = w * real[a] + (1 - w) * real[b]
        out[members] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


# -- the queries and their filters ----------------------------------------------------------------

@dataclass(slots=True)
class Workload:
    vectors: F32
    keyword: list[str]  # the genre of each query's keyword filter (type = anime too)
    year_from: npt.NDArray[np.int64]  # each query's range filter: year_from..year_from + 4


def workload(queries: F32, n: int) -> Workload:
    rng = np.random.default_rng(SEED + 2)
    from agentic_rag.catalog.synthetic import GENRES

    return Workload(vectors=queries[:n], keyword=[str(g) for g in rng.choice(GENRES, n)],
                    year_from=rng.integers(1970, 2021, n))


def filters(w: Workload, i: int) -> dict[str, models.Filter | None]:
    return {
        "none": None,
        "keyword": models.Filter(must=[
            models.FieldCondition(key="type", match=models.MatchValue(value="anime")),
            models.FieldCondition(key="genres", match=models.MatchAny(any=[w.keyword[i]])),
        ]),
        "year range": models.Filter(must=[models.FieldCondition(
            key="year", range=models.Range(gte=int(w.year_from[i]), lte=int(w.year_from[i]) + 4))]),
    }


KINDS = ("none", "keyword", "year range")


def exact_truth(points: F32, docs: Docs, w: Workload, n: int) -> dict[str, list[set[int]]]:
    """Each query's exact top 10 per filter kind: brute force in numpy over the same vectors."""
    size = len(points)
    types = docs.types[MAX_QUERIES:MAX_QUERIES + size]
    years = docs.years[MAX_QUERIES:MAX_QUERIES + size]
    genre_rows = docs.genres[MAX_QUERIES:MAX_QUERIES + size]
    anime_with: dict[str, npt.NDArray[np.bool_]] = {}
    for g in set(w.keyword[:n]):
        anime_with[g] = (types == 0) & np.fromiter((g in gs for gs in genre_rows), bool, size)
    out: dict[str, list[set[int]]] = {k: [] for k in KINDS}
    with progress() as bar:
        task = bar.add_task(f"exact top 10, {size:,} points", total=n)
        for i in range(n):
            scores = points @ w.vectors[i]
            lo = int(w.year_from[i])
            for kind, mask in (("none", None), ("keyword", anime_with[w.keyword[i]]),
                               ("year range", (years >= lo) & (years <= lo + 4))):
                s = scores if mask is None else np.where(mask, scores, -np.inf)
                top = np.argpartition(-s, 10)[:10]
                out[kind].append({int(j) for j in top if np.isfinite(s[j])})
            bar.advance(task)
    return out


# -- the engines ----------------------------------------------------------------------------------

def payload(docs: Docs, i: int) -> dict[str, Any]:
    j = MAX_QUERIES + i
    out: dict[str, Any] = {"type": TYPES[docs.types[j]], "genres": docs.genres[j]}
    if docs.years[j]:
        out["year"] = int(docs.years[j])
    return out


def load_points(client: Any, points: F32, docs: Docs, label: str) -> float:
    t0 = time.perf_counter()
    with progress() as bar:
        task = bar.add_task(f"upsert {label}", total=len(points))
        for lo in range(0, len(points), 2048):
            hi = min(len(points), lo + 2048)
            client.upsert(COLLECTION, [models.PointStruct(id=i, vector=points[i].tolist(), payload=payload(docs, i))
                                       for i in range(lo, hi)])
            bar.advance(task, hi - lo)
    return time.perf_counter() - t0


def create(client: Any, indexed: bool) -> None:
    client.create_collection(COLLECTION, vectors_config=models.VectorParams(size=384,
                                                                          distance=models.Distance.COSINE))
    if indexed:
        for field in KEYWORD_FIELDS:
            client.create_payload_index(COLLECTION, field, models.PayloadSchemaType.KEYWORD)
        for field in INTEGER_FIELDS:
            client.create_payload_index(COLLECTION, field, models.PayloadSchemaType.INTEGER)


@contextmanager
def edge_store(points: F32, docs: Docs, args: argparse.Namespace,
               reuse: Path | None) -> Iterator[tuple[Any, dict[str, float]]]:
    """An edge store of ``points``, built (timed) or reused from ``reuse`` when it holds the same points."""
    build: dict[str, float] = {}
    tmp = None
    if reuse is not None:
        root = reuse
        marker = root / "built.json"
        spec = {"points": len(points), "m": args.m, "ef_construct": args.ef_construct,
                "vectors": hashlib.sha256(points[::997].tobytes()).hexdigest()[:16]}
        if not (marker.exists() and json.loads(marker.read_text()) == spec):
            shutil.rmtree(root, ignore_errors=True)
    else:
        tmp = tempfile.mkdtemp(prefix="edge-", dir=args.work)
        root = Path(tmp)
    store = EdgeStore(root, m=args.m, ef_construct=args.ef_construct)
    try:
        if not store.collection_exists(COLLECTION):
            create(store, indexed=True)
            build["upsert_s"] = load_points(store, points, docs, f"edge {len(points):,}")
            console.print(f"building the HNSW graph of {len(points):,} points (optimize)...")
            t0 = time.perf_counter()
            store.optimize(COLLECTION)
            build["optimize_s"] = time.perf_counter() - t0
            if reuse is not None:
                (root / "built.json").write_text(json.dumps(spec))
        yield store, build
    finally:
        store.close()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def measure(search: Callable[[F32, models.Filter | None], list[int]], truth: dict[str, list[set[int]]],
            w: Workload, n: int, label: str) -> dict[str, dict[str, float]]:
    """Latency (p50, p95 ms) and recall@10 against exact search, per filter kind, over the first n queries."""
    lat: dict[str, list[float]] = {k: [] for k in KINDS}
    rec: dict[str, list[float]] = {k: [] for k in KINDS}
    with progress() as bar:
        task = bar.add_task(label, total=n)
        for i in range(n):
            fl = filters(w, i)
            for kind in KINDS:
                t0 = time.perf_counter()
                got = search(w.vectors[i], fl[kind])
                lat[kind].append((time.perf_counter() - t0) * 1000)
                if truth[kind][i]:
                    rec[kind].append(len(truth[kind][i] & set(got)) / len(truth[kind][i]))
            bar.advance(task)
    return {k: {"p50": pct(v, 0.5), "p95": pct(v, 0.95), "recall": statistics.fmean(rec[k]) if rec[k] else 1.0}
            for k, v in lat.items()}


def searcher(client: Any, ef: int | None = None) -> Callable[[F32, models.Filter | None], list[int]]:
    params = models.SearchParams(hnsw_ef=ef) if ef else None

    def run(q: F32, flt: models.Filter | None) -> list[int]:
        kwargs: dict[str, Any] = {"search_params": params} if params else {}
        hits = client.query_points(COLLECTION, query=q.tolist(), query_filter=flt, limit=10, with_payload=False,
                                   **kwargs).points
        return [int(p.id) for p in hits]

    return run


# -- the run --------------------------------------------------------------------------------------

def row(engine: str, size: int, ef: Any, n: int, r: dict[str, dict[str, float]]) -> str:
    cells = [engine, f"{size:,}", str(ef), str(n)]
    for kind in KINDS:
        cells += [f"{r[kind]['p50']:.2f}", f"{r[kind]['p95']:.2f}", f"{r[kind]['recall']:.3f}"]
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000", help="both engines")
    ap.add_argument("--edge-sizes", default="1000000", help="edge alone")
    ap.add_argument("--queries", type=int, default=200, help=f"queries per measurement (<= {MAX_QUERIES})")
    ap.add_argument("--local-queries", type=int, default=50, help="queries for local mode at 100k points and up")
    ap.add_argument("--ef", default="32,64,100,128,256,0", help="edge search beams (hnsw_ef) to measure; 0: unset")
    ap.add_argument("--m", type=int, default=16, help="edge HNSW m")
    ap.add_argument("--ef-construct", type=int, default=100, help="edge HNSW ef_construct")
    ap.add_argument("--embed-budget-s", type=float, default=900.0)
    ap.add_argument("--embed-only", action="store_true")
    ap.add_argument("--cache", type=Path, default=Path(".data/bench_vectors"))
    ap.add_argument("--work", type=Path, default=None, help="where temporary stores go (default: the cache dir)")
    ap.add_argument("--reuse", action="store_true", help="keep the largest edge store in the cache, reuse it")
    ap.add_argument("--out", type=Path, default=None, help="also write the results as JSON here")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args.work = args.work or args.cache
    args.cache.mkdir(parents=True, exist_ok=True)

    docs = build_docs()
    cache = EmbeddingCache(args.cache, docs)
    embedder = Embedder(Settings(embedding_batch_size=128))
    t0 = time.perf_counter()
    embedder.embed(docs.texts[MAX_QUERIES:MAX_QUERIES + 256])  # loads the model; a first throughput sample
    sample_rate = 256 / (time.perf_counter() - t0)
    throughput = cache.fill(embedder, args.embed_budget_s)
    real, query_vectors = cache.load()
    console.print(f"embedding: {throughput['texts_per_s']:.1f} texts/s over every fill of the cache "
                  f"(a 256-text sample now: {sample_rate:.1f}); {len(real):,} point texts embedded for real")
    if args.embed_only:
        return
    results: dict[str, Any] = {"real_embeddings": len(real), "embedding": throughput, "rows": []}
    w = workload(query_vectors, args.queries)
    efs = [int(x) for x in args.ef.split(",") if x]
    lines = ["| engine | points | hnsw_ef | queries | no filter p50 ms | p95 ms | recall@10 | keyword filter p50 ms "
             "| p95 ms | recall@10 | year range p50 ms | p95 ms | recall@10 |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    builds: list[str] = []
    sizes = [int(x) for x in args.sizes.split(",") if x]
    edge_sizes = [int(x) for x in args.edge_sizes.split(",") if x]
    for size in sorted({*sizes, *edge_sizes}):
        points = derive(real, docs, size)
        truth = exact_truth(points, docs, w, args.queries)
        if size in sizes:
            local = QdrantClient(":memory:")
            create(local, indexed=False)
            upsert_s = load_points(local, points, docs, f"local {size:,}")
            n = args.queries if size < 100_000 else min(args.queries, args.local_queries)
            r = measure(searcher(local), truth, w, n, f"local mode {size:,}")
            lines.append(row("local mode (exact)", size, "-", n, r))
            results["rows"].append({"engine": "local", "size": size, "queries": n, "upsert_s": upsert_s, **r})
            local.close()
        reuse = args.cache / f"edge-{size}" if args.reuse and size == max(sizes + edge_sizes) else None
        with edge_store(points, docs, args, reuse) as (store, build):
            if build:
                builds.append(f"| {size:,} | {build['upsert_s']:.1f} | {build['optimize_s']:.1f} |")
            info = store.get_collection(COLLECTION)
            console.print(f"edge {size:,}: {info.segments_count} segments, {info.indexed_vectors_count:,} indexed")
            # a serving replica's pages are in memory: warm them with the held-out queries not measured
            warm, search = workload(query_vectors, MAX_QUERIES), searcher(store, max(efs) or None)
            for i in range(args.queries, MAX_QUERIES):
                for flt in filters(warm, i).values():
                    search(warm.vectors[i], flt)
            for ef in efs:
                r = measure(searcher(store, ef), truth, w, args.queries, f"edge {size:,} ef {ef}")
                lines.append(row("edge (HNSW)", size, ef or "unset", args.queries, r))
                results["rows"].append({"engine": "edge", "size": size, "ef": ef, "queries": args.queries,
                                        **build, **r})
    print(f"\nreal MiniLM embeddings: {len(real):,} point texts (+{len(query_vectors)} held-out queries); "
          f"embedding throughput {throughput['texts_per_s']:.1f} texts/s ({throughput['embedded_total']:,} texts in "
          f"{throughput['seconds_total']:.0f} s when the cache was filled; a 256-text sample now: "
          f"{sample_rate:.1f} texts/s)\n")
    print("\n".join(lines))
    if builds:
        print("\n| edge points | upsert s | optimize (HNSW build) s |\n|---:|---:|---:|")
        print("\n".join(builds))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
