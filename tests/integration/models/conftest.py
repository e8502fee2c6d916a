"""The tiny Hugging Face model the model-layer tests load, built once and cached under ``.data/``."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from agentic_rag.models.transformers_backend import TransformersBackend
from tests.support.tiny import CACHE, build_tiny_model


@pytest.fixture(scope="session")
def tiny_model_dir() -> Path:
    """Directory of the tiny randomly initialised Qwen2 model and its locally trained tokenizer."""
    return Path(build_tiny_model(CACHE))


@pytest.fixture(scope="session")
def tiny_backend(tiny_model_dir: Path) -> TransformersBackend:
    """One transformers backend over the tiny model for the session: outlines builds each schema's index once."""
    return TransformersBackend(tiny_model_dir, device="cpu")


@pytest.fixture(scope="session")
def serving() -> Any:
    """A context manager that serves an app (see :func:`_serving`), for tests that start a server."""
    return _serving


@contextmanager
def _serving(app: Any) -> Iterator[str]:
    """``app`` on a real uvicorn server on a free loopback port, in a background thread: its base URL (``/v1``)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
