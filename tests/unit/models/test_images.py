"""Reading images before anything else is done with them: bounds, formats, bombs, base64, the URL allowlist;
and where an image may appear in the contracts and the data files. No service, no model, no network."""

from __future__ import annotations

import base64
import io
import struct
import uuid
import zlib

import pytest
from PIL import Image
from pydantic import ValidationError

from agentic_rag import protocol as p
from agentic_rag.catalog.records import Anime
from agentic_rag.models.images import (
    ImageBounds,
    ImageSearchOff,
    InvalidImage,
    decode_image,
    fetch_image,
    read_image_query,
    read_request_image,
)
from agentic_rag.orchestrator.state import AttachedImage, Budget, RunState, describe, step_key
from agentic_rag.settings import Settings

BOUNDS = ImageBounds.of(Settings(image_url_hosts=["images.example.org", ".cdn.example.net"]))


def png(size: tuple[int, int] = (40, 30), fmt: str = "PNG", mode: str = "RGB") -> bytes:
    out = io.BytesIO()
    Image.new(mode, size, "red" if mode == "RGB" else 1).save(out, fmt)
    return out.getvalue()


def bomb(width: int, height: int) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\0" * 16)) + chunk(b"IEND", b""))


def test_an_accepted_image_decodes_as_rgb() -> None:
    for fmt, mode in (("PNG", "RGB"), ("JPEG", "RGB"), ("GIF", "P"), ("BMP", "RGB"), ("WEBP", "RGB"), ("PNG", "L")):
        image = decode_image(png(fmt=fmt, mode=mode), BOUNDS)
        assert (image.mode, image.size) == ("RGB", (40, 30))


def test_an_image_over_the_size_bound_is_refused_before_it_is_read() -> None:
    small = ImageBounds.of(Settings(image_max_bytes=1024))
    with pytest.raises(InvalidImage, match="over the limit of 1024"):
        decode_image(b"\x89PNG" + b"\0" * 2000, small)


def test_a_format_not_accepted_is_refused_whatever_it_is() -> None:
    only_png = ImageBounds.of(Settings(image_formats=["PNG"]))
    with pytest.raises(InvalidImage, match="not an image in an accepted format"):
        decode_image(png(fmt="GIF", mode="P"), only_png)
    for junk in (b"", b"GIF89a not really", b"<svg xmlns='http://www.w3.org/2000/svg'/>", b"%PDF-1.4"):
        with pytest.raises(InvalidImage):
            decode_image(junk, BOUNDS)


