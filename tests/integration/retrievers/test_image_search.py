"""Image search end to end: a catalog with generated pictures ingested into real PostgreSQL and Qdrant (edge and
local mode), embedded by a tiny random CLIP that sentence-transformers loads as it would load a real one.

Random weights carry no meaning, but the vector is a function of the pixels: the same picture finds its entity
first, a resized or slightly cropped copy finds it near the top. Pictures are shapes, gradients, stripes and
blocky noise, each seeded. A small HTTP server on 127.0.0.1 serves the pictures given by URL, and the bad ones.
The pictures, the catalog and the server are tests/support/gallery.py's.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from PIL import Image
from qdrant_client import models

from agentic_rag.catalog.ids import entity_id
from agentic_rag.catalog.ingest import IngestReport, index_catalog, ingest_demo
from agentic_rag.errors import InvalidInput
from agentic_rag.models.embeddings import Embedder
from agentic_rag.models.image_embeddings import ImageEmbedder
from agentic_rag.models.images import InvalidImage
from agentic_rag.protocol import SearchFilters, SearchIntent
from agentic_rag.retrievers.hybrid import HybridRetriever
from agentic_rag.retrievers.vector import QdrantExecutor
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import make_pool
from agentic_rag.storage.qdrant import (
    IMAGE_VECTOR,
    QdrantUnavailable,
    VectorStore,
    collection_name,
    ensure_collections,
    open_qdrant,
)
from agentic_rag.storage.sql import Pool
from tests.support.gallery import (
    BAD_WORK,
    GOOD,
    TITLES,
    Web,
    anime_id,
    b64,
    bomb_png,
    encode,
    picture,
    write_catalog,
)

pytestmark = pytest.mark.integration


def vector_names(vector: Any) -> set[str]:
    """The vectors a point has (edge gives a point of the unnamed vector alone as that vector)."""
    return set(vector) if isinstance(vector, dict) else {""}


@pytest.fixture(scope="module")
def image_settings(settings: Settings, tiny_clip_dir: Path) -> Settings:
    return settings.model_copy(update={"image_model": str(tiny_clip_dir), "image_url_hosts": ["127.0.0.1"]})


@pytest.fixture(scope="module")
def image_embedder(image_settings: Settings) -> ImageEmbedder:
    return ImageEmbedder(image_settings)


@pytest.fixture(scope="module")
def gallery(tmp_path_factory: pytest.TempPathFactory, web: Web) -> Path:
    folder = tmp_path_factory.mktemp("gallery")
    write_catalog(folder, web)
    return folder


@pytest.fixture(scope="module")
def gallery_dsn(scratch: Callable[[str], AbstractContextManager[str]]) -> Iterator[str]:
    with scratch(f"agentic_rag_images_{os.getpid()}") as dsn:
        yield dsn


@dataclass
class Indexed:
    settings: Settings
    store: VectorStore
    report: IngestReport
    pool: Pool
    embedder: Embedder
    image_embedder: ImageEmbedder

    def retriever(self, **changes: Any) -> HybridRetriever:
        """The retrievers as a search runs them, under these settings changed by ``changes``."""
        settings = self.settings.model_copy(update=changes)
        executor = QdrantExecutor(self.store, self.embedder.aembed, settings, self.image_embedder.aembed)
        return HybridRetriever(self.pool, executor)


@pytest.fixture(scope="module", params=["edge", "local"])
async def indexed(request: pytest.FixtureRequest, gallery: Path, gallery_dsn: str, image_settings: Settings,
                  embedder: Embedder, image_embedder: ImageEmbedder,
                  tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Indexed]:
    """The gallery ingested, its images embedded, into a store of each embedded engine."""
    settings = image_settings.model_copy(update={
        "qdrant_engine": request.param, "qdrant_path": tmp_path_factory.mktemp("images") / "qdrant"})
    store = open_qdrant(settings)
    pool = await make_pool(gallery_dsn, settings)
    try:
        report = await ingest_demo(gallery_dsn, settings, data_dir=gallery, embedder=embedder, client=store,
                                   image_embedder=image_embedder)
        yield Indexed(settings, store, report, pool, embedder, image_embedder)
    finally:
        await pool.close()
        store.close()


def image_search(image_query: str, *, query: str | None = None, limit: int = 5) -> SearchIntent:
    return SearchIntent(rationale="by picture", entity_type="anime", query=query, image_query=image_query,
                        limit=limit)


# -- ingestion -----------------------------------------------------------------------------------------------------

async def test_ingest_embeds_every_image_and_reports_the_bad_ones(indexed: Indexed) -> None:
    anime, characters = indexed.report.index["anime"], indexed.report.index["character"]
    assert anime.upserted == len(TITLES) and anime.images == len(GOOD)
    assert [e.split(":")[0] for e in anime.image_errors] == [anime_id(BAD_WORK)]
    assert "cannot be decoded" in anime.image_errors[0] or "not an image" in anime.image_errors[0]
    assert characters.images == 1
    [missing] = characters.image_errors
    assert missing.startswith(f"{entity_id('character', 'keeper')}: the image file cannot be read")
    name = collection_name(indexed.settings, "anime")
    vectors = indexed.store.get_collection(name).config.params.vectors
    assert isinstance(vectors, dict) and vectors[IMAGE_VECTOR].size == indexed.image_embedder.dimension
    # the bad picture's entity is indexed by its text, without an image vector
    bad, good = indexed.store.retrieve(name, [anime_id(BAD_WORK), anime_id(0)], with_vectors=True)
    by_id = {str(p.id): p for p in (bad, good)}
    assert vector_names(by_id[anime_id(BAD_WORK)].vector) == {""}
    assert vector_names(by_id[anime_id(0)].vector) == {"", IMAGE_VECTOR}


async def test_a_second_ingest_embeds_nothing(indexed: Indexed, gallery: Path, gallery_dsn: str, web: Web) -> None:
    fetched = len(web.hits)
    again = await ingest_demo(gallery_dsn, indexed.settings, data_dir=gallery, embedder=indexed.embedder,
                              client=indexed.store, image_embedder=indexed.image_embedder)
    assert all(c.upserted == c.deleted == c.images == 0 for c in again.index.values())
    assert len(web.hits) == fetched  # a URL's picture is keyed by its URL: nothing is fetched again
    # a bad picture is reported by every sync until it is fixed
    assert [e.split(":")[0] for e in again.index["anime"].image_errors] == [anime_id(BAD_WORK)]


async def test_a_changed_picture_is_embedded_again_and_a_changed_text_keeps_its_picture(
        tmp_path: Path, web: Web, scratch: Callable[[str], AbstractContextManager[str]], image_settings: Settings,
        embedder: Embedder, image_embedder: ImageEmbedder) -> None:
    settings = image_settings.model_copy(update={"qdrant_path": tmp_path / "qdrant"})
    folder = tmp_path / "data"
    write_catalog(folder, web)
    with scratch(f"agentic_rag_images_change_{os.getpid()}") as dsn:
        store = open_qdrant(settings)
        pool = await make_pool(dsn, settings)
        try:
            async def ingest() -> IngestReport:
                return await ingest_demo(dsn, settings, data_dir=folder, embedder=embedder, client=store,
                                         image_embedder=image_embedder)

            await ingest()
            # work-02's picture is replaced in place, work-05's synopsis is rewritten: one image embedded, two points
            write_catalog(folder, web, synopsis_of=lambda i: f"Work {i}." + (" Rewritten." if i == 5 else ""))
            (folder / "images" / "work-02.png").write_bytes(encode(picture(99)))
            changed = (await ingest()).index["anime"]
            assert (changed.upserted, changed.images) == (2, 1)
            retriever = HybridRetriever(pool, QdrantExecutor(store, embedder.aembed, settings, image_embedder.aembed))
            for i, image in ((2, picture(99)), (5, picture(5))):  # the new picture; the kept one
                found = await retriever.execute(image_search(b64(encode(image))))
                assert found.raw_data[0]["id"] == anime_id(i)
                assert found.raw_data[0]["score"] == pytest.approx(1.0, abs=1e-4)
            # the record loses its picture: its point loses the image vector
            data = yaml.safe_load((folder / "gallery.yaml").read_text())
            del data["anime"][3]["image"]
            (folder / "gallery.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
            assert (await ingest()).index["anime"].upserted == 1
            [point] = store.retrieve(collection_name(settings, "anime"), [anime_id(3)], with_vectors=True)
            assert vector_names(point.vector) == {""}
        finally:
            await pool.close()
            store.close()


# -- search ------------------------------------------------------------------------------------------------------------

async def test_an_ingested_picture_finds_its_entity_first_and_so_does_a_lossless_copy(indexed: Indexed) -> None:
    retriever = indexed.retriever()
    for i in GOOD:
        image = picture(i)
        for data in (encode(image), encode(image, "BMP"), encode(image, "WEBP", lossless=True),
                     encode(image, "PNG", compress_level=0)):
            found = await retriever.execute(image_search(b64(data)))
            assert found.raw_data[0]["id"] == anime_id(i), i
            assert found.raw_data[0]["score"] == pytest.approx(1.0, abs=1e-4)
    assert "the image" in found.summary


async def test_a_picture_given_by_an_allowed_url_finds_its_entity(indexed: Indexed, web: Web) -> None:
    url = web.put("/query/work-03.png", encode(picture(3)))
    data_url = "data:image/png;base64," + b64(encode(picture(4)))
    retriever = indexed.retriever()
    assert (await retriever.execute(image_search(url))).raw_data[0]["id"] == anime_id(3)
    assert (await retriever.execute(image_search(data_url))).raw_data[0]["id"] == anime_id(4)


def _variants(image: Image.Image) -> dict[str, Image.Image]:
    w, h = image.size
    return {"half size": image.resize((w // 2, h // 2)), "1.5x size": image.resize((w * 3 // 2, h * 3 // 2)),
            "5% cropped": image.crop((w // 20, h // 20, w - w // 20, h - h // 20)),
            "cropped at a corner": image.crop((0, 0, w - w // 20, h - h // 20))}


async def test_a_resized_or_slightly_cropped_copy_ranks_its_entity_in_the_top_3(indexed: Indexed) -> None:
    retriever = indexed.retriever()
    ranks: dict[str, list[int]] = {}
    for i in GOOD:
        for name, copy in _variants(picture(i)).items():
            found = await retriever.execute(image_search(b64(encode(copy)), limit=10))
            ids = [r["id"] for r in found.raw_data]
            ranks.setdefault(name, []).append(ids.index(anime_id(i)) + 1 if anime_id(i) in ids else 99)
    assert all(r <= 3 for rs in ranks.values() for r in rs), {k: str(v) for k, v in ranks.items() if max(v) > 3}


async def test_a_picture_with_a_query_is_fused_with_the_text_search(indexed: Indexed) -> None:
    retriever = indexed.retriever()
    # the name and the picture of the same work: first in both rankings, so 1/61 + 1/61
    both = await retriever.execute(image_search(b64(encode(picture(5))), query=TITLES[5]))
    top = both.raw_data[0]
    assert top["id"] == anime_id(5) and top["rrf"] == round(2 / 61, 5)
    assert "name" in top["matched_by"] and "image" in top["matched_by"]
    assert top["image_score"] == pytest.approx(1.0, abs=1e-4)
    # a name and another work's picture: both works come, each saying what matched it
    mixed = await retriever.execute(image_search(b64(encode(picture(8))), query=TITLES[3], limit=10))
    rows = {r["id"]: r for r in mixed.raw_data}
    assert {anime_id(3), anime_id(8)} <= set(list(rows)[:3])
    assert "name" in rows[anime_id(3)]["matched_by"] and "image" in rows[anime_id(8)]["matched_by"]
    assert "the image and" in mixed.summary
    # fused results are filtered as any search: year_min drops work-03 (2003)
    filtered = await retriever.execute(SearchIntent(rationale="r", entity_type="anime", query=TITLES[3],
                                                    image_query=b64(encode(picture(8))), limit=10,
                                                    filters=SearchFilters(year_min=2004)))
    assert anime_id(3) not in {r["id"] for r in filtered.raw_data} and filtered.raw_data[0]["id"] == anime_id(8)


# -- bounds ------------------------------------------------------------------------------------------------------------

async def test_an_oversize_picture_is_refused(indexed: Indexed, web: Web) -> None:
    noisy = encode(Image.fromarray(np.random.default_rng(0).integers(0, 256, (200, 200, 3), dtype=np.uint8)))
    assert len(noisy) > 64 * 1024
    retriever = indexed.retriever(image_max_bytes=64 * 1024)
    with pytest.raises(InvalidImage, match="over the limit"):
        await retriever.execute(image_search(b64(noisy)))
    for length in (True, False):  # a declared Content-Length, and a body that just goes on
        url = web.put(f"/big-{length}.png", noisy, length=length)
        with pytest.raises(InvalidImage, match="over the limit"):
            await retriever.execute(image_search(url))


async def test_what_is_not_an_accepted_picture_is_refused(indexed: Indexed, web: Web) -> None:
    retriever = indexed.retriever()
    with pytest.raises(InvalidImage, match="served text/html"):
        await retriever.execute(image_search(web.put("/page.png", encode(picture(1)), "text/html")))
    with pytest.raises(InvalidImage, match="not an image"):
        await retriever.execute(image_search(b64(b"<html>hello</html>" * 10)))
    with pytest.raises(InvalidImage, match="not an image"):  # a format this server does not take
        await indexed.retriever(image_formats=["PNG"]).execute(image_search(b64(encode(picture(1), "GIF"))))
    with pytest.raises(InvalidImage, match="neither an http"):
        await retriever.execute(image_search("ftp://127.0.0.1/picture.png"))


async def test_a_decompression_bomb_is_refused_before_it_is_decoded(indexed: Indexed, web: Web) -> None:
    retriever = indexed.retriever()
    # past Pillow's own limit, and past ours (40M pixels) below Pillow's: a few dozen bytes either way
    for side in (30_000, 8_000):
        bomb = bomb_png(side, side)
        assert len(bomb) < 200
        with pytest.raises(InvalidImage, match=r"declares .*decompression bomb"):
            await retriever.execute(image_search(b64(bomb)))
        with pytest.raises(InvalidImage, match=r"declares .*decompression bomb"):
            await retriever.execute(image_search(web.put(f"/bomb-{side}.png", bomb)))


async def test_urls_are_fetched_only_from_allowed_hosts_without_redirects_and_in_time(indexed: Indexed,
                                                                                      web: Web) -> None:
    web.put("/cover.png", encode(picture(2)))
    before = len(web.hits)
    with pytest.raises(InvalidImage, match="not allowed"):  # localhost is the same server, but not in the list
        await indexed.retriever().execute(image_search(web.url("/cover.png", host="localhost")))
    with pytest.raises(InvalidImage, match="not allowed"):
        await indexed.retriever(image_url_hosts=[]).execute(image_search(web.url("/cover.png")))
    assert len(web.hits) == before  # refused without a request
    moved = web.put("/moved.png", b"", status=302, headers={"Location": web.url("/cover.png", host="localhost")})
    with pytest.raises(InvalidImage, match="HTTP 302"):
        await indexed.retriever().execute(image_search(moved))
    slow = web.put("/slow.png", encode(picture(2)), delay_s=2.0)
    t0 = time.perf_counter()
    with pytest.raises(InvalidImage, match="longer than"):
        await indexed.retriever(image_fetch_timeout_ms=300).execute(image_search(slow))
    assert time.perf_counter() - t0 < 1.5


# -- without an image model --------------------------------------------------------------------------------------------

async def test_without_an_image_model_nothing_changes_and_a_picture_is_refused(
        indexed: Indexed, gallery: Path, gallery_dsn: str, settings: Settings, embedder: Embedder,
        tmp_path: Path) -> None:
    plain = settings.model_copy(update={"qdrant_engine": indexed.settings.qdrant_engine,
                                        "qdrant_path": tmp_path / "qdrant"})
    assert plain.image_model is None
    store = open_qdrant(plain)
    try:
        changes, _ = await index_catalog(gallery_dsn, plain, embedder=embedder, client=store)
        assert all(c.images == 0 and not c.image_errors for c in changes.values())
        name = collection_name(plain, "anime")
        assert isinstance(store.get_collection(name).config.params.vectors, models.VectorParams)
        [point] = store.retrieve(name, [anime_id(0)], with_vectors=True)
        assert isinstance(point.vector, list) and "_image" not in (point.payload or {})
        retriever = HybridRetriever(indexed.pool, QdrantExecutor(store, embedder.aembed, plain))
        with pytest.raises(InvalidInput, match="image search is not configured"):
            await retriever.execute(image_search(b64(encode(picture(0)))))
        with pytest.raises(InvalidInput, match="image search is not configured"):
            await retriever.execute(image_search(b64(encode(picture(0))), query=TITLES[0]))
        with pytest.raises(InvalidInput, match="image search is not configured"):
            ImageEmbedder(plain)
        # a text search is as it was
        assert (await retriever.execute(SearchIntent(rationale="r", entity_type="anime", query=TITLES[0]))
                ).raw_data[0]["id"] == anime_id(0)
    finally:
        store.close()
    # a store built with images and a server configured without (or the other way round) says to reindex
    with pytest.raises(QdrantUnavailable, match="reindex"):
        ensure_collections(indexed.store, plain, embedder.dimension)
