"""The typeahead lane, Qdrant search, hybrid fusion and hydration on the demo catalog."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import AsyncIterator

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from pydantic import ValidationError

from agentic_rag.catalog.ids import entity_id
from agentic_rag.protocol import EntityRef, SearchFilters, SearchIntent
from agentic_rag.retrievers.hybrid import HybridRetriever, rrf
from agentic_rag.retrievers.hydrate import hydrate
from agentic_rag.retrievers.prose import prose_search
from agentic_rag.retrievers.typeahead import (
    TYPO_SQL,
    TypeaheadQuery,
    _typo_keys,
    ascii_norm,
    typeahead,
)
from agentic_rag.retrievers.vector import QdrantExecutor
from agentic_rag.storage.sql import Conn, Pool
from tests.support.helpers import eid

pytestmark = pytest.mark.integration


@pytest.fixture
async def pconn(pool: Pool) -> AsyncIterator[Conn]:
    async with pool.acquire() as c:
        yield c


async def search(conn: Conn, q: str, **kw: object) -> list[tuple[str, str, str]]:
    hits = await typeahead(conn, TypeaheadQuery.model_validate({"q": q, **kw}))
    return [(h.name, h.entity.entity_type, h.match) for h in hits]


# -- typeahead ------------------------------------------------------------------------------------

async def test_a_typo_finds_luffy_first(pconn: Conn) -> None:
    assert (await search(pconn, "Lufy"))[0] == ("Monkey D. Luffy", "character", "fuzzy")
    assert (await search(pconn, "lufy", types=["character"]))[0][0] == "Monkey D. Luffy"


@hypothesis_settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.text(alphabet=st.characters(max_codepoint=127, exclude_characters="\x00"), max_size=100))
async def test_ascii_is_normalised_as_the_database_does(pconn: Conn, q: str) -> None:
    row = await pconn.fetchrow("SELECT lower(unaccent($1))", q)
    assert row is not None and ascii_norm(q) == row[0]
    assert ascii_norm(q + "é") is None, "anything else goes to the database"


# one edit among the first letters: a deletion, an insertion, a substitution, a swap
EARLY_TYPOS = ["uffy", "Lffy", "Lufy", "Luuffy", "Kuffy", "Lyffy", "uLffy", "Lfufy", "Lufyf"]


@pytest.mark.parametrize("typed", EARLY_TYPOS)
async def test_a_typo_in_the_first_letters_is_an_indexed_probe(pconn: Conn, typed: str) -> None:
    hits = await search(pconn, typed, types=["character"], limit=3)
    assert hits[0] == ("Monkey D. Luffy", "character", "fuzzy"), hits
    # found by the deletion-key probes themselves, not only by the trigram index behind them
    norm = typed.lower()
    rows = await TYPO_SQL.fetch(pconn, {"norm": norm, "types": ["character"], "cand": 10, **_typo_keys(norm)})
    assert str(entity_id("character", "monkey-d-luffy")) in {r[0] for r in rows}, (typed, rows)


@pytest.mark.parametrize(
    ("typed", "expected"),
    [("Luffy", "Monkey D. Luffy"), ("zoro", "Roronoa Zoro"), ("Kakashi", "Kakashi Hatake"),
     ("ルフィ", "Monkey D. Luffy"), ("Hagane no Renkinjutsushi", "Fullmetal Alchemist: Brotherhood"),
     ("konosuke uda", "Kōnosuke Uda"), ("Shingeki", "Attack on Titan"), ("deku", "Izuku Midoriya"),
     ("Ed", "Edward Elric")],
)
async def test_aliases_native_and_romanised_names_are_found(pconn: Conn, typed: str, expected: str) -> None:
    names = [n for n, _, _ in await search(pconn, typed, limit=5)]
    assert expected in names, names


async def test_exact_then_prefix_then_popularity_then_name(pconn: Conn) -> None:
    hits = await typeahead(pconn, TypeaheadQuery(q="naruto", limit=10))
    tiers = [h.match for h in hits]
    assert tiers == sorted(tiers, key=["exact", "prefix", "fuzzy"].index)
    exact = [h for h in hits if h.match == "exact"]
    assert {h.entity.entity_type for h in exact} >= {"anime", "manga", "character", "franchise"}
    assert [h.popularity for h in exact] == sorted((h.popularity for h in exact), reverse=True)
    prefix = [h for h in hits if h.match == "prefix"]
    assert any(h.name == "Naruto Shippuden" for h in prefix)
    for a, b in itertools.pairwise(prefix):
        assert (a.popularity, b.name.lower()) >= (b.popularity, a.name.lower())


async def test_types_and_limit_are_respected(pconn: Conn) -> None:
    hits = await typeahead(pconn, TypeaheadQuery(q="one", types=["anime", "manga"], limit=3))
    assert len(hits) == 3 and {h.entity.entity_type for h in hits} <= {"anime", "manga"}


@pytest.mark.parametrize("q", ["", " ", "x" * 101])
def test_bad_typeahead_input_is_rejected(q: str) -> None:
    with pytest.raises(ValidationError):
        TypeaheadQuery(q=q)
    with pytest.raises(ValidationError):
        TypeaheadQuery(q="luffy", limit=0)
    with pytest.raises(ValidationError):
        TypeaheadQuery.model_validate({"q": "luffy", "types": ["users"]})


# -- Qdrant and hybrid -----------------------------------------------------------------------------

async def test_fetch_by_id_needs_no_embedding(vector: QdrantExecutor) -> None:
    ids = [eid("anime", "one-piece"), eid("anime", "death-note")]
    r = await vector.execute(SearchIntent(rationale="t", entity_type="anime", filters=SearchFilters(id=ids)))
    assert [row["id"] for row in r.raw_data] == ids and r.count == 2
    assert "One Piece (anime, 1999)" in r.summary and f"[id {ids[0]}]" in r.summary


async def test_structured_filters_compile_to_qdrant(vector: QdrantExecutor) -> None:
    r = await vector.execute(SearchIntent(rationale="t", entity_type="anime", query="adventure", limit=20,
                                          filters=SearchFilters(year_min=2010, year_max=2015, format=["tv"])))
    assert r.count > 0 and all(2010 <= row["year"] <= 2015 and row["format"] == "tv" for row in r.raw_data)
    one_piece = eid("anime", "one-piece")
    r = await vector.execute(SearchIntent(rationale="t", entity_type="character", query="navigator", limit=20,
                                          filters=SearchFilters(anime_id=one_piece)))
    assert r.count > 0 and all(one_piece in row["anime_ids"] for row in r.raw_data)
    r = await vector.execute(SearchIntent(rationale="t", entity_type="anime", query="mecha",
                                          filters=SearchFilters(genres=["mecha"])))
    assert r.count > 0 and all("mecha" in row["genres"] for row in r.raw_data)


async def test_zero_results_is_a_result(vector: QdrantExecutor) -> None:
    r = await vector.execute(SearchIntent(rationale="t", entity_type="anime", query="pirates",
                                          filters=SearchFilters(year_min=2090)))
    assert r.count == 0 and r.raw_data == [] and r.summary == "No anime found for 'pirates'."
    r = await vector.execute(SearchIntent(rationale="t", entity_type="anime",
                                          filters=SearchFilters(id=[str(uuid.uuid4())])))
    assert r.count == 0


async def test_hybrid_puts_the_named_entity_first(pool: Pool, vector: QdrantExecutor) -> None:
    hybrid = HybridRetriever(pool, vector)
    for query in ("Luffy", "Lufy", "Straw Hat Luffy"):
        r = await hybrid.execute(SearchIntent(rationale="t", entity_type="character", query=query, limit=5))
        assert r.raw_data[0]["name"] == "Monkey D. Luffy", query
        assert "name" in r.raw_data[0]["matched_by"]
    # filters apply to the lexical side too: Naruto (2002) is not after 2005
    r = await hybrid.execute(SearchIntent(rationale="t", entity_type="anime", query="Naruto", limit=5,
                                          filters=SearchFilters(year_min=2005)))
    assert r.count and eid("anime", "naruto") not in [row["id"] for row in r.raw_data]
    assert all(row["year"] >= 2005 for row in r.raw_data)


@pytest.mark.parametrize(("described", "entity_type", "expected"), [
    ("whats the show where a student finds a notebook and anyone whose name he writes in it dies", "anime",
     "death-note"),
    ("an anime about an elf mage who outlives the hero's party and travels after his funeral", "anime",
     "frieren-beyond-journeys-end"),
    ("the manga about a boy who wants to become king of the pirates", "manga", "one-piece-manga"),
])
async def test_prose_search_finds_a_work_by_its_story(pconn: Conn, described: str, entity_type: str,
                                                      expected: str) -> None:
    hits = await prose_search(pconn, described, entity_type, limit=5)
    assert hits and hits[0].id == eid(entity_type, expected), hits
    assert len(hits[0].words) >= 3
    # the rest trail far behind (entries of the same franchise share its description's words: equal scores)
    assert all(2 * h.score < hits[0].score for h in hits if h.score < hits[0].score), hits


async def test_a_characters_prose_holds_the_details_of_the_relations_told_of_it(pconn: Conn) -> None:
    """L's relation to Watari says "his handler", a word Watari's own description never uses: it is his prose too,
    beside L's name."""
    hits = await prose_search(pconn, "who is L's handler", "character", limit=5)
    assert hits and hits[0].id == eid("character", "watari-death-note"), hits
    assert set(hits[0].words) == {"handler", "l"}
    # Rukia's relation to Byakuya ("adoptive older brother") is his, not hers
    hits = await prose_search(pconn, "adoptive older brother of Rukia Kuchiki", "character", limit=3)
    assert hits[0].id == eid("character", "byakuya-kuchiki"), hits


