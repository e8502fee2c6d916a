"""Conversation records: the loader, the runner's order within a conversation, and the generated set."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from agentic_rag.eval.questions import QuestionSetError, load_questions
from agentic_rag.eval.runner import run_eval
from agentic_rag.eval.stress.conversations import build_conversations, write_conversations
from agentic_rag.protocol import AgentResponse


def _turn(question: str) -> dict[str, Any]:
    return {"question": question, "type": "lookup", "answer_contains": ["x"]}


def test_a_conversation_record_becomes_its_turns_in_order(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"id": "c1", "turns": [_turn("who directed X?"), _turn("what else did he direct?")]})
                    + "\n" + json.dumps({"id": "q1", **_turn("alone")}) + "\n")
    qs = load_questions(path)
    assert [(q.id, q.conversation, q.turn) for q in qs] == [("c1-t1", "c1", 1), ("c1-t2", "c1", 2), ("q1", None, 0)]
    path.write_text(json.dumps({"id": "c1", "turns": []}) + "\n")
    with pytest.raises(QuestionSetError, match="turns"):
        load_questions(path)


class FakeRun:
    def __init__(self, text: str, conversation: uuid.UUID) -> None:
        self.response = AgentResponse(answer=f"x {text}", confidence=1.0)
        self.turns, self.latency_ms, self.conversation_id = 1, 1.0, conversation


def test_a_turn_is_asked_after_the_turns_before_it_with_their_conversation(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"id": f"c{i}", "turns": [_turn(f"{i}-1"), _turn(f"{i}-2"), _turn(f"{i}-3")]})
                            + "\n" for i in range(4)))
    asked: list[tuple[str, uuid.UUID | None]] = []
    ids = {f"c{i}": uuid.uuid4() for i in range(4)}

    async def ask(text: str, conversation_id: uuid.UUID | None = None) -> FakeRun:
        asked.append((text, conversation_id))
        await asyncio.sleep(0.001)
        return FakeRun(text, ids[f"c{text.split('-')[0]}"])

    outcomes = asyncio.run(run_eval(load_questions(path), ask, concurrency=3, progress=False))
    assert all(o.status == "answered" for o in outcomes)
    for i in range(4):
        mine = [(t, c) for t, c in asked if t.startswith(f"{i}-")]
        assert mine == [(f"{i}-1", None), (f"{i}-2", ids[f"c{i}"]), (f"{i}-3", ids[f"c{i}"])]


def test_the_generated_set_is_seeded_split_and_loads(tmp_path: Path) -> None:
    held = build_conversations(seed=7, count=30, split="held")
    assert held == build_conversations(seed=7, count=30, split="held")  # the same seed, the same set
    tune = build_conversations(seed=7, count=30, split="tune")
    assert len(held) == len(tune) == 30
    # the halves word their turns differently: no held question is a tune question
    assert not {t["question"] for c in held for t in c["turns"]} & {t["question"] for c in tune for t in c["turns"]
                                                                      if not any(ch.isupper() for ch in t["question"])}
    kinds = {c["id"].split("-")[2] for c in held}
    assert kinds == {"director", "studio", "form", "about", "lost"}
    assert all(2 <= len(c["turns"]) <= 5 for c in held)
    path = tmp_path / "held.jsonl"
    write_conversations(path, held)
    qs = load_questions(path)
    assert len(qs) == sum(len(c["turns"]) for c in held)
    assert {q.expect_status for q in qs if q.id.split("-")[2] == "lost" and q.turn == 2} == {"needs_clarification"}
