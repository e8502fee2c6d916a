"""The image tests' gallery: generated pictures, a catalog of them, and a small web server that serves them by URL.

Pictures are shapes, gradients, stripes and blocky noise, each seeded by its number, so the same number draws the
same pixels in every test. :func:`write_catalog` writes a data file of 16 anime and 2 characters with pictures
(files, one given by URL, one broken file, one missing). :func:`serving_web` runs a small HTTP server on 127.0.0.1
that serves the pictures given by URL, and the bad ones: tests/integration/conftest.py makes it the ``web``
fixture, beside ``tiny_clip_dir``, the tiny random CLIP that embeds the pictures.
"""

from __future__ import annotations

import base64
import contextlib
import io
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from PIL import Image, ImageDraw

from agentic_rag.catalog.ids import entity_id

TITLES = ["Amber Lantern", "Brass Orchard", "Cobalt Harbor", "Dune Whistle", "Ember Quarry", "Frost Meridian",
          "Granite Psalm", "Hollow Comet", "Ivory Tundra", "Jade Cascade", "Kestrel Forge", "Lumen Abyss",
          "Mosaic Drift", "Nimbus Atlas", "Onyx Reverie", "Pewter Sonata"]
FILES = range(14)  # work-00 .. work-13: a picture file each
URL_WORK, BAD_WORK = 14, 15  # work-14's picture comes by URL; work-15's file is not a picture
GOOD = [*FILES, URL_WORK]
GUIDE_PICTURE = 40  # the picture of the character "guide"


def picture(i: int, size: tuple[int, int] = (256, 192)) -> Image.Image:
    """Picture ``i``: shapes on a plain ground, a gradient, stripes or blocky noise (by ``i % 4``), seeded by ``i``."""
    rng = np.random.default_rng(1000 + i)
    w, h = size
    c1, c2 = (tuple(int(x) for x in rng.integers(0, 256, 3)) for _ in range(2))
    yy, xx = np.mgrid[0:h, 0:w]
    if i % 4 == 0:
        im = Image.new("RGB", size, c1)
        draw = ImageDraw.Draw(im)
        for _ in range(3):
            x0, y0 = int(rng.integers(0, w * 2 // 3)), int(rng.integers(0, h * 2 // 3))
            box = (x0, y0, x0 + int(rng.integers(w // 6, w // 3)), y0 + int(rng.integers(h // 6, h // 3)))
            fill = tuple(int(x) for x in rng.integers(0, 256, 3))
            (draw.ellipse if rng.integers(0, 2) else draw.rectangle)(box, fill=fill)
        draw.polygon([(int(rng.integers(0, w)), int(rng.integers(0, h))) for _ in range(3)], fill=c2)
        return im
    if i % 4 == 1:
        angle = rng.uniform(0, 2 * np.pi)
        t = np.cos(angle) * xx / w + np.sin(angle) * yy / h
        t = ((t - t.min()) / (t.max() - t.min()))[..., None]
        return Image.fromarray((np.array(c1) * (1 - t) + np.array(c2) * t).astype(np.uint8))
    if i % 4 == 2:
        band = ((xx + yy * rng.uniform(-1, 1)) // int(rng.integers(8, 40))).astype(int) % 2
        return Image.fromarray(np.where(band[..., None] == 1, np.array(c1), np.array(c2)).astype(np.uint8))
    cells = rng.integers(0, 256, (h // 16, w // 16, 3), dtype=np.uint8)
    return Image.fromarray(cells).resize(size, Image.Resampling.NEAREST)


def encode(image: Image.Image, fmt: str = "PNG", **options: Any) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def bomb_png(width: int, height: int) -> bytes:
    """A PNG of a few dozen bytes whose header declares ``width`` x ``height`` pixels."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64))
            + chunk(b"IEND", b""))


def anime_id(i: int) -> str:
    return str(entity_id("anime", f"work-{i:02d}"))


# -- a small web server: pictures by URL, and the bad ones ---------------------------------------------------------

@dataclass
class Web:
    port: int
    routes: dict[str, tuple[int, dict[str, str], bytes, float]] = field(default_factory=dict)
    hits: list[str] = field(default_factory=list)

    def put(self, path: str, body: bytes, content_type: str = "image/png", *, status: int = 200,
            delay_s: float = 0.0, length: bool = True, headers: dict[str, str] | None = None) -> str:
        head = {"Content-Type": content_type, **(headers or {})}
        if length:
            head["Content-Length"] = str(len(body))
        self.routes[path] = (status, head, body, delay_s)
        return self.url(path)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"


@contextlib.contextmanager
def serving_web() -> Iterator[Web]:
    """A :class:`Web` on a free loopback port, served from a background thread until the block ends."""
    state: dict[str, Web] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            site = state["web"]
            site.hits.append(self.path)
            status, headers, body, delay = site.routes.get(self.path, (404, {"Content-Length": "0"}, b"", 0.0))
            time.sleep(delay)
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            with contextlib.suppress(OSError):  # the client gave up (a bound it enforces)
                self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state["web"] = Web(port=server.server_address[1])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state["web"]
    finally:
        server.shutdown()
        server.server_close()


# -- the catalog -------------------------------------------------------------------------------------------------------

def write_catalog(folder: Path, web: Web, *, synopsis_of: Callable[[int], str] = lambda i: f"Work {i}.") -> None:
    """A data file of 16 anime and 2 characters with pictures: files, one URL, one broken file, one missing."""
    (folder / "images").mkdir(parents=True, exist_ok=True)
    for i in FILES:
        (folder / "images" / f"work-{i:02d}.png").write_bytes(encode(picture(i)))
    (folder / "images" / "broken.png").write_text("this is not a picture")
    (folder / "images" / "guide.png").write_bytes(encode(picture(GUIDE_PICTURE)))
    web.put(f"/covers/work-{URL_WORK:02d}.png", encode(picture(URL_WORK)))

    def image_of(i: int) -> str:
        if i == URL_WORK:
            return web.url(f"/covers/work-{i:02d}.png")
        return f"images/work-{i:02d}.png" if i != BAD_WORK else "images/broken.png"

    data = {
        "franchise": "gallery", "name": "Gallery", "description": "Generated pictures for the image tests.",
        "studios": [{"key": "gallery-studio", "name": "Gallery Studio"}],
        "anime": [{"key": f"work-{i:02d}", "title": title, "format": "tv", "year": 2000 + i, "status": "finished",
                   "studios": ["gallery-studio"], "popularity": 50, "synopsis": synopsis_of(i), "image": image_of(i)}
                  for i, title in enumerate(TITLES)],
        "characters": [
            {"key": "guide", "name": "Quill Guide", "description": "A guide.", "popularity": 10,
             "appears_in": [{"anime": "work-00", "role": "main"}], "image": "images/guide.png"},
            {"key": "keeper", "name": "Rune Keeper", "description": "A keeper.", "popularity": 10,
             "appears_in": [{"anime": "work-01", "role": "main"}], "image": "images/nowhere.png"},
        ],
    }
    (folder / "gallery.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
