"""The OpenAI-compatible chat-completions server over any :class:`TextBackend`.

``create_app({"planner": backend, ...})`` serves ``POST /v1/chat/completions`` and ``GET /v1/models``
so that any OpenAI client (the official ``openai`` package, :class:`OpenAIBackend`, other tools)
can use our model deployments. ``response_format`` ``{"type": "json_schema", ...}`` constrains
decoding to that schema; ``{"type": "json_object"}``, ``{"type": "text"}`` or no
``response_format`` leave the output unconstrained. The official client's
``chat.completions.parse(response_format=Type)`` works too: it sends ``Type``'s schema in OpenAI's strict
form, which a text model takes like any schema and the heuristic model matches to its type by meaning
(:mod:`agentic_rag.planners.llm.chat`).

``usage`` counts what the backend reports: a text model's tokenizer counts (prompt as templated, tokens
generated); for the heuristic model, which has no tokenizer, the approximation documented in
:mod:`agentic_rag.planners.llm.chat` (words and punctuation marks of the messages and of the answer).

Scope, on purpose: no streaming (``stream`` must be false), one choice (``n`` must be 1), no
tools. Request policy: the body is validated by pydantic; every field the OpenAI API defines
that we cannot honour, and every field it does not define, is a 400 (as OpenAI answers
"Unrecognized request argument"), never silently ignored. A body over :data:`MAX_BODY_BYTES` is a 413
(the limit fits the largest schema, :data:`MAX_SCHEMA_CHARS`, beside a long conversation; the app that
mounts this one leaves the limit to it). Every error has OpenAI's shape,
``{"error": {"message", "type", "param", "code"}}``: 400 for a bad request (bad JSON, bad
fields, an invalid JSON schema, or a request the backend rejects with ``ValueError``), 401 without
a valid API key when ``api_keys`` are given (``Authorization: Bearer``, as OpenAI clients send it),
404 for an unknown model or route, 413 for a body too large, 503 with ``Retry-After`` when the backend
cannot be reached (``ConnectionError``: a model deployment that is gone or over its queue) or fails
(any other exception of the model's: logged with its traceback, never a 500), 504 when the backend times
out. A 500, in the same shape, is left only for a fault in this module's own code.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from jsonschema import SchemaError  # type: ignore[import-untyped]
from jsonschema.validators import validator_for  # type: ignore[import-untyped]
from openai.types import CompletionUsage, ErrorObject, Model
from openai.types.chat import ChatCompletion, ChatCompletionMessage
from openai.types.chat.chat_completion import Choice
from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.types import Message as AsgiMessage

from agentic_rag import tracing
from agentic_rag.api.auth import key_matches
from agentic_rag.models.base import Message, TextBackend

log = logging.getLogger(__name__)

MAX_COMPLETION_TOKENS = 32_768
DEFAULT_MAX_TOKENS = 1024
MAX_SCHEMA_CHARS = 100_000
MAX_BODY_BYTES = 1024 * 1024


class _Body(BaseModel):
    # strict: a JSON body says what it means ("stream": "yes" is no boolean, "max_tokens": "10" no integer)
    model_config = ConfigDict(extra="forbid", strict=True)


class TextPart(_Body):
    """One text part of a message's content (the list form of ``content``)."""

    type: Literal["text"]
    text: str


class ChatMessage(_Body):
    """One input message. ``developer`` is read as ``system``; ``name`` is accepted and unused."""

    role: Literal["system", "developer", "user", "assistant"]
    content: str | list[TextPart] = Field(description="A string, or a list of text parts joined in order.")
    name: str | None = None

    def as_message(self) -> Message:
        text = self.content if isinstance(self.content, str) else "".join(p.text for p in self.content)
        role: Literal["system", "user", "assistant"] = "system" if self.role == "developer" else self.role
        return {"role": role, "content": text}


class JsonSchemaSpec(_Body):
    """``response_format.json_schema``: the schema the output is constrained to."""

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$", description="Name of the format (a-z, A-Z, 0-9, _ and -).")
    description: str | None = None
    schema_: dict[str, Any] = Field(alias="schema", description="A JSON schema (draft 2020-12 unless $schema says).")
    strict: bool | None = Field(None, description="Accepted; output is always constrained exactly to the schema.")

    @field_validator("schema_")
    @classmethod
    def _valid_schema(cls, schema: dict[str, Any]) -> dict[str, Any]:
        if len(json.dumps(schema)) > MAX_SCHEMA_CHARS:
            raise ValueError(f"schema is larger than {MAX_SCHEMA_CHARS} characters")
        try:
            validator_for(schema).check_schema(schema)
        except SchemaError as exc:
            path = "/".join(str(p) for p in exc.path) or "(root)"
            raise ValueError(f"not a valid JSON schema at {path}: {exc.message}") from None
        return schema


class JsonSchemaFormat(_Body):
    type: Literal["json_schema"]
    json_schema: JsonSchemaSpec


