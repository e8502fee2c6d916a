"""The heuristic model behind the chat-completions route: our own prompts and schemas in, the role's output out."""

from __future__ import annotations

import pytest

from agentic_rag.models.base import Message, StructuredGenerator, schema_for
from agentic_rag.models.openai_backend import OpenAIBackend
from agentic_rag.planners.heuristic import HeuristicModel
from agentic_rag.planners.llm.chat import StructuredTextBackend, text_backend_of
from agentic_rag.planners.llm.prompts import render
from agentic_rag.protocol import EntityLinks, EntityRef, LinkCandidate, LinkedMention, NextStep, QueryRewrite
from agentic_rag.protocol.roles import RewriteInput
from agentic_rag.settings import Settings


def _links(question: str, *names: str) -> EntityLinks:
    """The card entity linking would give for ``names`` (the heuristic reads names only from it)."""
    mentions = []
    for i, name in enumerate(names):
        start = question.index(name)
        ref = EntityRef(entity_type="character", id=f"00000000-0000-4000-8000-{i:012d}")
        mentions.append(LinkedMention(text=name, start=start, end=start + len(name), candidates=[
            LinkCandidate(entity=ref, name=name, matched=name, match="exact")]))
    return EntityLinks(mentions=mentions)


def _rewrite_input(question: str, *names: str) -> RewriteInput:
    return RewriteInput(question=question, links=_links(question, *names))


def _rewrite_prompt(question: str, *names: str) -> list[Message]:
    return render(_rewrite_input(question, *names), QueryRewrite)


async def test_the_heuristic_answers_our_prompt_with_the_schema_it_was_given() -> None:
    model = HeuristicModel()
    backend = StructuredTextBackend(model)
    inp = _rewrite_input("How is Luffy related to Nami?", "Luffy", "Nami")
    done = await backend.complete(render(inp, QueryRewrite), schema_for(QueryRewrite), max_tokens=256,
                                  temperature=0.0)
    assert done.finish_reason == "stop"
    served = QueryRewrite.model_validate_json(done.text)
    direct = (await model.generate(inp, QueryRewrite)).output
    assert served == direct
    assert served.retrieval_mode in ("graph", "hybrid") and {"Luffy", "Nami"} <= set(served.mentions)


async def test_a_schema_the_heuristic_cannot_produce_is_refused_by_name() -> None:
    backend = StructuredTextBackend(HeuristicModel())
    messages = _rewrite_prompt("Which anime is Luffy in?")
    with pytest.raises(ValueError, match="json_schema response_format"):
        await backend.complete(messages, None, max_tokens=64, temperature=0.0)
    other = {"type": "object", "title": "Poem", "properties": {"text": {"type": "string"}}}
    with pytest.raises(ValueError, match=r"cannot produce the schema 'Poem'.*QueryRewrite"):
        await backend.complete(messages, other, max_tokens=64, temperature=0.0)
    # a schema that is one of ours but not what this prompt's role produces: the heuristic says so
    with pytest.raises(ValueError, match="does not produce NextStep"):
        await backend.complete(messages, schema_for(NextStep), max_tokens=64, temperature=0.0)


async def test_messages_that_are_not_our_prompt_are_refused() -> None:
    backend = StructuredTextBackend(HeuristicModel())
    with pytest.raises(ValueError, match="no state block"):
        await backend.complete([{"role": "user", "content": "hello"}], schema_for(QueryRewrite), max_tokens=64,
                               temperature=0.0)
    broken = _rewrite_prompt("Which anime is Luffy in?")
    broken[-1] = {"role": "user", "content": broken[-1]["content"].replace('"question"', '"question', 1)}
    with pytest.raises(ValueError):
        await backend.complete(broken, schema_for(QueryRewrite), max_tokens=64, temperature=0.0)


def test_a_text_model_is_served_as_it_is() -> None:
    remote = OpenAIBackend(Settings(openai_base_url="http://127.0.0.1:9/v1"), "planner")  # never contacted
    assert text_backend_of(StructuredGenerator(remote)) is remote
    assert isinstance(text_backend_of(HeuristicModel()), StructuredTextBackend)
