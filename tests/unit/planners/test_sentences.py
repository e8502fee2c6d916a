"""Answers a person would write: the sentence forms of the heuristic's findings."""

from __future__ import annotations

from agentic_rag.planners.heuristic.sentences import (
    attribute_sentence,
    compare_sentence,
    fact_sentence,
    hop_sentence,
    join,
    path_sentence,
)
from agentic_rag.protocol import EntityRef
from agentic_rag.protocol.reading import Hop
from agentic_rag.protocol.roles import CardEntity


def ent(entity_type: str, label: str, n: int) -> CardEntity:
    return CardEntity(ref=EntityRef(entity_type=entity_type, id=f"00000000-0000-4000-8000-{n:012d}"),  # type: ignore[arg-type]
                      name=label)


def test_lists_read_as_prose() -> None:
    assert join([]) == "nothing"
    assert join(["A"]) == "A" and join(["A", "B"]) == "A and B" and join(["A", "B", "C"]) == "A, B and C"
    assert join([str(i) for i in range(15)], limit=3) == "0, 1, 2 and 12 more"


def test_hops_as_sentences_with_staff_by_role() -> None:
    note = ent("anime", "Death Note (anime, 2006)", 1)
    araki, ohba = ent("person", "Tetsurō Araki (person)", 2), ent("person", "Tsugumi Ohba (person)", 3)
    directors = Hop(("staff",), ("director", "chief_director"))
    text = hop_sentence(directors, [note], [araki], {araki.ref.id: "director"})
    assert text == "Death Note was directed by Tetsurō Araki."
    authors = Hop(("staff",), ("story", "art"))
    obata = ent("person", "Takeshi Obata (person)", 4)
    text = hop_sentence(authors, [note], [ohba, obata], {ohba.ref.id: "story", obata.ref.id: "art"})
    assert text == "Death Note was written by Tsugumi Ohba; it was drawn by Takeshi Obata."
    luffy = ent("character", "Monkey D. Luffy (character)", 5)
    works = [ent("anime", "One Piece (anime, 1999)", 6), ent("anime", "One Piece Film: Red (anime, 2022)", 7)]
    assert hop_sentence(Hop(("appears_in",)), [luffy], works, {}) == \
        "Monkey D. Luffy appears in One Piece (1999) and One Piece Film: Red (2022)."


def test_values_and_comparisons_say_which_is_more_or_first() -> None:
    assert attribute_sentence("episode_count", {"name": "Death Note", "episode_count": 37}, "anime") == \
        "Death Note has 37 episodes."
    assert attribute_sentence("year", {"name": "Bones", "year": 1998}, "studio") == "Bones was founded in 1998."
    assert attribute_sentence("volumes", {"name": "Bleach", "volumes": None}, "manga") == \
        "The catalog does not record the volumes of Bleach."
    assert compare_sentence("episode_count", "Naruto", "Bleach", 220, 366) == \
        "Naruto has 220 episodes and Bleach has 366, so Bleach has 146 more."
    assert compare_sentence("year", "Cowboy Bebop", "Evangelion", 1998, 1995).endswith(
        "so Evangelion came first, by 3 years.")
    assert compare_sentence("anime", "Jiren", "Beerus", ["Dragon Ball Super"], ["Super", "Battle of Gods"]) \
        == "Jiren appears in Dragon Ball Super; Beerus in Super and Battle of Gods."


def test_paths_and_people_facts() -> None:
    assert path_sentence(["Naruto", "Studio Pierrot", "Bleach"], ["animated_by", "animated"]) == \
        "Naruto was animated by Studio Pierrot, which animated Bleach."
    assert fact_sentence("Pan is Son Goku's granddaughter (family)") == "Pan is Son Goku's granddaughter."
    assert fact_sentence("One Piece is Monkey D. Luffy's main (appears_in)") is None


def test_a_lookup_says_the_indexed_record_in_its_own_words() -> None:
    from agentic_rag.planners.heuristic.writer import _record_parts

    text = ("Death Note. DEATH NOTE, デスノート. TV anime from 2006. Studio: Madhouse. Genres: mystery, dark_fantasy. "
            "Light Yagami finds a notebook. L hunts him")
    row = {"studios": ["Madhouse"], "genres": ["mystery", "dark_fantasy"], "native_names": ["デスノート"],
           "snippet": text, "about_at": text.index("Light")}
    said, genres, names, story = _record_parts(row, "anime")
    assert said == ["by Madhouse"] and genres == "mystery, dark fantasy" and names == ["デスノート"]
    assert story == "Light Yagami finds a notebook. L hunts him."  # a cut description ends as a sentence
    row = {"works": ["Naruto", "Naruto Shippuden"], "snippet": "Rock Lee. Lee. Character in Naruto, Naruto Shippuden"}
    assert _record_parts(row, "character") == (["in Naruto and Naruto Shippuden"], "", [], "")
    studio = {"founded": 1972, "works": ["Naruto"], "snippet": "Studio Pierrot. Animation studio, founded 1972"}
    assert _record_parts(studio, "studio")[0] == ["founded in 1972", "behind Naruto"]
    # a row that is no search hit (a query's row) is not a document: nothing is said from it
    assert _record_parts({"genres": ["action"], "magazine": "Weekly Shōnen Jump"}, "manga") == ([], "", [], "")


def test_a_run_of_seasons_is_told_in_the_order_they_aired() -> None:
    # a season added to the run by name ("final season included") is listed where it aired, not where it was added
    first = ent("anime", "My Hero Academia (anime, 2016)", 41)
    level = [first, ent("anime", "My Hero Academia: Final Season (anime, 2025)", 42),
             ent("anime", "My Hero Academia Season 2 (anime, 2017)", 43)]
    text = hop_sentence(Hop(("sequel",), kind="k_hop", include_start=True), [first], level, {})
    assert text == ("In order, the series runs My Hero Academia (2016), My Hero Academia Season 2 (2017) and "
                    "My Hero Academia: Final Season (2025).")


def test_a_compared_field_the_catalog_lacks_is_said_missing_never_unknown() -> None:
    text = compare_sentence("end_year", "Zorb", "Zorb: The Return", 2011, None)
    assert text == "Zorb ended in 2011. The catalog does not record an end year for Zorb: The Return."
    text = compare_sentence("episode_count", "Zorb", "Qux", None, None)
    assert text == "The catalog does not record the episode count of Zorb and Qux."
    assert "unknown" not in compare_sentence("volumes", "Zorb", "Qux", 12, None)


def test_kin_found_by_a_family_word_that_groups_them() -> None:
    naruto = ent("character", "Naruto Uzumaki (character)", 11)
    minato = ent("character", "Minato Namikaze (character)", 12)
    kushina = ent("character", "Kushina Uzumaki (character)", 13)
    parents = Hop(("family", "romantic"), ("parent", "father", "mother"))
    details = {minato.ref.id: "father", kushina.ref.id: "mother"}
    assert hop_sentence(parents, [naruto], [minato, kushina], details) == \
        "Naruto Uzumaki's parents are Minato Namikaze and Kushina Uzumaki."
    goku, gohan, goten = (ent("character", f"{n} (character)", i) for i, n in
                          ((14, "Son Goku"), (15, "Son Gohan"), (16, "Son Goten")))
    kids = Hop(("family", "romantic"), ("child", "son", "daughter"))
    assert hop_sentence(kids, [goku], [gohan, goten], {gohan.ref.id: "son", goten.ref.id: "son"}) == \
        "Son Goku's sons are Son Gohan and Son Goten."  # all of one kin: that kin's word
