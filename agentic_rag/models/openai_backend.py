"""A :class:`TextBackend` over any OpenAI-compatible chat-completions server.

vLLM's own server, SGLang, or ours (:mod:`agentic_rag.api.openai`): schemas go out as
``response_format={"type": "json_schema", "json_schema": {"name", "schema", "strict": true}}``,
the structured-outputs form every one of them honours.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from openai import (
    APIConnectionError,
    APIError,
    APIStatusError,
    APITimeoutError,
    AsyncOpenAI,
    BadRequestError,
    RateLimitError,
    omit,
)
from openai.types.chat import ChatCompletionMessageParam
from openai.types.shared_params import ResponseFormatJSONSchema

from agentic_rag.models.base import Completion, Message, ModelOverloaded, ModelUnavailable
from agentic_rag.settings import Settings

SCHEMA_NAME_MAX = 64  # the OpenAI API's limit on a response_format name


def response_format(schema: dict[str, Any]) -> ResponseFormatJSONSchema:
    """The ``response_format`` that constrains a completion to ``schema``, named after its title."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", str(schema.get("title") or "output"))[:SCHEMA_NAME_MAX]
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def _chat_message(message: Message) -> ChatCompletionMessageParam:
    content = message["content"]
    if message["role"] == "system":
        return {"role": "system", "content": content}
    if message["role"] == "user":
        return {"role": "user", "content": content}
    return {"role": "assistant", "content": content}


def _unavailable(name: str, exc: APIError) -> ModelUnavailable:
    """What a failed call means for the caller: overloaded, worth retrying, or not."""
    if isinstance(exc, RateLimitError) or (isinstance(exc, APIStatusError) and exc.status_code == 503):
        return ModelOverloaded(f"{name} is over its queue ({_status(exc)}): {exc.message}")
    retryable = isinstance(exc, APIConnectionError) or (isinstance(exc, APIStatusError) and exc.status_code >= 500)
    return ModelUnavailable(f"{name} could not serve the call ({_status(exc)}): {exc.message}", retryable=retryable)


def _status(exc: APIError) -> str:
    return f"HTTP {exc.status_code}" if isinstance(exc, APIStatusError) else "no connection"


class OpenAIBackend:
    """Chat completions from ``settings.openai_base_url`` with the official ``openai`` client.

    ``settings.generation_timeout_ms`` bounds each call as a whole, the client's own retries of
    transient failures (connection errors, 429, 5xx) included; past it, ``TimeoutError``. A request
    the server refuses as bad (400: say, a schema it cannot compile) raises ``ValueError``. A server that
    cannot serve it raises :class:`ModelOverloaded` (429, or 503: over its queue, as vLLM's server says) or
    :class:`ModelUnavailable`: retryable for a connection failure or another 5xx, not for the rest (401, 404:
    a key or a model name that is wrong, which no retry mends).
    """

    def __init__(self, settings: Settings, model: str, *, client: AsyncOpenAI | None = None) -> None:
        if client is None and not settings.openai_base_url:
            raise ValueError("the openai backend needs settings.openai_base_url (RAG_OPENAI_BASE_URL)")
        self.name = model
        self._timeout_s = settings.generation_timeout_ms / 1000
        self._client = client or AsyncOpenAI(
            base_url=settings.openai_base_url, api_key=settings.openai_api_key, timeout=self._timeout_s,
        )

    async def complete(self, messages: list[Message], schema: dict[str, Any] | None, *, max_tokens: int,
                       temperature: float, calibration: list[Message] | None = None) -> Completion:
        chat = [_chat_message(m) for m in messages]
        try:
            async with asyncio.timeout(self._timeout_s):
                resp = await self._client.chat.completions.create(
                    model=self.name, messages=chat, max_completion_tokens=max_tokens, temperature=temperature,
                    response_format=omit if schema is None else response_format(schema),
                )
        except (TimeoutError, APITimeoutError):
            raise TimeoutError(f"{self.name}: no completion within {self._timeout_s:g}s") from None
        except BadRequestError as exc:
            raise ValueError(f"{self.name} rejected the request: {exc.message}") from exc
        except APIError as exc:
            raise _unavailable(self.name, exc) from exc
        if not resp.choices:
            raise ModelUnavailable(f"{self.name}: the server returned no choices", retryable=True)
        choice = resp.choices[0]
        usage = resp.usage
        return Completion(
            text=choice.message.content or "",
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            finish_reason=choice.finish_reason,
        )

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._client.close()
