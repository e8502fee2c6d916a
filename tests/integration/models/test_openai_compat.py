"""Our OpenAI-compatible server for real: uvicorn on loopback, the tiny model behind it, OpenAI clients in front.

The server runs the real TransformersBackend; clients are the official ``openai`` client, our OpenAIBackend as
the factory builds it from settings, and raw HTTP for requests no well-behaved client would send. What
OpenAIBackend does as every backend does (constrained output, token counts, retries, errors) is the conformance
suite's (test_conformance.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletion

from agentic_rag.api.openai import create_app
from agentic_rag.models.base import CallShape, Message, StructuredGenerator, schema_for
from agentic_rag.models.openai_backend import OpenAIBackend, response_format
from agentic_rag.models.transformers_backend import TransformersBackend
from agentic_rag.planners.factory import text_backend
from agentic_rag.protocol import QueryRewrite
from agentic_rag.settings import Settings

MAX_TOKENS = 1024


@pytest.fixture(scope="module")
def base_url(tiny_model_dir: Path, serving: Any) -> Iterator[str]:
    """A real uvicorn server on 127.0.0.1 (a free port) in a background thread, serving the tiny model."""
    # this backend lives on the server's event loop only
    backend = TransformersBackend(tiny_model_dir, name="tiny")
    with serving(create_app({"tiny": backend, "tiny-validator": backend})) as url:
        yield url


async def test_the_factory_builds_an_openai_backend_that_keeps_its_time_limit(base_url: str) -> None:
    settings = Settings(planner_backend="openai", planner_model="tiny", openai_base_url=base_url,
                        openai_api_key="test", generation_timeout_ms=300_000)
    backend = text_backend(settings, "planner")
    assert isinstance(backend, OpenAIBackend) and backend.name == "tiny"
    messages: list[Message] = [{"role": "user", "content": "Who directed Akira?"}]
    try:
        done = await StructuredGenerator(backend).generate_shaped(
            CallShape(messages=messages, schema=schema_for(QueryRewrite)), QueryRewrite, max_tokens=MAX_TOKENS,
            temperature=1.0)
        assert done.usage.prompt_tokens > 0 and done.usage.completion_tokens > 0
    finally:
        await backend.aclose()
    # past RAG_GENERATION_TIMEOUT_MS the call is a TimeoutError (greedy, the random model runs to max_tokens)
    hasty = text_backend(settings.model_copy(update={"generation_timeout_ms": 100}), "planner")
    try:
        with pytest.raises(TimeoutError, match=r"no completion within 0\.1s"):
            await hasty.complete(messages, None, max_tokens=300, temperature=0.0)
    finally:
        await hasty.aclose()
    with pytest.raises(ValueError, match="RAG_VALIDATOR_MODEL must name the served model for the openai backend"):
        text_backend(settings.model_copy(update={"validator_backend": "openai"}), "validator")


async def test_official_client_gets_a_chat_completion(base_url: str) -> None:
    async with openai.AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0) as client:
        schema = schema_for(QueryRewrite)
        resp = await client.chat.completions.create(
            model="tiny-validator", messages=[{"role": "user", "content": "Who directed Akira?"}],
            response_format=response_format(schema), max_completion_tokens=2 * MAX_TOKENS, temperature=1.0,
        )
        assert isinstance(resp, ChatCompletion)
        assert resp.object == "chat.completion" and resp.model == "tiny-validator" and resp.id.startswith("chatcmpl-")
        assert len(resp.choices) == 1
        choice = resp.choices[0]
        assert choice.index == 0 and choice.message.role == "assistant" and choice.finish_reason == "stop"
        assert isinstance(QueryRewrite.model_validate_json(choice.message.content or ""), QueryRewrite)
        assert resp.usage is not None and resp.usage.prompt_tokens > 0 and resp.usage.completion_tokens > 0
        assert resp.usage.total_tokens == resp.usage.prompt_tokens + resp.usage.completion_tokens

        # no response_format, the older max_tokens name, list-of-parts content, a developer message
        free = await client.chat.completions.create(
            model="tiny", max_tokens=5,
            messages=[{"role": "developer", "content": "Be brief."},
                      {"role": "user", "content": [{"type": "text", "text": "Say hi."}]}],
        )
        assert free.choices[0].finish_reason in ("stop", "length")
        assert free.usage is not None and 0 < free.usage.completion_tokens <= 5

        models = await client.models.list()
        assert sorted(m.id for m in models.data) == ["tiny", "tiny-validator"]
        assert (await client.models.retrieve("tiny")).id == "tiny"


async def test_the_official_client_sees_typed_errors(base_url: str) -> None:
    async with openai.AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0) as client:
        with pytest.raises(openai.NotFoundError) as missing:
            await client.chat.completions.create(model="gpt-nope", messages=[{"role": "user", "content": "hi"}])
        assert missing.value.code == "model_not_found"
        with pytest.raises(openai.BadRequestError, match="n=1"):
            await client.chat.completions.create(model="tiny", n=2, messages=[{"role": "user", "content": "hi"}])


GOOD: dict[str, Any] = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
BAD_REQUESTS: dict[str, tuple[int, dict[str, Any] | str]] = {
    "unknown model": (404, {**GOOD, "model": "gpt-nope"}),
    "n=2": (400, {**GOOD, "n": 2}),
    "stream": (400, {**GOOD, "stream": True}),
    "missing messages": (400, {"model": "tiny"}),
    "empty messages": (400, {**GOOD, "messages": []}),
    "tool role": (400, {**GOOD, "messages": [{"role": "tool", "content": "x"}]}),
    "unknown field": (400, {**GOOD, "top_k": 3}),
    "max_tokens 0": (400, {**GOOD, "max_tokens": 0}),
    "temperature 5": (400, {**GOOD, "temperature": 5}),
    "response_format type": (400, {**GOOD, "response_format": {"type": "xml"}}),
    "response_format no json_schema": (400, {**GOOD, "response_format": {"type": "json_schema"}}),
    "response_format no schema": (400, {**GOOD, "response_format": {"type": "json_schema",
                                                                    "json_schema": {"name": "x"}}}),
    "response_format bad name": (400, {**GOOD, "response_format": {
        "type": "json_schema", "json_schema": {"name": "has spaces", "schema": {"type": "object"}}}}),
    "response_format invalid schema": (400, {**GOOD, "response_format": {
        "type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "nonsense"}}}}),
    "response_format not an object": (400, {**GOOD, "response_format": "json"}),
    "body not JSON": (400, "{not json"),
    "body a list": (400, "[1, 2]"),
}


@pytest.mark.parametrize("case", BAD_REQUESTS, ids=str)
async def test_bad_requests_get_openai_style_json_errors(base_url: str, case: str) -> None:
    status, body = BAD_REQUESTS[case]
    content = body if isinstance(body, str) else json.dumps(body)
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as http:
        resp = await http.post("/chat/completions", content=content, headers={"content-type": "application/json"})
    assert resp.status_code == status, resp.text
    error = resp.json()["error"]
    assert error["type"] == "invalid_request_error" and error["message"]


async def test_unknown_routes_and_models_are_404_json(base_url: str) -> None:
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as http:
        for resp in (await http.get("/models/gpt-nope"), await http.get("/nowhere")):
            assert resp.status_code == 404 and resp.json()["error"]["message"]
        resp = await http.get("/models")
        assert resp.status_code == 200 and resp.json()["object"] == "list"
