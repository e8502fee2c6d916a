"""What the integration tests share beyond tests/conftest.py: the in-process runtime, orchestrator and vector
executor over the session's catalog, and the image tests' tiny CLIP and picture server.

The gallery's pictures and catalog, and the server that serves them by URL, are in tests/support/gallery.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentic_rag.models.embeddings import Embedder
from agentic_rag.orchestrator.loop import Orchestrator
from agentic_rag.orchestrator.runtime import Runtime, build_orchestrator
from agentic_rag.retrievers.vector import QdrantExecutor
from agentic_rag.settings import Settings
from agentic_rag.storage.qdrant import VectorStore
from agentic_rag.storage.sql import Pool
from tests.support.gallery import Web, serving_web
from tests.support.tiny import CACHE
from tests.support.tiny_clip import build_tiny_clip


@pytest.fixture(scope="session")
def tiny_clip_dir() -> Path:
    """Directory of the tiny random CLIP (tests/support/tiny_clip.py), built once and cached under ``.data/``."""
    return Path(build_tiny_clip(CACHE))


@pytest.fixture(scope="module")
def web() -> Iterator[Web]:
    """A small web server on 127.0.0.1 for the module: pictures given by URL, and the bad ones."""
    with serving_web() as site:
        yield site


@pytest.fixture(scope="module")
def runtime(pool: Pool, qdrant: VectorStore, embedder: Embedder, settings: Settings) -> Runtime:
    """The in-process wiring of the loop over the session's catalog (what ``open_runtime`` builds)."""
    orchestrator, store = build_orchestrator(settings, pool, qdrant, embedder)
    return Runtime(settings, pool, qdrant, embedder, store, orchestrator)


@pytest.fixture(scope="module")
def orchestrator(runtime: Runtime) -> Orchestrator:
    return runtime.orchestrator


@pytest.fixture(scope="module")
def vector(qdrant: VectorStore, embedder: Embedder, settings: Settings) -> QdrantExecutor:
    """Qdrant retrieval over the session's store."""
    return QdrantExecutor(qdrant, embedder.aembed, settings)
