"""Qdrant Edge: the Qdrant engine in this process, behind the part of ``QdrantClient`` the code calls.

``qdrant-edge-py`` embeds Qdrant's own storage, HNSW graph, payload indexes and filtered search; one
``EdgeShard`` holds one collection. :class:`EdgeStore` keeps a shard per collection under one directory
(``<root>/<collection>/shard`` beside the collection's ``params.json``) and answers every call of
:class:`~agentic_rag.storage.qdrant.VectorStore` with qdrant-client's own models, so the retrievers,
the ingest and the tests run on it unchanged. What differs from a Qdrant server:

* Writes apply before the call returns (``wait=True`` whatever is asked) and the write-ahead log makes
  them durable. Payload indexes are kept up to date as points arrive; the HNSW graph is built by
  :meth:`EdgeStore.optimize` (Qdrant's optimizers, run in the calling thread), which :meth:`EdgeStore.close`
  runs for every collection written since the store was opened. Until then a search scans the segment
  that has no graph yet: exact, and slower past tens of thousands of points.
* One process per store. A second ``EdgeShard.load`` of a shard another process holds fails on the
  write-ahead log's lock, but only after it has opened the segment files, which broke the first
  process's next flush when we tried it. So the store takes ``<root>/.lock`` (``flock``) before it loads
  any shard, and a second opener, in this process or another, gets :class:`EdgeStoreLocked`. Edge has no
  read-only mode: replicas that must scale out use a Qdrant server (``RAG_QDRANT_URL``).
* Edge calls keep the GIL while they run: a search for about a millisecond, building the HNSW graph
  of a million points for many minutes. Build it in the process that writes (the ingest), not in a
  serving one.
* Filters: ``must``/``should``/``must_not`` of nested filters, ``FieldCondition`` with ``MatchValue``,
  ``MatchAny`` or ``Range``, and ``HasIdCondition``: what :mod:`agentic_rag.retrievers` compiles. Anything
  else raises ``TypeError`` rather than being searched without it.
"""

from __future__ import annotations

import fcntl
import shutil
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, cast

import qdrant_edge as edge
from pydantic import TypeAdapter
from qdrant_client import models
from qdrant_client.http import models as rest  # models.QueryResponse is fastembed's, not query_points'

from agentic_rag.errors import Unavailable

PARAMS_FILE = "params.json"
SHARD_DIR = "shard"

# A collection's vectors: one unnamed vector, or named ones ("" for the unnamed one beside others).
VectorsConfig = models.VectorParams | dict[str, models.VectorParams]
_VECTORS_CONFIG: TypeAdapter[VectorsConfig] = TypeAdapter(VectorsConfig)


# qdrant-client's payload index types beside edge's (same names; edge's enum has no .name or hash)
_SCHEMA_TYPES = tuple((t, getattr(edge.PayloadSchemaType, t.value.title())) for t in models.PayloadSchemaType)


class EdgeStoreLocked(Unavailable, RuntimeError):
    """Another opener (this process or another) holds the store."""


def _out_id(point_id: int | uuid.UUID | str) -> int | str:
    return str(point_id) if isinstance(point_id, uuid.UUID) else point_id


def _condition(cond: Any) -> Any:
    if isinstance(cond, models.Filter):
        return edge_filter(cond)
    if isinstance(cond, models.HasIdCondition):
        return edge.HasIdCondition(point_ids=set(cond.has_id))
    if isinstance(cond, models.FieldCondition):
        if cond.match is not None and cond.range is None:
            if isinstance(cond.match, models.MatchValue):
                return edge.FieldCondition(key=cond.key, match=edge.MatchValue(cond.match.value))
            if isinstance(cond.match, models.MatchAny):
                return edge.FieldCondition(key=cond.key, match=edge.MatchAny(cond.match.any))
        if isinstance(cond.range, models.Range) and cond.match is None:
            r = cond.range
            return edge.FieldCondition(key=cond.key, range=edge.RangeFloat(gte=r.gte, gt=r.gt, lte=r.lte, lt=r.lt))
    raise TypeError(f"the edge store does not compile this filter condition: {cond!r}")


