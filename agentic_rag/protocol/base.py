"""Shared building blocks of the protocol: bounded text types, the base model, EntityRef."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints

from agentic_rag.protocol.vocabulary import EntityType

UUID_PATTERN = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
# The constraints come first so the JSON schema keeps the pattern (constrained decoders need it);
# the before-validator still runs first at validation time, so "ABC..." is accepted as "abc...".
Uuid = Annotated[
    str,
    StringConstraints(pattern=UUID_PATTERN, max_length=36),
    BeforeValidator(lambda v: v.strip().lower() if isinstance(v, str) else v),
]
Rationale = Annotated[str, StringConstraints(strip_whitespace=True, max_length=300)]
QueryText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=500)]
SHORT_TEXT_MAX = 200  # a label, a warning, a citation
ShortText = Annotated[str, StringConstraints(strip_whitespace=True, max_length=SHORT_TEXT_MAX)]
AnswerText = Annotated[str, StringConstraints(strip_whitespace=True, max_length=2000)]
SUMMARY_MAX = 8000
SummaryText = Annotated[str, StringConstraints(max_length=SUMMARY_MAX)]


def clip_lines(lines: list[str], limit: int = SUMMARY_MAX) -> str:
    """Join summary lines, dropping whole lines at the end (and saying how many) to stay within ``limit``."""
    out: list[str] = []
    size = 0
    for i, line in enumerate(lines):
        line = line if len(line) <= limit // 4 else line[: limit // 4 - 3] + "..."
        if size + len(line) + 1 > limit - 60:
            out.append(f"... {len(lines) - i} more line(s) in the structured result.")
            break
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)
Genre = Annotated[str, StringConstraints(strip_whitespace=True, to_lower=True, min_length=1, max_length=40)]
Year = Annotated[int, Field(ge=1900, le=2100)]
Confidence = Annotated[float, Field(ge=0.0, le=1.0)]

class ProtocolModel(BaseModel):
    """Base of every contract: unknown fields are errors, so a model cannot smuggle data through."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class EntityRef(ProtocolModel):
    """A pointer to one catalog entity. The id is the only thing that identifies it."""

    entity_type: EntityType = Field(description="Which kind of entity this is.")
    id: Uuid = Field(description="Canonical UUID of the entity, copied exactly from retrieved context.")


