"""Reading images safely: a query's ``image_query`` (base64 or an allowlisted URL) and a catalog record's image.

Every image is bounded before it is decoded: its encoded size (``image_max_bytes``), its format (Pillow reads
the bytes only as one of ``image_formats``, whatever a file name or a Content-Type says), and the pixel count
its header declares (``image_max_pixels``), checked before any pixel is decompressed, so a small file that
declares a huge image (a decompression bomb) is refused without being expanded. Then Pillow verifies the file
and decodes it. A URL is fetched with a total time limit, no redirects, a Content-Type that must name an
accepted format, and a body cut off past the size bound.

A URL in a query is fetched only when its host is in ``image_url_hosts`` (the server must not fetch what a
client names: server-side request forgery); a record's URL comes from the operator's own data files and is
fetched wherever it points. Every refusal is an :class:`InvalidImage` saying why.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import io
import warnings
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from PIL import Image, UnidentifiedImageError

from agentic_rag.errors import ErrorKind, InvalidInput
from agentic_rag.settings import Settings

IMAGE_SEARCH_OFF = ("image search is not configured: this server has no image model (set RAG_IMAGE_MODEL to a "
                    "CLIP model directory and reindex)")
# What each accepted format is served as; a fetched image must say one of these.
CONTENT_TYPES = {"PNG": ("image/png",), "JPEG": ("image/jpeg", "image/jpg"), "WEBP": ("image/webp",),
                 "GIF": ("image/gif",), "BMP": ("image/bmp", "image/x-ms-bmp")}
_CHUNK = 64 * 1024


class InvalidImage(InvalidInput):
    """An image that is refused: too large, not an accepted format, not decodable, or not allowed to be fetched."""


class ImageSearchOff(InvalidInput):
    """A request with an image to a server that has no image model (:data:`IMAGE_SEARCH_OFF`)."""

    kind: ErrorKind = "bad_request"


@dataclass(frozen=True, slots=True)
class ImageBounds:
    """What an image may be, from the settings (see their descriptions)."""

    max_bytes: int
    max_pixels: int
    formats: tuple[str, ...]
    url_hosts: tuple[str, ...]
    fetch_timeout_s: float

    @classmethod
    def of(cls, settings: Settings) -> ImageBounds:
        return cls(max_bytes=settings.image_max_bytes, max_pixels=settings.image_max_pixels,
                   formats=tuple(settings.image_formats), url_hosts=tuple(h.lower() for h in settings.image_url_hosts),
                   fetch_timeout_s=settings.image_fetch_timeout_ms / 1000)


def decode_image(data: bytes, bounds: ImageBounds) -> Image.Image:
    """``data`` as an RGB image, once it passed every bound; :class:`InvalidImage` otherwise."""
    if len(data) > bounds.max_bytes:
        raise InvalidImage(f"the image is {len(data)} bytes, over the limit of {bounds.max_bytes}")
    try:
        with warnings.catch_warnings():
            # Pillow's own bomb check warns (then raises) at its global limit; ours below is the settings' bound
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            probe = Image.open(io.BytesIO(data), formats=list(bounds.formats))  # reads the header only
            width, height = probe.size
            if width * height > bounds.max_pixels:
                raise InvalidImage(f"the image declares {width}x{height} pixels, over the limit of "
                                   f"{bounds.max_pixels} (a decompression bomb is refused before it is decoded)")
            probe.verify()  # the file's structure and checksums, without decoding it
            image = Image.open(io.BytesIO(data), formats=list(bounds.formats))
            image.seek(0)  # the first frame of an animation
            return image.convert("RGB")  # decodes the pixels
    except InvalidImage:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise InvalidImage(f"the image declares too many pixels (a decompression bomb is refused): {exc}") from exc
    except UnidentifiedImageError as exc:
        raise InvalidImage(f"not an image in an accepted format ({', '.join(bounds.formats)}): {exc}") from exc
    except (OSError, SyntaxError, ValueError, EOFError) as exc:  # what Pillow raises for a damaged file
        raise InvalidImage(f"the image cannot be decoded: {exc}") from exc


def _b64_chars(max_bytes: int) -> int:
    return (max_bytes + 2) // 3 * 4 + 1024  # what a data URL's header and line breaks add, allowed for


def decode_base64(value: str, max_bytes: int, *, invalid: str = "the image is not valid base64") -> bytes:
    """An image sent as base64 (or a base64 data URL), as bytes; refused unread past ``max_bytes`` of image."""
    if value.startswith("data:"):  # a data URL: data:image/png;base64,....
        header, _, value = value.partition(",")
        if not header.endswith(";base64"):
            raise InvalidImage("an image data URL must be base64 (data:image/...;base64,...)")
    if len(value) > _b64_chars(max_bytes):  # before decoding: base64 is 4 chars per 3 bytes
        raise InvalidImage(f"the image is over the limit of {max_bytes} bytes")
    try:
        return base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidImage(f"{invalid}: {exc}") from exc


def _host_allowed(host: str, allowed: tuple[str, ...]) -> bool:
    return any(host == a or (a.startswith(".") and host.endswith(a)) for a in allowed)


async def fetch_image(url: str, bounds: ImageBounds, *, allowlist: bool) -> bytes:
    """The body of ``url``, bounded in time, size and Content-Type; with ``allowlist``, only from an allowed host."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidImage("an image URL must be an absolute http(s) URL")
    if parts.username is not None or parts.password is not None:
        raise InvalidImage("an image URL must not carry credentials")
    if allowlist and not _host_allowed(parts.hostname.lower(), bounds.url_hosts):
        raise InvalidImage(f"image URLs from {parts.hostname} are not allowed (RAG_IMAGE_URL_HOSTS lists the hosts "
                           "this server fetches from; otherwise send the image as base64)")
    accepted = {t for f in bounds.formats for t in CONTENT_TYPES[f]}
    try:
        async with asyncio.timeout(bounds.fetch_timeout_s), httpx.AsyncClient(
                timeout=bounds.fetch_timeout_s, follow_redirects=False, trust_env=False) as client, \
                client.stream("GET", url, headers={"Accept": ", ".join(sorted(accepted))}) as response:
            if response.status_code != 200:
                raise InvalidImage(f"fetching the image gave HTTP {response.status_code}")
            kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
            if kind not in accepted:
                raise InvalidImage(f"the image URL served {kind or 'no content type'}, not one of "
                                   f"{', '.join(sorted(accepted))}")
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > bounds.max_bytes:
                raise InvalidImage(f"the image is {declared} bytes, over the limit of {bounds.max_bytes}")
            body = bytearray()
            async for chunk in response.aiter_bytes(_CHUNK):
                body += chunk
                if len(body) > bounds.max_bytes:
                    raise InvalidImage(f"the image is over the limit of {bounds.max_bytes} bytes")
            return bytes(body)
    except TimeoutError as exc:
        raise InvalidImage(f"fetching the image took longer than {bounds.fetch_timeout_s:g} s") from exc
    except httpx.HTTPError as exc:
        raise InvalidImage(f"the image URL could not be fetched: {exc}") from exc