def edge_filter(flt: models.Filter) -> edge.Filter:
    """A qdrant-client filter as an edge filter, clause by clause (see the module docstring for what is kept)."""
    if flt.min_should is not None:
        raise TypeError("the edge store does not compile min_should")

    def clause(conds: Any) -> list[Any] | None:
        if conds is None:
            return None
        return [_condition(c) for c in (conds if isinstance(conds, list) else [conds])]

    return edge.Filter(must=clause(flt.must), should=clause(flt.should), must_not=clause(flt.must_not))


def edge_query(query: list[float] | models.RecommendQuery, using: str | None) -> edge.Query:
    """A nearest-neighbour vector, or qdrant-client's recommendation query with vector examples (the edge engine
    takes vectors, not point ids: the caller fetches the examples' vectors) and the best_score or sum_scores
    strategy, as the edge engine's query."""
    if not isinstance(query, models.RecommendQuery):
        return edge.Query.Nearest(query, using=using)
    rec = query.recommend

    def vectors(examples: Any) -> list[Any]:  # dense vectors (the edge stub's NamedVector list)
        out: list[Any] = []
        for v in examples or []:
            if not isinstance(v, list):
                raise TypeError("the edge store takes recommendation examples as vectors, not point ids")
            out.append([float(x) for x in v])
        return out

    examples = edge.RecommendQuery(positives=vectors(rec.positive), negatives=vectors(rec.negative))
    if rec.strategy == models.RecommendStrategy.BEST_SCORE:
        return edge.Query.RecommendBestScore(examples, using=using)
    if rec.strategy == models.RecommendStrategy.SUM_SCORES:
        return edge.Query.RecommendSumScores(examples, using=using)
    raise TypeError(f"the edge store does not run the {rec.strategy} recommendation strategy")


def _payload_selector(with_payload: bool | list[str]) -> bool | list[str]:
    return list(with_payload) if isinstance(with_payload, list) else bool(with_payload)


def _vector(value: Any) -> list[float] | dict[str, list[float]] | None:
    return value if isinstance(value, list | dict) else None


def _edge_params(params: models.VectorParams) -> edge.EdgeVectorParams:
    return edge.EdgeVectorParams(size=params.size, distance=getattr(edge.Distance, params.distance.name.title()))


