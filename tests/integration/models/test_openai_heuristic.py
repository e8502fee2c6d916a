"""The OpenAI route over the heuristic model, the official ``openai`` client in front (in process, over httpx's
ASGI transport): ``chat.completions.parse(response_format=T)`` for every role's output type, ``usage``, and
every error path of the route in OpenAI's shape."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import jsonschema
import openai
import pytest
from fastapi import FastAPI
from openai.lib._pydantic import to_strict_json_schema
from pydantic import BaseModel

from agentic_rag.api.openai import MAX_BODY_BYTES, create_app
from agentic_rag.models.base import Completion, Message
from agentic_rag.planners.heuristic import HeuristicModel, draft, rewrite
from agentic_rag.planners.llm.chat import StructuredTextBackend, approximate_tokens
from agentic_rag.planners.llm.prompts import render
from agentic_rag.protocol import DraftAnswer, EntityRef, GradeReport, NextStep, QueryRewrite, SufficiencyReport
from agentic_rag.protocol.roles import (
    ROLES,
    CardEntity,
    ContextCard,
    DraftInput,
    GradeInput,
    GradeItem,
    RewriteInput,
    RoleInput,
    SelectInput,
    ValidateInput,
)

QUESTION = "Which anime is Monkey D. Luffy in?"
LUFFY = CardEntity(ref=EntityRef(entity_type="character", id="00000000-0000-4000-8000-000000000001"),
                   name="Monkey D. Luffy")
CARD = ContextCard(turn=0, source="qdrant_search", request="Monkey D. Luffy", count=1, entities=[LUFFY],
                   summary="Monkey D. Luffy: captain of the Straw Hat Pirates in One Piece.")


def _role_inputs() -> dict[type[BaseModel], RoleInput]:
    """One input per role, as the loop builds it."""
    rewritten = rewrite(RewriteInput(question=QUESTION))
    to_draft = DraftInput(question=QUESTION, rewrite=rewritten, cards=[CARD])
    return {
        QueryRewrite: RewriteInput(question=QUESTION),
        NextStep: SelectInput(question=QUESTION, rewrite=rewritten, turn=0, max_turns=4),
        DraftAnswer: to_draft,
        GradeReport: GradeInput(question=QUESTION, items=[GradeItem(index=0, entity=LUFFY, snippet=CARD.summary)]),
        SufficiencyReport: ValidateInput(question=QUESTION, rewrite=rewritten, draft=draft(to_draft), cards=[CARD]),
    }


INPUTS = _role_inputs()
# each rendered as render() writes it (the route reads the heuristic's input back only from such prompts)
PROMPTS: dict[type[BaseModel], list[Message]] = {t: render(inp, t) for t, inp in INPUTS.items()}


class Failing:
    """A text backend that fails as a model deployment can, or breaks the route's contract (a fault of ours)."""

    def __init__(self, error: BaseException | None) -> None:
        self.name = "failing"
        self.error = error

    async def complete(self, messages: list[Message], schema: dict[str, Any] | None, *, max_tokens: int,
                       temperature: float, calibration: list[Message] | None = None) -> Completion:
        if self.error is not None:
            raise self.error
        return None  # type: ignore[return-value]


@pytest.fixture(scope="module")
def app() -> FastAPI:
    heuristic = StructuredTextBackend(HeuristicModel())
    return create_app({"planner": heuristic, "validator": heuristic, "down": Failing(ConnectionError("gone")),
                       "broken": Failing(RuntimeError("CUDA error: an illegal memory access")),
                       "slow": Failing(TimeoutError("30 s")), "faulty": Failing(None)})


def http_for(app: FastAPI) -> httpx.AsyncClient:
    # the app's own faults come back as responses, as a server would send them, not as exceptions in the test
    return httpx.AsyncClient(transport=httpx.ASGITransport(app, raise_app_exceptions=False), base_url="http://models",
                             timeout=60)


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(base_url="http://models/v1", api_key="test", max_retries=0,
                                  http_client=http_for(app)) as c:
        yield c


def openai_error(resp: httpx.Response, status: int) -> dict[str, Any]:
    """The error body, checked to be OpenAI's shape exactly."""
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert list(body) == ["error"] and sorted(body["error"]) == ["code", "message", "param", "type"], body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return dict(body["error"])


def test_every_role_has_a_prompt() -> None:
    assert set(PROMPTS) == set(ROLES)


@pytest.mark.parametrize("output_type", list(ROLES), ids=lambda t: t.__name__)
async def test_the_official_clients_parse_gets_each_roles_output(client: openai.AsyncOpenAI,
                                                               output_type: type[BaseModel]) -> None:
    messages = PROMPTS[output_type]
    done = await client.beta.chat.completions.parse(model="planner", messages=messages,  # type: ignore[arg-type]
                                                    response_format=output_type)
    message = done.choices[0].message
    assert isinstance(message.parsed, output_type)
    assert message.parsed == (await HeuristicModel().generate(INPUTS[output_type], output_type)).output
    # what came back fits the schema the client sent: its strict form, every property present
    content = message.content or ""
    jsonschema.Draft202012Validator(to_strict_json_schema(output_type)).validate(json.loads(content))
    # the heuristic's usage: the documented approximation, of the prompt as sent and of the answer
    assert done.usage is not None
    assert done.usage.prompt_tokens == sum(approximate_tokens(m["content"]) for m in messages) > 0
    assert done.usage.completion_tokens == approximate_tokens(content) > 0
    assert done.usage.total_tokens == done.usage.prompt_tokens + done.usage.completion_tokens


