"""A role's model as a :class:`~agentic_rag.models.base.TextBackend`: what the chat-completions route serves.

A text backend (vLLM, transformers, an OpenAI-compatible server) is served as it is: any messages,
any JSON schema. The heuristic model is not a text model: it reads the state block of our own
prompts and produces one of the roles' output types. :class:`StructuredTextBackend` serves such a
model over the same route for exactly what it can do: a ``json_schema`` response format equal to
one of those types' schemas (as :class:`~agentic_rag.models.base.StructuredGenerator` and
:class:`~agentic_rag.models.openai_backend.OpenAIBackend` send it), over messages rendered by
:mod:`agentic_rag.models.prompts`. Anything else is refused with ``ValueError`` (a 400 on the route),
never answered with made-up text.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from agentic_rag.models.base import Completion, Message, StructuredGenerator, StructuredModel, TextBackend, schema_for
from agentic_rag.models.roles import ROLES


def _key(schema: dict[str, Any]) -> str:
    return json.dumps(schema, sort_keys=True, separators=(",", ":"))


class StructuredTextBackend:
    """A :class:`TextBackend` over a :class:`StructuredModel` that only produces the roles' output types."""

    def __init__(self, model: StructuredModel, output_types: tuple[type[BaseModel], ...] = tuple(ROLES)) -> None:
        self.model = model
        self.name = model.name
        self._by_schema = {_key(schema_for(t)): t for t in output_types}
        self._names = ", ".join(t.__name__ for t in output_types)

    async def complete(self, messages: list[Message], schema: dict[str, Any] | None, *, max_tokens: int,
                       temperature: float) -> Completion:
        if schema is None:
            raise ValueError(f"the {self.name} model answers only with a json_schema response_format, the schema "
                             f"of one of: {self._names}")
        output_type = self._by_schema.get(_key(schema))
        if output_type is None:
            title = str(schema.get("title", "(untitled)"))[:100]
            raise ValueError(f"the {self.name} model cannot produce the schema {title!r}: it answers only with the "
                             f"exact schema of one of: {self._names}")
        gen = await self.model.generate(messages, output_type, max_tokens=max_tokens, temperature=temperature)
        text = gen.output.model_dump_json()
        return Completion(text=text, prompt_tokens=gen.usage.prompt_tokens,
                          completion_tokens=gen.usage.completion_tokens, finish_reason="stop")


def text_backend_of(model: StructuredModel) -> TextBackend:
    """What serves ``model`` over chat completions: its own text backend, or the structured adapter."""
    if isinstance(model, StructuredGenerator):
        return model.backend
    return StructuredTextBackend(model)
