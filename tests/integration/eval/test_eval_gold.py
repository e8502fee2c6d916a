"""The shipped question set against the loaded demo catalog: every gold fact must hold.

Catches fact errors in ``agentic_rag/eval/data/demo.jsonl``: a gold name that matches no entity or
several, an attribute/aggregate answer the catalog does not support, a "no match" subject that is
in fact in the catalog, an answer string found nowhere in the catalog's text.
"""

from __future__ import annotations

import pytest

from agentic_rag.catalog.ingest import IngestReport
from agentic_rag.eval import EvalQuestion, GoldEntity, GoldResolutionError, load_demo_questions, resolve_gold
from agentic_rag.eval.metrics import fold
from agentic_rag.eval.questions import gold_keys
from agentic_rag.storage.sql import Pool

pytestmark = pytest.mark.integration

_BY_STUDIO = """SELECT a.title FROM anime a JOIN anime_studio x ON x.anime_id = a.id
                JOIN studio s ON s.id = x.studio_id WHERE s.name = $1"""
_COUNT_BY_STUDIO = """SELECT count(*)::text FROM anime_studio x JOIN studio s ON s.id = x.studio_id
                      WHERE s.name = $1"""
_COUNT_IN_FRANCHISE = """SELECT count(*)::text FROM anime a JOIN franchise f ON f.id = a.franchise_id
                         WHERE f.name = $1"""

# Each attribute/aggregate question: a query whose single text column holds the facts the
# question's answer_contains strings are checked against (numbers exactly, names as substrings).
FACTS: dict[str, tuple[str, tuple[object, ...]]] = {
    "attribute-01": ("SELECT title FROM anime WHERE year = $1", (2023,)),
    "attribute-02": ("SELECT title FROM anime WHERE episode_count > $1", (200,)),
    "attribute-03": (_BY_STUDIO + " AND a.format = $2", ("MAPPA", "movie")),
    "attribute-04": (_BY_STUDIO + " AND a.year > $2", ("Bones", 2020)),
    "attribute-05": ("SELECT title FROM anime WHERE format = $1", ("ova",)),
    "attribute-06": ("SELECT title FROM anime WHERE status = $1", ("airing",)),
    "attribute-07": ("SELECT title FROM manga WHERE status = $1", ("ongoing",)),
    "attribute-08": ("SELECT title FROM anime WHERE format = 'tv' AND year BETWEEN $1 AND $2", (1990, 1999)),
    "attribute-09": ("SELECT title FROM anime WHERE episode_count = $1", (12,)),
    "attribute-10": ("SELECT title FROM manga WHERE lower(unaccent(magazine)) = $1", ("monthly shonen ace",)),
    "attribute-11": ("SELECT title FROM anime WHERE $1 = ANY (genres)", ("horror",)),
    "attribute-12": (_BY_STUDIO + " AND a.year < $2", ("Madhouse", 2010)),
    "aggregate-01": (_COUNT_BY_STUDIO, ("Bones",)),
    "aggregate-02": (_COUNT_BY_STUDIO, ("Toei Animation",)),
    "aggregate-03": (_COUNT_BY_STUDIO, ("Studio Pierrot",)),
    "aggregate-04": ("""WITH c AS (SELECT s.name, count(*) AS n FROM anime_studio x JOIN studio s ON s.id = x.studio_id
                                  GROUP BY s.name)
                        SELECT name FROM c WHERE n = (SELECT max(n) FROM c)""", ()),
    "aggregate-05": ("""SELECT count(DISTINCT x.manga_id)::text FROM manga_author x JOIN person p ON p.id = x.person_id
                        WHERE p.name = $1""", ("Masashi Kishimoto",)),
    "aggregate-06": (_COUNT_IN_FRANCHISE, ("My Hero Academia",)),
    "aggregate-07": ("SELECT sum(episode_count)::text FROM anime WHERE title = ANY ($1)",
                     (["Mob Psycho 100", "Mob Psycho 100 II", "Mob Psycho 100 III"],)),
    "aggregate-08": ("""SELECT count(DISTINCT x.anime_id)::text FROM anime_staff x JOIN person p ON p.id = x.person_id
                        WHERE p.name = $1 AND x.role = $2""", ("Hiroshi Seko", "series_composition")),
    "aggregate-09": ("""SELECT count(*)::text FROM anime_character x JOIN anime a ON a.id = x.anime_id
                        WHERE a.title = $1""", ("Chainsaw Man",)),
    "aggregate-10": (_COUNT_IN_FRANCHISE + " AND a.format = $2", ("Dragon Ball", "movie")),
}

