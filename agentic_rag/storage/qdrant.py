"""Qdrant: a server at ``RAG_QDRANT_URL`` in production, local mode under the data dir by default.

Local mode is exact search inside this process, and only one process may open a storage path at a
time; the error for a second opener says so instead of a bare lock failure.
"""

from __future__ import annotations

import logging

from qdrant_client import QdrantClient, models

from agentic_rag.catalog.vocabulary import ENTITY_TYPES
from agentic_rag.settings import Settings

log = logging.getLogger(__name__)

# Payload fields filtered on; indexed on a server (local mode scans, and warns if asked to index).
KEYWORD_FIELDS = ("type", "genres", "format", "anime_ids", "franchise_id", "anime_id")
INTEGER_FIELDS = ("year",)


class QdrantUnavailable(RuntimeError):
    """Qdrant could not be opened; the message says which store and why."""


def open_qdrant(settings: Settings) -> QdrantClient:
    """A client for the configured Qdrant: the server URL if set, else local mode on disk."""
    if settings.qdrant_url:
        return QdrantClient(url=settings.qdrant_url, api_key=settings.qdrant_api_key, timeout=10)
    path = settings.resolved_qdrant_path
    path.mkdir(parents=True, exist_ok=True)
    try:
        return QdrantClient(path=str(path))
    except RuntimeError as exc:  # portalocker: another process holds the local storage
        raise QdrantUnavailable(
            f"Qdrant local storage {path} is in use by another process (local mode allows one); "
            "stop it, use another RAG_QDRANT_PATH, or run a Qdrant server and set RAG_QDRANT_URL"
        ) from exc


def collection_name(settings: Settings, entity_type: str) -> str:
    return f"{settings.qdrant_collection_prefix}{entity_type}"


def ensure_collections(client: QdrantClient, settings: Settings, dimension: int) -> None:
    """Create one cosine collection per entity type if missing; refuse a dimension mismatch."""
    for entity_type in ENTITY_TYPES:
        name = collection_name(settings, entity_type)
        if client.collection_exists(name):
            vectors = client.get_collection(name).config.params.vectors
            size = vectors.size if isinstance(vectors, models.VectorParams) else None
            if size != dimension:
                raise QdrantUnavailable(
                    f"collection {name} holds {size}-dim vectors but the embedding model gives {dimension}; "
                    "run `agentic-rag reindex` to rebuild it"
                )
            continue
        client.create_collection(name, vectors_config=models.VectorParams(size=dimension,
                                                                          distance=models.Distance.COSINE))
        if settings.qdrant_url:
            for field in KEYWORD_FIELDS:
                client.create_payload_index(name, field, models.PayloadSchemaType.KEYWORD)
            for field in INTEGER_FIELDS:
                client.create_payload_index(name, field, models.PayloadSchemaType.INTEGER)


def drop_collections(client: QdrantClient, settings: Settings) -> None:
    for entity_type in ENTITY_TYPES:
        name = collection_name(settings, entity_type)
        if client.collection_exists(name):
            client.delete_collection(name)
