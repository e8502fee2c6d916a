"""A run's answers, question by question: written by ``agentic-rag eval --answers``, compared across two runs.

A change that must not alter behaviour (a restructure, a faster path) is shown by two such files that agree on
every question: status, answer text, result entities and turns.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from agentic_rag.eval.metrics import QuestionOutcome, judge

COMPARED = ("status", "answer", "result_entities", "turns")  # what must agree for two answers to be the same


def answer_record(o: QuestionOutcome) -> dict[str, Any]:
    """One question's outcome as a JSON-able record (latency left out: it is not behaviour)."""
    return {
        "id": o.question.id,
        "question": o.question.question,
        "status": o.status,
        "answer": o.answer,
        "result_entities": o.result_entities,
        "source_entities": o.source_entities,
        "turns": o.turns,
        "correct": judge(o) is None,
        "error": o.error,
    }


def write_answers(path: Path, outcomes: Sequence[QuestionOutcome]) -> None:
    """Write one JSON line per outcome, in question order."""
    with path.open("w", encoding="utf-8") as f:
        for o in outcomes:
            f.write(json.dumps(answer_record(o), ensure_ascii=False) + "\n")


def read_answers(path: Path) -> dict[str, dict[str, Any]]:
    """The records of an answers file, by question id."""
    with path.open(encoding="utf-8") as f:
        return {r["id"]: r for r in map(json.loads, filter(str.strip, f))}


def differences(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]],
                fields: Iterable[str] = COMPARED) -> list[tuple[str, str, Any, Any]]:
    """(question id, field, before, after) for every compared field that differs; a question only one side
    has differs in its ``id``."""
    out: list[tuple[str, str, Any, Any]] = []
    for qid in sorted(before.keys() | after.keys()):
        b, a = before.get(qid), after.get(qid)
        if b is None or a is None:
            out.append((qid, "id", b is not None, a is not None))
            continue
        out.extend((qid, f, b.get(f), a.get(f)) for f in fields if b.get(f) != a.get(f))
    return out