class JsonObjectFormat(_Body):
    type: Literal["json_object"]


class TextFormat(_Body):
    type: Literal["text"]


ResponseFormat = Annotated[JsonSchemaFormat | JsonObjectFormat | TextFormat, Field(discriminator="type")]


class ChatCompletionRequest(_Body):
    """The subset of OpenAI's chat-completions request this server honours. Ours, not the ``openai`` package's:
    its request type (``CompletionCreateParams``) is a TypedDict for the client to send, with no validation, and
    allows every field; this one is strict and refuses what we cannot honour. Responses are the package's own
    pydantic models (``ChatCompletion``, ``Model``, ``ErrorObject``)."""

    model: str = Field(description="A name from GET /v1/models.")
    messages: list[ChatMessage] = Field(min_length=1, max_length=512)
    response_format: ResponseFormat | None = None
    max_completion_tokens: int | None = Field(None, ge=1, le=MAX_COMPLETION_TOKENS)
    max_tokens: int | None = Field(None, ge=1, le=MAX_COMPLETION_TOKENS, description="Older name of the above.")
    temperature: float | None = Field(None, ge=0.0, le=2.0, description="0 is greedy; default 1.")
    n: int | None = Field(None, description="Must be 1.")
    stream: bool | None = Field(None, description="Must be false: this server does not stream.")
    user: str | None = Field(None, description="Accepted for compatibility; unused.")

    @field_validator("n")
    @classmethod
    def _one_choice(cls, n: int | None) -> int | None:
        if n not in (None, 1):
            raise ValueError("only n=1 is supported")
        return n

    @field_validator("stream")
    @classmethod
    def _no_stream(cls, stream: bool | None) -> bool | None:
        if stream:
            raise ValueError("streaming is not supported; send stream=false")
        return stream

    def schema_constraint(self) -> dict[str, Any] | None:
        if isinstance(self.response_format, JsonSchemaFormat):
            return self.response_format.json_schema.schema_
        return None


class ModelList(BaseModel):
    """``GET /v1/models``: the ``openai`` package has no type for this page (its client reads it as a page of
    :class:`~openai.types.Model`), so it is ours."""

    object: Literal["list"] = "list"
    data: list[Model]


def error_response(status: int, message: str, *, type_: str = "invalid_request_error",
                   param: str | None = None, code: str | None = None,
                   headers: Mapping[str, str] | None = None) -> JSONResponse:
    """An OpenAI-style error body: ``{"error": ErrorObject}``, its four fields always present."""
    error = ErrorObject(message=message, type=type_, param=param, code=code)
    return JSONResponse({"error": error.model_dump(exclude_unset=True)}, status_code=status,
                        headers=dict(headers) if headers else None)


