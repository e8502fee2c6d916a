"""Qdrant: a server at ``RAG_QDRANT_URL`` in production, else an embedded store under the data dir.

The embedded engine is ``RAG_QDRANT_ENGINE``: ``edge`` (the default: qdrant-edge, the Qdrant engine
in-process with HNSW and payload indexes, :mod:`agentic_rag.storage.edge`) or ``local`` (qdrant-client's
local mode: exact search in Python, fine to about 20k points). Both open their path for one process at a
time; the error for a second opener says so instead of a bare lock failure.

Everything the code asks of Qdrant is :class:`VectorStore`: the calls of ``QdrantClient`` it makes, which
``QdrantClient`` (server or local mode) and :class:`~agentic_rag.storage.edge.EdgeStore` both answer.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol

from qdrant_client import QdrantClient, models
from qdrant_client.http import models as rest  # models.QueryResponse is fastembed's, not query_points'

from agentic_rag.errors import Unavailable
from agentic_rag.protocol.vocabulary import ENTITY_TYPES
from agentic_rag.settings import Settings

log = logging.getLogger(__name__)

# Payload fields filtered on; indexed on a server and by the edge engine (local mode scans, and warns if asked).
KEYWORD_FIELDS = ("type", "genres", "format", "anime_ids", "franchise_id", "anime_id", "status")
INTEGER_FIELDS = ("year", "episode_count", "volumes")
# The named vector of an entity's picture, beside the unnamed (default) text vector; only in collections built
# with an image model (RAG_IMAGE_MODEL), and only on the points of entities that have an image.
IMAGE_VECTOR = "image"
VectorsConfig = models.VectorParams | dict[str, models.VectorParams]


class QdrantUnavailable(Unavailable, RuntimeError):
    """Qdrant could not be opened; the message says which store and why."""


class QdrantStoreInUse(QdrantUnavailable):
    """The embedded store is open in another process (each opens in one at a time): a running one, or one that
    is still exiting (a killed replica whose replacement starts before it is gone)."""


class VectorStore(Protocol):
    """The part of ``QdrantClient`` agentic-rag uses, with its models: the collections of the catalog's
    entity types, their points, filtered nearest-neighbour search, fetch by id and scroll."""

    def collection_exists(self, collection_name: str) -> bool: ...

    def get_collections(self) -> models.CollectionsResponse: ...

    def get_collection(self, collection_name: str) -> models.CollectionInfo: ...

    def create_collection(self, collection_name: str, vectors_config: VectorsConfig) -> bool: ...

    def create_payload_index(self, collection_name: str, field_name: str,
                             field_schema: models.PayloadSchemaType) -> models.UpdateResult: ...

    def delete_collection(self, collection_name: str) -> bool: ...

    def upsert(self, collection_name: str, points: Sequence[models.PointStruct],
               wait: bool = True) -> models.UpdateResult: ...

    def delete(self, collection_name: str, points_selector: models.PointIdsList,
               wait: bool = True) -> models.UpdateResult: ...

    def retrieve(self, collection_name: str, ids: Sequence[int | str], with_payload: bool | list[str] = True,
                 with_vectors: bool = False) -> list[models.Record]: ...

    def scroll(self, collection_name: str, *, scroll_filter: models.Filter | None = None, limit: int = 10,
               offset: Any = None, with_payload: bool | list[str] = True,
               with_vectors: bool = False) -> tuple[list[models.Record], Any]:
        """A page of points in id order, and the offset of the next page (None after the last), to pass back."""


    def query_points(self, collection_name: str, query: list[float] | models.RecommendQuery, *,
                     using: str | None = None,
                     query_filter: models.Filter | None = None, search_params: models.SearchParams | None = None,
                     limit: int = 10, with_payload: bool | list[str] = True,
                     with_vectors: bool = False) -> rest.QueryResponse:
        """Nearest neighbours of ``query`` in the vector named ``using`` (None: the unnamed text vector)."""

    def count(self, collection_name: str, count_filter: models.Filter | None = None,
              exact: bool = True) -> models.CountResult: ...

    def close(self) -> None: ...


def open_qdrant(settings: Settings) -> VectorStore:
    """The configured Qdrant: the server URL if set, else the embedded engine on disk."""
    if settings.qdrant_url:
        return QdrantClient(url=settings.qdrant_url, api_key=settings.qdrant_api_key, timeout=10)
    if settings.qdrant_engine == "edge":
        return _open_edge(settings)
    path = settings.resolved_qdrant_path
    path.mkdir(parents=True, exist_ok=True)
    try:
        return QdrantClient(path=str(path))
    except RuntimeError as exc:  # portalocker: another process holds the local storage
        raise QdrantStoreInUse(
            f"Qdrant local storage {path} is in use by another process (local mode allows one); "
            "stop it, use another RAG_QDRANT_PATH, or run a Qdrant server and set RAG_QDRANT_URL"
        ) from exc


def _open_edge(settings: Settings) -> VectorStore:
    from agentic_rag.storage.edge import EdgeStore, EdgeStoreLocked

    path = settings.resolved_qdrant_path
    if (path / "meta.json").exists():
        raise QdrantUnavailable(
            f"{path} holds a qdrant-client local-mode store, not a Qdrant Edge one; set RAG_QDRANT_ENGINE=local "
            "to use it, or point RAG_QDRANT_PATH elsewhere and run `agentic-rag reindex` to build an edge store"
        )
    try:
        return EdgeStore(path, hnsw_ef=settings.qdrant_hnsw_ef)
    except EdgeStoreLocked as exc:
        raise QdrantStoreInUse(
            f"Qdrant Edge store {path} is in use by another process or client (an edge store opens in one at a "
            "time, read-only included); stop it, use another RAG_QDRANT_PATH, or run a Qdrant server and set "
            "RAG_QDRANT_URL"
        ) from exc


def collection_name(settings: Settings, entity_type: str) -> str:
    return f"{settings.qdrant_collection_prefix}{entity_type}"


def _shape(vectors: Any) -> tuple[int | None, int | None]:
    """(text dimension, image dimension) of a collection's vectors config (None: that vector is absent)."""
    if isinstance(vectors, models.VectorParams):
        return vectors.size, None
    if isinstance(vectors, dict):
        text, image = vectors.get(""), vectors.get(IMAGE_VECTOR)
        return (text.size if text is not None else None), (image.size if image is not None else None)
    return None, None


