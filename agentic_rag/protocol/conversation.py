"""A conversation as the loop reads it: the last turns, each with what it asked and what its answer named.

The context card of a follow-up (issue 38). Built by the orchestrator from PostgreSQL
(:mod:`agentic_rag.orchestrator.conversations`), read by the code that turns a follow-up into a standalone question
(:mod:`agentic_rag.understanding.followup`) and shown to every role's prompt. Bounded like every contract: a few
turns, a few names each.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agentic_rag.protocol.base import EntityRef, ProtocolModel, QueryText, ShortText
from agentic_rag.protocol.contracts import ResponseStatus

MAX_CONTEXT_TURNS = 8  # turns a context card may carry (the settings choose how many, up to this)
MAX_SUBJECTS = 6
MAX_ANSWERS = 20
MAX_CHOICES = 10
PROMPT_TURNS = 3  # turns a role's prompt is shown
PROMPT_NAMES = 5  # ... and names of each answer


class Named(ProtocolModel):
    """An entity a turn named, with its name (and the words the question used for it, when it was asked about)."""

    ref: EntityRef
    name: ShortText = Field(description="The entity's primary name.")
    text: ShortText | None = Field(None, description="The words of the question that named it, as typed.")
    pronoun: Literal["he", "she"] | None = Field(
        None, description="How the catalog's description of a character refers to them (None: it does not say).")
    listed: bool = Field(False, description="Said in the answer's list (names one after another: 'A (2013), B and "
                                            "C'), where the answer gave one of two names or more.")


class PastTurn(ProtocolModel):
    """One earlier turn of the conversation."""

    question: QueryText = Field(description="The question as the user typed it.")
    standalone: QueryText = Field(description="The question as it was read: follow-ups resolved, names spelled out.")
    status: ResponseStatus = Field(description="How its run ended.")
    subjects: list[Named] = Field(default_factory=list, max_length=MAX_SUBJECTS,
                                  description="What the question was about: the names it linked, as read.")
    answers: list[Named] = Field(default_factory=list, max_length=MAX_ANSWERS,
                                 description="What the answer named, in the answer's order.")
    choices: list[Named] = Field(default_factory=list, max_length=MAX_CHOICES,
                                 description="The readings a clarification offered, when the turn asked one.")
    answer: ShortText = Field("", description="The start of the answer's text.")


class ConversationContext(ProtocolModel):
    """The last turns of a conversation, oldest first: what a follow-up may refer to."""

    turns: list[PastTurn] = Field(default_factory=list, max_length=MAX_CONTEXT_TURNS)

    def last(self) -> PastTurn | None:
        return self.turns[-1] if self.turns else None

    def brief(self, turns: int = PROMPT_TURNS, names: int = PROMPT_NAMES) -> ConversationContext:
        """The card as a role's prompt carries it: the last few turns, the first few names of each answer."""
        return ConversationContext(turns=[
            t.model_copy(update={"answers": t.answers[:names], "choices": t.choices[:names]})
            for t in self.turns[-turns:]])