async def read_image_query(value: str, bounds: ImageBounds) -> bytes:
    """A search's ``image_query`` (an allowlisted http(s) URL, base64, or a base64 data URL) as image bytes,
    decoded and verified; :class:`InvalidImage` says why one is refused."""
    value = value.strip()
    if value.lower().startswith(("http://", "https://")):
        data = await fetch_image(value, bounds, allowlist=True)
    else:
        data = decode_base64(value, bounds.max_bytes, invalid="image_query is neither an http(s) URL nor valid base64")
    await asyncio.to_thread(decode_image, data, bounds)
    return data


def read_image_file(path: Path, bounds: ImageBounds) -> bytes:
    """A catalog image file's bytes (at most ``max_bytes``: a larger file is refused unread)."""
    try:
        with path.open("rb") as f:
            data = f.read(bounds.max_bytes + 1)
    except OSError as exc:
        raise InvalidImage(f"the image file cannot be read: {exc}") from exc
    if len(data) > bounds.max_bytes:
        raise InvalidImage(f"the image file is over the limit of {bounds.max_bytes} bytes")
    return data


def read_request_image(value: str | bytes, settings: Settings) -> bytes:
    """A question's attached image, checked once where the request comes in: base64 (or a base64 data URL) from
    JSON, raw bytes from gRPC. :class:`ImageSearchOff` without an image model, :class:`InvalidImage` when it fails
    a bound (:func:`decode_image`, which decodes it: call this off the event loop)."""
    if settings.image_model is None:
        raise ImageSearchOff(IMAGE_SEARCH_OFF)
    bounds = ImageBounds.of(settings)
    data = decode_base64(value.strip(), bounds.max_bytes) if isinstance(value, str) else value
    decode_image(data, bounds)
    return data


def base64_body_bytes(settings: Settings) -> int:
    """Characters of base64 that carry the largest accepted image (:func:`decode_base64` allows this much)."""
    return _b64_chars(settings.image_max_bytes)
