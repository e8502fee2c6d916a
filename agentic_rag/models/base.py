"""The one model interface: ``generate(role_input, output_type) -> instance of output_type``.

Every role (rewrite, select, draft for the planner; grade, validate for the validator) goes
through it, on every backend, with the role's typed input (:mod:`agentic_rag.protocol.roles`): the
heuristic model reads it as it is, a text model renders it through its :data:`Shaper`. Text backends
(vLLM, OpenAI-compatible, transformers) implement :class:`TextBackend.complete`, a schema-constrained
completion; :class:`StructuredGenerator` turns that into validated objects: it parses the text with the
pydantic model, and on failure retries with a correction message that quotes the validation error, a
bounded number of times, before raising one typed :class:`GenerationError`.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ValidationError
from typing_extensions import TypedDict

from agentic_rag.errors import AgenticRagError, Overloaded, Unavailable
from agentic_rag.protocol.roles import RoleInput, role_of

T = TypeVar("T", bound=BaseModel)
ECHOED_CHARS = 4000  # characters of a rejected output a correction echoes back to the model
ModelRole = Literal["planner", "validator"]


class Message(TypedDict):
    """One chat message (the OpenAI chat-completions shape)."""

    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(slots=True)
class Usage:
    """What one ``generate`` call cost, summed over its attempts."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    attempts: int = 0
    latency_ms: float = 0.0


@dataclass(slots=True)
class Generation(Generic[T]):
    """A validated object and what producing it cost."""

    output: T
    usage: Usage


@dataclass(slots=True)
class Completion:
    """Raw text from a text backend."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None


@dataclass(eq=False)  # no slots: the fields live in __dict__, which AgenticRagError pickles
class GenerationError(AgenticRagError):
    """No valid instance after every attempt. Carries what each attempt said, for the trajectory."""

    kind = "model_error"

    output_type: str
    attempts: int
    errors: list[str] = field(default_factory=list)
    last_text: str = ""

    def __str__(self) -> str:
        last = self.errors[-1] if self.errors else "no output"
        return f"no valid {self.output_type} after {self.attempts} attempt(s): {last}"


class ModelUnavailable(Unavailable, ConnectionError):
    """The model could not serve the call at all: its engine failed on it or died, or its deployment did not take
    it. ``retryable``: the same call may succeed if sent again (a failure of one request, or a replica being
    replaced); not retryable: this model will not serve it (a dead engine, until its replica is replaced). The loop
    answers either with the heuristic; a route that calls a model directly answers 503 (a ``ConnectionError``,
    as :class:`TextBackend` promises)."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


class ModelOverloaded(ModelUnavailable, Overloaded):
    """The model refused the call at its door: its queue (requests or prompt tokens) is full. Always retryable,
    best on another replica."""

    kind = "overloaded"

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=True)


class StructuredModel(Protocol):
    """What the orchestrator calls: any backend, any role. ``role_input`` is the input of the role that produces
    ``output_type`` (:data:`~agentic_rag.protocol.roles.ROLES`); a model raises ``ValueError`` when it is not."""

    name: str

    async def generate(self, role_input: RoleInput, output_type: type[T], *, max_tokens: int = 512,
                       temperature: float = 0.0) -> Generation[T]: ...


@runtime_checkable
class EngineBacked(Protocol):
    """A backend over an engine of its own that can die under it (vLLM's engine process): the serving replica
    forwards its health check and shuts the engine down with it."""

    async def check_health(self) -> None:
        """Raise when the engine no longer serves."""
        ...

    def shutdown(self) -> None:
        """Stop the engine and free its device."""
        ...


class TextBackend(Protocol):
    """A model that completes chat messages, constrained to a JSON schema when ``schema`` is given.

    What every backend does (tests/support/conformance.py checks it): a completion that ends (``finish_reason``
    ``"stop"``) is valid under ``schema``; ``"length"`` means it was cut at ``max_tokens``; the token counts are
    the model tokenizer's (the prompt as its chat template renders it); a request the backend cannot serve (a
    schema it cannot compile) raises ``ValueError``; a model that cannot serve the call (its engine failed or died,
    its queue is full, its server is unreachable) raises :class:`ModelUnavailable` (a ``ConnectionError``); a call
    its caller cancels leaves the backend free for the next. Backends that bound a call in time raise
    ``TimeoutError`` past the bound.

    ``calibration``: the same call with its query left out. A backend that fills a closed schema by scoring
    its options (see :func:`~agentic_rag.models.schemas.closed_options`) may score them against it too, and
    take the option the query makes most likely; a backend that decodes ignores it."""

    name: str

    async def complete(self, messages: list[Message], schema: dict[str, Any] | None, *, max_tokens: int,
                       temperature: float, calibration: list[Message] | None = None) -> Completion: ...


