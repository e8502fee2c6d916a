"""A group the catalog has no entry for, read from a record's own words (planners/heuristic/groups.py): each listed
name's in a choice among names, each character's of one work when the group's members are asked."""

from __future__ import annotations

import pytest

from agentic_rag.planners.heuristic.groups import group_words, record_says, says_group


def words(text: str) -> list[str]:
    return text.lower().replace("-", " ").replace(",", " ").split()


@pytest.mark.parametrize(("record", "group", "says"), [
    ("The S-Class rank 2 hero, an immensely powerful esper", ["s", "class", "hero"], True),
    ("Leader of the Blizzard Group, a B-Class esper hero; Tatsumaki s younger sister", ["s", "class", "hero"], False),
    ("One of the Legendary Sannin, a toad-summoning sage", ["legendary", "sannin"], True),
    ("The Third Hokage, teacher of the Legendary Sannin", ["legendary", "sannin"], False),
    ("Navigator of the Straw Hat Pirates", ["straw", "hat", "pirate"], False),  # (singular forms are the caller's)
    ("Navigator of the Straw Hat Pirate crew", ["straw", "hat", "pirate"], True),
    ("The last Kurta, who seeks revenge against the Phantom Troupe", ["phantom", "troupe"], False),
    ("A member of the Phantom Troupe who fights with a fan", ["phantom", "troupe"], True),
])
def test_a_group_is_its_words_in_order_and_not_what_someone_is_to_it(record: str, group: list[str], says: bool) -> None:
    assert says_group(words(record), group) is says


def test_a_record_says_a_group_in_its_names_or_its_description_not_in_the_works_it_lists() -> None:
    head = "Kyojuro Rengoku. Character in Demon Slayer: Kimetsu no Yaiba - Hashira Training Arc. "
    row = {"snippet": head + "The passionate Flame Hashira.", "about_at": len(head), "aliases": ["Rengoku"]}
    assert record_says(row, "Kyojuro Rengoku", group_words("Hashira"))
    lister = {"snippet": head + "A boy who sells charcoal.", "about_at": len(head)}
    assert not record_says(lister, "Tanjiro Kamado", group_words("hashira"))
    assert record_says({"snippet": "", "aliases": ["Straw Hat Luffy"]}, "Monkey D. Luffy", group_words("straw hats"))
    assert not record_says(row, "Kyojuro Rengoku", [])
