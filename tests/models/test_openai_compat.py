"""Our OpenAI-compatible server for real: uvicorn on loopback, the tiny model behind it, OpenAI clients in front.

The server runs the real TransformersBackend; clients are our OpenAIBackend (through
StructuredGenerator, as the loop uses it), the official ``openai`` client, and raw HTTP for
requests no well-behaved client would send.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import openai
import pytest
from openai.types.chat import ChatCompletion
from pydantic import BaseModel, ValidationError
from transformers import AutoTokenizer

from agentic_rag.models.base import (
    Completion,
    Generation,
    GenerationError,
    Message,
    StructuredGenerator,
    schema_for,
)
from agentic_rag.models.openai_backend import OpenAIBackend, response_format
from agentic_rag.models.openai_server import create_app
from agentic_rag.models.transformers_backend import TransformersBackend
from agentic_rag.protocol import (
    DraftAnswer,
    GradeReport,
    GraphIntent,
    NextStep,
    QueryRewrite,
    SearchIntent,
    SufficiencyReport,
)
from agentic_rag.settings import Settings

SCHEMAS: list[type[BaseModel]] = [
    QueryRewrite, NextStep, SearchIntent, GraphIntent, DraftAnswer, SufficiencyReport, GradeReport,
]
N = 50
# Contracts whose every rule is in their JSON schema: all N generations must validate.
SCHEMA_COMPLETE = {QueryRewrite, SufficiencyReport, GradeReport}
MAX_TOKENS = 1024


@pytest.fixture(scope="module")
def base_url(tiny_model_dir: Path, serving: Any) -> Iterator[str]:
    """A real uvicorn server on 127.0.0.1 (a free port) in a background thread, serving the tiny model."""
    # this backend lives on the server's event loop only
    backend = TransformersBackend(tiny_model_dir, name="tiny")
    with serving(create_app({"tiny": backend, "tiny-validator": backend})) as url:
        yield url


@pytest.fixture(scope="module")
def settings(base_url: str) -> Settings:
    return Settings(openai_base_url=base_url, openai_api_key="test", generation_timeout_ms=300_000)


def _prompts(output_type: type[BaseModel]) -> list[list[Message]]:
    return [
        [{"role": "system", "content": f"Reply with one {output_type.__name__} as a JSON object."},
         {"role": "user", "content": f"Question {i}: who made the anime number {i}, and when?"}]
        for i in range(N)
    ]


class Recording:
    """A backend that keeps every completion it returned (every attempt, corrections included)."""

    def __init__(self, backend: OpenAIBackend) -> None:
        self.backend = backend
        self.name = backend.name
        self.seen: list[Completion] = []

    async def complete(self, messages: list[Message], schema: dict[str, Any] | None, *, max_tokens: int,
                       temperature: float, calibration: list[Message] | None = None) -> Completion:
        done = await self.backend.complete(messages, schema, max_tokens=max_tokens, temperature=temperature,
                                            calibration=calibration)
        self.seen.append(done)
        return done


@pytest.mark.parametrize("output_type", SCHEMAS, ids=lambda t: t.__name__)
async def test_structured_generation_over_http_validates(settings: Settings, output_type: type[BaseModel]) -> None:
    backend = OpenAIBackend(settings, "tiny")
    recording = Recording(backend)
    generator = StructuredGenerator(recording, max_attempts=settings.generation_max_attempts)
    try:
        # sampling, not greedy: a random model's greedy strings run to their maximum length
        results = await asyncio.gather(*(
            generator.generate(m, output_type, max_tokens=MAX_TOKENS, temperature=1.0) for m in _prompts(output_type)
        ), return_exceptions=True)
    finally:
        await backend.aclose()

    # what the server guarantees: every completion that ended fits the JSON schema it was sent
    validator = jsonschema.Draft202012Validator(schema_for(output_type))
    ended = [done for done in recording.seen if done.finish_reason == "stop"]
    assert len(ended) >= 0.9 * len(recording.seen), "most completions should end within max_tokens"
    for done in ended:
        validator.validate(json.loads(done.text))
        assert done.prompt_tokens > 0 and done.completion_tokens > 0

    # what the loop relies on: generate() returns valid instances; pydantic may reject an output only
    # for a rule its JSON schema cannot carry (a model validator), and then StructuredGenerator
    # gives up with a GenerationError after its corrections
    assert not [r for r in results if isinstance(r, BaseException) and not isinstance(r, GenerationError)]
    rejected = [e for done in ended for e in _pydantic_errors(output_type, done.text)]
    assert all(e.startswith("Value error, ") for e in rejected), sorted(set(rejected))[:5]
    valid = [r for r in results if isinstance(r, Generation)]
    for result in valid:
        assert isinstance(result.output, output_type)
        assert result.usage.prompt_tokens > 0 and result.usage.completion_tokens > 0
    if output_type in SCHEMA_COMPLETE:
        assert len(valid) == N
    else:
        assert valid, f"none of {N} generations validated"


def _pydantic_errors(output_type: type[BaseModel], text: str) -> list[str]:
    try:
        output_type.model_validate_json(text)
    except ValidationError as exc:
        return [str(e["msg"]) for e in exc.errors(include_url=False)]
    return []


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


async def test_usage_is_what_the_models_tokenizer_counts(base_url: str, tiny_model_dir: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    messages: list[Message] = [{"role": "system", "content": "Be brief."},
                               {"role": "user", "content": "Who directed Akira, and when?"}]
    templated = tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
    async with openai.AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0) as client:
        done = await client.chat.completions.create(model="tiny", messages=messages,  # type: ignore[arg-type]
                                                    max_completion_tokens=8, temperature=1.0)
    assert done.usage is not None
    # the prompt as the chat template renders it, and the tokens generated (all 8 when cut at the limit)
    assert done.usage.prompt_tokens == len(tokenizer(templated, add_special_tokens=False)["input_ids"])
    finish = done.choices[0].finish_reason
    assert done.usage.completion_tokens == 8 if finish == "length" else 0 < done.usage.completion_tokens <= 8
    assert done.usage.total_tokens == done.usage.prompt_tokens + done.usage.completion_tokens


async def test_openai_backend_reports_a_refused_schema_as_value_error(settings: Settings) -> None:
    backend = OpenAIBackend(settings, "tiny")
    try:
        with pytest.raises(ValueError, match="not a valid JSON schema"):
            await backend.complete([{"role": "user", "content": "hi"}], {"type": "nonsense"}, max_tokens=4,
                                   temperature=0.0)
    finally:
        await backend.aclose()


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
