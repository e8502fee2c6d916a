"""Questions with an image through the Ray Serve application: configs/local.yaml on a local Ray, with an image model.

The gallery of test_image_search.py (generated pictures, a tiny random CLIP the tests build) is ingested into a
scratch database and an embedded Qdrant path of its own; the app's Embedder replica loads the same CLIP and embeds
each question's image (``embed_images``, batched), the VectorRetriever searches by it, over real HTTP and through
Serve's gRPC proxy. The image crosses every hop of the app (Ingress, Orchestrator, VectorRetriever, Embedder), so
the largest image the settings allow is sent too.
"""

from __future__ import annotations

import base64
import importlib.util
import io
import os
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from types import ModuleType
from typing import Any

import grpc
import httpx
import numpy as np
import pytest
from PIL import Image
from ray.serve.schema import ServeDeploySchema

from agentic_rag.api.grpc.proto import searchai_pb2 as pb
from agentic_rag.api.grpc.proto import searchai_pb2_grpc as pb_grpc
from agentic_rag.catalog.ingest import ingest_demo
from agentic_rag.models.embeddings import Embedder
from agentic_rag.models.image_embeddings import ImageEmbedder
from agentic_rag.serve import launch
from agentic_rag.settings import Settings
from agentic_rag.storage.qdrant import open_qdrant

pytestmark = pytest.mark.integration

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "local.yaml"
ASKED = "what anime is this from?"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"tests_integration_{name}", Path(__file__).with_name(f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


gallery = _load("test_image_search")
web = gallery.web  # the fixture: the gallery's one picture given by URL is served from it


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def largest_image(limit: int) -> bytes:
    """A PNG of noise (it does not compress) just under ``limit`` bytes: the largest image the server takes."""
    side = int((limit / 3) ** 0.5)
    while True:
        pixels = np.random.default_rng(7).integers(0, 256, (side, side, 3), dtype=np.uint8)
        out = io.BytesIO()
        Image.fromarray(pixels).save(out, "PNG", compress_level=0)
        if out.tell() <= limit:
            return out.getvalue()
        side -= 8


@pytest.fixture(scope="module")
def image_dsn(scratch: Callable[[str], AbstractContextManager[str]]) -> Iterator[str]:
    with scratch(f"agentic_rag_image_serve_{os.getpid()}") as dsn:
        yield dsn


@pytest.fixture(scope="module")
async def served(settings: Settings, image_dsn: str, embedder: Embedder, web: Any,
                 tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The gallery ingested with its pictures, then the app over it with the same image model."""
    folder = tmp_path_factory.mktemp("gallery")
    gallery.write_catalog(folder, web)
    ingested = settings.model_copy(update={
        "image_model": str(gallery._tiny_clip_dir()), "qdrant_path": tmp_path_factory.mktemp("image-serve") / "q"})
    store = open_qdrant(ingested)
    try:
        await ingest_demo(image_dsn, ingested, data_dir=folder, embedder=embedder, client=store,
                          image_embedder=ImageEmbedder(ingested))
    finally:
        store.close()  # the VectorRetriever replica opens it next
    return ingested


@pytest.fixture(scope="module")
def app(served: Settings, image_dsn: str) -> Iterator[ServeDeploySchema]:
    config = launch.load_config(CONFIG, port=_free_port(), grpc_port=_free_port(), args={
        "database_url": image_dsn, "qdrant_path": str(served.qdrant_path), "qdrant_engine": served.qdrant_engine,
        "image_model": served.image_model, "data_dir": str(served.data_dir.resolve()), "log_level": "WARNING"})
    launch.start_ray(num_cpus=2, log_to_driver=False)
    try:
        launch.deploy(config)
        launch.wait_until_running(config, timeout_s=180)
        yield config
    finally:
        launch.shutdown()


def test_http_questions_with_an_image_are_answered_by_the_served_app(app: ServeDeploySchema,
                                                                     served: Settings) -> None:
    url = launch.app_url(app)
    with httpx.Client(base_url=url, timeout=120) as client:
        for i in (0, 5, 9):
            image = b64(gallery.encode(gallery.picture(i)))
            resp = client.post("/v1/search_ai", json={"question": ASKED, "image": image})
            assert resp.status_code == 200, resp.text
            body = resp.json()["response"]
            assert body["status"] == "answered" and [e["id"] for e in body["result_entities"]] == [gallery.anime_id(i)]
        # the largest image the settings take crosses every hop of the app (base64 in the JSON envelopes between
        # replicas: a third larger again) and is searched like any other
        big = largest_image(served.image_max_bytes)
        assert len(big) > 0.95 * served.image_max_bytes
        resp = client.post("/v1/search_ai", json={"question": ASKED, "image": b64(big)})
        assert resp.status_code == 200, resp.text
        assert resp.json()["response"]["status"] in ("answered", "best_effort", "not_found")
        # refused at the edge, before a run: not an image, and one past the bound
        resp = client.post("/v1/search_ai", json={"question": ASKED, "image": b64(b"not a picture")})
        assert resp.status_code == 422 and "not an image" in resp.json()["error"]["message"]


async def test_grpc_ask_with_an_image_through_the_serve_proxy(app: ServeDeploySchema, served: Settings) -> None:
    target = launch.grpc_target(app)
    assert target is not None
    metadata = (("application", "agentic_rag"),)
    async with grpc.aio.insecure_channel(target) as channel:
        stub = pb_grpc.SearchAIStub(channel)
        reply = await stub.Ask(pb.AskRequest(question=ASKED, image=gallery.encode(gallery.picture(8))),
                               metadata=metadata, timeout=120)
        assert [e.id for e in reply.result_entities] == [gallery.anime_id(8)]
        # the largest image: one gRPC message over the default 4 MiB once the question rides beside it
        reply = await stub.Ask(pb.AskRequest(question=ASKED, image=largest_image(served.image_max_bytes)),
                               metadata=metadata, timeout=120)
        assert reply.status in (pb.STATUS_ANSWERED, pb.STATUS_BEST_EFFORT, pb.STATUS_NOT_FOUND)
