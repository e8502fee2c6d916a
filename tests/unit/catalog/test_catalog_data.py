"""The shipped demo catalog: validates, is large enough, and holds the facts users will ask about."""

from __future__ import annotations

from collections import Counter
from typing import get_args

import pytest

from agentic_rag.catalog.records import Catalog, load_catalog
from agentic_rag.catalog.tables import RELATION_TABLES, demo_rows
from agentic_rag.protocol.vocabulary import EDGE_TYPE_BY_NAME, AnimeRelation, CharacterRelation


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def test_catalog_meets_the_size_floor(cat: Catalog) -> None:
    rows = demo_rows(cat)
    assert len(cat.anime) >= 40
    assert len(cat.franchises) >= 14
    assert len(cat.characters) >= 200
    assert len(cat.episodes) >= 300
    assert len(cat.manga) >= 30
    assert sum(len(rows[t]) for t in RELATION_TABLES) >= 400


REQUIRED_ANIME = [
    "One Piece", "Naruto", "Naruto Shippuden", "Boruto: Naruto Next Generations", "Attack on Titan",
    "Fullmetal Alchemist", "Fullmetal Alchemist: Brotherhood", "Dragon Ball", "Dragon Ball Z", "Dragon Ball Super",
    "Death Note", "Jujutsu Kaisen", "Neon Genesis Evangelion", "Cowboy Bebop", "Spy x Family", "One-Punch Man",
    "Mob Psycho 100",
]


@pytest.mark.parametrize("title", REQUIRED_ANIME)
def test_required_series_are_present(cat: Catalog, title: str) -> None:
    assert any(a.title.lower() == title.lower() or title.lower() in (x.lower() for x in a.aliases)
               for a in cat.anime), title


def test_required_franchises_with_several_entries(cat: Catalog) -> None:
    franchise_names = {f.name.lower() for f in cat.franchises}
    for name in ("demon slayer", "my hero academia", "hunter x hunter"):
        assert any(name in f for f in franchise_names), name
    hxh_tv = [a for a in cat.anime if a.title.lower().startswith("hunter x hunter") and a.format == "tv"]
    assert sorted(a.year for a in hxh_tv) == [1999, 2011]


@pytest.mark.parametrize(
    ("alias", "name"),
    [("Luffy", "Monkey D. Luffy"), ("Zoro", "Roronoa Zoro"), ("Goku", "Son Goku"), ("Kakashi", "Kakashi Hatake"),
     ("Deku", "Izuku Midoriya"), ("Levi", "Levi Ackerman"), ("Ed", "Edward Elric"), ("Spike", "Spike Spiegel")],
)
def test_characters_are_found_by_the_alias_users_type(cat: Catalog, alias: str, name: str) -> None:
    matches = [c.name for c in cat.characters if alias.lower() in (a.lower() for a in c.aliases)]
    assert name in matches


def test_known_facts(cat: Catalog) -> None:
    anime = {a.key: a for a in cat.anime}
    assert anime["one-piece"].year == 1999 and "toei-animation" in anime["one-piece"].studios
    assert anime["death-note"].episodes == 37 and "madhouse" in anime["death-note"].studios
    assert anime["cowboy-bebop"].episodes == 26 and anime["cowboy-bebop"].year == 1998
    nami = next(c for c in cat.characters if c.name == "Nami")
    assert "one-piece" in {a.anime for a in nami.appears_in}
    assert "one-piece-manga" in anime["one-piece"].adapted_from


def test_every_relation_type_occurs(cat: Catalog) -> None:
    rows = demo_rows(cat)
    for table, literal in (("anime_related_anime", AnimeRelation), ("character_relationship", CharacterRelation)):
        used = {r[2] for r in rows[table]}
        with_inverses = used | {EDGE_TYPE_BY_NAME[u].inverse for u in used}
        assert set(get_args(literal)) <= with_inverses, (table, set(get_args(literal)) - with_inverses)
    for table in RELATION_TABLES:  # the structural edges come from tables that must all be populated
        assert rows[table], table


def test_episode_numbers_are_unique_per_anime(cat: Catalog) -> None:
    counts = Counter((e.anime, e.number) for e in cat.episodes)
    assert max(counts.values()) == 1
