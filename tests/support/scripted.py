"""A text model whose replies a test writes in advance: it stands in for the model, and nothing of ours.

:class:`ScriptedText` is a :class:`~agentic_rag.models.base.TextBackend`: each call is answered with the next
of its replies (the last one again once they run out), and what each call was given (messages and schema) is
kept. Put behind :class:`~agentic_rag.models.base.StructuredGenerator` with a shaper, a role call runs through
our prompts, forms and expansion exactly as it would to a served model, with the model's output fixed.

A test module imports it as ``tests.support.scripted``.
"""

from __future__ import annotations

from typing import Any

from agentic_rag.models.base import Completion, Message


class ScriptedText:
    """A model that says ``replies`` in order, and records every call."""

    def __init__(self, *replies: str, name: str = "scripted") -> None:
        if not replies:
            raise ValueError("a scripted model needs at least one reply")
        self.name = name
        self.replies = replies
        self.calls: list[tuple[list[Message], dict[str, Any] | None]] = []

    async def complete(self, messages: list[Message], schema: dict[str, Any] | None, *, max_tokens: int,
                       temperature: float, calibration: list[Message] | None = None) -> Completion:
        text = self.replies[min(len(self.calls), len(self.replies) - 1)]
        self.calls.append((list(messages), schema))
        return Completion(text=text, prompt_tokens=0, completion_tokens=0, finish_reason="stop")