def ensure_collections(client: VectorStore, settings: Settings, dimension: int,
                       image_dimension: int | None = None) -> None:
    """Create one cosine collection per entity type if missing: the text vector, and the ``image`` vector when
    an image model gives ``image_dimension``. Refuse a collection whose vectors differ from that."""
    cosine = models.Distance.COSINE
    text = models.VectorParams(size=dimension, distance=cosine)
    config: VectorsConfig = text
    if image_dimension is not None:
        config = {"": text, IMAGE_VECTOR: models.VectorParams(size=image_dimension, distance=cosine)}
    for entity_type in ENTITY_TYPES:
        name = collection_name(settings, entity_type)
        if client.collection_exists(name):
            size, image_size = _shape(client.get_collection(name).config.params.vectors)
            if size != dimension:
                raise QdrantUnavailable(
                    f"collection {name} holds {size}-dim vectors but the embedding model gives {dimension}; "
                    "run `agentic-rag reindex` to rebuild it"
                )
            if image_size != image_dimension:
                held = f"{image_size}-dim image vectors" if image_size else "no image vectors"
                wanted = f"{image_dimension}-dim ones" if image_dimension else "none (no RAG_IMAGE_MODEL)"
                raise QdrantUnavailable(f"collection {name} holds {held} but the image model gives {wanted}; "
                                        "run `agentic-rag reindex` to rebuild it")
            continue
        client.create_collection(name, vectors_config=config)
        if settings.qdrant_url or settings.qdrant_engine == "edge":
            for field in KEYWORD_FIELDS:
                client.create_payload_index(name, field, models.PayloadSchemaType.KEYWORD)
            for field in INTEGER_FIELDS:
                client.create_payload_index(name, field, models.PayloadSchemaType.INTEGER)


def drop_collections(client: VectorStore, settings: Settings) -> None:
    for entity_type in ENTITY_TYPES:
        name = collection_name(settings, entity_type)
        if client.collection_exists(name):
            client.delete_collection(name)