class EdgeStore:
    """One directory of Qdrant Edge shards, one per collection, with qdrant-client's method names and models.

    ``m``, ``ef_construct`` and ``full_scan_threshold_kb`` shape the HNSW graph of collections created here
    (Qdrant's defaults: 16, 100, 10,000 KB of vectors, below which a filtered search scans the filtered
    points instead); a segment gets its graph once it holds ``indexing_threshold_kb`` of vectors (``None``:
    Qdrant's default). ``hnsw_ef`` is the search beam used when a query sets none (``None``: Qdrant's
    default). Thread-safe: calls are serialised.
    """

    def __init__(self, root: Path, *, m: int = 16, ef_construct: int = 100, full_scan_threshold_kb: int = 10_000,
                 indexing_threshold_kb: int | None = None, hnsw_ef: int | None = None) -> None:
        self.root = root
        self._hnsw = edge.HnswIndexConfig(m=m, ef_construct=ef_construct, full_scan_threshold=full_scan_threshold_kb)
        self._optimizers = edge.EdgeOptimizersConfig(indexing_threshold=indexing_threshold_kb)
        self._hnsw_ef = hnsw_ef
        self._mutex = threading.RLock()
        self._shards: dict[str, edge.EdgeShard] = {}
        self._params: dict[str, VectorsConfig] = {}
        self._written: set[str] = set()
        root.mkdir(parents=True, exist_ok=True)
        self._lock_file: IO[str] | None = (root / ".lock").open("a")
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock_file.close()
            self._lock_file = None
            raise EdgeStoreLocked(f"{root} is open in another process or client") from None
        try:
            for params_file in sorted(root.glob(f"*/{PARAMS_FILE}")):
                name = params_file.parent.name
                self._params[name] = _VECTORS_CONFIG.validate_json(params_file.read_text())
                self._shards[name] = edge.EdgeShard.load(str(params_file.parent / SHARD_DIR))
        except BaseException:
            self.close()
            raise

    def _shard(self, name: str) -> edge.EdgeShard:
        shard = self._shards.get(name)
        if shard is None:
            raise ValueError(f"Collection {name} not found")
        return shard

    # -- collections ----------------------------------------------------------------------------------

    def collection_exists(self, collection_name: str) -> bool:
        with self._mutex:
            return collection_name in self._shards

    def get_collections(self) -> models.CollectionsResponse:
        with self._mutex:
            return models.CollectionsResponse(
                collections=[models.CollectionDescription(name=n) for n in sorted(self._shards)])

    def get_collection(self, collection_name: str) -> models.CollectionInfo:
        with self._mutex:
            info = self._shard(collection_name).info()
            schema = {k: models.PayloadIndexInfo(data_type=next(t for t, e in _SCHEMA_TYPES if e == v.data_type),
                                                 points=v.points)
                      for k, v in info.payload_schema.items()}
            hnsw = self._hnsw
            return models.CollectionInfo(
                status=models.CollectionStatus.GREEN, optimizer_status=models.OptimizersStatusOneOf.OK,
                indexed_vectors_count=info.indexed_vectors_count, points_count=info.points_count,
                segments_count=info.segments_count, payload_schema=schema,
                config=models.CollectionConfig(
                    params=models.CollectionParams(vectors=self._params[collection_name]),
                    hnsw_config=models.HnswConfig(m=hnsw.m, ef_construct=hnsw.ef_construct,
                                                  full_scan_threshold=hnsw.full_scan_threshold),
                    optimizer_config=models.OptimizersConfig(default_segment_number=0, flush_interval_sec=0),
                ),
            )

    def create_collection(self, collection_name: str, vectors_config: VectorsConfig) -> bool:
        """A new collection of one unnamed dense vector, or of named dense ones (``""`` names the unnamed one)."""
        vectors = (_edge_params(vectors_config) if isinstance(vectors_config, models.VectorParams)
                   else {name: _edge_params(p) for name, p in vectors_config.items()})
        with self._mutex:
            if collection_name in self._shards:
                raise ValueError(f"Collection {collection_name} already exists")
            folder = self.root / collection_name
            shutil.rmtree(folder, ignore_errors=True)  # a creation that died half way
            config = edge.EdgeConfig(vectors=vectors, hnsw_config=self._hnsw, optimizers=self._optimizers)
            self._shards[collection_name] = edge.EdgeShard.create(str(folder / SHARD_DIR), config)
            # written last: a folder without it is a creation that did not finish
            (folder / PARAMS_FILE).write_bytes(_VECTORS_CONFIG.dump_json(vectors_config))
            self._params[collection_name] = vectors_config
            return True

    def create_payload_index(self, collection_name: str, field_name: str,
                             field_schema: models.PayloadSchemaType) -> models.UpdateResult:
        schema = next(e for t, e in _SCHEMA_TYPES if t == field_schema)
        with self._mutex:
            self._shard(collection_name).update(edge.UpdateOperation.create_field_index(field_name, schema))
        return models.UpdateResult(status=models.UpdateStatus.COMPLETED)

    def delete_collection(self, collection_name: str) -> bool:
        with self._mutex:
            shard = self._shards.pop(collection_name, None)
            if shard is None:
                return False
            shard.close()
            self._params.pop(collection_name)
            self._written.discard(collection_name)
            shutil.rmtree(self.root / collection_name)
            return True

    # -- points ---------------------------------------------------------------------------------------

    def upsert(self, collection_name: str, points: Sequence[models.PointStruct],
               wait: bool = True) -> models.UpdateResult:
        batch = []
        for p in points:
            dense = isinstance(p.vector, list) or (
                isinstance(p.vector, dict) and all(isinstance(v, list) for v in p.vector.values()))
            if not dense:
                raise TypeError("the edge store keeps dense vectors: one unnamed, or named ones")
            batch.append(edge.Point(id=p.id, vector=cast(Any, p.vector), payload=p.payload))
        with self._mutex:
            self._shard(collection_name).update(edge.UpdateOperation.upsert_points(batch))
            self._written.add(collection_name)
        return models.UpdateResult(status=models.UpdateStatus.COMPLETED)

    def delete(self, collection_name: str, points_selector: models.PointIdsList,
               wait: bool = True) -> models.UpdateResult:
        with self._mutex:
            self._shard(collection_name).update(edge.UpdateOperation.delete_points(list(points_selector.points)))
            self._written.add(collection_name)
        return models.UpdateResult(status=models.UpdateStatus.COMPLETED)

    def retrieve(self, collection_name: str, ids: Sequence[int | str], with_payload: bool | list[str] = True,
                 with_vectors: bool = False) -> list[models.Record]:
        with self._mutex:
            records = self._shard(collection_name).retrieve(
                list(ids), with_payload=_payload_selector(with_payload), with_vector=with_vectors)
        return [models.Record(id=_out_id(r.id), payload=r.payload, vector=_vector(r.vector)) for r in records]

    def scroll(self, collection_name: str, *, scroll_filter: models.Filter | None = None, limit: int = 10,
               offset: int | str | None = None, with_payload: bool | list[str] = True,
               with_vectors: bool = False) -> tuple[list[models.Record], int | str | None]:
        request = edge.ScrollRequest(offset=offset, limit=limit,
                                     filter=None if scroll_filter is None else edge_filter(scroll_filter),
                                     with_payload=_payload_selector(with_payload), with_vector=with_vectors)
        with self._mutex:
            records, next_id = self._shard(collection_name).scroll(request)
        return ([models.Record(id=_out_id(r.id), payload=r.payload, vector=_vector(r.vector)) for r in records],
                None if next_id is None else _out_id(next_id))

    def query_points(self, collection_name: str, query: list[float] | models.RecommendQuery, *,
                     using: str | None = None,
                     query_filter: models.Filter | None = None, search_params: models.SearchParams | None = None,
                     limit: int = 10, with_payload: bool | list[str] = True,
                     with_vectors: bool = False) -> rest.QueryResponse:
        """Nearest neighbours of ``query`` in the vector ``using`` (None: the unnamed one), or the points a
        recommendation query (:func:`edge_query`) ranks first; HNSW where the graph is built, exact where not, or
        ``exact=True``."""
        ef = search_params.hnsw_ef if search_params is not None and search_params.hnsw_ef else self._hnsw_ef
        exact = bool(search_params is not None and search_params.exact)
        request = edge.QueryRequest(
            limit=limit, query=edge_query(query, using),
            filter=None if query_filter is None else edge_filter(query_filter),
            params=edge.SearchParams(hnsw_ef=ef, exact=exact),
            with_payload=_payload_selector(with_payload), with_vector=with_vectors)
        with self._mutex:
            hits = self._shard(collection_name).query(request)
        return rest.QueryResponse(points=[
            models.ScoredPoint(id=_out_id(h.id), version=h.version, score=h.score, payload=h.payload,
                               vector=_vector(h.vector)) for h in hits])

    def count(self, collection_name: str, count_filter: models.Filter | None = None,
              exact: bool = True) -> models.CountResult:
        request = edge.CountRequest(exact=exact, filter=None if count_filter is None else edge_filter(count_filter))
        with self._mutex:
            return models.CountResult(count=self._shard(collection_name).count(request))

    # -- lifecycle ------------------------------------------------------------------------------------

    def optimize(self, collection_name: str | None = None) -> None:
        """Build what Qdrant's optimizers plan (the HNSW graph, merged segments) for one collection or all."""
        with self._mutex:
            names = [collection_name] if collection_name is not None else sorted(self._shards)
            for name in names:
                shard = self._shard(name)
                shard.optimize()
                shard.flush()
                self._written.discard(name)

    def close(self) -> None:
        """Index what was written, flush, close every shard and release the store. Safe to call twice."""
        with self._mutex:
            try:
                for name in sorted(self._written & self._shards.keys()):
                    self.optimize(name)
            finally:
                for shard in self._shards.values():
                    shard.flush()
                    shard.close()
                self._shards.clear()
                if self._lock_file is not None:
                    fcntl.flock(self._lock_file, fcntl.LOCK_UN)
                    self._lock_file.close()
                    self._lock_file = None