class Poem(BaseModel):
    text: str


async def test_a_schema_that_is_none_of_the_roles_is_a_400_in_openai_shape(client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as other:
        await client.beta.chat.completions.parse(model="planner", messages=PROMPTS[QueryRewrite],  # type: ignore[arg-type]
                                                 response_format=Poem)
    error = openai_error(other.value.response, 400)
    assert error["type"] == "invalid_request_error"
    assert "cannot produce the schema 'Poem'" in error["message"] and "QueryRewrite" in error["message"]
    # one bound changed in the strict form of a role's schema: another schema, refused the same way
    near = to_strict_json_schema(QueryRewrite)
    near["properties"]["rationale"]["maxLength"] = 301
    with pytest.raises(openai.BadRequestError, match="cannot produce the schema 'QueryRewrite'"):
        await client.chat.completions.create(
            model="planner", messages=PROMPTS[QueryRewrite],  # type: ignore[arg-type]
            response_format={"type": "json_schema", "json_schema": {"name": "QueryRewrite", "schema": near,
                                                                    "strict": True}})


async def _chunks(total: int) -> AsyncIterator[bytes]:
    for _ in range(0, total, 64 * 1024):
        yield b" " * (64 * 1024)


async def test_a_body_too_large_is_a_413_in_openai_shape(app: FastAPI, client: openai.AsyncOpenAI) -> None:
    huge = "x" * MAX_BODY_BYTES
    with pytest.raises(openai.APIStatusError) as refused:
        await client.chat.completions.create(model="planner", messages=[{"role": "user", "content": huge}])
    assert refused.value.status_code == 413
    assert openai_error(refused.value.response, 413)["code"] == "413"
    async with http_for(app) as http:  # a chunked body has no Content-Length: refused once it passes the limit
        resp = await http.post("/v1/chat/completions", content=_chunks(2 * MAX_BODY_BYTES),
                               headers={"content-type": "application/json"})
        assert "transfer-encoding" in resp.request.headers
        assert str(MAX_BODY_BYTES) in openai_error(resp, 413)["message"]


async def test_usage_counts_what_the_backend_counted(client: openai.AsyncOpenAI) -> None:
    done = await client.chat.completions.create(
        model="validator", messages=PROMPTS[GradeReport],  # type: ignore[arg-type]
        response_format={"type": "json_schema", "json_schema": {"name": "GradeReport",
                                                                "schema": GradeReport.model_json_schema()}})
    assert done.usage is not None and done.usage.prompt_tokens > done.usage.completion_tokens > 0


GOOD: dict[str, Any] = {"model": "planner", "messages": [{"role": "user", "content": "hi"}]}


async def test_every_error_of_the_route_has_openai_shape(app: FastAPI) -> None:
    async with http_for(app) as http:
        post = "/v1/chat/completions"
        bad_json = await http.post(post, content="{not json", headers={"content-type": "application/json"})
        assert openai_error(bad_json, 400)["message"] == "the request body is not valid JSON"
        # a tagged union's tag is not part of the path the client wrote (it once read json_schema.json_schema)
        missing = openai_error(await http.post(post, json={**GOOD, "response_format": {"type": "json_schema"}}), 400)
        assert missing["param"] == "response_format.json_schema"
        assert missing["message"] == "response_format.json_schema: Field required"
        no_schema = {**GOOD, "response_format": {"type": "json_schema", "json_schema": {"name": "x"}}}
        assert openai_error(await http.post(post, json=no_schema), 400)["param"] == "response_format.json_schema.schema"
        assert openai_error(await http.post(post, json={**GOOD, "messages": [{"role": "user", "content": 5}]}),
                            400)["param"] == "messages.0.content"
        for loose in ({"stream": "yes"}, {"max_tokens": "10"}, {"max_tokens": True}):  # strict types, no coercion
            assert openai_error(await http.post(post, json={**GOOD, **loose}), 400)["param"] == next(iter(loose))
        assert openai_error(await http.post(post, json=GOOD), 400)["message"].startswith("the heuristic model answers")
        assert openai_error(await http.post(post, json={**GOOD, "model": "gpt-4o"}), 404)["code"] == "model_not_found"
        assert openai_error(await http.get("/v1/nowhere"), 404)["code"] == "404"
        assert openai_error(await http.get(post), 405)["type"] == "invalid_request_error"
        assert openai_error(await http.post(post, content=b"x" * (MAX_BODY_BYTES + 1)), 413)
        for model, status, code in (("down", 503, "unavailable"), ("broken", 503, "model_error"),
                                    ("slow", 504, "timeout")):
            resp = await http.post(post, json={**GOOD, "model": model})
            error = openai_error(resp, status)
            assert error["code"] == code and error["type"] in ("server_error", "timeout")
            assert "CUDA" not in error["message"]  # a model's own failure text stays in the log
            if status == 503:
                assert resp.headers["retry-after"] == "1"
        # a fault in the route's own code (here: a backend that returns no Completion): a 500, in the same shape
        assert openai_error(await http.post(post, json={**GOOD, "model": "faulty"}), 500)["type"] == "server_error"

    keyed = create_app({"planner": StructuredTextBackend(HeuristicModel())}, api_keys=["k-one"])
    async with http_for(keyed) as http:
        error = openai_error(await http.post("/v1/chat/completions", json=GOOD), 401)
        assert error["type"] == "authentication_error"
        # a body too large is refused before the key is checked, and in the same shape
        assert openai_error(await http.post("/v1/chat/completions", content=b"x" * (MAX_BODY_BYTES + 1)), 413)