def test_a_damaged_image_is_refused() -> None:
    data = png((200, 200))
    with pytest.raises(InvalidImage):
        decode_image(data[: len(data) // 2], BOUNDS)


@pytest.mark.parametrize("side", [8_000, 30_000])
def test_a_decompression_bomb_is_refused_from_its_header(side: int) -> None:
    with pytest.raises(InvalidImage, match=r"declares .*decompression bomb"):
        decode_image(bomb(side, side), BOUNDS)
    tight = ImageBounds.of(Settings(image_max_pixels=1024))
    with pytest.raises(InvalidImage, match="declares 40x30 pixels"):
        decode_image(png(), tight)


async def test_an_image_query_is_base64_or_a_base64_data_url() -> None:
    data = png()
    assert await read_image_query(base64.b64encode(data).decode(), BOUNDS) == data
    assert await read_image_query("data:image/png;base64," + base64.b64encode(data).decode(), BOUNDS) == data
    wrapped = base64.encodebytes(data).decode()  # with line breaks
    assert await read_image_query(wrapped, BOUNDS) == data
    with pytest.raises(InvalidImage, match="neither an http"):
        await read_image_query("not base64 at all!", BOUNDS)
    with pytest.raises(InvalidImage, match="must be base64"):
        await read_image_query("data:image/png,rawbytes", BOUNDS)
    with pytest.raises(InvalidImage, match="not an image"):
        await read_image_query(base64.b64encode(b"hello world").decode(), BOUNDS)


async def test_a_long_base64_string_is_refused_before_it_is_decoded() -> None:
    small = ImageBounds.of(Settings(image_max_bytes=1024))
    with pytest.raises(InvalidImage, match="over the limit"):
        await read_image_query("A" * 10_000, small)


@pytest.mark.parametrize("url", [
    "http://169.254.169.254/latest/meta-data/", "http://localhost/x.png", "https://images.example.org.evil.com/x.png",
    "https://example.net/x.png", "http://cdn.example.net.attacker/x.png",
])
async def test_a_url_off_the_allowlist_is_refused_without_a_request(url: str) -> None:
    # nothing listens on these hosts here: a refusal that names the allowlist is one made before any request
    with pytest.raises(InvalidImage, match="not allowed"):
        await read_image_query(url, BOUNDS)


async def test_allowlisted_hosts_and_the_urls_refused_whatever_the_host() -> None:
    for url in ("https://user:pw@images.example.org/x.png",):
        with pytest.raises(InvalidImage, match="credentials"):
            await fetch_image(url, BOUNDS, allowlist=True)
    with pytest.raises(InvalidImage, match="absolute http"):
        await fetch_image("file:///etc/passwd", BOUNDS, allowlist=False)
    with pytest.raises(InvalidImage, match="not allowed"):
        await read_image_query("https://images.example.org/x.png", ImageBounds.of(Settings()))  # empty list


def test_a_search_may_be_by_image_alone_and_a_model_never_writes_one() -> None:
    by_image = p.SearchIntent(rationale="r", entity_type="anime", image_query="aGVsbG8=")
    assert by_image.query is None
    with pytest.raises(ValidationError, match="image_query"):
        p.SearchIntent(rationale="r", entity_type="anime")
    with pytest.raises(ValidationError):
        p.SearchIntent(rationale="r", entity_type="anime", image_query="")
    schema = p.SearchIntent.model_json_schema()
    assert schema["properties"]["image_query"]["type"] == "null"


@pytest.mark.parametrize(("ref", "ok"), [
    ("covers/death-note.png", True), ("https://img.example.org/a.jpg", True), ("cover.webp", True),
    ("../secrets.png", False), ("/etc/passwd", False), ("covers/../../x.png", False), ("file:///etc/passwd", False),
    ("C:\\images\\a.png", False), ("http://", False),
])
def test_a_records_image_is_a_relative_path_or_an_http_url(ref: str, ok: bool) -> None:
    record = {"key": "a", "title": "A", "format": "tv", "year": 2000, "status": "finished", "popularity": 1,
              "synopsis": "s", "image": ref}
    if ok:
        assert Anime.model_validate(record).image == ref
    else:
        with pytest.raises(ValidationError, match="image"):
            Anime.model_validate(record)


def test_a_requests_image_is_refused_without_an_image_model_and_checked_with_one() -> None:
    with pytest.raises(ImageSearchOff, match="not configured"):
        read_request_image(base64.b64encode(png()).decode(), Settings())
    on = Settings(image_model="/models/clip")
    assert read_request_image(base64.b64encode(png()).decode(), on) == png()
    assert read_request_image(png(), on) == png()  # gRPC's bytes as they are
    with pytest.raises(InvalidImage, match="not valid base64"):
        read_request_image("not base64!", on)
    with pytest.raises(InvalidImage, match="decompression bomb"):
        read_request_image(bomb(60_000, 60_000), on)


def test_the_runs_image_goes_with_its_searches_by_meaning_only() -> None:
    state = RunState(question="what anime is this from?", mode="agentic", budget=Budget(8, 60_000, 3),
                     image=AttachedImage.of(png()))
    assert state.image is not None and state.image.note() == {"bytes": len(png()), "sha256": state.image.sha256}
    asked = p.SearchIntent(rationale="r", entity_type="anime", query="What anime is this from")
    described = p.SearchIntent(rationale="r", entity_type="anime", query="a pirate boy")
    fetch = p.SearchIntent(rationale="r", entity_type="anime", filters=p.SearchFilters(id=[str(uuid.uuid4())]))
    alone, fused, fetched = (state.attach_image(i) for i in (asked, described, fetch))
    assert isinstance(alone, p.SearchIntent) and isinstance(fused, p.SearchIntent)
    assert (alone.query, alone.image_query) == (None, state.image.query)  # the question itself: the image alone
    assert (fused.query, fused.image_query) == ("a pirate boy", state.image.query)
    assert fetched == fetch
    assert step_key(fused) == step_key(described)  # one run has one image: the same step either way
    assert describe(alone) == "qdrant_search anime the image"
