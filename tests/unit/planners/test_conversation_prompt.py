"""A follow-up's role inputs carry the conversation's card, and an LLM's prompt shows it (bounded)."""

from __future__ import annotations

import uuid

from agentic_rag.planners.llm.prompts import render
from agentic_rag.protocol import EntityRef, NextStep, QueryRewrite
from agentic_rag.protocol.conversation import ConversationContext, Named, PastTurn
from agentic_rag.protocol.roles import SelectInput


def _named(name: str, entity_type: str) -> Named:
    return Named.model_validate({"ref": EntityRef.model_validate({"entity_type": entity_type,
                                                                   "id": str(uuid.uuid4())}), "name": name})


def test_the_prompt_shows_the_last_turns_and_only_a_few_names_each() -> None:
    turns = [PastTurn(question=f"question {i}", standalone=f"question {i}", status="answered",
                      subjects=[_named("Death Note", "anime")],
                      answers=[_named(f"Work {i}.{j}", "anime") for j in range(12)]) for i in range(6)]
    card = ConversationContext(turns=turns).brief()
    assert [t.question for t in card.turns] == ["question 3", "question 4", "question 5"]
    assert all(len(t.answers) == 5 for t in card.turns)
    rewrite = QueryRewrite(rewritten_query="what else did Tetsurō Araki direct?", needs_external_context=True,
                           retrieval_mode="graph", rationale="follow-up")
    inp = SelectInput(question="what else did Tetsurō Araki direct?", rewrite=rewrite, turn=0, max_turns=4,
                      conversation=card)
    prompt = "\n".join(m["content"] for m in render(inp, NextStep))
    assert "question 5" in prompt and "Work 5.4" in prompt and "Work 5.5" not in prompt and "question 2" not in prompt
    # a question that follows nothing says nothing of a conversation
    alone = SelectInput(question="who directed Death Note?", rewrite=rewrite, turn=0, max_turns=4)
    assert "conversation" not in "\n".join(m["content"] for m in render(alone, NextStep))