# What each no_match question asks about; none of these may name anything in the catalog.
NO_MATCH_SUBJECTS = ["Sailor Moon", "Your Name", "Vinland Saga", "Steins;Gate", "Rumiko Takahashi", "Studio Ghibli",
                     "Tokyo Ghoul", "Code Geass", "Kenshin Himura"]

# Every name, alias, description, detail and label in the catalog, for the answer-string check.
CATALOG_TEXT_SQL = """
SELECT lower(unaccent(concat_ws(' | ',
  (SELECT string_agg(name, ' | ') FROM entity_name),
  (SELECT string_agg(concat_ws(' ', synopsis, format, status, array_to_string(genres, ' ')), ' | ') FROM anime),
  (SELECT string_agg(concat_ws(' ', synopsis, magazine), ' | ') FROM manga),
  (SELECT string_agg(description, ' | ') FROM character),
  (SELECT string_agg(detail, ' | ') FROM character_relationship)
)))
"""


@pytest.fixture(scope="module")
def questions() -> list[EvalQuestion]:
    return load_demo_questions()


async def test_every_gold_entity_resolves_to_exactly_one_entity(
    pool: Pool, questions: list[EvalQuestion]
) -> None:
    async with pool.acquire() as conn:
        gold = await resolve_gold(conn, questions)
    assert list(gold) == gold_keys(questions)
    several = {f"{t}:{n}": len(ids) for (t, n), ids in gold.items() if len(ids) != 1}
    assert not several, f"gold names matching several entities: {several}"


async def test_unresolvable_gold_names_are_listed(pool: Pool) -> None:
    q = EvalQuestion(id="x", question="?", type="lookup", gold_entities=[
        GoldEntity(entity_type="anime", name="One Piece"), GoldEntity(entity_type="anime", name="Sailor Moon"),
        GoldEntity(entity_type="studio", name="One Piece"),  # a name of the wrong type does not resolve
    ])
    async with pool.acquire() as conn:
        with pytest.raises(GoldResolutionError, match="anime:'sailor moon', studio:'one piece'") as info:
            await resolve_gold(conn, [q])
        assert info.value.missing == [("anime", "sailor moon"), ("studio", "one piece")]
        # names match case- and accent-insensitively, aliases included
        q = EvalQuestion(id="y", question="?", type="lookup", gold_entities=[
            GoldEntity(entity_type="person", name="TETSURO ARAKI"), GoldEntity(entity_type="character", name="Kira")])
        gold = await resolve_gold(conn, [q])
    assert all(len(ids) == 1 for ids in gold.values())


async def test_attribute_and_aggregate_answers_match_the_catalog(
    pool: Pool, questions: list[EvalQuestion]
) -> None:
    checked = {q.id: q for q in questions if q.type in ("attribute", "aggregate")}
    assert set(FACTS) == set(checked), "every attribute/aggregate question needs a fact query here"
    wrong: list[str] = []
    async with pool.acquire() as conn:
        for qid, (sql, params) in FACTS.items():
            values = [fold(str(v)) for (v,) in await conn.fetch(sql, *params) if v is not None]
            for s in checked[qid].answer_contains:
                ok = fold(s) in values if s.isdigit() else any(fold(s) in v for v in values)
                if not ok:
                    wrong.append(f"{qid}: {s!r} not in {values}")
    assert not wrong, "\n".join(wrong)


async def test_no_match_subjects_are_absent_from_the_catalog(
    pool: Pool, questions: list[EvalQuestion]
) -> None:
    asked = [q.question for q in questions if q.type == "no_match"]
    unlisted = [a for a in asked if not any(s in a for s in NO_MATCH_SUBJECTS)]
    assert not unlisted, f"add the subjects of these no_match questions to NO_MATCH_SUBJECTS: {unlisted}"
    assert all(any(s in a for a in asked) for s in NO_MATCH_SUBJECTS)
    async with pool.acquire() as conn:
        assert await conn.fetch(
            "SELECT name FROM entity_name WHERE norm = ANY (SELECT lower(unaccent(x)) FROM unnest($1::text[]) x)",
            NO_MATCH_SUBJECTS,
        ) == []


async def test_answer_strings_occur_in_the_catalog_text(
    demo: IngestReport, pool: Pool, questions: list[EvalQuestion]
) -> None:
    async with pool.acquire() as conn:
        row = await conn.fetchrow(CATALOG_TEXT_SQL)
    assert row is not None
    text = str(row[0])
    missing = [f"{q.id}: {s!r}" for q in questions for s in q.answer_contains
               if not s.isdigit() and fold(s) not in text]
    assert not missing, missing