@pytest.mark.parametrize("words", ["jojo's bizarre adventure part 5", "makoto shinkai films", "the", "", "'; drop"])
async def test_prose_search_needs_two_shared_words(pconn: Conn, words: str) -> None:
    assert await prose_search(pconn, words, "anime") == []
    assert await prose_search(pconn, "a student finds a notebook", "studio") == []  # studios have no prose


async def test_a_description_fuses_meaning_with_the_synopsis_words(pool: Pool,
                                                                  vector: QdrantExecutor) -> None:
    hybrid = HybridRetriever(pool, vector)
    r = await hybrid.execute(SearchIntent(rationale="t", entity_type="anime", match="semantic", limit=5,
                                          query="bounty hunters on a spaceship in 2071"))
    top = r.raw_data[0]
    assert top["id"] == eid("anime", "cowboy-bebop") and top["matched_by"] == ["text", "vector"], top
    assert {"bounti", "hunter", "2071"} <= set(top["text_words"]) and isinstance(top["score"], float)


def test_rrf_fuses_by_rank_with_weights() -> None:
    fused = rrf([[("a", 1.0), ("b", 1.0)], [("b", 1.0), ("c", 1.0)]])
    assert [i for i, _ in fused] == ["b", "a", "c"]
    assert rrf([[("x", 3.0)], [("y", 1.0)]])[0][0] == "x"


# -- hydration ------------------------------------------------------------------------------------

async def test_hydration_returns_full_records_in_order(pconn: Conn) -> None:
    refs = [EntityRef(entity_type="character", id=eid("character", "nami")),
            EntityRef(entity_type="anime", id=eid("anime", "one-piece")),
            EntityRef(entity_type="anime", id=str(uuid.uuid4())),
            EntityRef(entity_type="manga", id=eid("manga", "one-piece-manga"))]
    records = await hydrate(pconn, refs)
    assert [r["name"] for r in records] == ["Nami", "One Piece", "One Piece"]
    assert records[1]["episode_count"] is None and records[1]["studios"] == ["Toei Animation"]
    assert records[2]["authors"] == ["Eiichiro Oda (story_and_art)"]
    with pytest.raises(ValueError, match="at most 500"):
        await hydrate(pconn, refs * 200)
