"""Questions about an attached image, end to end: the loop ("what anime is this from?" answers the entity whose
picture it is), and the image as the HTTP API, gRPC SearchAI and GraphQL (over gRPC) take it, checked before a
run starts.

The catalog is tests/support/gallery.py's (generated pictures, embedded by a tiny random CLIP), ingested into real
PostgreSQL and a local-mode Qdrant; the runs use the heuristic planner over the real retrievers.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest

from agentic_rag.api.graphql import create_app as graphql_app
from agentic_rag.api.grpc.proto import searchai_pb2 as pb
from agentic_rag.api.grpc.proto import searchai_pb2_grpc as pb_grpc
from agentic_rag.api.grpc.service import SearchAIApi, SearchAIServicer
from agentic_rag.api.http.app import create_app
from agentic_rag.api.http.errors import MAX_BODY_BYTES
from agentic_rag.api.service import LocalAgentService
from agentic_rag.catalog.ids import entity_id
from agentic_rag.catalog.ingest import ingest_demo
from agentic_rag.models.embeddings import Embedder
from agentic_rag.models.image_embeddings import ImageEmbedder
from agentic_rag.models.images import base64_body_bytes
from agentic_rag.orchestrator.runtime import Runtime, build_orchestrator
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import make_pool
from agentic_rag.storage.qdrant import open_qdrant
from tests.support.gallery import GUIDE_PICTURE, TITLES, Web, anime_id, b64, bomb_png, encode, picture, write_catalog
from tests.support.helpers import client_for

pytestmark = pytest.mark.integration
GUIDE = str(entity_id("character", "guide"))  # its picture is GUIDE_PICTURE
ASKED = "what anime is this from?"


@pytest.fixture(scope="module")
def image_settings(settings: Settings, tiny_clip_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return settings.model_copy(update={
        "image_model": str(tiny_clip_dir), "qdrant_engine": "local",
        "qdrant_path": tmp_path_factory.mktemp("image-questions") / "qdrant"})


@pytest.fixture(scope="module")
def questions_dsn(scratch: Callable[[str], AbstractContextManager[str]]) -> Iterator[str]:
    with scratch(f"agentic_rag_image_questions_{os.getpid()}") as dsn:
        yield dsn


@pytest.fixture(scope="module")
async def runtime(image_settings: Settings, questions_dsn: str, embedder: Embedder, web: Web,
                  tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Runtime]:
    """The gallery ingested with its pictures, and the loop over it with image search."""
    folder = tmp_path_factory.mktemp("gallery")
    write_catalog(folder, web)
    images = ImageEmbedder(image_settings)
    store = open_qdrant(image_settings)
    pool = await make_pool(questions_dsn, image_settings)
    try:
        await ingest_demo(questions_dsn, image_settings, data_dir=folder, embedder=embedder, client=store,
                          image_embedder=images)
        orchestrator, trajectories = build_orchestrator(image_settings, pool, store, embedder, image_embedder=images)
        yield Runtime(image_settings, pool, store, embedder, trajectories, orchestrator)
    finally:
        await pool.close()
        store.close()


# -- the loop --------------------------------------------------------------------------------------------------------

async def test_what_anime_is_this_from_answers_the_entity_whose_picture_it_is(runtime: Runtime) -> None:
    for i in (0, 3, 6):
        data = encode(picture(i))
        result = await runtime.orchestrator.run(ASKED, image=data)
        r = result.response
        assert r.status == "answered", r.answer
        assert [e.id for e in r.result_entities] == [anime_id(i)]
        assert TITLES[i] in r.answer


async def test_who_is_this_searches_the_characters_by_the_picture(runtime: Runtime) -> None:
    result = await runtime.orchestrator.run("who is this?", image=encode(picture(GUIDE_PICTURE)))
    assert [e.id for e in result.response.result_entities] == [GUIDE]


async def test_the_trajectory_keeps_the_image_size_and_hash_never_its_bytes(runtime: Runtime) -> None:
    data = encode(picture(2))
    result = await runtime.orchestrator.run(ASKED, image=data)
    trajectory = await runtime.store.get(result.trajectory_id)
    assert trajectory is not None
    [request] = [e for e in trajectory.events if e.stage == "request"]
    assert request.payload["image"]["bytes"] == len(data) and len(request.payload["image"]["sha256"]) == 16
    [action] = [e for e in trajectory.events if e.stage == "retrieve" and e.type == "action"]
    # searched by the image alone (the planner's query was the question), its note beside the intent
    assert action.payload["image"] == request.payload["image"]
    assert action.payload["intent"]["query"] is None and "image_query" not in action.payload["intent"]
    recorded = json.dumps([e.payload for e in trajectory.events])
    assert b64(data)[:64] not in recorded


async def test_without_an_image_the_question_is_searched_by_its_words(runtime: Runtime) -> None:
    result = await runtime.orchestrator.run(ASKED)
    trajectory = await runtime.store.get(result.trajectory_id)
    assert trajectory is not None
    assert not [e for e in trajectory.events if e.stage == "request"]
    assert all("image" not in e.payload for e in trajectory.events if e.stage == "retrieve")


# -- HTTP ------------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def service(runtime: Runtime) -> LocalAgentService:
    return LocalAgentService(runtime)


@pytest.mark.parametrize("route", ["/v1/search_ai", "/v1/query"])
async def test_http_a_question_with_an_image_is_answered(service: LocalAgentService, image_settings: Settings,
                                                         route: str) -> None:
    async with client_for(create_app(service, image_settings)) as client:
        resp = await client.post(route, json={"question": ASKED, "image": b64(encode(picture(4)))})
        assert resp.status_code == 200, resp.text
        assert [e["id"] for e in resp.json()["response"]["result_entities"]] == [anime_id(4)]
        if route == "/v1/query":
            assert [step["intent"] for step in resp.json()["plan"]] == ["qdrant_search anime the image"]
        # a data URL is base64 too
        resp = await client.post(route, json={
            "question": ASKED, "image": "data:image/png;base64," + b64(encode(picture(7)))})
        assert [e["id"] for e in resp.json()["response"]["result_entities"]] == [anime_id(7)]


async def test_http_an_image_without_an_image_model_is_refused_saying_why(service: LocalAgentService,
                                                                          settings: Settings) -> None:
    """Without an image model the schema offers no image (what it calls valid the server takes: issue 40), and one
    sent anyway is refused as the body's error, saying why."""
    assert settings.image_model is None
    async with client_for(create_app(service, settings)) as client:
        assert "image" not in (await client.get("/openapi.json")).json()["components"]["schemas"]["AskRequest"][
            "properties"]
        resp = await client.post("/v1/search_ai", json={"question": ASKED, "image": b64(encode(picture(1)))})
    assert resp.status_code == 422
    assert resp.json()["error"]["type"] == "validation_error"
    assert "image search is not configured" in resp.json()["error"]["message"]


