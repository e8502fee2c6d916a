"""Entity links: the names a question mentions, each with the catalog entities it may mean.

Produced by code (:mod:`agentic_rag.understanding.linker`) before any model runs, and shown to every
planner as a card: the heuristic planner reads it directly, an LLM planner reads it in its prompt.
Spans are character offsets into the question, so a reader can look at the words around a name.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agentic_rag.protocol.base import EntityRef, ProtocolModel, ShortText, Uuid

LinkMatch = Literal["exact", "alias", "typo", "reordered", "partial"]
MAX_MENTIONS = 8
MAX_CANDIDATES = 10
MAX_FRANCHISES = 8  # franchises one candidate lists


class LinkCandidate(ProtocolModel):
    """One entity a mention may name."""

    entity: EntityRef
    name: ShortText = Field(description="The entity's primary name.")
    matched: ShortText = Field(description="The name or alias the mention matched.")
    match: LinkMatch = Field(description="exact: the primary name; alias: another stored name; typo: one edit "
                                         "in a word; reordered: the words of a person's or character's name in "
                                         "another order; partial: one rare word of a longer name "
                                         "(\"shippuden\", \"sawano\").")
    popularity: int = Field(0, ge=0)
    year: int | None = Field(None, description="First year of a work; founding year of a studio.")
    format: str | None = Field(None, max_length=20, description="An anime's format (tv, movie, ova, ona, special).")
    franchises: list[Uuid] = Field(
        default_factory=list, max_length=MAX_FRANCHISES,
        description="The franchise of a work, or those of the anime a character appears in: what the question's "
                    "other names tell two readings of one name apart by (\"ed\" beside \"fmab\").")


class LinkedMention(ProtocolModel):
    """A span of the question that names catalog entities."""

    text: ShortText = Field(description="The span as the user typed it.")
    start: int = Field(ge=0, description="Character offset of the span in the question.")
    end: int = Field(ge=0, description="Character offset just past the span.")
    candidates: list[LinkCandidate] = Field(max_length=MAX_CANDIDATES,
                                            description="Best first: match quality, then popularity.")


AskLabel = Literal["studio", "director", "music", "author", "cast", "appears", "sequel", "prequel", "source",
                   "adaptation", "year", "episodes", "volumes", "founded", "family", "mentor", "rival", "describe"]


class AskHint(ProtocolModel):
    """What the question asks, by its nearest labelled exemplars under the sentence encoder."""

    label: AskLabel
    score: float = Field(ge=-1.0, le=1.0, description="Cosine similarity of the nearest exemplar.")


class EntityLinks(ProtocolModel):
    """Every mention found in a question, left to right, and what it seems to ask. Spans do not overlap, except
    that the seasons inside a range ("seasons 1-3") are mentions sharing the span of its last number."""

    mentions: list[LinkedMention] = Field(default_factory=list, max_length=MAX_MENTIONS)
    asks: list[AskHint] = Field(default_factory=list, max_length=3,
                                description="Nearest asked relations or attributes by meaning, best first; "
                                            "empty when the question's cue words say what it asks.")
    unknown: list[ShortText] | None = Field(
        None, max_length=3, description="Words of the question that look like a name and match no name in the "
                                        "catalog, as typed: what the catalog does not have (none: null).")
