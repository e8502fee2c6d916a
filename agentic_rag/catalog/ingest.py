"""Ingestion: data files (or the synthetic generator) into PostgreSQL, then PostgreSQL into Qdrant."""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agentic_rag.catalog.index import IndexChange, Progress, sync_index
from agentic_rag.catalog.load import Change, load_rows
from agentic_rag.catalog.records import DATA_DIR, catalog_files, load_catalog
from agentic_rag.catalog.tables import demo_rows
from agentic_rag.models.embeddings import Embedder
from agentic_rag.models.image_embeddings import ImageEmbedder
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import connect, migrate
from agentic_rag.storage.qdrant import VectorStore, open_qdrant


@dataclass(slots=True)
class IngestReport:
    """What an ingest did, with timings for the benchmark table."""

    source: str
    tables: dict[str, Change] = field(default_factory=dict)
    index: dict[str, IndexChange] = field(default_factory=dict)
    skipped: bool = False
    pg_seconds: float = 0.0
    index_seconds: float = 0.0

    @property
    def rows(self) -> int:
        return sum(c.total for c in self.tables.values())

    @property
    def changed(self) -> bool:
        return any(c.changed for c in self.tables.values()) or any(
            c.upserted or c.deleted for c in self.index.values()
        )


def files_fingerprint(files: list[Path]) -> str:
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()


async def _record_load(dsn: str, source: str, fingerprint: str, counts: dict[str, int]) -> None:
    conn = await connect(dsn)
    try:
        await conn.execute(
            "INSERT INTO catalog_load (source, fingerprint, counts) VALUES ($1, $2, $3) "
            "ON CONFLICT (source) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, counts = EXCLUDED.counts, "
            "loaded_at = now() WHERE catalog_load.fingerprint IS DISTINCT FROM EXCLUDED.fingerprint",
            source, fingerprint, counts,
        )
    finally:
        await conn.close()


async def ingest_demo(
    dsn: str,
    settings: Settings,
    *,
    data_dir: Path = DATA_DIR,
    index: bool = True,
    on_step: Callable[[str], None] | None = None,
    progress: Progress | None = None,
    embedder: Embedder | None = None,
    client: VectorStore | None = None,
    image_embedder: ImageEmbedder | None = None,
) -> IngestReport:
    """Load the shipped catalog (validated first; one transaction), then sync Qdrant from PostgreSQL."""
    files = catalog_files(data_dir)
    catalog = load_catalog(files=files)  # raises CatalogError naming file and record, before any write
    rows = demo_rows(catalog)
    await migrate(dsn)
    report = IngestReport(source="demo")
    t0 = time.perf_counter()
    conn = await connect(dsn)
    try:
        report.tables = await load_rows(conn, rows, "demo", on_step)
        if any(c.changed for c in report.tables.values()):
            # sets the visibility map, so typeahead and traversal run as index-only scans
            await conn.execute("VACUUM (ANALYZE) entity_name, edge")
    finally:
        await conn.close()
    report.pg_seconds = time.perf_counter() - t0
    await _record_load(dsn, "demo", files_fingerprint(files), {k: v.total for k, v in report.tables.items()})
    if index:
        report.index, report.index_seconds = await index_catalog(dsn, settings, progress=progress,
                                                                 embedder=embedder, client=client,
                                                                 image_embedder=image_embedder)
    return report


async def index_catalog(
    dsn: str, settings: Settings, *, rebuild: bool = False, progress: Progress | None = None,
    embedder: Embedder | None = None, client: VectorStore | None = None, image_embedder: ImageEmbedder | None = None,
) -> tuple[dict[str, IndexChange], float]:
    """Sync (or with ``rebuild``, recreate) every Qdrant collection from PostgreSQL alone (and the entities'
    image files or URLs, with an image model).

    Opens (and closes) its own client unless given one: an embedded store allows one per path.
    """
    t0 = time.perf_counter()
    own = client is None
    qdrant = open_qdrant(settings) if client is None else client
    try:
        changes = await sync_index(dsn, qdrant, embedder or Embedder(settings), settings, rebuild=rebuild,
                                   progress=progress, image_embedder=image_embedder)
    finally:
        if own:  # the edge engine builds its HNSW graph here, for what the sync wrote
            await asyncio.to_thread(qdrant.close)
    return changes, time.perf_counter() - t0
