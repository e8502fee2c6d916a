"""A group the catalog has no entry for, read from each listed name's own record (planners/heuristic/among.py)."""

from __future__ import annotations

import pytest

from agentic_rag.planners.heuristic.among import _says_group


def words(text: str) -> list[str]:
    return text.lower().replace("-", " ").replace(",", " ").split()


@pytest.mark.parametrize(("record", "group", "says"), [
    ("The S-Class rank 2 hero, an immensely powerful esper", ["s", "class", "hero"], True),
    ("Leader of the Blizzard Group, a B-Class esper hero; Tatsumaki s younger sister", ["s", "class", "hero"], False),
    ("One of the Legendary Sannin, a toad-summoning sage", ["legendary", "sannin"], True),
    ("The Third Hokage, teacher of the Legendary Sannin", ["legendary", "sannin"], False),
    ("Navigator of the Straw Hat Pirates", ["straw", "hat", "pirate"], False),  # (singular forms are the caller's)
    ("Navigator of the Straw Hat Pirate crew", ["straw", "hat", "pirate"], True),
])
def test_a_group_is_its_words_in_order_and_not_what_someone_is_to_it(record: str, group: list[str], says: bool) -> None:
    assert _says_group(words(record), group) is says
