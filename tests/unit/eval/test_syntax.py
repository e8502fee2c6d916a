"""Card notation in an answer: found in what a card says, never in the writer's sentences."""

from __future__ import annotations

import pytest

from agentic_rag.eval.syntax import card_syntax


@pytest.mark.parametrize("line", [
    "animated_by: Madhouse (studio)",
    "Monkey D. Luffy (character) --teammate--> Nami (character) [end id 0b7c]",
    "Cowboy Bebop (anime): year=1998, episode_count=26",
    "3 found (neighbors from Trigun (anime) via features); features: Vash (character) (main)",
    "1. Trigun (anime, 1998): a gunman with a bounty on his head",
    "Trigun [id 5d7a3c36-0f6b-5d4e-9a63-0c1a7f8e2b01]",
])
def test_a_cards_notation_is_found(line: str) -> None:
    assert card_syntax(line)


@pytest.mark.parametrize("sentence", [
    "Trigun was animated by Madhouse.",
    "The main characters of Trigun are Vash the Stampede and Meryl Stryfe.",
    "The credited staff of Trigun: Satoshi Nishimura (director) and Tsuneo Imahori (music).",
    "Trigun (1998) has 26 episodes. That is 2 in total.",
    "No name in the question is in the catalog. The closest entries by meaning are Trigun (anime); a guess.",
    "12 anime match (year < 2010, studio = 'Madhouse'): Trigun (1998).",
])
def test_a_sentence_holds_none(sentence: str) -> None:
    assert card_syntax(sentence) == []
