"""The words a prose search adds to a question (retrievers/prose.py): the agent nouns of its verbs."""

from __future__ import annotations

from agentic_rag.retrievers.prose import AGENTS, with_agents


def test_a_verb_brings_its_agent_noun() -> None:
    assert with_agents("who leads the phantom troupe").split()[-3:] == ["leader", "phantomer", "trouper"]
    assert with_agents("who founded it").endswith(" founder")
    assert with_agents("who led them").endswith(" leader")  # an irregular past
    assert "ruler" in with_agents("who rules the sea").split()
    assert "teacher" in with_agents("who teaches gon").split()


def test_nouns_already_said_and_function_words_bring_none_and_the_count_is_bounded() -> None:
    assert with_agents("the leader of the troupe") == "the leader of the troupe trouper"
    assert with_agents("who is it") == "who is it"
    many = " ".join(f"word{c}" for c in "abcdefghij")
    assert len(with_agents(many).split()) == 10 + AGENTS
