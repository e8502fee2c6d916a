"""The Qdrant Edge store against qdrant-client's API: what the retrievers and the ingest ask of it."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from qdrant_client import QdrantClient, models

from agentic_rag.settings import Settings
from agentic_rag.storage.edge import EdgeStore
from agentic_rag.storage.qdrant import QdrantUnavailable, VectorStore, ensure_collections, open_qdrant

pytestmark = pytest.mark.integration

DIM = 8
N = 300
GENRES = ("action", "drama", "comedy")


def _points(rng: np.random.Generator) -> list[models.PointStruct]:
    vecs = rng.standard_normal((N, DIM)).astype(np.float32)
    return [models.PointStruct(
        id=str(uuid.UUID(int=i + 1)), vector=vecs[i].tolist(),
        payload={"id": str(uuid.UUID(int=i + 1)), "type": "anime" if i % 2 else "manga", "year": 1970 + i % 50,
                 "genres": [GENRES[i % 3]], "_hash": f"h{i}"},
    ) for i in range(N)]


@pytest.fixture
def points() -> list[models.PointStruct]:
    return _points(np.random.default_rng(0))


@pytest.fixture
def store(tmp_path: Path, points: list[models.PointStruct]) -> Iterator[EdgeStore]:
    # thresholds of 1 KB: even these few points get an HNSW graph, and filtered searches use it
    s = EdgeStore(tmp_path / "edge", full_scan_threshold_kb=1, indexing_threshold_kb=1)
    s.create_collection("anime", vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE))
    for field in ("type", "genres"):
        s.create_payload_index("anime", field, models.PayloadSchemaType.KEYWORD)
    s.create_payload_index("anime", "year", models.PayloadSchemaType.INTEGER)
    s.upsert("anime", points, wait=True)
    yield s
    s.close()


@pytest.fixture
def reference(points: list[models.PointStruct]) -> Iterator[QdrantClient]:
    """The same points in qdrant-client local mode: exact search, the semantics to match."""
    client = QdrantClient(":memory:")
    client.create_collection("anime", vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE))
    client.upsert("anime", points)
    yield client
    client.close()


FILTERS = {
    "none": None,
    "keyword": models.Filter(must=[models.FieldCondition(key="type", match=models.MatchValue(value="anime")),
                                   models.FieldCondition(key="genres", match=models.MatchAny(any=["drama"]))]),
    "range": models.Filter(must=[models.FieldCondition(key="year", range=models.Range(gte=1980, lte=1989))]),
    "should and must_not": models.Filter(
        should=[models.FieldCondition(key="year", range=models.Range(lt=1975)),
                models.FieldCondition(key="genres", match=models.MatchValue(value="comedy"))],
        must_not=[models.FieldCondition(key="type", match=models.MatchValue(value="manga"))]),
}


def test_the_edge_store_is_a_vector_store(store: EdgeStore) -> None:
    assert isinstance(store, EdgeStore)
    typed: VectorStore = store  # mypy checks the protocol; this keeps the test honest about it
    assert typed.collection_exists("anime") and not typed.collection_exists("manga")
    assert [c.name for c in typed.get_collections().collections] == ["anime"]


@pytest.mark.parametrize("kind", FILTERS)
def test_filtered_search_matches_exact_search(store: EdgeStore, reference: QdrantClient, kind: str) -> None:
    rng = np.random.default_rng(1)
    for _ in range(5):
        q = rng.standard_normal(DIM).tolist()
        got = store.query_points("anime", query=q, query_filter=FILTERS[kind], limit=10).points
        want = reference.query_points("anime", query=q, query_filter=FILTERS[kind], limit=10).points
        assert [p.id for p in got] == [p.id for p in want]
        assert [round(p.score, 4) for p in got] == [round(p.score, 4) for p in want]
        assert all(p.payload and p.payload["id"] == p.id for p in got)


def test_search_stays_exact_after_the_hnsw_graph_is_built(store: EdgeStore, reference: QdrantClient) -> None:
    store.optimize()
    info = store.get_collection("anime")
    assert info.points_count == N and info.indexed_vectors_count == N
    assert set(info.payload_schema) == {"type", "genres", "year"}
    q = np.random.default_rng(2).standard_normal(DIM).tolist()
    for flt in FILTERS.values():
        got = store.query_points("anime", query=q, query_filter=flt, limit=5,
                                 search_params=models.SearchParams(hnsw_ef=128)).points
        want = reference.query_points("anime", query=q, query_filter=flt, limit=5).points
        assert [p.id for p in got] == [p.id for p in want]


def test_retrieve_by_id_with_and_without_vectors(store: EdgeStore, points: list[models.PointStruct]) -> None:
    first, missing = str(points[0].id), str(uuid.uuid4())
    (rec,) = store.retrieve("anime", [first, missing], with_payload=True, with_vectors=True)
    assert rec.id == first and rec.payload == points[0].payload
    assert isinstance(rec.vector, list) and len(rec.vector) == DIM
    assert np.isclose(np.linalg.norm(rec.vector), 1.0, atol=1e-5)  # cosine: stored normalised, as a server does
    (bare,) = store.retrieve("anime", [first], with_payload=["_hash"])
    assert bare.payload == {"_hash": "h0"} and bare.vector is None


def test_scroll_pages_through_every_point_and_filters(store: EdgeStore) -> None:
    seen: dict[str, str] = {}
    offset = None
    while True:
        page, offset = store.scroll("anime", limit=64, offset=offset, with_payload=["_hash"], with_vectors=False)
        seen.update({str(p.id): str((p.payload or {})["_hash"]) for p in page})
        if offset is None:
            break
    assert len(seen) == N and seen[str(uuid.UUID(int=1))] == "h0"
    ids = [str(uuid.UUID(int=i)) for i in (1, 2, 3, 4)]  # manga, anime, manga, anime
    scoped = models.Filter(must=[models.HasIdCondition(has_id=ids), FILTERS["keyword"]])
    page, _ = store.scroll("anime", scroll_filter=scoped, limit=10, with_payload=False)
    assert {str(p.id) for p in page} == {ids[1]}  # anime, drama (i = 1)


def test_upsert_replaces_delete_removes_and_count_filters(store: EdgeStore, points: list[models.PointStruct]) -> None:
    changed = points[0].model_copy(update={"payload": {**(points[0].payload or {}), "_hash": "new"}})
    store.upsert("anime", [changed])
    store.delete("anime", models.PointIdsList(points=[points[1].id]))
    assert store.count("anime").count == N - 1
    assert store.count("anime", count_filter=FILTERS["keyword"]).count == sum(
        1 for i in range(2, N) if i % 2 and GENRES[i % 3] == "drama")
    assert (store.retrieve("anime", [points[0].id])[0].payload or {})["_hash"] == "new"
    assert store.retrieve("anime", [points[1].id]) == []


def test_a_missing_collection_and_an_unsupported_filter_are_errors(store: EdgeStore) -> None:
    with pytest.raises(ValueError, match="not found"):
        store.query_points("nope", query=[0.0] * DIM)
    with pytest.raises(ValueError, match="already exists"):
        store.create_collection("anime", vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE))
    text = models.Filter(must=[models.FieldCondition(key="name", match=models.MatchText(text="x"))])
    with pytest.raises(TypeError, match="does not compile"):
        store.query_points("anime", query=[0.0] * DIM, query_filter=text)


def test_reopened_from_disk_with_its_points_params_and_indexes(tmp_path: Path,
                                                                points: list[models.PointStruct]) -> None:
    root = tmp_path / "edge"
    s = EdgeStore(root, indexing_threshold_kb=1)
    s.create_collection("anime", vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE))
    s.create_payload_index("anime", "year", models.PayloadSchemaType.INTEGER)
    s.upsert("anime", points)
    s.close()  # builds the HNSW graph of what was written
    s.close()  # twice is harmless
    again = EdgeStore(root)
    try:
        info = again.get_collection("anime")
        assert info.points_count == N and info.indexed_vectors_count == N
        assert info.config.params.vectors == models.VectorParams(size=DIM, distance=models.Distance.COSINE)
        assert info.payload_schema["year"].data_type == models.PayloadSchemaType.INTEGER
        assert again.count("anime", count_filter=FILTERS["range"]).count == sum(
            1 for i in range(N) if 1980 <= 1970 + i % 50 <= 1989)
        assert again.delete_collection("anime") and not again.delete_collection("anime")
        assert not (root / "anime").exists()
    finally:
        again.close()


def test_a_second_opener_is_refused_in_this_process_and_in_another(tmp_path: Path) -> None:
    settings = Settings(qdrant_engine="edge", qdrant_path=tmp_path / "edge")
    first = open_qdrant(settings)
    try:
        with pytest.raises(QdrantUnavailable, match="in use by another process"):
            open_qdrant(settings)
        code = ("import sys; from pathlib import Path\n"
                "from agentic_rag.storage.edge import EdgeStore, EdgeStoreLocked\n"
                "try:\n    EdgeStore(Path(sys.argv[1]))\nexcept EdgeStoreLocked:\n    sys.exit(3)\n")
        other = subprocess.run([sys.executable, "-c", code, str(tmp_path / "edge")], capture_output=True, timeout=60)
        assert other.returncode == 3, other.stderr.decode()
    finally:
        first.close()
    open_qdrant(settings).close()  # released on close


def test_open_qdrant_refuses_a_local_mode_store_for_the_edge_engine(tmp_path: Path) -> None:
    QdrantClient(path=str(tmp_path / "q")).close()  # a local-mode store
    with pytest.raises(QdrantUnavailable, match="local-mode store"):
        open_qdrant(Settings(qdrant_engine="edge", qdrant_path=tmp_path / "q"))
    local = open_qdrant(Settings(qdrant_engine="local", qdrant_path=tmp_path / "q"))
    assert isinstance(local, QdrantClient)
    local.close()


def test_ensure_collections_creates_every_type_with_payload_indexes(tmp_path: Path) -> None:
    settings = Settings(qdrant_engine="edge", qdrant_path=tmp_path / "edge")
    store = open_qdrant(settings)
    try:
        ensure_collections(store, settings, DIM)
        ensure_collections(store, settings, DIM)  # idempotent
        info = store.get_collection("character")
        assert {"anime_ids", "type", "year"} <= set(info.payload_schema)
        with pytest.raises(QdrantUnavailable, match="holds 8-dim vectors"):
            ensure_collections(store, settings, DIM * 2)
    finally:
        store.close()


@pytest.mark.parametrize("strategy", [models.RecommendStrategy.SUM_SCORES, models.RecommendStrategy.BEST_SCORE])
@pytest.mark.parametrize("kind", FILTERS)
def test_a_recommendation_query_matches_the_client(store: EdgeStore, reference: QdrantClient, kind: str,
                                                   strategy: models.RecommendStrategy) -> None:
    # the similar step's query: examples as vectors, and the examples themselves left out by id
    rng = np.random.default_rng(3)
    for _ in range(3):
        examples = [rng.standard_normal(DIM).tolist() for _ in range(3)]
        query = models.RecommendQuery(recommend=models.RecommendInput(positive=examples, strategy=strategy))
        skip = models.HasIdCondition(has_id=[str(uuid.UUID(int=i + 1)) for i in range(0, N, 7)])
        base = FILTERS[kind]
        flt = models.Filter(must=base.must if base else None, should=base.should if base else None,
                            must_not=[*(base.must_not or [] if base else []), skip])
        got = store.query_points("anime", query=query, query_filter=flt, limit=10).points
        want = reference.query_points("anime", query=query, query_filter=flt, limit=10).points
        assert [p.id for p in got] == [p.id for p in want]
        assert not {p.id for p in got} & set(skip.has_id)


def test_a_recommendation_by_point_id_is_refused_by_the_edge_store(store: EdgeStore,
                                                                   points: list[models.PointStruct]) -> None:
    # the edge engine takes example vectors only: the retriever fetches them first, and says so when it does not
    query = models.RecommendQuery(recommend=models.RecommendInput(positive=[str(points[0].id)]))
    with pytest.raises(TypeError, match="as vectors, not point ids"):
        store.query_points("anime", query=query, limit=3)
