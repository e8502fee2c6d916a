"""A role's model as a :class:`~agentic_rag.models.base.TextBackend`: what the chat-completions route serves.

A text backend (vLLM, transformers, an OpenAI-compatible server) is served as it is: any messages,
any JSON schema, and its tokenizer's counts as ``usage``. The heuristic model is not a text model: it
takes a role's typed input and produces the role's output type. :class:`StructuredTextBackend` serves
such a model over the same route for exactly what it can do: a ``json_schema`` response format that means
one of those types' schemas, over messages rendered by :func:`~agentic_rag.planners.llm.prompts.render`.
Chat messages come from outside clients by definition, so here, and only here, a rendered prompt is read
back into the typed input (:func:`read_input`: the role its system message names, the input its state
block holds). Schemas match by meaning (:mod:`agentic_rag.models.schema_match`), so
the schema as :class:`~agentic_rag.models.base.StructuredGenerator` and
:class:`~agentic_rag.models.openai_backend.OpenAIBackend` send it and the strict form the official
``openai`` client's ``chat.completions.parse(response_format=Type)`` sends are both that type. Anything
else is refused with ``ValueError`` (a 400 on the route), never answered with made-up text.

Usage: a model that counts its tokens reports them. The heuristic has no tokenizer, so its ``usage``
is an approximation, :func:`approximate_tokens` of the messages' text (prompt) and of the JSON answer
(completion): each run of letters, digits and underscores is one token, and so is every other
character that is not white space. No tokenizer is loaded for it (and ``tiktoken`` is not a dependency):
on our role prompts and answers the figure is within about a quarter of a BPE tokenizer's count (SmolLM2's:
262 against 289 for a rewrite prompt's system message, 408 against 340 for its user message, 55 against 56
for the answer), good for accounting and rate limits, not for billing.
"""

from __future__ import annotations

import asyncio
import json
import re
from functools import cache
from typing import Any, cast

from pydantic import BaseModel

from agentic_rag.logs import QUOTED_INPUT_MAX
from agentic_rag.models.base import Completion, Message, StructuredGenerator, StructuredModel, TextBackend, schema_for
from agentic_rag.models.schema_match import schema_key
from agentic_rag.planners.llm.prompts import STATE_CLOSE, STATE_OPEN, template
from agentic_rag.protocol.roles import ROLE_TYPES, ROLES, Role, RoleInput

_PIECE = re.compile(r"\w+|[^\w\s]")
_STATE = re.compile(re.escape(STATE_OPEN) + "(.*?)" + re.escape(STATE_CLOSE), re.DOTALL)
_TASK = re.compile(r"^## Your task: .*$", re.MULTILINE)


@cache
def _tasks() -> dict[Role, str]:
    """The line of each role's template that names its task (how a system message says which role it is)."""
    found = {role: _TASK.search(template(role)) for role in ROLE_TYPES}
    return {role: m.group(0) for role, m in found.items() if m is not None}


def read_input(messages: list[Message], output_type: type[BaseModel]) -> RoleInput:
    """The role input of a prompt :func:`~agentic_rag.planners.llm.prompts.render` wrote: the state block of the
    last user message that has one, as the input of the role the system message names, which must be the role
    that produces ``output_type``. ``ValueError`` for messages that are not such a prompt."""
    for message in reversed(messages):
        if message["role"] == "user":
            match = _STATE.search(message["content"])
            if match:
                system = next((m["content"] for m in messages if m["role"] == "system"), "")
                role = next((r for r, task in _tasks().items() if task in system), None)
                if role is None:
                    raise ValueError("the system message names no known role")
                if ROLES.get(output_type, (None,))[0] != role:
                    raise ValueError(f"the {role} role does not produce {output_type.__name__}")
                return cast(RoleInput, ROLE_TYPES[role][1].model_validate(json.loads(match.group(1))))
    raise ValueError("no state block in the messages")


def approximate_tokens(text: str) -> int:
    """Tokens in ``text`` without a tokenizer: each word (a run of ``\\w``) and each other non-space character."""
    return sum(1 for _ in _PIECE.finditer(text))


def _exact(schema: dict[str, Any]) -> str:
    return json.dumps(schema, sort_keys=True, separators=(",", ":"))


class StructuredTextBackend:
    """A :class:`TextBackend` over a :class:`StructuredModel` that only produces the roles' output types."""

    def __init__(self, model: StructuredModel, output_types: tuple[type[BaseModel], ...] = tuple(ROLES)) -> None:
        self.model = model
        self.name = model.name
        # our own clients send the schema as it is: found by its bytes, with no canonical form to build
        self._by_bytes = {_exact(schema_for(t)): t for t in output_types}
        self._by_meaning = {schema_key(schema_for(t)): t for t in output_types}
        self._names = ", ".join(t.__name__ for t in output_types)

    async def output_type(self, schema: dict[str, Any]) -> type[BaseModel] | None:
        """The output type ``schema`` means, if it is one of this backend's."""
        found = self._by_bytes.get(_exact(schema))
        if found is not None:
            return found
        # a large schema's canonical form takes tens of milliseconds to build: not on the event loop
        return self._by_meaning.get(await asyncio.to_thread(schema_key, schema))

    async def complete(self, messages: list[Message], schema: dict[str, Any] | None, *, max_tokens: int,
                       temperature: float, calibration: list[Message] | None = None) -> Completion:
        if schema is None:
            raise ValueError(f"the {self.name} model answers only with a json_schema response_format, the schema "
                             f"of one of: {self._names}")
        output_type = await self.output_type(schema)
        if output_type is None:
            title = str(schema.get("title", "(untitled)"))[:QUOTED_INPUT_MAX]
            raise ValueError(f"the {self.name} model cannot produce the schema {title!r}: it answers only with the "
                             f"schema of one of: {self._names} (as pydantic writes it, or its strict form)")
        role_input = read_input(messages, output_type)
        gen = await self.model.generate(role_input, output_type, max_tokens=max_tokens, temperature=temperature)
        text = gen.output.model_dump_json()
        prompt_tokens = gen.usage.prompt_tokens or sum(approximate_tokens(m["content"]) for m in messages)
        completion_tokens = gen.usage.completion_tokens or approximate_tokens(text)
        return Completion(text=text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                          finish_reason="stop")


def text_backend_of(model: StructuredModel) -> TextBackend:
    """What serves ``model`` over chat completions: its own text backend, or the structured adapter."""
    if isinstance(model, StructuredGenerator):
        return model.backend
    return StructuredTextBackend(model)