async def test_http_bad_images_are_refused_before_a_run(service: LocalAgentService, image_settings: Settings,
                                                        runtime: Runtime) -> None:
    small = image_settings.model_copy(update={"image_max_bytes": 4096})
    started = await runtime.pool.fetchval("SELECT count(*) FROM trajectories")
    async with client_for(create_app(service, small)) as client:
        for image, status, says in [
            (b64(encode(picture(3, (48, 48)), "BMP")), 422, "over the limit of 4096"),  # a body the route allows
            (b64(b"this is text, not a picture"), 422, "not an image"),
            ("not base64 at all!", 422, "not valid base64"),
            (b64(bomb_png(60_000, 60_000)), 422, "decompression bomb"),
        ]:
            resp = await client.post("/v1/search_ai", json={"question": ASKED, "image": image})
            assert resp.status_code == status, (says, resp.text)
            assert says in resp.json()["error"]["message"]
        # a body past what the largest image needs is refused unread; other routes keep the default bound
        huge = "A" * (MAX_BODY_BYTES + base64_body_bytes(small))
        resp = await client.post("/v1/query", json={"question": ASKED, "image": huge})
        assert resp.status_code == 413
        resp = await client.post("/v1/search", json={"q": "x" * (MAX_BODY_BYTES + 10)})
        assert resp.status_code == 413
    assert await runtime.pool.fetchval("SELECT count(*) FROM trajectories") == started


