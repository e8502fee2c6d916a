"""The synthetic generator alone: sizes, ids, determinism and the schema's constraints, no database."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from agentic_rag.catalog.ids import entity_id
from agentic_rag.catalog.synthetic import (
    ANIME_STAFF_ROLES,
    CHARACTER_RELATIONS,
    GENRES,
    MANGA_AUTHOR_ROLES,
    SyntheticCatalog,
    entity_counts,
    generate,
    uuid5_ids,
)
from agentic_rag.catalog.tables import ENTITY_TABLES, TABLE_BY_NAME, TABLES
from agentic_rag.protocol.vocabulary import EDGE_TYPE_BY_NAME, ENTITY_TYPES


@pytest.fixture(scope="module")
def small() -> dict[str, list[tuple[object, ...]]]:
    return {t: list(rows) for t, rows in generate(3000, seed=7).items()}


@pytest.mark.parametrize("n", [7, 10, 50, 2000, 123_457])
def test_entity_counts_sum_to_n_with_every_type(n: int) -> None:
    counts = entity_counts(n)
    assert sum(counts.values()) == n
    assert set(counts) == set(ENTITY_TYPES)
    assert min(counts.values()) >= 1


def test_too_few_entities_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least"):
        entity_counts(6)


def test_batch_ids_equal_entity_id() -> None:
    keys = ["syn-anime-0", "syn-anime-1", "syn-anime-12#3", "ünïcode-ключ"]
    got = [b.decode() for b in uuid5_ids("anime", keys).tolist()]
    assert got == [str(entity_id("anime", k)) for k in keys]


def test_same_seed_same_rows_other_seed_other_rows(small: dict[str, list[tuple[object, ...]]]) -> None:
    again = {t: list(rows) for t, rows in generate(3000, seed=7).items()}
    assert again == small
    other = {t: list(rows) for t, rows in generate(3000, seed=8).items()}
    assert other["anime"] != small["anime"]
    assert other["anime_character"] != small["anime_character"]
    assert [r[1] for r in other["anime"]] == [r[1] for r in small["anime"]]  # keys are by position


def test_streams_are_independent_of_consumption_order() -> None:
    streams = generate(500, seed=3)
    late_first = list(streams["character_relationship"])
    assert late_first == list(SyntheticCatalog(500, seed=3).rows("character_relationship"))


def test_rows_fit_the_columns_and_the_counts(small: dict[str, list[tuple[object, ...]]]) -> None:
    cat = SyntheticCatalog(3000, seed=7)
    for t in TABLES:
        assert len(small[t.name]) == cat.counts[t.name], t.name
        assert all(len(r) == len(t.columns) for r in small[t.name]), t.name
    for table in ENTITY_TABLES:
        cols = TABLE_BY_NAME[table].columns
        rows = small[table]
        keys = [r[cols.index("key")] for r in rows]
        assert len(set(keys)) == len(keys)
        assert all(isinstance(k, str) and k.startswith("syn-") for k in keys)
        assert all(r[cols.index("id")] == str(entity_id(table, str(r[cols.index("key")]))) for r in rows)
        assert {r[cols.index("source")] for r in rows} == {"synthetic"}


def test_primary_keys_checks_and_one_fact_per_pair(small: dict[str, list[tuple[object, ...]]]) -> None:
    for t in TABLES:
        key_cols = [t.columns.index(c) for c in t.key]
        keys = [tuple(r[i] for i in key_cols) for r in small[t.name]]
        assert len(set(keys)) == len(keys), f"duplicate primary key in {t.name}"
    episodes = [(r[3], r[4]) for r in small["episode"]]
    assert len(set(episodes)) == len(episodes)
    assert all(isinstance(r[4], int) and r[4] >= 1 for r in small["episode"])
    for table in ("anime_related_anime", "character_relationship"):
        facts = {(r[0], r[1], r[2]) for r in small[table]}
        assert all(a != b for a, b, _ in facts), f"self loop in {table}"
        assert not any((b, a, EDGE_TYPE_BY_NAME[str(t)].inverse) in facts for a, b, t in facts), table
        pairs = Counter(frozenset((a, b)) for a, b, _ in facts)
        assert max(pairs.values()) == 1, f"two facts about one pair in {table}"
    assert {r[2] for r in small["character_relationship"]} <= set(CHARACTER_RELATIONS)
    assert {r[2] for r in small["anime_staff"]} <= set(ANIME_STAFF_ROLES)
    assert {r[2] for r in small["manga_author"]} <= set(MANGA_AUTHOR_ROLES)
    assert {r[2] for r in small["anime_character"]} == {"main", "supporting"}
    cols = TABLE_BY_NAME["anime"].columns
    for r in small["anime"]:
        year, end, eps = r[cols.index("year")], r[cols.index("end_year")], r[cols.index("episode_count")]
        assert isinstance(year, int) and 1960 <= year <= 2025
        assert end is None or (isinstance(end, int) and year <= end <= 2025)
        assert isinstance(eps, int) and eps > 0
        assert set(r[cols.index("genres")]) <= set(GENRES)  # type: ignore[call-overload]
        assert r[cols.index("status")] in ("finished", "airing")
        assert r[cols.index("format")] in ("tv", "movie", "ova", "ona", "special")


def test_references_point_at_generated_entities(small: dict[str, list[tuple[object, ...]]]) -> None:
    ids = {t: {r[0] for r in small[t]} for t in ENTITY_TABLES}
    refs = {
        "anime_related_anime": ("anime", "anime"), "anime_related_manga": ("anime", "manga"),
        "anime_character": ("anime", "character"), "manga_character": ("manga", "character"),
        "character_relationship": ("character", "character"), "anime_studio": ("anime", "studio"),
        "anime_staff": ("anime", "person"), "manga_author": ("manga", "person"),
    }
    for table, (left, right) in refs.items():
        assert all(r[0] in ids[left] and r[1] in ids[right] for r in small[table]), table
    assert all(r[3] in ids["anime"] for r in small["episode"])
    fr = TABLE_BY_NAME["anime"].columns.index("franchise_id")
    assert all(r[fr] is None or r[fr] in ids["franchise"] for r in small["anime"])


def test_degrees_are_heavy_tailed_and_drive_popularity() -> None:
    cat = SyntheticCatalog(100_000, seed=0)
    assert cat.relation_rows >= 5 * 100_000
    per_anime = Counter(r[0] for r in cat.rows("anime_character"))
    degrees = np.array(sorted(per_anime.values()))
    assert degrees[-1] >= 50 * np.median(degrees)
    hub = max(per_anime, key=lambda a: per_anime[a])
    pop = {r[0]: r[13] for r in cat.rows("anime")}
    assert pop[hub] == 100
    per_character = Counter(x for r in cat.rows("character_relationship") for x in (r[0], r[1]))
    rel_degrees = np.array(sorted(per_character.values()))
    assert rel_degrees[-1] >= 50 * np.median(rel_degrees)