def status_error(status: int, message: str, *, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """An OpenAI-style error for a plain HTTP status (its code is the status), typed as OpenAI types it."""
    type_ = "authentication_error" if status == 401 else "server_error" if status >= 500 else "invalid_request_error"
    return error_response(status, message, type_=type_, code=str(status), headers=headers)


def _too_large(limit: int) -> str:
    return f"the request body is over {limit} bytes"


class BodyLimit:
    """Refuses a request body over ``limit`` bytes with a 413 in OpenAI's shape: at once when ``Content-Length``
    says so, else as soon as the bytes read pass it (a chunked body)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = Headers(scope=scope).get("content-length", "")
        if length.isdigit() and int(length) > self.limit:
            await status_error(413, _too_large(self.limit))(scope, receive, send)
            return
        received = 0

        async def bounded() -> AsgiMessage:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.limit:
                # FastAPI's own HTTPException: reading the body re-raises it (to the app's handler); any other
                # exception there would become a 400
                raise HTTPException(413, _too_large(self.limit))
            return message

        await self.app(scope, bounded, send)


def _where(loc: Sequence[Any], body: Any) -> str:
    """An error's location as the client wrote it: the path through the body, without the names pydantic adds
    for a union's member (a tagged union's tag, as in ``response_format.json_schema.json_schema``)."""
    parts: list[str] = []
    node = body
    steps = list(loc[1:]) if loc and loc[0] == "body" else list(loc)
    for i, step in enumerate(steps):
        in_body = ((isinstance(node, dict) and step in node)
                   or (isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node)))
        if in_body:
            node = node[step]
        elif not (isinstance(node, dict) and i == len(steps) - 1):  # else a missing field: named, to be added
            continue  # a union member's name: not part of the body
        parts.append(str(step))
    return ".".join(parts) or "(body)"


def _validation_message(exc: RequestValidationError) -> tuple[str, str | None]:
    errors = exc.errors()
    if any(e.get("type") == "json_invalid" for e in errors):
        return "the request body is not valid JSON", None
    parts, param = [], None
    for e in errors[:5]:
        where = _where(e.get("loc", ()), exc.body)
        param = param or where
        msg = str(e.get("msg", "invalid"))
        if e.get("type") == "extra_forbidden":
            msg = "unrecognized request argument"
        parts.append(f"{where}: {msg}")
    return "; ".join(parts), param


def _key_check(api_keys: Sequence[str]) -> list[Any]:
    """The dependency that requires ``Authorization: Bearer <key>`` when keys are configured."""
    if not api_keys:
        return []
    keys = list(api_keys)
    bearer = HTTPBearer(auto_error=False, description="Authorization: Bearer <api key>")

    # the dependency as a default value: this module's annotations are strings, which cannot name ``bearer``
    async def require_key(creds: HTTPAuthorizationCredentials | None = Depends(bearer)) -> None:  # noqa: B008
        if not key_matches((creds.credentials if creds else None,), keys):
            raise StarletteHTTPException(401, "a valid API key is required (Authorization: Bearer <key>)")

    return [Depends(require_key)]


def create_app(models: Mapping[str, TextBackend], *, api_keys: Sequence[str] = (),
               max_body_bytes: int = MAX_BODY_BYTES) -> FastAPI:
    """An OpenAI-compatible app serving each backend under its key in ``models``; ``api_keys`` guard it, and
    bodies over ``max_body_bytes`` are refused."""
    backends = dict(models)
    started = int(time.time())
    app = FastAPI(title="agentic-rag models", description=__doc__, dependencies=_key_check(api_keys),
                  telemetry=tracing.HTTP_TELEMETRY)  # type: ignore[arg-type]
    app.add_middleware(BodyLimit, limit=max_body_bytes)

    @app.exception_handler(RequestValidationError)
    async def _bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        message, param = _validation_message(exc)
        return error_response(400, message, param=param)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return status_error(exc.status_code, str(exc.detail), headers=exc.headers)

    @app.exception_handler(Exception)
    async def _fault(request: Request, exc: Exception) -> JSONResponse:
        # a fault of ours (the backend's exceptions are answered in the route): the client still gets
        # OpenAI's shape, and Starlette re-raises the exception to be logged
        return status_error(500, "an internal error occurred; it has been logged")

    def card(name: str) -> Model:
        return Model(id=name, object="model", created=started, owned_by="agentic-rag")

    # exclude_unset: the body carries the fields set here, not every optional field of OpenAI's types as null
    @app.get("/v1/models", response_model=ModelList, response_model_exclude_unset=True)
    async def list_models() -> ModelList:
        return ModelList(object="list", data=[card(name) for name in backends])

    @app.get("/v1/models/{model_id}", response_model=Model, response_model_exclude_unset=True, responses={404: {}})
    async def get_model(model_id: str) -> Model | JSONResponse:
        if model_id not in backends:
            return _unknown_model(model_id)
        return card(model_id)

    @app.post("/v1/chat/completions", response_model=ChatCompletion, response_model_exclude_unset=True,
              responses={400: {}, 401: {}, 404: {}, 413: {}, 503: {}, 504: {}})
    async def chat_completions(body: ChatCompletionRequest) -> ChatCompletion | JSONResponse:
        backend = backends.get(body.model)
        if backend is None:
            return _unknown_model(body.model)
        max_tokens = body.max_completion_tokens or body.max_tokens or DEFAULT_MAX_TOKENS
        temperature = 1.0 if body.temperature is None else body.temperature
        try:
            done = await backend.complete([m.as_message() for m in body.messages], body.schema_constraint(),
                                          max_tokens=max_tokens, temperature=temperature)
        except TimeoutError as exc:
            return error_response(504, f"the model did not finish in time: {exc}", type_="timeout", code="timeout")
        except ValueError as exc:  # the backend's word for "this request cannot be served"
            return error_response(400, str(exc))
        except ConnectionError as exc:  # the backend's word for "unreachable now, worth retrying"
            return error_response(503, f"the model is unavailable: {exc}", type_="server_error",
                                  code="unavailable", headers={"Retry-After": "1"})
        except Exception:  # the model failed, not the route: a dependency's failure, worth a retry
            log.exception("model %s failed", body.model)
            return error_response(503, "the model failed on this request; retry shortly", type_="server_error",
                                  code="model_error", headers={"Retry-After": "1"})
        return ChatCompletion(
            id=f"chatcmpl-{uuid.uuid4().hex}",
            object="chat.completion",
            created=int(time.time()),
            model=body.model,
            choices=[Choice(index=0, message=ChatCompletionMessage(role="assistant", content=done.text, refusal=None),
                            finish_reason="length" if done.finish_reason == "length" else "stop", logprobs=None)],
            usage=CompletionUsage(prompt_tokens=done.prompt_tokens, completion_tokens=done.completion_tokens,
                                  total_tokens=done.prompt_tokens + done.completion_tokens),
            system_fingerprint=None,
        )

    def _unknown_model(name: str) -> JSONResponse:
        return error_response(404, f"the model {name!r} does not exist; see GET /v1/models", param="model",
                              code="model_not_found")

    return app