# -- gRPC ------------------------------------------------------------------------------------------------------------

@asynccontextmanager
async def searchai(service: LocalAgentService, settings: Settings) -> AsyncIterator[str]:
    """SearchAI over ``service`` on a plain grpc.aio server (the product's servicer); yields its target."""
    server = grpc.aio.server()
    pb_grpc.add_SearchAIServicer_to_server(  # type: ignore[no-untyped-call]  # generated, untyped
        SearchAIServicer(SearchAIApi(service, settings)), server)
    target = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    await server.start()
    try:
        yield target
    finally:
        await server.stop(None)


async def test_grpc_ask_takes_an_image(service: LocalAgentService, image_settings: Settings) -> None:
    async with searchai(service, image_settings) as target, grpc.aio.insecure_channel(target) as channel:
        reply = await pb_grpc.SearchAIStub(channel).Ask(pb.AskRequest(question=ASKED, image=encode(picture(8))))
    assert [e.id for e in reply.result_entities] == [anime_id(8)]


async def test_grpc_bad_images_are_invalid_arguments(service: LocalAgentService, image_settings: Settings,
                                                     settings: Settings) -> None:
    small = image_settings.model_copy(update={"image_max_bytes": 4096})
    for api_settings, image, says in [
        (settings, encode(picture(1)), "image search is not configured"),
        (small, encode(picture(3, (48, 48)), "BMP"), "over the limit of 4096"),
        (image_settings, b"this is text, not a picture", "not an image"),
        (image_settings, bomb_png(60_000, 60_000), "decompression bomb"),
    ]:
        async with searchai(service, api_settings) as target, grpc.aio.insecure_channel(target) as channel:
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await pb_grpc.SearchAIStub(channel).Ask(pb.AskRequest(question=ASKED, image=image))
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, says
        assert says in (refused.value.details() or "")


# -- GraphQL, through gRPC -------------------------------------------------------------------------------------------

async def test_graphql_search_ai_passes_the_image_on_over_grpc(service: LocalAgentService, runtime: Runtime,
                                                               image_settings: Settings, settings: Settings) -> None:
    query = ("query ($q: String!, $image: String) { searchAi(question: $q, image: $image) { status "
             "resultEntities { id } } }")
    for agent_settings in (image_settings, settings):  # SearchAI with and without an image model
        async with searchai(service, agent_settings) as target:
            bff = graphql_app(image_settings, target, pool=runtime.pool)
            client = httpx.AsyncClient(transport=httpx.ASGITransport(bff), base_url="http://bff", timeout=60)

            async def ask(image: str, client: httpx.AsyncClient = client) -> dict[str, Any]:
                resp = await client.post("/graphql", json={"query": query, "variables": {"q": ASKED, "image": image}})
                return dict(resp.json())

            try:
                answered = await ask(b64(encode(picture(9))))
                if agent_settings.image_model is None:
                    [refused] = answered["errors"]
                    assert "image search is not configured" in refused["message"]
                    continue
                assert answered["data"]["searchAi"] == {"status": "ANSWERED", "resultEntities": [{"id": anime_id(9)}]}
                [bomb] = (await ask(b64(bomb_png(60_000, 60_000))))["errors"]
                assert "decompression bomb" in bomb["message"]
                [garbled] = (await ask("not base64!"))["errors"]
                assert garbled["extensions"]["code"] == "validation_error" and "image" in garbled["message"]
            finally:
                await client.aclose()
                await bff.state.backend.close()
