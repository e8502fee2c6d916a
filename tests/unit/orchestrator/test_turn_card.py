"""What a turn's card keeps of its answer for later follow-ups (orchestrator/loop.py): the names in the answer's
order, which of them its list said, and the result's reading of a name several entities share."""

from __future__ import annotations

from agentic_rag.orchestrator.loop import _named_in

NAMES = {"a": "Attack on Titan", "b": "Attack on Titan Season 2", "c": "Attack on Titan Season 3", "m": "MAPPA"}


def test_the_list_an_answer_said_holds_the_name_asked_when_the_list_says_it() -> None:
    answer = ("In order, the series runs Attack on Titan, Attack on Titan Season 2 (2017) and Attack on Titan "
              "Season 3 (2018). It was animated by MAPPA.")
    order, listed = _named_in(answer, NAMES, set())
    assert order == ["a", "b", "c", "m"] and listed == {"a", "b", "c"}


def test_names_apart_in_sentences_are_no_list() -> None:
    order, listed = _named_in("Attack on Titan was animated by MAPPA.", NAMES, set())
    assert order == ["a", "m"] and listed == set()


def test_a_name_several_entities_share_is_the_result_s() -> None:
    names = {"anime": "Naruto", "manga": "Naruto", "shippuden": "Naruto Shippuden"}
    order, _ = _named_in("Naruto has 220 episodes and Naruto Shippuden has 500.", names, {"anime", "shippuden"})
    assert order == ["anime", "shippuden"]