@functools.cache
def schema_for(output_type: type[BaseModel]) -> dict[str, Any]:
    """``output_type``'s JSON schema as pydantic writes it (``$defs`` and ``$ref`` kept), built once per type:
    building it takes milliseconds, and every role call needs it. Backends decode under it or under a form
    derived from it as a new dict (``narrow``, ``xgrammar_schema``, ``outlines_schema``). The one instance is
    shared: read it, never change it in place."""
    return output_type.model_json_schema()


def _first_error(exc: ValidationError | ValueError) -> str:
    if isinstance(exc, ValidationError):
        errs = exc.errors(include_url=False)
        return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in errs[:5])
    return str(exc)


def correction(output_type: type[BaseModel], text: str, error: str) -> list[Message]:
    """The messages that tell a model what was wrong with its last answer."""
    return [
        {"role": "assistant", "content": text[:ECHOED_CHARS]},
        {"role": "user", "content": (
            f"That output is not a valid {output_type.__name__}: {error}. Reply again with only a JSON object "
            f"that matches the schema exactly."
        )},
    ]


@dataclass(slots=True)
class CallShape:
    """How one call is put to a model: its messages, the schema its decoding is held to, its token budget."""

    messages: list[Message]
    schema: dict[str, Any]
    max_tokens: int | None = None
    # the model's text as the protocol reads it (short entity handles back to their ids)
    restore: Callable[[str], str] = str
    # the call without its question, for a backend that calibrates a closed choice (TextBackend.complete)
    calibration: list[Message] | None = None


# Shapes a role call for a text model (agentic_rag.planners.llm.prompts.shaper): renders the typed input in its
# prompt style, holds decoding to the entities the call may name, sets the token budget. Composed in
# planners/factory.py, so this module needs no prompt code.
Shaper = Callable[[RoleInput, type[BaseModel]], CallShape]


class StructuredGenerator:
    """Validated structured generation over any :class:`TextBackend`, with bounded correction retries.

    ``shape`` puts a role call to the text model (:meth:`generate`); a generator without one serves only calls
    already put as messages (:meth:`generate_shaped`)."""

    def __init__(self, backend: TextBackend, *, max_attempts: int = 3, constrained: bool = True,
                 shape: Shaper | None = None) -> None:
        self.backend = backend
        self.name = backend.name
        self.max_attempts = max_attempts
        # constrained=False sends no schema: the model may produce anything (used to exercise retries)
        self.constrained = constrained
        self.shape = shape

    async def generate(self, role_input: RoleInput, output_type: type[T], *, max_tokens: int = 512,
                       temperature: float = 0.0) -> Generation[T]:
        role_of(role_input, output_type)
        if self.shape is None:
            raise ValueError(f"the {self.name} model has no shaper to put a role call to it as text")
        return await self.generate_shaped(self.shape(role_input, output_type), output_type, max_tokens=max_tokens,
                                          temperature=temperature)

    async def generate_shaped(self, shaped: CallShape, output_type: type[T], *, max_tokens: int = 512,
                              temperature: float = 0.0) -> Generation[T]:
        """One call already put as messages (``CallShape(messages, schema_for(output_type))`` for plain ones)."""
        usage = Usage()
        messages = shaped.messages
        max_tokens = min(max_tokens, shaped.max_tokens or max_tokens)
        schema = shaped.schema if self.constrained else None
        convo = list(messages)
        errors: list[str] = []
        text = ""
        t0 = time.perf_counter()
        for attempt in range(1, self.max_attempts + 1):
            usage.attempts = attempt
            done = await self.backend.complete(
                convo, schema, max_tokens=max_tokens, temperature=temperature,
                calibration=shaped.calibration if attempt == 1 else None)
            usage.prompt_tokens += done.prompt_tokens
            usage.completion_tokens += done.completion_tokens
            text = done.text
            try:
                output = output_type.model_validate_json(shaped.restore(text))
            except (ValidationError, ValueError) as exc:
                errors.append(_first_error(exc))
                convo = [*messages, *correction(output_type, text, errors[-1])]
                continue
            usage.latency_ms = (time.perf_counter() - t0) * 1000
            return Generation(output=output, usage=usage)
        raise GenerationError(output_type.__name__, self.max_attempts, errors, text)
