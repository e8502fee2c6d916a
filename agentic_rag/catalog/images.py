"""The image side of the index: which entities have an image, whether it changed, and its vector.

An entity's image (table ``entity_image``, migration 0012) is keyed by the image model, its location and, for
a file, a digest of its bytes: a file edited in place re-embeds, an unchanged one does not. A URL is keyed by
the URL alone, so a sync fetches nothing that did not change (a publisher that replaces a picture gives it a
new URL). The key is stored in the point's payload (``_image``) beside the text's ``_hash``.

A bad image (missing, too large, not an accepted format, a URL that does not answer in time) is reported
with the entity's id and skipped: its point keeps its text vector and has no image vector; it is tried again
by the next sync. URLs are fetched a few at a time, each bounded (:func:`~agentic_rag.models.images.fetch_image`).
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from agentic_rag.models.embeddings import Vectors
from agentic_rag.models.image_embeddings import ImageEmbedder
from agentic_rag.models.images import ImageBounds, InvalidImage, fetch_image, read_image_file
from agentic_rag.settings import Settings
from agentic_rag.storage.sql import Conn

IMAGES_SQL = "SELECT entity_id::text, location FROM entity_image WHERE entity_type = $1"
KEY_CHARS = 32  # hex digits of an image's key, as the text's content hash
FETCH_CONCURRENCY = 8  # URLs fetched at once by a sync


def _is_url(location: str) -> bool:
    return location.startswith(("http://", "https://"))


@dataclass(slots=True)
class WantedImage:
    """An entity's image as the catalog has it now: its key, a file's bytes (read to key it), or why it failed."""

    location: str
    key: str | None = None
    data: bytes | None = None
    error: str | None = None


class ImageIndexer:
    """Keys, fetches and embeds the images of the entities a sync writes."""

    def __init__(self, embedder: ImageEmbedder, settings: Settings) -> None:
        self.embedder = embedder
        self._bounds = ImageBounds.of(settings)
        self._batch = settings.image_batch_size

    @property
    def dimension(self) -> int:
        return self.embedder.dimension

    async def locations(self, conn: Conn, entity_type: str) -> dict[str, str]:
        """Entity id -> image location, for the entities of one type that have an image."""
        return {r[0]: r[1] for r in await conn.fetch(IMAGES_SQL, entity_type)}

    def _key(self, location: str, digest: str = "") -> str:
        blob = "\0".join([self.embedder.model_name, location, digest]).encode()
        return hashlib.sha256(blob).hexdigest()[:KEY_CHARS]

    def _wanted(self, location: str) -> WantedImage:
        if _is_url(location):
            return WantedImage(location, key=self._key(location))
        try:
            data = read_image_file(Path(location), self._bounds)
        except InvalidImage as exc:
            return WantedImage(location, error=str(exc))
        return WantedImage(location, key=self._key(location, hashlib.sha256(data).hexdigest()), data=data)

    async def wanted(self, locations: dict[str, str]) -> dict[str, WantedImage]:
        """Entity id -> its image now (files are read to key them, URLs are not fetched)."""
        return await asyncio.to_thread(lambda: {pid: self._wanted(loc) for pid, loc in locations.items()})

    async def embed(self, wanted: dict[str, WantedImage]) -> tuple[dict[str, list[float]], dict[str, str]]:
        """The image vectors of ``wanted`` (entity id -> vector) and the images that failed (entity id -> why)."""
        errors: dict[str, str] = {}
        gate = asyncio.Semaphore(FETCH_CONCURRENCY)

        async def fetch(pid: str, want: WantedImage) -> None:
            async with gate:
                try:
                    want.data = await fetch_image(want.location, self._bounds, allowlist=False)
                except InvalidImage as exc:
                    errors[pid] = str(exc)

        await asyncio.gather(*(fetch(pid, w) for pid, w in wanted.items() if w.data is None))
        ready = [(pid, w.data) for pid, w in wanted.items() if w.data is not None and pid not in errors]
        vectors: dict[str, list[float]] = {}
        for start in range(0, len(ready), self._batch):
            chunk = ready[start:start + self._batch]
            ids, vecs = await asyncio.to_thread(self._embed_chunk, chunk, errors)
            vectors.update(zip(ids, (v.tolist() for v in vecs), strict=True))
        return vectors, errors

    def _embed_chunk(self, chunk: list[tuple[str, bytes]], errors: dict[str, str]) -> tuple[list[str], Vectors]:
        ids: list[str] = []
        prepared: list[Image.Image] = []
        for pid, data in chunk:
            try:
                prepared.append(self.embedder.prepare(data))
                ids.append(pid)
            except InvalidImage as exc:
                errors[pid] = str(exc)
        return ids, self.embedder.embed_prepared(prepared)
