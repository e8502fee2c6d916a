"""What an OpenAI-compatible server's failures become in OpenAIBackend: the model layer's typed errors.

The official ``openai`` client runs for real; the server is httpx's MockTransport answering as vLLM's server does
(its QueueOverflowError is a 503, a dead engine a 500), or a closed port.
"""

from __future__ import annotations

import socket

import httpx
import pytest
from openai import AsyncOpenAI

from agentic_rag.models.base import CallShape, ModelOverloaded, ModelUnavailable, StructuredGenerator, schema_for
from agentic_rag.models.openai_backend import OpenAIBackend
from agentic_rag.protocol import QueryRewrite
from agentic_rag.settings import Settings

HI = [{"role": "user", "content": "hi"}]


def _backend(status: int) -> OpenAIBackend:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json={"error": {"message": f"status {status}", "type": "server_error",
                                                      "param": None, "code": status}})

    client = AsyncOpenAI(base_url="http://model.test/v1", api_key="k", max_retries=0,
                         http_client=httpx.AsyncClient(transport=httpx.MockTransport(answer)))
    return OpenAIBackend(Settings(), "planner", client=client)


@pytest.mark.parametrize(("status", "ours", "retryable"), [
    (429, ModelOverloaded, True),
    (503, ModelOverloaded, True),  # vLLM's answer when its queue is full
    (500, ModelUnavailable, True),
    (502, ModelUnavailable, True),
    (401, ModelUnavailable, False),  # a wrong key: no retry mends it
    (404, ModelUnavailable, False),  # a model name the server does not serve
])
async def test_a_server_failure_is_a_typed_model_error(status: int, ours: type[ModelUnavailable],
                                                       retryable: bool) -> None:
    backend = _backend(status)
    with pytest.raises(ModelUnavailable) as raised:
        await backend.complete(HI, None, max_tokens=8, temperature=0.0)  # type: ignore[arg-type]
    assert type(raised.value) is ours and raised.value.retryable is retryable
    assert f"HTTP {status}" in str(raised.value) and f"status {status}" in str(raised.value)
    # not a bad output to correct: it reaches the loop, which answers with the heuristic
    with pytest.raises(ours):
        await StructuredGenerator(backend).generate_shaped(
            CallShape(messages=HI, schema=schema_for(QueryRewrite)), QueryRewrite)  # type: ignore[arg-type]


async def test_a_bad_request_is_still_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"planner rejected the request: .*status 400"):
        await _backend(400).complete(HI, None, max_tokens=8, temperature=0.0)  # type: ignore[arg-type]


async def test_a_server_that_is_not_there_is_unavailable_and_retryable() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0)
    backend = OpenAIBackend(Settings(), "planner", client=client)
    with pytest.raises(ModelUnavailable, match="no connection") as raised:
        await backend.complete(HI, None, max_tokens=8, temperature=0.0)  # type: ignore[arg-type]
    assert raised.value.retryable and isinstance(raised.value, ConnectionError)
