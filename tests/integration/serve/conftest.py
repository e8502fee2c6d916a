"""What the Serve-app tests share: a Qdrant store of the app's own, filled from the session's points.

An embedded store (edge or local mode) opens its path in one process only, and the session's ``qdrant``
fixture holds its path open; so each module that deploys the app gets a copy of the indexed points at a
path of its own, which the VectorRetriever replica opens. Nothing is embedded twice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from qdrant_client import models

from agentic_rag.catalog.ingest import IngestReport
from agentic_rag.settings import Settings
from agentic_rag.storage.qdrant import VectorStore, open_qdrant


def copy_points(src: VectorStore, dst: VectorStore) -> int:
    """Every collection of ``src`` with its vectors and payloads, into ``dst``."""
    copied = 0
    for c in src.get_collections().collections:
        vectors = src.get_collection(c.name).config.params.vectors
        assert isinstance(vectors, models.VectorParams)
        dst.create_collection(c.name, vectors_config=vectors)
        offset: Any = None
        while True:
            points, offset = src.scroll(c.name, limit=256, offset=offset, with_payload=True, with_vectors=True)
            dst.upsert(c.name, [models.PointStruct(id=p.id, vector=p.vector, payload=p.payload)
                                for p in points])
            copied += len(points)
            if offset is None:
                break
    return copied


@pytest.fixture(scope="module")
def serve_qdrant(demo: IngestReport, qdrant: VectorStore, settings: Settings,
                 tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A path holding a copy of the session's points, for the app's VectorRetriever replica (one per module)."""
    path = tmp_path_factory.mktemp("serve") / "qdrant"
    dst = open_qdrant(settings.model_copy(update={"qdrant_path": path}))  # the engine the replica opens
    try:
        assert copy_points(qdrant, dst) > 1000
    finally:
        dst.close()  # the VectorRetriever replica opens it next
    return path
