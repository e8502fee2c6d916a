"""The evaluation question set: its record shape, the JSON Lines loader, and gold-entity resolution.

A question set is a JSON Lines file, one :class:`EvalQuestion` per line. Gold entities are named
(type + name or alias), not given by id, so a file stays readable and survives re-ingestion; they
are resolved against the catalog's ``entity_name`` table before scoring.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from agentic_rag.errors import InvalidInput, NotFound
from agentic_rag.protocol.vocabulary import EntityType
from agentic_rag.storage.sql import Conn, Query

QuestionType = Literal[
    "lookup", "cast", "relation", "comparison", "adaptation", "sequel", "multi_hop", "attribute", "aggregate",
    "no_match", "ambiguous",
    # the kinds of issue 37: several works like the ones named, why something is so, several questions in one
    # message, what is not among a list, and a name the catalog lacks beside names it has
    "recommendation", "explanation", "multi_part", "negation", "unknown_name",
]
QUESTION_TYPES: tuple[QuestionType, ...] = get_args(QuestionType)
ExpectStatus = Literal["answered", "not_found", "needs_clarification", "best_effort"]

GoldKey = tuple[str, str]
"""``(entity_type, lowercased name)``: how a gold entity is looked up in a resolution map."""

DEMO_QUESTIONS = "demo.jsonl"
MAX_TURNS = 20  # turns of one conversation record

NonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]


class QuestionSetError(InvalidInput):
    """A question file is malformed; the message names the file and the line."""


class GoldResolutionError(NotFound):
    """Some gold entity names match no catalog entity; the message lists them."""

    def __init__(self, missing: list[GoldKey]) -> None:
        self.missing = missing
        names = ", ".join(f"{t}:{n!r}" for t, n in missing)
        super().__init__(f"{len(missing)} gold entit{'y' if len(missing) == 1 else 'ies'} not in the catalog: {names}")


class GoldEntity(BaseModel):
    """An entity the answer should use, named the way the catalog names it (a name or an alias)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    entity_type: EntityType = Field(description="Which kind of entity.")
    name: NonEmpty = Field(description="Its name or one of its aliases; matched case-insensitively.")

    @property
    def key(self) -> GoldKey:
        return (self.entity_type, self.name.lower())


class EvalQuestion(BaseModel):
    """One question with what a correct run must produce."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_-]*$", max_length=80)] = Field(
        description="Unique within the set, e.g. 'lookup-01'."
    )
    question: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000)]
    type: QuestionType = Field(description="What kind of reasoning the question needs.")
    gold_entities: list[GoldEntity] = Field(
        default_factory=list, description="Entities whose ids should appear among the run's result or source entities."
    )
    answer_contains: list[NonEmpty] = Field(
        default_factory=list, description="Strings a correct answer contains (case-insensitive)."
    )
    answer_any: list[NonEmpty] = Field(
        default_factory=list, max_length=50,
        description="Acceptable answers, of which a correct answer names at least min_any (case-insensitive): the "
                    "hand-listed titles a recommendation may give, where no one answer is the right one.",
    )
    min_any: int = Field(1, ge=1, le=50, description="How many of answer_any a correct answer names.")
    expect_status: ExpectStatus = Field("answered", description="The status a correct run ends with.")
    conversation: str | None = Field(
        None, description="The conversation this question is a turn of (set by the loader from a conversation "
                          "record): it is asked after the turns before it, in one conversation.")
    turn: int = Field(0, ge=0, le=MAX_TURNS, description="Its place in the conversation, from 1 (0: none).")


class EvalTurn(BaseModel):
    """One turn of a conversation record: a question as it is asked after the turns before it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    question: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000)]
    type: QuestionType
    gold_entities: list[GoldEntity] = Field(default_factory=list)
    answer_contains: list[NonEmpty] = Field(default_factory=list)
    answer_any: list[NonEmpty] = Field(default_factory=list, max_length=50)
    min_any: int = Field(1, ge=1, le=50)
    expect_status: ExpectStatus = "answered"


