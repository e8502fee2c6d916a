"""Entity linking against the demo catalog's own name index (migration 0008), in real PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest

from agentic_rag.catalog.ingest import IngestReport
from agentic_rag.protocol import EntityLinks
from agentic_rag.storage.sql import Conn
from agentic_rag.understanding.linker import MAX_TOKENS, link

pytestmark = pytest.mark.integration


async def _link(conn: Conn, question: str) -> EntityLinks:
    return await link(conn, question)


def _spans(links: EntityLinks) -> list[str]:
    return [m.text for m in links.mentions]


def _top(links: EntityLinks, i: int = 0, entity_type: str | None = None) -> tuple[str, str]:
    m = links.mentions[i]
    c = next(c for c in m.candidates if entity_type is None or c.entity.entity_type == entity_type)
    return c.name, c.match


async def test_a_name_is_found_inside_chatter_in_any_case(demo: IngestReport, conn: Any) -> None:
    links = await _link(conn, "so um, which studio animated COWBOY BEBOP?? thanks!")
    assert _spans(links) == ["COWBOY BEBOP"]
    assert _top(links, 0, "anime") == ("Cowboy Bebop", "exact")


async def test_aliases_and_possessives(demo: IngestReport, conn: Any) -> None:
    links = await _link(conn, "luffy's brother")
    assert _spans(links) == ["luffy"]  # the possessive 's is not part of the name
    assert _top(links) == ("Monkey D. Luffy", "alias")


async def test_one_typo_in_any_word_of_a_name(demo: IngestReport, conn: Any) -> None:
    for question, name in (("how many episodes does naruto shipuden have", "Naruto Shippuden"),
                           ("who is lufy", "Monkey D. Luffy"),
                           ("eren yaeger's brother", "Eren Yeager"),
                           ("fullmetal alchemist brotherhod studio", "Fullmetal Alchemist: Brotherhood")):
        links = await _link(conn, question)
        assert [c.name for c in links.mentions[0].candidates][:1] == [name], question
        assert links.mentions[0].candidates[0].match == "typo"


async def test_an_english_word_is_never_read_as_a_typo_of_a_name(demo: IngestReport, conn: Any) -> None:
    # "powers" is one edit from the character Power, "main" from Mai: both are words, not typos
    links = await _link(conn, "what are Satoru Gojo's powers? who are the main characters?")
    assert _spans(links) == ["Satoru Gojo"]


async def test_person_and_character_names_in_either_order(demo: IngestReport, conn: Any) -> None:
    links = await _link(conn, "how is yeager zeke related to eren?")
    assert _top(links, 0) == ("Zeke Yeager", "reordered")
    # a title's words are not reordered: "Note Death" is no anime
    assert not (await _link(conn, "note death studio")).mentions


async def test_the_longest_name_wins_and_overlapping_shorter_ones_are_dropped(demo: IngestReport, conn: Any) -> None:
    links = await _link(conn, "is naruto shippuden longer than naruto")
    assert _spans(links) == ["naruto shippuden", "naruto"]
    assert _top(links, 0, "anime")[0] == "Naruto Shippuden"
    # the bare name keeps every reading, for the reader and for clarification
    assert {c.entity.entity_type for c in links.mentions[1].candidates} >= {"anime", "manga", "character"}


async def test_two_entities_in_one_question_with_punctuation_in_names(demo: IngestReport, conn: Any) -> None:
    links = await _link(conn, "frieren beyond journeys end vs spy x family - which has more episodes")
    assert [m.candidates[0].name for m in links.mentions] == ["Frieren: Beyond Journey's End", "Spy x Family"]


async def test_question_words_alone_are_never_names(demo: IngestReport, conn: Any) -> None:
    assert not (await _link(conn, "who is the main character of the first season?")).mentions
    assert not (await _link(conn, "")).mentions
    assert not (await _link(conn, "?!? ...")).mentions
    # ONE (One-Punch Man's creator) only when written as a name
    assert _spans(await _link(conn, "did ONE draw it")) == ["ONE"]
    assert not (await _link(conn, "which one has more episodes")).mentions


async def test_a_name_made_of_stop_words_is_a_person_s_or_a_character_s(demo: IngestReport, conn: Any) -> None:
    # "All Might", "All For One": characters, in any case; "the last" (The Last: Naruto the Movie's other name) only
    # when typed capitalized, never in "the last season"
    assert _top(await _link(conn, "whats all might's real name")) == ("All Might", "exact")
    assert _top(await _link(conn, "who is All For One")) == ("All For One", "exact")
    assert _spans(await _link(conn, "what did the last season of aot cover")) == ["aot"]
    assert _top(await _link(conn, "is The Last a movie")) == ("The Last: Naruto the Movie", "alias")


async def test_a_subtitle_after_a_dash_links_alone(demo: IngestReport, conn: Any) -> None:
    links = await _link(conn, "how many episodes is the final chapters")
    assert _top(links) == ("Attack on Titan: The Final Season - The Final Chapters", "alias")


async def test_a_name_several_share_asked_of_several_is_each_of_them(demo: IngestReport, conn: Any) -> None:
    both = await _link(conn, "who are the upper rank six demons")
    assert sorted(m.candidates[0].name for m in both.mentions) == ["Daki", "Gyutaro"]
    one = await _link(conn, "who is upper rank six")  # one asked: which of them is a choice to ask about
    assert len(one.mentions) == 1 and len(one.mentions[0].candidates) == 2


async def test_a_name_after_a_contraction_is_no_thing_owned(demo: IngestReport, conn: Any) -> None:
    links = await _link(conn, "what's kokushibo's blood demon art in demon slayer?")
    assert links.unknown == ["kokushibo"]


async def test_a_word_after_same_is_a_noun(demo: IngestReport, conn: Any) -> None:
    assert not (await _link(conn, "same guy as the tv series?")).mentions  # not the character Guy
    assert _top(await _link(conn, "who is guy")) == ("Might Guy", "alias")


async def test_candidates_carry_year_and_format_to_choose_by(demo: IngestReport, conn: Any) -> None:
    links = await _link(conn, "the 2003 fullmetal alchemist anime")
    fma = {c.entity.entity_type: c for c in links.mentions[0].candidates}
    assert fma["anime"].year == 2003 and fma["anime"].format == "tv" and fma["manga"].year == 2001


async def test_long_and_hostile_input_stays_bounded(demo: IngestReport, conn: Any) -> None:
    words = " ".join(["naruto"] * 500)
    links = await _link(conn, words)
    assert len(links.mentions) <= 8
    assert all(m.end <= len(" ".join(["naruto"] * MAX_TOKENS)) for m in links.mentions)
    nasty = "'; DROP TABLE entity_name; -- naruto \x00 %s %(keys)s :keys $1 ルフィ"
    assert "naruto" in [m.text for m in (await _link(conn, nasty)).mentions]


async def test_a_subtitle_alone_names_its_title(demo: IngestReport, conn: Any) -> None:
    links = await _link(conn, "is the greed island anime a tv show or an ova")
    assert _spans(links) == ["greed island"] and _top(links) == ("Hunter x Hunter: Greed Island", "alias")
    # one word after a colon is no name on its own ("the red one" is not One Piece Film: Red)
    assert not (await _link(conn, "the red one")).mentions


async def test_a_season_after_a_name_names_that_season(demo: IngestReport, conn: Any) -> None:
    links = await _link(conn, "MHA s4 - who directed it?")
    assert _spans(links) == ["MHA s4"] and _top(links)[0] == "My Hero Academia Season 4"
    links = await _link(conn, "mob psycho 100 II vs III, which season is longer")
    assert [m.candidates[0].name for m in links.mentions] == ["Mob Psycho 100 II", "Mob Psycho 100 III"]
    # said later in the question, with no other name between: still that name's season (never season 1, which
    # is the name itself, nor a bare number)
    links = await _link(conn, "which my hero academia season comes right before season 5?")
    assert [m.candidates[0].name for m in links.mentions] == ["My Hero Academia", "My Hero Academia Season 5"]
    links = await _link(conn, "mha total eps from season 1 through the final season")
    assert "My Hero Academia Season 1" not in [c.name for m in links.mentions for c in m.candidates]


async def test_a_range_or_list_of_seasons_names_every_season_in_it(demo: IngestReport, conn: Any) -> None:
    aot = ["Attack on Titan", "Attack on Titan Season 2", "Attack on Titan Season 3"]
    for q in ("total eps attack on titan seasons 1-3", "aot seasons 1, 2 and 3 episodes", "aot s1 to s3 total"):
        links = await _link(conn, q)
        assert [m.candidates[0].name for m in links.mentions] == aot, q
    # a range is bounded, and a season the catalog lacks is no mention
    links = await _link(conn, "aot seasons 1-40")
    assert [m.candidates[0].name for m in links.mentions] == ["Attack on Titan"]


async def test_a_word_listed_after_a_title_names_its_sibling_title(demo: IngestReport, conn: Any) -> None:
    links = await _link(conn, "If I watched Dragon Ball, Z, GT and Super back to back, how many episodes?")
    assert [m.candidates[0].name for m in links.mentions] == [
        "Dragon Ball", "Dragon Ball Z", "Dragon Ball GT", "Dragon Ball Super"]
    links = await _link(conn, "How many episodes did DBZ and GT have combined?")
    assert [m.candidates[0].name for m in links.mentions] == ["Dragon Ball Z", "Dragon Ball GT"]
    # only a word listed right after a title, and only a title the catalog has
    links = await _link(conn, "naruto and sasuke, how are they related")
    assert "Naruto Sasuke" not in {c.name for m in links.mentions for c in m.candidates}
    assert len((await _link(conn, "dragon ball gt is it good")).mentions) == 1


async def test_a_long_message_is_read_from_the_sentences_that_ask(demo: IngestReport, conn: Any) -> None:
    story = " ".join(["My nephew has been talking about it all summer and I cannot follow any of it."] * 4)
    links = await _link(conn, f"{story} Could you tell me which studio animated Chainsaw Man?")
    assert _spans(links) == ["Chainsaw Man"]  # past the first forty words, found because it is asked


async def test_a_rare_word_of_a_longer_name_links_to_it(demo: IngestReport, conn: Any) -> None:
    links = await _link(conn, "finished shippuden, what do i watch next")
    assert _spans(links) == ["shippuden"] and _top(links) == ("Naruto Shippuden", "partial")
    # ... unless it is the kind asked for ("which hokage": his rank, not "The Seventh Hokage and the Scarlet Spring")
    links = await _link(conn, "which hokage was minato")
    assert _spans(links) == ["minato"]
    links = await _link(conn, "bebop ep count?")  # a word of one franchise's names, whatever their number
    assert _spans(links) == ["bebop"] and _top(links) == ("Cowboy Bebop", "partial")
    links = await _link(conn, "MADHOUSE OLDER THAN PIERROT?")
    assert [m.candidates[0].name for m in links.mentions] == ["Madhouse", "Studio Pierrot"]
    # never a word of a name the catalog lacks ("Makoto Shinkai"), nor a common word
    assert not (await _link(conn, "What has Makoto Shinkai directed?")).mentions
    assert not (await _link(conn, "mushoku tensei studio?")).mentions


async def test_a_name_never_spans_a_separator_it_does_not_have(demo: IngestReport, conn: Any) -> None:
    links = await _link(conn, "naruto + shippuden eps combined")
    assert _spans(links) == ["naruto", "shippuden"]
    links = await _link(conn, "Naruto and Shippuden together, how many eps")  # "and" stands only for a name's "&"
    assert _spans(links) == ["Naruto", "Shippuden"]
    links = await _link(conn, "rock lee and his ninja pals studio")
    assert _top(links)[0] == "Naruto Spin-Off: Rock Lee & His Ninja Pals"
    links = await _link(conn, "death & rebirth year")  # the name has its "&"
    assert _top(links)[0] == "Neon Genesis Evangelion: Death & Rebirth"
    links = await _link(conn, "hunter x hunter 1999 vs 2011 which one has more episodes")
    assert [m.candidates[0].name for m in links.mentions] == ["Hunter x Hunter (1999)", "Hunter x Hunter (2011)"]


async def test_spelled_numbers_and_names_typed_without_spaces(demo: IngestReport, conn: Any) -> None:
    cases = {
        "one punch man season two, which studio?": "One-Punch Man Season 2",
        "after mob psycho 100 two, what is next": "Mob Psycho 100 II",
        "evangelion one point oh you are not alone, which studio": "Evangelion: 1.0 You Are (Not) Alone",
        "jujutsu kaisen zero the movie, who is in it": "Jujutsu Kaisen 0",
        "uh chainsawman anime, how much episodes": "Chainsaw Man",
        "spyxfamily studio": "Spy x Family",
    }
    for q, name in cases.items():
        links = await _link(conn, q)
        assert [m.candidates[0].name for m in links.mentions] == [name], q


async def test_no_match_questions_link_nothing(demo: IngestReport, conn: Any) -> None:
    # short words alone are no typo of a name unless a letter was dropped; a hyphen joins a word to another name
    for q in ("jojo's bizarre adventure part 5 anime year", "how many episodes does seriall experiments lain have?",
              "who is kaiu shirai?", "kaguya-sama love is war studio"):
        assert not (await _link(conn, q)).mentions, q


async def test_a_season_named_before_the_name(demo: IngestReport, conn: Any) -> None:
    for q, name in (("who animated the second season of one punch man", "One-Punch Man Season 2"),
                    ("who directed season 2 of mob psycho 100", "Mob Psycho 100 II"),
                    ("who scored the 2011 hunter x hunter", "Hunter x Hunter (2011)")):
        links = await _link(conn, q)
        assert [m.candidates[0].name for m in links.mentions] == [name], q


async def test_every_season_said_later_names_that_season(demo: IngestReport, conn: Any) -> None:
    """Seasons said in later parts of a message, each its name's season: "season II", a roman numeral in
    capitals, "the 1999 one", and a second one after a name that already says its season."""
    cases = {
        "mob psycho questions: how long was season II, and who made III?":
            ["Mob Psycho 100", "Mob Psycho 100 II", "Mob Psycho 100 III"],
        "how long is the 1999 hunter x hunter, and who made the 2011 one?":
            ["Hunter x Hunter (1999)", "Hunter x Hunter (2011)"],
        "who made one punch man season 1, and who made season 2?": ["One-Punch Man", "One-Punch Man Season 2"],
        # a list of a franchise's works with the studio between, a year said with its noun or after a possessive
        "which hunter x hunter anime wasn't by Madhouse: the 1999 tv series or Phantom Rouge?":
            ["Hunter x Hunter", "Madhouse", "Hunter x Hunter (1999)", "Hunter x Hunter: Phantom Rouge"],
        "is the hunter x hunter manga done, and how long was Madhouse's 2011 series?":
            ["Hunter x Hunter", "Madhouse", "Hunter x Hunter (2011)"],
    }
    for q, names in cases.items():
        links = await _link(conn, q)
        assert [m.candidates[0].name for m in links.mentions] == names, q


async def test_a_typo_of_a_person_placed_in_another_franchise_is_a_name_the_catalog_lacks(
        demo: IngestReport, conn: Any) -> None:
    links = await _link(conn, "would hakari from jujutsu kaisen beat gojo")
    assert "hakari" not in _spans(links) and links.unknown == ["hakari"]
    # the same typo with no work said beside it is still read as the name it is one letter from
    links = await _link(conn, "who is hikari horaki")
    assert _top(links)[0] == "Hikari Horaki"


async def test_a_part_of_a_title_said_with_the_title_s_possessive_is_that_part(demo: IngestReport, conn: Any) -> None:
    links = await _link(conn, "how many episodes is Demon Slayer's Entertainment District Arc")
    assert [m.candidates[0].name for m in links.mentions] == [
        "Demon Slayer: Kimetsu no Yaiba - Entertainment District Arc"]
    # a person said with a work's 's stays apart: "Naruto's Boruto" may be his son
    links = await _link(conn, "is Naruto's Boruto any good")
    assert len(links.mentions) == 2


async def test_a_one_word_name_closing_a_title_cased_noun_is_not_that_name(demo: IngestReport, conn: Any) -> None:
    links = await _link(conn, "what did Frieren do once the Demon King was gone?")
    assert _spans(links) == ["Frieren"]
    links = await _link(conn, "is King stronger than Genos?")
    assert _spans(links) == ["King", "Genos"]


async def test_a_generic_subtitle_names_no_title_and_a_named_season_starts_a_range(demo: IngestReport,
                                                                                   conn: Any) -> None:
    # "the Final Season" is Attack on Titan's subtitle, but any series has one: here it is MHA's
    links = await _link(conn, "My Hero Academia from season 1 through the Final Season, how many episodes")
    assert all("Attack on Titan" not in c.name for m in links.mentions for c in m.candidates)
    # "attack on titan season one" is an alias of the first season; "to three" continues the range
    links = await _link(conn, "attack on titan season one to three, total episodes")
    assert [m.candidates[-1].name for m in links.mentions][-1] == "Attack on Titan Season 3"
    assert {c.name for m in links.mentions for c in m.candidates} >= {
        "Attack on Titan", "Attack on Titan Season 2", "Attack on Titan Season 3"}


async def test_the_x_movie_names_the_films_of_xs_franchise(demo: IngestReport, conn: Any) -> None:
    links = await _link(conn, "characters in the cowboy bebop movie")
    assert _spans(links) == ["cowboy bebop movie"] and _top(links)[0] == "Cowboy Bebop: The Movie"
    links = await _link(conn, "who directed the one piece movie")  # five films: the reader is asked which
    assert len(links.mentions[0].candidates) == 5 and {c.format for c in links.mentions[0].candidates} == {"movie"}
    links = await _link(conn, "we watched the demon slayer train movie")  # a word of one film's title picks it
    assert _spans(links) == ["demon slayer train movie"]
    assert [c.name for c in links.mentions[0].candidates] == ["Demon Slayer: Kimetsu no Yaiba - The Movie: Mugen Train"]
    links = await _link(conn, "is there a frieren movie")  # no film: the name stays what it is
    assert _top(links)[0].startswith("Frieren")


async def test_which_x_movie_asks_among_the_films_and_a_generic_subtitle_needs_its_title(
        demo: IngestReport, conn: Any) -> None:
    links = await _link(conn, "mari illustrious makinami, which evangelion movie she show up")
    assert all(c.format != "movie" for m in links.mentions for c in m.candidates)
    links = await _link(conn, "Attack on Titan switched studios. Who directed The Final Season?")
    assert any(c.name == "Attack on Titan: The Final Season" for m in links.mentions for c in m.candidates)


async def test_a_character_followed_by_a_work_word_names_the_work_titled_after_them(demo: IngestReport,
                                                                                   conn: Any) -> None:
    links = await _link(conn, "The goofy Rock Lee spin-off anime from 2012 adapts which manga?")
    assert _top(links)[0] == "Naruto Spin-Off: Rock Lee & His Ninja Pals"
    links = await _link(conn, "what anime is rock lee in")  # no work word after the name: the character
    assert _top(links)[0] == "Rock Lee"


async def test_a_title_made_of_cue_words_still_links(demo: IngestReport, conn: Any) -> None:
    # "heroes" alone asks for the cast; "two heroes" is a film's subtitle
    links = await _link(conn, "two heroes characters")
    assert _spans(links) == ["two heroes"]
    assert _top(links) == ("My Hero Academia: Two Heroes", "alias")
    assert _spans(await _link(conn, "who are the heroes of one piece")) == ["one piece"]


async def test_a_short_name_and_more_of_a_title_name_that_title(demo: IngestReport, conn: Any) -> None:
    # "eva" is Neon Genesis Evangelion, and "Evangelion 3.0" is another name of the third Rebuild film
    links = await _link(conn, "eva 3.0 prequel which film")
    assert _spans(links) == ["eva 3.0"]
    assert _top(links)[0] == "Evangelion: 3.0 You Can (Not) Redo"
    links = await _link(conn, "jjk0 movie cast")  # a number typed onto a short name
    assert _spans(links) == ["jjk0"]
    assert _top(links, 0, "anime")[0] == "Jujutsu Kaisen 0"
    links = await _link(conn, "eva staff")  # nothing more: the short name alone
    assert _top(links)[0] == "Neon Genesis Evangelion"


async def test_two_mentions_side_by_side_that_name_one_work_are_one(demo: IngestReport, conn: Any) -> None:
    links = await _link(conn, "diamonddust rebellion bleach movie")  # a film both can mean
    assert _spans(links) == ["diamonddust rebellion bleach movie"]
    assert _top(links)[0] == "Bleach: The DiamondDust Rebellion"
    links = await _link(conn, "relight 2 death note chars")  # a title holding the other name, a number choosing
    assert _spans(links) == ["relight 2 death note"]
    assert [c.name for c in links.mentions[0].candidates] == ["Death Note Relight 2: L's Successors"]
    # names listed, or a season number of its own, stay apart
    assert len((await _link(conn, "naruto + shippuden eps combined")).mentions) == 2
    assert len((await _link(conn, "naruto, naruto shippuden")).mentions) == 2
    assert _spans(await _link(conn, "aot seasons 1 2 and 3")) == ["aot seasons 1", "2", "3"]


async def test_a_name_typed_with_its_spaces_elsewhere(demo: IngestReport, conn: Any) -> None:
    for question, name in (("full metal alchemist the manga ran in what magazine", "Fullmetal Alchemist"),
                           ("dragonball gt the main cast is who", "Dragon Ball GT"),
                           ("who animated full metal alchemist brotherhood", "Fullmetal Alchemist: Brotherhood")):
        links = await _link(conn, question)
        assert len(links.mentions) == 1, question
        assert name in [c.name for c in links.mentions[0].candidates], question
        assert links.mentions[0].candidates[0].match == "typo"


async def test_a_rare_word_of_a_name_misspelt_alone(demo: IngestReport, conn: Any) -> None:
    links = await _link(conn, "naruto or shipuden which one has more episodes")
    assert _spans(links) == ["naruto", "shipuden"]
    assert _top(links, 1) == ("Naruto Shippuden", "partial")


async def test_a_word_after_a_name_is_the_noun_it_qualifies(demo: IngestReport, conn: Any) -> None:
    # "guy" is an alias of Might Guy, but here the noun "the flame hashira" qualifies
    links = await _link(conn, "rengoku the flame hashira guy, who directed the anime hes in")
    assert "guy" not in _spans(links)
    links = await _link(conn, "in death note theres that tall spooky guy who eats apples ryuk right, who is he")
    assert _spans(links) == ["death note", "ryuk"]
    links = await _link(conn, "is rock lee a student of guy")
    assert _spans(links) == ["rock lee", "guy"]
    links = await _link(conn, "the little dog on the bebop, ein, what breed is he")  # a phrase ends at its comma
    assert _spans(links) == ["bebop", "ein"]


async def test_a_name_the_catalog_lacks_is_reported_as_typed(demo: IngestReport, conn: Any) -> None:
    found = await _link(conn, "madara and Hashirama Senju founded the hidden leaf together right?")
    assert found.unknown == ["Hashirama Senju"]
    found = await _link(conn, "is Kokushibo stronger than akaza?")
    assert _spans(found) == ["akaza"] and found.unknown == ["Kokushibo"]
    # a question that links nothing: a word typed in lower case counts; a described thing does not
    assert (await _link(conn, "berserk how many episodes")).unknown == ["berserk"]
    assert (await _link(conn, "the anime with a corgi on a spaceship")).unknown is None
    # English the vocabulary lacks, chat, acronyms and typos of catalog words are no names
    for q in ("rewatching fmab rn, whats the backstory of ed", "KNY season 2 incl movie", "zoro vs sanji lol isnt it",
              "naruto shipuden how many eps"):
        assert (await _link(conn, q)).unknown is None, q


async def test_a_proper_name_the_catalog_neither_names_nor_tells_of_is_reported(demo: IngestReport, conn: Any) -> None:
    """Capitalised words inside a sentence that no mention covers are a name the catalog lacks, English or not
    ("Sailor Moon"), unless the catalog's prose tells of them ("the Demon King" of Frieren's synopsis)."""
    found = await _link(conn, "Was Sailor Moon made by the same studio that animated Dragon Ball?")
    assert found.unknown == ["Sailor Moon"] and _spans(found) == ["Dragon Ball"]
    found = await _link(conn, "Which is longer, Naruto or Fairy Tail? Episode counts please.")
    assert found.unknown == ["Fairy Tail"]
    found = await _link(conn, "What made Frieren set out on a new journey after the Demon King was beaten?")
    assert found.unknown is None
    found = await _link(conn, "List the Weekly Shōnen Jump series that wrapped up in 2020 or later.")
    assert found.unknown is None  # a magazine the catalog's works ran in
    assert (await _link(conn, "who directed the tokyo ghoul anime?")).unknown == ["tokyo ghoul"]


async def test_a_year_said_of_a_franchise_s_other_title_and_a_capital_letter_alone(
        demo: IngestReport, conn: Any) -> None:
    found = await _link(conn, "How many episodes does Fullmetal Alchemist: Brotherhood have? And how many did the "
                              "earlier 2003 series have?")
    assert _spans(found)[-1] == "2003 series" and _top(found, 1) == ("Fullmetal Alchemist", "exact")
    found = await _link(conn, "who is Aizawa and how is he connected to L?")
    assert _spans(found) == ["Aizawa", "L"] and _top(found, 1) == ("L Lawliet", "alias")
    assert _spans(await _link(conn, "I think a show like that is good")) == []  # "I", "a": no names


async def test_a_part_said_later_may_be_a_manga_s_and_a_season_is_an_anime_s(demo: IngestReport, conn: Any) -> None:
    found = await _link(conn, "How many volumes did part 1 of the Chainsaw Man manga run, and where is Part 2 "
                              "being serialized?")
    assert _spans(found)[-1] == "Part 2" and _top(found, len(found.mentions) - 1)[0] == "Chainsaw Man Part 2"
    found = await _link(conn, "aot season 1 vs season 2 ep counts")  # season 1 is the anime, never the manga
    assert all(c.entity.entity_type == "anime" for m in found.mentions for c in m.candidates[:1])


async def test_season_1_set_against_another_season_is_the_first_title(demo: IngestReport, conn: Any) -> None:
    found = await _link(conn, "how many episodes were in spy x family season 1 vs season 2")
    assert [c.name for m in found.mentions for c in m.candidates[:1]] == ["Spy x Family", "Spy x Family Season 2"]
    # ... and said after "than": the other side of a comparison
    found = await _link(conn, "was opm season 2 done by a different studio than s1?")
    assert [c.name for m in found.mentions for c in m.candidates[:1]] == ["One-Punch Man Season 2", "One-Punch Man"]


async def test_an_english_word_after_a_possessive_is_what_the_name_has(demo: IngestReport, conn: Any) -> None:
    # "power" is what Anya has (not the character Power); "what's" is "what is", no possessive
    found = await _link(conn, "what's anya's power in spy x family")
    assert _spans(found) == ["anya", "spy x family"]


async def test_a_typo_placed_in_another_franchises_work_anywhere_is_a_name_the_catalog_lacks(
        demo: IngestReport, conn: Any) -> None:
    found = await _link(conn, "which breathing style does Yoriichi use in Demon Slayer?")
    assert _spans(found) == ["Demon Slayer"] and found.unknown == ["Yoriichi"]


async def test_a_family_beside_the_characters_asked_about_is_no_name_to_choose(demo: IngestReport, conn: Any) -> None:
    found = await _link(conn, "Why does Mikasa live with the Yeager family?")
    assert _spans(found) == ["Mikasa"]
    found = await _link(conn, "who is in the Zoldyck family?")  # asked about alone, it stays
    assert _spans(found) == ["Zoldyck"]


async def test_a_short_word_saying_what_someone_is_is_no_title(demo: IngestReport, conn: Any) -> None:
    """"he's basically op": slang for what he is, not One Piece; "is op finished" still names it."""
    found = await _link(conn, "in mob psycho, why does mob hold back his powers when he's basically op?")
    assert "op" not in _spans(found)
    assert _spans(await _link(conn, "is op finished")) == ["op"]
