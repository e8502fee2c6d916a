"""What the integration tests share beyond tests/conftest.py: the image tests' tiny CLIP and picture server.

The gallery's pictures and catalog, and the server that serves them by URL, are in tests/support/gallery.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

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
