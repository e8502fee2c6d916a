"""Quotes chosen by the sentence encoder (the real MiniLM): the sentence of a description that says why, and a
fetch by id that carries each record's nearest sentences."""

from __future__ import annotations

import pytest

from agentic_rag.models.embeddings import Embedder
from agentic_rag.protocol import SearchFilters, SearchIntent
from agentic_rag.retrievers.quotes import quote, sentences
from agentic_rag.retrievers.vector import QdrantExecutor
from tests.support.helpers import eid

pytestmark = pytest.mark.integration

STORY = ("Born in a fishing village in the north, she learned to sail before she could walk. "
         "She lost her left eye when a harpoon line snapped during a storm at sea. "
         "Later she opened a bakery in the capital with her two brothers.")


def test_sentences_do_not_break_after_an_initial() -> None:
    assert sentences("Son of Gol D. Roger and Luffy's sworn brother. Commander of the second division.") == [
        "Son of Gol D. Roger and Luffy's sworn brother.", "Commander of the second division."]


@pytest.mark.parametrize(("question", "why"), [
    ("why does she only have one eye?", "harpoon line"),
    ("how did she end up running a bakery", "bakery"),
    ("where did she grow up", "fishing village"),
])
async def test_the_sentence_nearest_the_question_is_the_one_that_says_why(embedder: Embedder, question: str,
                                                                           why: str) -> None:
    [said] = await quote(embedder.aembed, question, [STORY])
    assert why in said[0][0]
    assert said[0][1] > said[1][1]  # ranked by similarity, nearest first


@pytest.mark.usefixtures("demo")  # the demo catalog loaded into Qdrant
async def test_a_fetch_by_id_quotes_each_records_nearest_sentence(vector: QdrantExecutor) -> None:
    alphonse, edward = eid("character", "alphonse-elric"), eid("character", "edward-elric")
    intent = SearchIntent(rationale="quote", entity_type="character", query="what happened to his body, why armor?",
                          filters=SearchFilters(id=[alphonse, edward]), limit=2, quote=True)
    rows = {r["id"]: r for r in (await vector.execute(intent)).raw_data}
    assert "suit of armor" in rows[alphonse]["quotes"][0]["text"]
    assert all(0 < q["score"] <= 1 for r in rows.values() for q in r["quotes"])
    plain = await vector.execute(intent.model_copy(update={"quote": False}))
    assert all("quotes" not in r for r in plain.raw_data)  # a fetch embeds nothing unless it quotes


@pytest.mark.usefixtures("demo")
async def test_the_whole_description_is_quoted_past_a_long_head(vector: QdrantExecutor) -> None:
    """Nezuko's point text opens with her six works: the row's snippet (at most 400 characters) cuts that head, not
    her description, and the quote is the description's whole sentence, Muzan included (nor does the whole text, or
    any other internal field, stay on the row)."""
    nezuko = eid("character", "nezuko-kamado")
    intent = SearchIntent(rationale="quote", entity_type="character", query="how come nezuko became a demon?",
                          filters=SearchFilters(id=[nezuko]), limit=1, quote=True)
    (row,) = (await vector.execute(intent)).raw_data
    assert len(row["snippet"]) <= 400 and row["snippet"][row["about_at"]:].startswith("Tanjiro's younger sister")
    assert "turned into a demon by Muzan" in row["snippet"]
    assert "turned into a demon by Muzan" in row["quotes"][0]["text"]
    assert not any(k.startswith("_") for k in row)