class EvalConversation(BaseModel):
    """A conversation record: turns asked in order, each scored given only its own conversation's earlier turns.
    Its turns become questions ``<id>-t<n>``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_-]*$", max_length=76)]
    turns: list[EvalTurn] = Field(min_length=1, max_length=MAX_TURNS)

    def questions(self) -> list[EvalQuestion]:
        return [EvalQuestion(id=f"{self.id}-t{n}", conversation=self.id, turn=n, **t.model_dump())
                for n, t in enumerate(self.turns, start=1)]


def load_questions(path: str | Path) -> list[EvalQuestion]:
    """Read a JSON Lines question file; blank lines are skipped, ids must be unique. A record with ``turns`` is a
    conversation (:class:`EvalConversation`): its turns become questions, in order.

    Raises :class:`QuestionSetError` naming the file and line of the first bad record.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise QuestionSetError(f"{path}: cannot read: {exc}") from exc
    questions: list[EvalQuestion] = []
    seen: dict[str, int] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            record = json.loads(line)
            batch = (EvalConversation.model_validate(record).questions()
                     if isinstance(record, dict) and "turns" in record else [EvalQuestion.model_validate(record)])
        except json.JSONDecodeError as exc:
            raise QuestionSetError(f"{where}: not valid JSON: {exc.msg}") from exc
        except ValidationError as exc:
            if any(e["type"] == "json_invalid" for e in exc.errors()):
                raise QuestionSetError(f"{where}: not valid JSON: {exc.errors()[0]['msg']}") from exc
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "record"
            raise QuestionSetError(f"{where}: {field}: {first['msg']}") from exc
        for q in batch:
            if q.id in seen:
                raise QuestionSetError(f"{where}: duplicate id {q.id!r} (first on line {seen[q.id]})")
            seen[q.id] = lineno
            questions.append(q)
    if not questions:
        raise QuestionSetError(f"{path}: no questions")
    return questions


def demo_questions_path() -> Path:
    """The question set shipped for the demo catalog."""
    return Path(str(resources.files("agentic_rag.eval") / "data" / DEMO_QUESTIONS))


def load_demo_questions() -> list[EvalQuestion]:
    return load_questions(demo_questions_path())


def gold_keys(questions: Iterable[EvalQuestion]) -> list[GoldKey]:
    """Every distinct gold entity the questions name, in first-seen order."""
    return list(dict.fromkeys(g.key for q in questions for g in q.gold_entities))


# entity_name.norm is lower(unaccent(name)) per name or alias (0002_names.sql); one row per
# (entity, normalised form), so DISTINCT only guards against the same id twice.
RESOLVE_SQL = Query("""
SELECT DISTINCT q.entity_type, q.name, n.entity_id::text
  FROM unnest(:types::text[], :names::text[]) AS q(entity_type, name)
  JOIN entity_name n ON n.norm = lower(unaccent(q.name)) AND n.entity_type = q.entity_type
 WHERE :source::text IS NULL OR n.source = :source::text
 ORDER BY 1, 2, 3
""")


async def resolve_gold(
    conn: Conn,
    questions: Iterable[EvalQuestion],
    *,
    source: str | None = "demo",
) -> dict[GoldKey, list[str]]:
    """Map each gold ``(entity_type, lowercased name)`` to the ids of the entities it names.

    Names match case- and accent-insensitively against every name and alias of the catalog
    (restricted to ``source`` unless it is None). A name may map to several ids; one that maps to
    none raises :class:`GoldResolutionError` listing all such names.
    """
    keys = gold_keys(questions)
    if not keys:
        return {}
    out: dict[GoldKey, list[str]] = {k: [] for k in keys}
    rows = await RESOLVE_SQL.fetch(conn, {"types": [t for t, _ in keys], "names": [n for _, n in keys],
                                          "source": source})
    for entity_type, name, entity_id in rows:
        out[(str(entity_type), str(name))].append(str(entity_id))
    missing = [k for k, ids in out.items() if not ids]
    if missing:
        raise GoldResolutionError(missing)
    return out
