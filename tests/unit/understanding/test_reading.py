"""Reading a question from its links: cue words anywhere, hops composed by entity type, filters with ranges.

No database: the links a linker would return are written here, so each test shows the reading alone.
"""

from __future__ import annotations

import itertools

import pytest

from agentic_rag.protocol import AskHint, EntityLinks, EntityRef, LinkCandidate, LinkedMention
from agentic_rag.understanding.asks import confident, masked
from agentic_rag.understanding.reading import open_types, read
from agentic_rag.understanding.reading.focus import _focus

_ids = itertools.count(1)


def cand(entity_type: str, name: str, match: str = "exact", year: int | None = None) -> LinkCandidate:
    return LinkCandidate(entity=EntityRef(entity_type=entity_type, id=f"00000000-0000-4000-8000-{next(_ids):012d}"),
                         name=name, matched=name, match=match, year=year)  # type: ignore[arg-type]


def links(question: str, *spans: tuple[str, list[LinkCandidate]], asks: list[AskHint] | None = None) -> EntityLinks:
    mentions = []
    for text, cands in spans:
        start = question.index(text)
        mentions.append(LinkedMention(text=text, start=start, end=start + len(text), candidates=cands))
    return EntityLinks(mentions=mentions, asks=asks or [])


def work(name: str) -> list[LinkCandidate]:
    """A title that names an anime, its manga and its franchise, as most catalog titles do."""
    return [cand("franchise", name), cand("manga", name, year=2001), cand("anime", name, year=2003)]


LUFFY = [cand("character", "Monkey D. Luffy", "alias")]


def hops(a: object) -> list[tuple[str, ...]]:
    return [h.edges for h in a.hops]  # type: ignore[attr-defined]


@pytest.mark.parametrize("question", [
    "which studio animated luffy's show",
    "so um, what studio made the anime luffy is in?? thanks!",
    "luffy - studio?",
    "Tell me the animation studio behind the show with luffy",
])
def test_cue_words_anywhere_and_a_character_is_followed_to_its_anime(question: str) -> None:
    a = read(question, links(question, ("luffy", LUFFY)))
    assert hops(a) == [("appears_in",), ("animated_by",)]
    assert a.mentions == ["luffy"] and a.types["luffy"][0] == "character"


@pytest.mark.parametrize(("question", "kind"), [
    ("which manga is light yagami in", "manga"),
    ("light yagami is in which manga?", "manga"),
    ("which anime is light yagami in", "anime"),
    ("what show is light yagami in", "anime"),
    ("is light yagami in the anime or the manga", "anime"),  # both named: the default reading
])
def test_a_character_s_works_are_of_the_kind_the_question_names(question: str, kind: str) -> None:
    a = read(question, links(question, ("light yagami", [cand("character", "Light Yagami")])))
    assert hops(a) == [("appears_in",)] and a.hops[0].node_types == (kind,)


def test_an_author_of_an_anime_is_the_author_of_its_source_manga() -> None:
    q = "who drew the manga the demon slayer anime is based on"
    a = read(q, links(q, ("demon slayer", work("Demon Slayer"))))
    assert a.types["demon slayer"][0] == "anime"  # the type word next to the name picks the reading
    assert hops(a) == [("adapted_from",), ("staff",)] and "art" in a.hops[-1].roles


def test_without_a_type_word_the_reading_the_relation_needs_is_taken() -> None:
    q = "who wrote death note"
    a = read(q, links(q, ("death note", work("Death Note"))))
    assert a.types["death note"][0] == "manga" and hops(a) == [("staff",)]


def test_possessive_family_words_and_mentors() -> None:
    q = "Boruto's father?"
    boruto = [cand("character", "Boruto Uzumaki", "alias"), cand("anime", "Boruto", "alias")]
    a = read(q, links(q, ("Boruto", boruto)))
    assert hops(a) == [("family", "romantic")] and a.hops[0].roles == ("father",)  # that kin, not the whole family
    q = "who is boruto's dad"  # said as people say it, read as the relation's own word
    assert read(q, links(q, ("boruto", boruto))).hops[0].roles == ("father",)
    q = "who is Boruto's older brother"  # a word that says which kin
    assert read(q, links(q, ("Boruto", boruto))).hops[0].roles == ("brother",)
    q = "who are Boruto's parents"  # a group of kin: its members, by the words relations' details use
    a = read(q, links(q, ("Boruto", boruto)))
    assert hops(a) == [("family", "romantic")] and a.hops[0].roles == ("parent", "father", "mother")
    q = "who are boruto's children"
    assert read(q, links(q, ("boruto", boruto))).hops[0].roles == ("child", "son", "daughter")
    q = "naruto's senseis"
    naruto = [*work("Naruto"), cand("character", "Naruto Uzumaki", "alias")]
    a = read(q, links(q, ("naruto", naruto)))
    assert hops(a) == [("student_of",)] and a.types["naruto"][0] == "character"
    q = "who did jiraiya train"
    assert hops(read(q, links(q, ("jiraiya", [cand("character", "Jiraiya")])))) == [("mentor_of",)]


def test_sequels_prequels_and_the_subjects_own_verb() -> None:
    q = "what comes after attack on titan season 3"
    s3 = [cand("anime", "Attack on Titan Season 3", year=2018)]
    assert hops(read(q, links(q, ("attack on titan season 3", s3)))) == [("sequel",)]
    q = "which anime does attack on titan season 3 follow on from"
    assert hops(read(q, links(q, ("attack on titan season 3", s3)))) == [("prequel",)]
    q = "in what order should i watch attack on titan"
    a = read(q, links(q, ("attack on titan", work("Attack on Titan"))))
    assert hops(a) == [("sequel",)] and a.hops[0].kind == "k_hop"


def test_two_works_compared_and_two_characters_related() -> None:
    q = "naruto or bleach, which one has more eps"
    a = read(q, links(q, ("naruto", work("Naruto")), ("bleach", work("Bleach"))))
    assert a.intent == "compare" and a.compare_field == "episode_count"
    assert [a.types[m][0] for m in a.mentions] == ["anime", "anime"]
    q = "which manga started first, death note or bleach"
    a = read(q, links(q, ("death note", work("Death Note")), ("bleach", work("Bleach"))))
    assert a.intent == "compare" and a.compare_field == "year" and a.types["bleach"][0] == "manga"
    q = "madhouse pierrot which studio older"  # two names side by side and a comparative: compared
    a = read(q, links(q, ("madhouse", [cand("studio", "Madhouse", year=1972)]),
                      ("pierrot", [cand("studio", "Studio Pierrot", "alias", year=1979)])))
    assert a.intent == "compare" and a.compare_field == "year"  # a studio's year is its founding
    q = "is zeke eren's brother?"
    a = read(q, links(q, ("zeke", [cand("character", "Zeke Yeager", "alias")]),
                      ("eren", [cand("character", "Eren Yeager", "alias")])))
    assert a.intent == "relation"


@pytest.mark.parametrize(("question", "where"), [
    ("anime from 2010 or later with at least 50 episodes",
     [("year", "gte", 2010), ("episode_count", "gte", 50)]),
    ("list anime between 2005 and 2008 thanks", [("year", "gte", 2005), ("year", "lte", 2008)]),
    ("which anime movies are older than 2004", [("format", "eq", "movie"), ("year", "lt", 2004)]),
    ("hey, which studios were founded before 1970?", [("founded", "lt", 1970)]),
    ("manga with 40 or more volumes", [("volumes", "gte", 40)]),
    ("manga >= 40 vols", [("volumes", "gte", 40)]),
    ("anime with episodes > 100", [("episode_count", "gt", 100)]),
    ("manga that ended between 2020 and 2022",
     [("end_year", "gte", 2020), ("end_year", "lte", 2022), ("status", "eq", "finished")]),
    ("which anime studios were founded during the 2010s", [("founded", "gte", 2010), ("founded", "lte", 2019)]),
    ("anime from the 90s", [("year", "gte", 1990), ("year", "lte", 1999)]),
    # a condition on a field the entity lacks is dropped, never sent (a manga has no format)
    ("which manga were made for tv after 2000", [("year", "gt", 2000)]),
])
def test_catalog_filters_take_ranges_and_inequalities(question: str, where: list[tuple[str, str, int]]) -> None:
    a = read(question, links(question))
    assert a.intent == "filter" and a.filter is not None
    assert sorted((c["field"], c["op"], c["value"]) for c in a.filter.where) == sorted(where)


def test_a_count_over_a_filter_is_an_aggregate() -> None:
    q = "how many anime came out in 2022"
    a = read(q, links(q))
    assert a.intent == "aggregate" and a.filter is not None and a.filter.count


def test_a_year_next_to_a_name_picks_that_reading() -> None:
    q = "who directed the 2003 fullmetal alchemist anime"
    fma = [cand("anime", "Fullmetal Alchemist", year=2003), cand("anime", "Fullmetal Alchemist", "alias", 2009)]
    a = read(q, links(q, ("fullmetal alchemist", fma)))
    assert a.years["fullmetal alchemist"] == 2003
    assert a.linked["fullmetal alchemist"]["anime"].entity.id == fma[0].entity.id


def test_a_bare_name_leaves_every_reading_open_and_a_type_word_closes_it() -> None:
    q = "Tell me about Naruto."
    a = read(q, links(q, ("Naruto", work("Naruto"))))
    assert a.intent == "lookup" and set(open_types(a, "Naruto")) == {"franchise", "manga", "anime"}
    q = "tell me about the naruto manga"
    a = read(q, links(q, ("naruto", work("Naruto"))))
    assert open_types(a, "naruto") == ("manga",)


@pytest.mark.parametrize(("question", "kind"), [
    ("where can I read zorb online", "manga"), ("should we watch zorb tonight", "anime"),
    ("is rereading zorb worth it", "manga"), ("binge zorb this weekend?", "anime")])
def test_a_verb_only_one_reading_takes_closes_the_reading(question: str, kind: str) -> None:
    a = read(question, links(question, ("zorb", work("Zorb"))))
    assert open_types(a, "zorb") == (kind,)


def test_what_the_asker_already_did_closes_nothing() -> None:
    q = "i read zorb last year, tell me about it"
    a = read(q, links(q, ("zorb", work("Zorb"))))
    assert {"manga", "anime"} <= set(open_types(a, "zorb"))


def test_meaning_reads_what_no_cue_word_says() -> None:
    q = "who called the shots on cowboy bebop"
    bebop = work("Cowboy Bebop")
    assert read(q, links(q, ("cowboy bebop", bebop))).intent == "lookup"  # no cue word
    hinted = links(q, ("cowboy bebop", bebop), asks=[AskHint(label="director", score=0.9),
                                                     AskHint(label="describe", score=0.6)])
    a = read(q, hinted)
    assert hops(a) == [("staff",)] and "director" in a.hops[0].roles


SPIKE = [cand("character", "Spike Spiegel")]


@pytest.mark.parametrize(("question", "name", "consults"), [
    ("who called the shots on cowboy bebop", "cowboy bebop", True),  # no cue word: what it means decides
    ("who brought cowboy bebop to the screen", "cowboy bebop", True),
    ("which studio animated cowboy bebop", "cowboy bebop", False),  # the cue words read it
    ("how many episodes does cowboy bebop have", "cowboy bebop", False),
    ("who directed cowboy bebop and who wrote its music", "cowboy bebop", False),
    ("what should I watch after cowboy bebop", "cowboy bebop", False),
    ("who is spike spiegel", "spike spiegel", False),  # "who is X" describes X, whatever the encoder says
])
def test_only_a_question_no_cue_word_reads_turns_to_its_meaning(question: str, name: str, consults: bool) -> None:
    q_links = links(question, (name, SPIKE if name == "spike spiegel" else work("Cowboy Bebop")))
    assert read(question, q_links).by_meaning is consults
    # and a reading that never turns to it is the same with any hints at all
    hinted = q_links.model_copy(update={"asks": [AskHint(label="sequel", score=0.95)]})
    if not consults:
        assert read(question, hinted) == read(question, q_links)


def test_a_hint_counts_only_when_near_and_clearly_nearest() -> None:
    assert confident([AskHint(label="studio", score=0.8), AskHint(label="year", score=0.6)]) == "studio"
    assert confident([AskHint(label="studio", score=0.5)]) is None
    assert confident([AskHint(label="studio", score=0.8), AskHint(label="year", score=0.78)]) is None
    q = "who helmed Cowboy Bebop and Naruto"
    assert masked(q, links(q, ("Cowboy Bebop", work("Cowboy Bebop")), ("Naruto", work("Naruto")))) == \
        "who helmed X and X"


def test_nothing_linked_is_a_lookup_of_nothing_never_of_the_whole_question() -> None:
    q = "tell me about zxqv plorbnik"
    a = read(q, links(q))
    assert a.intent == "lookup" and a.mentions == []


def test_seasons_counted_endings_compared_and_an_arrow_asks_what_comes_next() -> None:
    q = "number of my hero academia seasons"
    a = read(q, links(q, ("my hero academia", work("My Hero Academia"))))
    assert a.attr == "count" and a.hops[0].kind == "k_hop" and a.hops[0].include_start
    q = "did the demon slayer manga end before or after the attack on titan manga"
    a = read(q, links(q, ("demon slayer", work("Demon Slayer")), ("attack on titan", work("Attack on Titan"))))
    assert a.intent == "compare" and a.compare_field == "end_year"
    assert [a.types[m][0] for m in a.mentions] == ["manga", "manga"]
    q = "aot final season part 2 -> ???"
    a = read(q, links(q, ("aot final season part 2", [cand("anime", "Attack on Titan: The Final Season Part 2")])))
    assert hops(a) == [("sequel",)]


def test_one_name_told_apart_by_two_years_is_two_works() -> None:
    q = "fullmetal alchemist 2003 vs 2009 - which has more episodes"
    fma = [cand("anime", "Fullmetal Alchemist", year=2003), cand("anime", "Fullmetal Alchemist: Brotherhood",
                                                                   "alias", 2009)]
    a = read(q, links(q, ("fullmetal alchemist", fma)))
    assert a.intent == "compare" and a.compare_field == "episode_count"
    assert [a.linked[m]["anime"].entity.id for m in a.mentions] == [fma[0].entity.id, fma[1].entity.id]


def test_a_numbered_episode_several_values_and_other_names() -> None:
    q = "jujutsu kaisen episode 19 title"
    a = read(q, links(q, ("jujutsu kaisen", work("Jujutsu Kaisen"))))
    assert a.attr == "first_episode" and a.episode == 19
    q = "which eva does toji pilot in evangelion?"  # the verb, not the pilot episode
    assert read(q, links(q, ("evangelion", work("Evangelion")))).attr != "first_episode"
    q = "what's the title of the evangelion pilot episode"
    assert read(q, links(q, ("evangelion", work("Evangelion")))).attr == "first_episode"
    q = "dragon ball daima: year + how many episodes"
    a = read(q, links(q, ("dragon ball daima", [cand("anime", "Dragon Ball Daima", year=2024)])))
    assert a.attr == "episode_count" and a.also == ["year"]
    q = "sasha blouse from aot, what's her nickname lol"
    a = read(q, links(q, ("sasha blouse", [cand("character", "Sasha Blouse")]), ("aot", work("Attack on Titan"))))
    assert a.intent == "lookup" and a.mentions == ["sasha blouse"]


def test_a_long_message_is_read_from_its_asking_sentence_and_the_name_it_refers_to() -> None:
    q = ("My nephew has been binge-watching Frieren all summer, and I wonder when he'll come up for air. "
         "Could you tell me which studio made that series? Thanks so much, it means a lot.")
    a = read(q, links(q, ("Frieren", work("Frieren"))))
    # "when" in the story asks nothing: the studio is the question, Frieren the name it refers to
    assert a.attr is None and hops(a)[-1] == ("animated_by",) and a.mentions == ["Frieren"]
    q = "I keep seeing Khara in the credits. Do you know what year the studio Khara was founded?"
    khara = [cand("studio", "Khara")]
    a = read(q, EntityLinks(mentions=[LinkedMention(text="Khara", start=i, end=i + 5, candidates=khara)
                                      for i in (q.index("Khara"), q.rindex("Khara"))]))
    assert a.attr == "founded" and a.mentions == ["Khara"]


def test_a_work_right_after_a_character_only_says_where_the_character_is_from() -> None:
    ryuk = [cand("character", "Ryuk")]
    for q in ("who is ryuk death note", "who exactly is ryuk in death note?", "ryuk from death note, who is that"):
        a = read(q, links(q, ("ryuk", ryuk), ("death note", work("Death Note"))))
        assert a.intent == "lookup" and a.mentions == ["ryuk"], q


def test_franchise_works_of_a_format_are_listed() -> None:
    for q in ("list all the bleach movies", "which bleach films are there", "bleach movies pls"):
        a = read(q, links(q, ("bleach", work("Bleach"))))
        assert (a.attr, a.fmt, a.types["bleach"][0]) == ("franchise_works", "movie", "franchise"), q
    q = "is there a bleach movie"  # no film is called just "Bleach": the franchise's films
    a = read(q, links(q, ("bleach", work("Bleach"))))
    assert (a.attr, a.fmt) == ("franchise_works", "movie")


def test_a_sum_over_the_works_named_or_over_all_seasons() -> None:
    s1, s2 = [cand("anime", "Spy x Family", year=2022)], [cand("anime", "Spy x Family Season 2", year=2023)]
    q = "spy x family s1 + s2 eps combined"
    a = read(q, links(q, ("spy x family s1", s1), ("s2", s2)))
    assert (a.attr, a.together, a.mentions) == ("sum_episodes", True, ["spy x family s1", "s2"])
    q = "total eps of all the demon slayer tv seasons, counting the mugen train arc"
    a = read(q, links(q, ("demon slayer", work("Demon Slayer")), ("mugen train arc", [cand("anime", "Mugen Train")])))
    # the TV series along the name's sequel chain (not the franchise's spin-offs), and the work named after
    # "counting" (the chain does not reach the Mugen Train Arc's TV version)
    assert (a.attr, a.fmt, a.mentions, a.together) == ("sum_episodes", "tv", ["demon slayer", "mugen train arc"],
                                                       True)
    assert hops(a) == [("sequel",)]
    q = "total episodes of all the attack on titan seasons"  # no format said: the sequel chain, TV only
    a = read(q, links(q, ("attack on titan", work("Attack on Titan"))))
    assert (a.attr, a.fmt, hops(a)) == ("sum_episodes", "tv", [("sequel",)])
    q = "total eps of the hxh ovas combined"  # a format said: that format's works in the franchise
    a = read(q, links(q, ("hxh", work("Hunter x Hunter"))))
    assert (a.attr, a.fmt) == ("sum_franchise", "ova")


def test_a_named_person_is_the_subject_or_the_start_of_a_chain() -> None:
    seko = [cand("person", "Hiroshi Seko")]
    q = "which anime did hiroshi seko write"
    a = read(q, links(q, ("hiroshi seko", seko)))
    assert hops(a) == [("worked_on",)] and a.hops[0].node_types == ("anime",) and \
        "series_composition" in a.hops[0].roles
    gotouge = [cand("person", "Koyoharu Gotouge")]
    for q in ("who directed the anime adaptation of koyoharu gotouge's manga",
              "directors of the anime adapted from koyoharu gotouge's manga"):
        a = read(q, links(q, ("koyoharu gotouge", gotouge)))
        assert hops(a) == [("worked_on",), ("adapted_into",), ("staff",)] and "director" in a.hops[-1].roles, q


def test_a_chain_may_end_in_an_attribute_of_the_studio_it_reaches() -> None:
    q = "when was the studio behind frieren founded"
    a = read(q, links(q, ("frieren", work("Frieren"))))
    assert hops(a) == [("animated_by",)] and a.attr == "founded" and a.also == []


def test_sentences_and_the_focus_of_a_message() -> None:
    from agentic_rag.understanding.text import focus, sentences

    t = "Monkey D. Luffy vs. Zoro? I ask for a friend. Thanks!"
    assert [t[a:b].strip() for a, b in sentences(t)] == ["Monkey D. Luffy vs. Zoro?", "I ask for a friend.", "Thanks!"]
    assert focus(t, [(0, 15)]).split() == ["Monkey", "D.", "Luffy", "vs.", "Zoro?"]
    assert len(focus(t, [])) == len(t)  # offsets stay valid
    one = "naruto - who directed it"
    assert focus(one, [(0, 6)]) == one  # one sentence: kept whole
    t = "Naruto. Who directed it?"
    assert focus(t, [(0, 6)]) == t  # the question names nothing: the sentence naming something is kept


def test_a_question_in_two_parts_is_two_plans_or_one_longer_chain() -> None:
    opm = [cand("anime", "One-Punch Man Season 2", year=2019)]
    q = "Who directed One-Punch Man Season 2, and which studio made it?"
    a = read(q, links(q, ("One-Punch Man Season 2", opm)))
    assert hops(a) == [("staff",)] and [hops(m) for m in a.more] == [[("animated_by",)]]
    assert a.more[0].mentions == ["One-Punch Man Season 2"]
    makima = [cand("character", "Makima")]
    q = "Which studio animated the show Makima is in, and in what year was that studio founded?"
    a = read(q, links(q, ("Makima", makima)))
    # "that studio": the second part goes on from what the first found
    assert hops(a) == [("appears_in",), ("animated_by",)] and a.attr == "founded" and not a.more
    q = "when did it air and how many episodes does frieren have"  # two values of one row: one plan
    a = read(q, links(q, ("frieren", work("Frieren"))))
    assert not a.more


def test_the_year_of_a_name_that_is_both_a_manga_and_an_anime_is_left_open() -> None:
    for q in ("when did chainsaw man start", "chainsaw man year"):
        a = read(q, links(q, ("chainsaw man", work("Chainsaw Man"))))
        assert open_types(a, "chainsaw man") == ("anime", "manga"), q
    for q, t in (("when did chainsaw man start airing", "anime"), ("when was chainsaw man serialized", "manga"),
                 ("when did the chainsaw man manga start", "manga")):
        a = read(q, links(q, ("chainsaw man", work("Chainsaw Man"))))
        assert open_types(a, "chainsaw man") == (t,), q


def test_asides_are_no_part_of_what_is_asked() -> None:
    one = [cand("person", "ONE")]
    webcomic = [cand("manga", "One-Punch Man (webcomic)", "partial")]
    q = "how many manga has ONE made, counting the webcomic"
    a = read(q, links(q, ("ONE", one), ("webcomic", webcomic)))
    assert a.mentions == ["ONE"] and a.attr == "count_author"
    opm = [cand("manga", "One-Punch Man", "alias")]
    q = "which magazine serialised the one punch man manga (the murata one, not the webcomic)"
    a = read(q, links(q, ("one punch man manga", opm), ("murata", [cand("person", "Yusuke Murata", "partial")]),
                      ("webcomic", webcomic)))
    assert a.mentions == ["one punch man manga"] and a.attr == "magazine"


def test_symbols_and_sameness_between_two_works_compare_them() -> None:
    dbz, shippuden = [cand("anime", "Dragon Ball Z")], [cand("anime", "Naruto Shippuden")]
    q = "DBZ > Naruto Shippuden eps?"
    a = read(q, links(q, ("DBZ", dbz), ("Naruto Shippuden", shippuden)))
    assert (a.intent, a.compare_field) == ("compare", "episode_count")
    q = "AoT season 1 & JJK season 1 same studio?"
    a = read(q, links(q, ("AoT season 1", [cand("anime", "Attack on Titan")]),
                      ("JJK season 1", [cand("anime", "Jujutsu Kaisen")])))
    assert (a.intent, a.compare_field) == ("compare", "studios")


def test_pronouns_in_the_question_pick_among_the_names_told_before() -> None:
    q = "I know Akira Toriyama mainly through Dragon Ball, but I suspect he did more. How many manga is he credited on?"
    a = read(q, links(q, ("Akira Toriyama", [cand("person", "Akira Toriyama")]), ("Dragon Ball", work("Dragon Ball"))))
    assert a.mentions == ["Akira Toriyama"] and a.attr == "count_author"
    q = "My nephew loves the 2011 version of Hunter x Hunter. How many episodes does that series have?"
    hxh = [cand("franchise", "Hunter x Hunter"), cand("anime", "Hunter x Hunter (1999)", "alias", 1999),
           cand("anime", "Hunter x Hunter (2011)", "alias", 2011)]
    a = read(q, links(q, ("Hunter x Hunter", hxh)))
    assert a.years == {"Hunter x Hunter": 2011} and a.attr == "episode_count"


def test_the_same_director_of_two_works_is_each_ones_director() -> None:
    fma, bh = [cand("anime", "Fullmetal Alchemist", year=2003)], [cand("anime", "Fullmetal Alchemist: Brotherhood")]
    q = "Did FMA 2003 and Brotherhood have the same director?"
    a = read(q, links(q, ("FMA", fma), ("Brotherhood", bh)))
    assert a.mentions == ["FMA"] and hops(a) == [("staff",)] and "director" in a.hops[0].roles
    assert [m.mentions for m in a.more] == [["Brotherhood"]] and hops(a.more[0]) == [("staff",)]


def test_episodes_of_a_title_the_catalog_lacks_are_no_catalog_filter() -> None:
    q = "How many episodes did the Yu Yu Hakusho TV anime run for?"
    a = read(q, links(q))
    assert a.filter is None and not a.mentions


def test_a_question_naming_what_the_catalog_lacks_is_not_searched_by_meaning() -> None:
    from agentic_rag.planners.heuristic.progress import unknown_names

    assert unknown_names("who is naoko yamada?") == ["naoko", "yamada"]
    assert unknown_names("Who directed the Vinland Saga anime?") == ["Vinland", "Saga"]
    assert unknown_names("the anime about a boy who wants to become king of the pirates") == []


def test_a_distinctive_word_of_a_facet_value_names_it() -> None:
    from agentic_rag.understanding.filters import facet_matches

    studios = ["Toei Animation", "Studio Pierrot", "Madhouse", "Wit Studio"]
    assert facet_matches("which Toei anime", studios) == ["Toei Animation"]
    assert facet_matches("which studio anime", studios) == []  # an English word shared by two values names none


def test_the_other_credits_of_a_works_staff_member() -> None:
    dn = [cand("anime", "Death Note", year=2006), cand("manga", "Death Note", year=2003)]
    for q in ("what else did the death note director direct",
              "the director of death note also directed an older anime, which one?"):
        a = read(q, links(q, ("death note", dn)))
        assert hops(a) == [("staff",), ("worked_on",)] and a.hops[-1].exclude_seen, q
    q = "who directed death note"  # no "other", "else", "also": the credit alone
    assert hops(read(q, links(q, ("death note", dn)))) == [("staff",)]


def test_an_elliptic_question_asks_what_the_sentence_before_it_says() -> None:
    from agentic_rag.understanding.text import focus

    q = "The director of Death Note went on to direct another dark fantasy series. Which one?"
    assert focus(q, [(q.index("Death Note"), q.index("Death Note") + 10)]) == q  # kept whole
    q = "I love long shows. Which anime have more than 100 episodes?"
    assert focus(q, []).startswith(" " * len("I love long shows."))  # an asking sentence with words of its own


def test_several_credits_asked_together_are_one_reading_each() -> None:
    opm = [cand("anime", "One-Punch Man", year=2015)]
    q = "one punch man director and composer?"
    a = read(q, links(q, ("one punch man", opm)))
    assert "director" in a.hops[0].roles and [h.roles for m in a.more for h in m.hops] == [("music",)]


def test_temporal_words_about_a_person_or_studio_are_no_sequel() -> None:
    kf = [cand("person", "Kazuhiro Furuhashi")]
    q = "Kazuhiro Furuhashi directed Spy x Family. Which older anime had he directed before that?"
    a = read(q, links(q, ("Kazuhiro Furuhashi", kf)))
    assert hops(a) == [("worked_on",)]


def test_a_studio_named_by_typo_or_pronoun() -> None:
    mh = [cand("studio", "Madhouse", "typo")]
    q = "madhuose anime after 2010"
    a = read(q, links(q, ("madhuose", mh)))
    assert a.filter is not None and a.filter.words.startswith("Madhouse")
    mappa = [cand("studio", "MAPPA")]
    q = "I keep seeing the MAPPA logo everywhere. When was that studio actually founded?"
    a = read(q, links(q, ("MAPPA", mappa)))
    assert a.attr == "founded" and not a.hops
    q = "what did mappa make after 2020"  # a studio's works under a condition: a filter on its anime
    a = read(q, links(q, ("mappa", mappa)))
    assert a.filter is not None and {"field": "year", "op": "gt", "value": 2020} in a.filter.where


def test_words_that_ask_for_nothing() -> None:
    dn = [cand("manga", "Death Note", year=2003), cand("anime", "Death Note", year=2006)]
    q = "For Death Note, the manga one rather than the anime: how many volumes did it run for before it ended?"
    a = read(q, links(q, ("Death Note", dn)))
    assert a.attr == "volumes" and not a.hops
    ace = [cand("character", "Portgas D. Ace", "alias")]
    q = "which manga ran in monthly shonen ace"  # a magazine's name, not the character's
    a = read(q, links(q, ("ace", ace)))
    assert a.filter is not None and "ace" in a.filter.words


def test_a_list_by_episode_count_that_also_asks_each_ones_count() -> None:
    bones = [cand("studio", "Bones")]
    q = "Which Bones TV series have more than 50 episodes, and how many episodes does each have?"
    a = read(q, links(q, ("Bones", bones)))
    assert a.filter is not None and not a.filter.count
    assert {"field": "episode_count", "op": "gt", "value": 50} in a.filter.where


def test_conditions_said_before_the_question() -> None:
    q = "I'm doing a movie night with anime films from 2013. Which ones came out that year?"
    a = read(q, links(q))
    assert a.filter is not None and {"field": "year", "op": "eq", "value": 2013} in a.filter.where
    from agentic_rag.understanding.filters import parse_filter

    f = parse_filter("Which Weekly Shonen Jump manga finished their run in 2020 or later")
    assert f is not None and {"field": "end_year", "op": "gte", "value": 2020} in f.where
    f = parse_filter("tv series from the nineties")  # a decade spelled out
    assert f is not None and {(c["op"], c["value"]) for c in f.where if c["field"] == "year"} == {
        ("gte", 1990), ("lte", 1999)}
    f = parse_filter("tv shows that started airing in the 90s")  # when it began, not that it still airs
    assert f is not None and all(c["field"] != "status" for c in f.where)


def test_a_chain_to_works_within_a_period_and_a_studios_other_works() -> None:
    fr = [cand("anime", "Frieren", year=2023)]
    q = "what did frieren's studio make before 2010"
    a = read(q, links(q, ("frieren", fr)))
    assert hops(a) == [("animated_by",), ("animated",)] and a.hops[-1].exclude_seen
    assert a.period == (1900, 2009)
    q = "which studio made frieren"  # the studio alone
    a = read(q, links(q, ("frieren", fr)))
    assert hops(a) == [("animated_by",)] and a.period is None


def test_a_list_question_that_points_back_at_the_sentence_before() -> None:
    q = "I prefer titles that ran in Shonen Jump+. Which manga were serialized there?"
    a = read(q, links(q))
    assert a.filter is not None and "Jump" in a.filter.words
    from agentic_rag.understanding.filters import parse_filter

    f = parse_filter("what TV specials are in the catalog")  # the format noun wins over "tv"
    assert f is not None and f.where == [{"field": "format", "op": "eq", "value": "special"}]


def test_catalog_lists_said_many_ways() -> None:
    from agentic_rag.understanding.filters import parse_filter

    def where(q: str) -> list[tuple[str, str, object]]:
        f = parse_filter(q)
        assert f is not None, q
        return [(c["field"], c["op"], c["value"]) for c in f.where]

    assert where("list every ova") == [("format", "eq", "ova")]
    # "anything tagged X": works of that kind, after chatter too
    f = parse_filter("ok. anything tagged historical then?")
    assert f is not None and f.entity_type == "anime"
    # a range said with a dash, and capped by "max": at most its larger end
    assert where("anime with 12-13 episodes") == [("episode_count", "gte", 12), ("episode_count", "lte", 13)]
    assert where("short comedy anime, like 12-13 eps max") == [("episode_count", "lte", 13)]
    assert where("anime of 13 eps max") == [("episode_count", "lte", 13)]
    assert where("which anime in here are OVAs? just want the list") == [("format", "eq", "ova")]
    assert where("which studios were set up pre-2000?") == [("founded", "lt", 2000)]
    assert where("Which manga go past 40 tankobon volumes?") == [("volumes", "gt", 40)]
    assert where("Which shows are still on air right now?") == [("status", "eq", "airing")]
    assert where("Which TV seasons are really short, under 10 episodes?") == [
        ("format", "eq", "tv"), ("episode_count", "lt", 10)]
    assert where("For a paper on 1980s animation, I need every TV anime that began before 1990") == [
        ("format", "eq", "tv"), ("year", "lt", 1990)]
    q = "whats still airing rn"  # no head noun: airing is said of anime
    a = read(q, links(q))
    assert a.filter is not None and a.filter.entity_type == "anime"


def test_the_last_season_and_a_franchises_spin_off_manga() -> None:
    mha = work("My Hero Academia")
    q = "last mha season and when it aired"
    a = read(q, links(q, ("mha", mha)))
    assert hops(a) == [("sequel",)] and a.hops[0].last and a.attr == "year"  # "it" is the season reached
    q = "mha spin off manga"
    a = read(q, links(q, ("mha", mha)))
    assert (a.attr, a.counted) == ("franchise_works", "manga")
    q = "chainsaw man series composition guy - what else did he write"
    a = read(q, links(q, ("chainsaw man", work("Chainsaw Man"))))
    assert hops(a)[-1] == ("worked_on",) and a.hops[-1].exclude_seen


def test_a_sum_over_a_run_from_one_work_to_another() -> None:
    naruto = [cand("anime", "Naruto", year=2002)]
    shippuden = [cand("anime", "Naruto Shippuden", year=2007)]
    q = "naruto to shippuden total episodes"
    a = read(q, links(q, ("naruto", naruto), ("shippuden", shippuden)))
    assert (a.attr, a.mentions, a.period) == ("sum_episodes", ["naruto"], (1900, 2007)) and hops(a) == [("sequel",)]
    q = "naruto + shippuden total episodes"  # two works, no range: the two of them
    a = read(q, links(q, ("naruto", naruto), ("shippuden", shippuden)))
    assert a.together and a.mentions == ["naruto", "shippuden"]


def test_volumes_of_several_manga_added_up() -> None:
    q = "the complete Attack on Titan main manga plus the No Regrets spin-off, how many volumes altogether?"
    aot, nr = [cand("manga", "Attack on Titan", year=2009)], [cand("manga", "Attack on Titan: No Regrets")]
    a = read(q, links(q, ("Attack on Titan", aot), ("No Regrets", nr)))
    assert (a.attr, a.together, a.mentions) == ("sum_volumes", True, ["Attack on Titan", "No Regrets"])


def test_two_years_further_on_tell_two_works_of_one_name_apart() -> None:
    hxh = [cand("anime", "Hunter x Hunter (2011)", "alias", year=2011),
           cand("anime", "Hunter x Hunter (1999)", "alias", year=1999)]
    q = "Which Hunter x Hunter TV version is longer, the 1999 one or the 2011 one?"
    a = read(q, links(q, ("Hunter x Hunter", hxh)))
    assert a.intent == "compare" and sorted(a.years.values()) == [1999, 2011]


def test_a_command_beside_a_question_asks_too() -> None:
    from agentic_rag.understanding.text import asking

    q = "After the 1999 Hunter x Hunter TV show, what continues it? Give me the order."
    assert len(asking(q)) == 2
    from agentic_rag.understanding.filters import parse_filter

    f = parse_filter("List the Weekly Shonen Jump series that wrapped up in 2020 or later")
    assert f is not None and f.entity_type == "manga"  # a magazine's series are manga


def test_a_person_named_as_the_subject_of_a_relative_clause() -> None:
    park = [cand("person", "Sunghoo Park")]
    q = "who made the manga behind the anime that sunghoo park directed"
    a = read(q, links(q, ("sunghoo park", park)))
    assert hops(a) == [("worked_on",), ("adapted_from",), ("staff",)] and a.hops[0].node_types == ("anime",)
    assert not a.more  # the author is asked, not another credit
    tachikawa = [cand("person", "Yuzuru Tachikawa")]
    q = "In which magazine ran the manga that became the anime directed by Yuzuru Tachikawa?"
    a = read(q, links(q, ("Yuzuru Tachikawa", tachikawa)))
    assert hops(a) == [("worked_on",), ("adapted_from",)] and a.attr == "magazine"


def test_the_extreme_of_a_list_or_of_a_franchises_works() -> None:
    from agentic_rag.understanding.filters import parse_filter

    f = parse_filter("Among the finished TV anime in the catalog, which has the most episodes?")
    assert f is not None and f.rank == ("episode_count", "desc")
    f = parse_filter("Among the studios in the catalog, which is the oldest?")
    assert f is not None and (f.entity_type, f.rank) == ("studio", ("founded", "asc"))
    q = "Which Dragon Ball TV series has the highest episode count?"
    a = read(q, links(q, ("Dragon Ball", work("Dragon Ball"))))
    assert (a.attr, a.rank, a.fmt) == ("franchise_works", ("episode_count", "desc"), "tv")
    q = "how many episodes does dragon ball have"  # a count of one work, no extreme
    assert read(q, links(q, ("dragon ball", work("Dragon Ball")))).attr == "episode_count"


def test_a_chain_from_entities_described_by_their_fields() -> None:
    q = "Which studio animated the anime adapted from the manga serialized in Ura Sunday?"
    a = read(q, links(q))
    assert a.filter is not None and (a.filter.entity_type, a.filter.words) == ("manga", "Ura Sunday")
    assert hops(a) == [("adapted_into",), ("animated_by",)]
    q = "who did the music for the anime made by the studio founded in 2000"
    a = read(q, links(q))
    assert a.filter is not None and a.filter.where == [{"field": "founded", "op": "eq", "value": 2000}]
    assert hops(a) == [("animated",), ("staff",)] and "music" in a.hops[-1].roles
    q = "list the manga serialized in ura sunday"  # a list, asked of nothing further: the filter alone
    a = read(q, links(q))
    assert a.filter is not None and not a.hops


@pytest.mark.parametrize(("question", "kinds", "edges", "attr"), [
    ("who animated the show where a student finds a notebook that kills", "anime", [("animated_by",)], None),
    ("anime about an elf mage who outlives the hero's party, when did it air?", "anime", [], "year"),
    ("how many volumes does the manga about a boy who wants to be king of the pirates have", "manga", [], "volumes"),
    ("the guy with the death notebook, what show is he in", "character", [("appears_in",)], None),
    ("whats the show where a student finds a notebook that kills anyone", "anime", [], None),
])
def test_a_description_is_read_apart_from_what_is_asked_of_it(question: str, kinds: str, edges: list[tuple[str, ...]],
                                                              attr: str | None) -> None:
    a = read(question, EntityLinks())
    assert not a.mentions and a.filter is None and a.described[0] == kinds
    assert a.description and a.description in " ".join(question.split())
    assert hops(a) == edges and a.attr == attr


def test_a_list_by_a_fields_value_is_no_description() -> None:
    a = read("manga that ran in V Jump", EntityLinks())
    assert a.filter is not None and a.filter.words == "V Jump" and not a.described


def test_a_storys_year_is_no_air_date() -> None:
    a = read("I half remember an anime about bounty hunters, set in 2071", EntityLinks())
    assert a.filter is None and a.described[0] == "anime" and "2071" in a.description


def test_a_persons_possessive_before_a_work_names_the_work() -> None:
    q = "In what year did Hiromu Arakawa's Fullmetal Alchemist manga wrap up?"
    a = read(q, links(q, ("Hiromu Arakawa", [cand("person", "Hiromu Arakawa")]),
                      ("Fullmetal Alchemist", work("Fullmetal Alchemist"))))
    assert a.mentions == ["Fullmetal Alchemist"] and a.types["Fullmetal Alchemist"][0] == "manga"


@pytest.mark.parametrize("question", ["when did chainsaw man end, i mean the manga",
                                      "chainsaw man started in which year? the manga I mean, not the anime"])
def test_a_type_said_apart_from_the_name_picks_its_reading(question: str) -> None:
    a = read(question, links(question, ("chainsaw man", work("Chainsaw Man"))))
    assert a.types["chainsaw man"][0] == "manga" and not a.open


def test_a_series_composer_writes_and_a_person_s_own_credit_leads_to_the_work_asked_about() -> None:
    q = "Chainsaw Man's series composer: what other shows has he written the series composition for?"
    a = read(q, links(q, ("Chainsaw Man", work("Chainsaw Man"))))
    assert a.hops[0].roles == ("series_composition",)
    q = "nge tv series composer"  # the composer of the TV series: its music
    a = read(q, links(q, ("nge", [cand("anime", "Neon Genesis Evangelion", "alias")])))
    assert a.hops[0].roles == ("music",)
    q = "tsugumi ohba wrote a manga that became an anime - who scored the anime?"
    a = read(q, links(q, ("tsugumi ohba", [cand("person", "Tsugumi Ohba")])))
    assert hops(a) == [("worked_on",), ("adapted_into",), ("staff",)] and a.hops[-1].roles == ("music",)


def test_a_chain_goes_on_after_that_and_a_sum_over_seasons_stays_one_sum() -> None:
    q = "My son finished the original Naruto series. What should he watch next, and what comes after that?"
    a = read(q, links(q, ("Naruto", work("Naruto"))))
    assert hops(a) == [("sequel",), ("sequel",)] and a.attr is None  # "finished" only tells
    q = "If I were to watch all three seasons of Mob Psycho 100 back to back, how many episodes would that come to?"
    a = read(q, links(q, ("Mob Psycho 100", work("Mob Psycho 100"))))
    assert a.attr == "sum_episodes" and not a.more


@pytest.mark.parametrize("question", ["hunter x hunter 1999: what's the sequel of its sequel?",
                                      "just finished hunter x hunter 1999, what do I watch next and then after that?"])
def test_a_second_step_along_the_sequels_and_what_the_asker_did_is_no_status(question: str) -> None:
    a = read(question, links(question, ("hunter x hunter 1999", [cand("anime", "Hunter x Hunter (1999)", year=1999)])))
    assert hops(a) == [("sequel",), ("sequel",)] and a.attr is None and not a.more


@pytest.mark.parametrize(("question", "edges"), [
    ("season befor aot final season", [("prequel",)]),  # a cue word one letter off is still that cue
    ("whats the sequal to mha s4", [("sequel",)]),
    ("death note relight 1 then what", [("sequel",)]),
])
def test_a_misspelt_cue_word_and_then_what(question: str, edges: list[tuple[str, ...]]) -> None:
    name = next(n for n in ("aot final season", "mha s4", "death note relight 1") if n in question)
    a = read(question, links(question, (name, [cand("anime", name.title(), year=2020)])))
    assert hops(a) == edges


def test_two_titles_and_plus_are_one_sum() -> None:
    q = "naruto plus shippuden eps"
    a = read(q, links(q, ("naruto", work("Naruto")), ("shippuden", [cand("anime", "Naruto Shippuden", "partial")])))
    assert a.attr == "sum_episodes" and a.together


async def test_linking_embeds_only_a_question_that_turns_to_its_meaning() -> None:
    import numpy as np

    from agentic_rag.orchestrator.retrieval import with_asks
    from agentic_rag.understanding.asks import AskClassifier

    embedded: list[str] = []

    async def embed(texts):  # type: ignore[no-untyped-def]
        embedded.extend(texts)
        return np.random.default_rng(len(embedded)).random((len(texts), 8), dtype=np.float32)

    classifier = AskClassifier(embed)
    q = "which studio animated cowboy bebop"
    timings: dict[str, float] = {}
    found = links(q, ("cowboy bebop", work("Cowboy Bebop")))
    got, reading = await with_asks(classifier, q, found, timings)
    assert got.asks == [] and embedded == [] and "asks_ms" not in timings
    assert reading == read(q, found) and not reading.by_meaning  # the one reading the run is handed
    q = "who brought cowboy bebop to the screen"
    found = links(q, ("cowboy bebop", work("Cowboy Bebop")))
    got, reading = await with_asks(classifier, q, found, timings)
    assert got.asks and embedded[-1] == "who brought X to the screen" and timings["asks_ms"] > 0
    assert reading == read(q, got)  # read again with what it asks by meaning


def test_a_message_that_turns_from_telling_to_asking_reads_the_question() -> None:
    # one run of words: the songs are what the sister sings, the question is who Uta is
    q = "my little sister wont stop singing the songs from one piece film red and i was wondering who uta even is"
    a = read(q, links(q, ("one piece film red", [cand("anime", "One Piece Film: Red")]),
                      ("uta", [cand("character", "Uta")])))
    assert (a.intent, a.mentions, hops(a)) == ("lookup", ["uta"], [])


def test_what_the_asker_started_is_no_date_and_the_people_in_a_work_are_its_characters() -> None:
    q = "i just started sousou no frieren on crunchyroll who are the main people in the show"
    a = read(q, links(q, ("sousou no frieren", work("Frieren: Beyond Journey's End")[1:])))
    assert a.attr is None and hops(a) == [("features",)]
    assert a.types["sousou no frieren"][0] == "anime"  # "in the show" points back at the name
    assert open_types(a, "sousou no frieren") == ("anime",)


def test_a_name_said_as_included_is_counted_in_the_sum() -> None:
    q = "total episodes of my hero academia across every tv season, final season included"
    a = read(q, links(q, ("my hero academia", work("My Hero Academia")),
                      ("final season", [cand("anime", "My Hero Academia: Final Season", "alias", 2025)])))
    assert a.attr == "sum_episodes" and a.mentions == ["my hero academia", "final season"] and a.together


def test_a_season_titled_after_a_work_is_not_another_reading_of_its_name() -> None:
    from agentic_rag.orchestrator.clarify import clarification

    q = "whos in the spy family anime"
    found = links(q, ("spy family", [cand("anime", "Spy x Family", "alias", 2022),
                                     cand("manga", "Spy x Family", "alias", 2019),
                                     cand("anime", "Spy x Family Season 2", "alias", 2023)]))
    assert clarification(read(q, found), found) is None
    q = "when did spy family start"  # the anime and the manga are still two readings
    found = links(q, ("spy family", [cand("anime", "Spy x Family", "alias", 2022),
                                     cand("manga", "Spy x Family", "alias", 2019),
                                     cand("anime", "Spy x Family Season 2", "alias", 2023)]))
    asked = clarification(read(q, found), found)
    assert asked is not None and [c.label for c in asked[0].choices] == ["Spy x Family (anime, 2022)",
                                                                         "Spy x Family (manga, 2019)"]


def test_he_or_she_stands_for_the_nearest_person_before() -> None:
    q = "um frieren keeps having flashbacks to this himmel dude who is he again"
    a = read(q, links(q, ("frieren", [cand("character", "Frieren"), *work("Frieren: Beyond Journey's End")[1:]]),
                      ("himmel", [cand("character", "Himmel")])))
    assert (a.intent, a.mentions) == ("lookup", ["himmel"])


@pytest.mark.parametrize(("question", "first", "second", "edges", "attr"), [
    # an apposition between commas says who the first name is
    ("ufotable, you know the demon slayer people, when did they get founded", ("ufotable", "studio"),
     ("demon slayer", "anime"), [], "founded"),
    # a relative clause before the comma describes the first name; the rest asks of it
    ("that alien boss boros who fights caped baldy, the season hes in was animated by who", ("boros", "character"),
     ("caped baldy", "character"), [("appears_in",), ("animated_by",)], None),
])
def test_a_name_that_only_describes_the_one_before(question: str, first: tuple[str, str], second: tuple[str, str],
                                                    edges: list[tuple[str, ...]], attr: str | None) -> None:
    (name, kind), (other, other_kind) = first, second
    a = read(question, links(question, (name, [cand(kind, name)]), (other, [cand(other_kind, other)])))
    assert a.mentions == [name] and hops(a) == edges and a.attr == attr


def test_the_name_a_relative_clause_describes_by_stays_out_of_the_pair_asked() -> None:
    q = "naruto who trained with jiraiya, how is he related to sasuke"
    a = read(q, links(q, ("naruto", [cand("character", "Naruto Uzumaki", "alias")]),
                      ("jiraiya", [cand("character", "Jiraiya")]), ("sasuke", [cand("character", "Sasuke Uchiha")])))
    assert (a.intent, a.mentions) == ("relation", ["naruto", "sasuke"])
    q = "how is naruto who trained with jiraiya related to sasuke"  # no comma: no description left out
    a = read(q, links(q, ("naruto", [cand("character", "Naruto Uzumaki", "alias")]),
                      ("jiraiya", [cand("character", "Jiraiya")]), ("sasuke", [cand("character", "Sasuke Uchiha")])))
    assert a.mentions[:2] == ["naruto", "jiraiya"]


@pytest.mark.parametrize("question", [
    "chainsaw man anime was ufotable right? the fights looked insane",
    "is chainsaw man by ufotable or mappa?",
])
def test_a_guess_at_a_works_studio_is_checked_by_asking_for_it(question: str) -> None:
    spans = [("chainsaw man", work("Chainsaw Man")), ("ufotable", [cand("studio", "ufotable")])]
    if "mappa" in question:
        spans.append(("mappa", [cand("studio", "MAPPA")]))
    a = read(question, links(question, *spans))
    assert a.mentions == ["chainsaw man"] and hops(a) == [("animated_by",)] and a.types["chainsaw man"][0] == "anime"


def test_a_third_part_about_the_same_name_is_one_more_reading() -> None:
    q = "who directed cowboy bebop, who did the music, and which studio made it?"
    a = read(q, links(q, ("cowboy bebop", work("Cowboy Bebop"))))
    asked = [h.edges for x in (a, *a.more) for h in x.hops]
    assert ("staff",) in asked and ("animated_by",) in asked and len(a.more) == 2
    q = "death note anime: how many episodes, what year did it start airing, and who directed it?"
    a = read(q, links(q, ("death note", work("Death Note"))))
    assert a.attr == "episode_count" and [h.roles for x in a.more for h in x.hops] == [("director", "chief_director")]
    # a part the readings before already ask is no more ("... who wrote it and who did the art": the authors)
    q = "aot before the fall manga: who wrote it and who did the art"
    a = read(q, links(q, ("aot before the fall", [cand("manga", "Attack on Titan: Before the Fall")])))
    assert not a.more


@pytest.mark.parametrize("question", [
    "name the zorb movies oldest first",
    "which zorb films are there, oldest to newest?",
    "list the zorb movies in release order",
    "the zorb tv series in the order they aired",
])
def test_works_asked_in_an_order_are_all_listed_not_the_first_alone(question: str) -> None:
    a = read(question, links(question, ("zorb", work("zorb"))))
    assert a.attr == "franchise_works" and a.rank is None


def test_the_oldest_alone_is_still_a_superlative_and_seasons_in_order_the_sequel_chain() -> None:
    q = "what is the oldest zorb movie"
    assert read(q, links(q, ("zorb", work("zorb")))).rank == ("year", "asc")
    q = "list the zorb seasons in order"
    assert read(q, links(q, ("zorb", work("zorb")))).attr != "franchise_works"


def test_how_long_a_shared_title_is_asks_which_and_the_choice_says_episodes_or_volumes() -> None:
    from agentic_rag.understanding.reading import open_types, settled

    q = "how long is zorb"
    a = read(q, links(q, ("zorb", work("zorb"))))
    assert a.attr == "episode_count" and set(open_types(a, "zorb")) == {"anime", "manga"}
    assert settled(a, "zorb", "manga").attr == "volumes"
    q = "how long is the zorb manga"
    assert read(q, links(q, ("zorb", work("zorb")))).attr == "volumes"
    q = "how many episodes is zorb"
    assert open_types(read(q, links(q, ("zorb", work("zorb")))), "zorb") == ("anime",)


def test_two_names_joined_by_or_after_a_colon_are_the_pair_chosen_between() -> None:
    q = "In Trigun, who's the bigger threat to Vash: Knives or Legato?"
    a = read(q, links(q, ("Trigun", work("Trigun")), ("Vash", [cand("character", "Vash the Stampede")]),
                      ("Knives", [cand("character", "Millions Knives")]), ("Legato", [cand("character", "Legato")])))
    assert a.intent == "compare" and a.mentions == ["Knives", "Legato"]
    # a list joined by commas is no such pair: every name stays ("Madhouse, Pierrot or ufotable")
    q = "which was founded first: Madhouse, Pierrot or ufotable?"
    studios = [("Madhouse", [cand("studio", "Madhouse")]), ("Pierrot", [cand("studio", "Studio Pierrot")]),
               ("ufotable", [cand("studio", "ufotable")])]
    a = read(q, links(q, *studios))
    assert a.mentions == ["Madhouse", "Pierrot", "ufotable"]


def test_a_work_the_catalog_lacks_asked_about_is_no_filter_over_the_catalog() -> None:
    """"is the berserk manga finished": asked of a name linking reported missing, not of every finished manga; a filter
    whose words may still be a value the search resolves (a person typed wrong) is kept."""
    q = "is the berserk manga finished or still going"
    a = read(q, EntityLinks(unknown=["berserk"]))
    assert a.filter is None and not a.mentions
    q = "is the berserk manga finished or still going"
    assert read(q, EntityLinks()).filter is not None  # nothing reported missing: the catalog's finished manga
    q = "Akutamj Gege - how many manga?"
    assert read(q, EntityLinks(unknown=["Akutamj Gege"])).filter is not None


def test_what_else_the_studio_of_a_work_animated_is_its_other_works() -> None:
    q = "what else did the studio of Mushishi animate?"
    a = read(q, links(q, ("Mushishi", work("Mushishi"))))
    assert hops(a) == [("animated_by",), ("animated",)] and a.hops[-1].exclude_seen
    q = "which studio animated Mushishi?"  # the studio alone
    assert hops(read(q, links(q, ("Mushishi", work("Mushishi"))))) == [("animated_by",)]


def test_anything_with_a_kind_and_no_type_said_is_a_list_of_anime() -> None:
    a = read("anything with romance in it? anime or manga, i don't mind which", links("x"))
    assert a.intent == "filter" and a.filter is not None and a.filter.entity_type == "anime"
    assert a.filter.words == "romance"


def test_who_a_record_describes_beside_the_one_name_given() -> None:
    q = "who took Zorbo Blank's arm"
    a = read(q, links(q, ("Zorbo Blank", [cand("character", "Zorbo Blank")])))
    assert a.described == ("character",) and a.mentions == ["Zorbo Blank"]
    # the name asked about itself, a relation a cue reads, or no words of its own: the name's own plan
    for q in ("who is Zorbo Blank exactly", "who is Zorbo Blank's rival", "who directed Zorbo Blank"):
        assert read(q, links(q, ("Zorbo Blank", [cand("character", "Zorbo Blank")]))).described == (), q


def test_who_is_a_name_with_a_character_reading_asks_the_character() -> None:
    q = "who is zorb"
    a = read(q, links(q, ("zorb", [cand("character", "Zorb"), *work("Zorb Quest")])))
    assert open_types(a, "zorb") == ("character",)
    # a name with no person's reading is asked of as it is: which of its readings is open
    q = "who is zorb quest"
    assert len(open_types(read(q, links(q, ("zorb quest", work("Zorb Quest")))), "zorb quest")) == 3


def test_lead_the_verb_is_no_lead_role() -> None:
    q = "what organisation does zorbo lead"
    a = read(q, links(q, ("zorbo", [cand("character", "Zorbo")])))
    assert a.intent == "lookup" and not a.hops, "who Zorbo is: the group the record says he leads"
    q = "who leads the glass troupe in zorb quest"
    a = read(q, links(q, ("zorb quest", work("Zorb Quest"))))
    assert not a.hops and a.described == ("character",), "one of its characters, described"
    q = "who is the lead in zorb quest"  # the noun: the main character
    assert read(q, links(q, ("zorb quest", work("Zorb Quest")))).hops


@pytest.mark.parametrize(("question", "name", "group"), [
    ("who are the hashira in demon slayer", "demon slayer", "hashira"),
    ("which straw hats show up in one piece film red", "one piece film red", "straw hats"),
    ("list the members of the phantom troupe in hunter x hunter", "hunter x hunter", "phantom troupe"),
    ("who is in the akatsuki in naruto shippuden", "naruto shippuden", "akatsuki"),
])
def test_a_group_s_members_are_asked_among_the_one_work_named(question: str, name: str, group: str) -> None:
    assert read(question, links(question, (name, work(name)))).members == group


@pytest.mark.parametrize("question", [
    "who directed demon slayer",  # a relation asked, no group
    "tell me about demon slayer",  # nothing of its own
    "who are the strongest fighters in demon slayer",  # a superlative ranks: no group's name
    "who are the fighters that trained and died young in demon slayer",  # more words of its own than a group's name
])
def test_no_group_is_read_where_none_is_asked(question: str) -> None:
    assert read(question, links(question, ("demon slayer", work("demon slayer")))).members == ""


def test_three_works_compared_by_studio_are_each_one_s_studio() -> None:
    q = "what studio made mob psycho 100, jujutsu kaisen and chainsaw man"
    a = read(q, links(q, *((n, [cand("anime", n)]) for n in ("mob psycho 100", "jujutsu kaisen", "chainsaw man"))))
    assert (a.intent, hops(a), a.together) == ("chain", [("animated_by",)], True)


@pytest.mark.parametrize("question", ["who's the main character of mob psycho 100?",
                                      "who is the protagonist of mob psycho 100", "who's the mc in mob psycho 100"])
def test_the_one_a_work_is_about_is_its_main_cast(question: str) -> None:
    a = read(question, links(question, ("mob psycho 100", work("mob psycho 100"))))
    assert hops(a) == [("features",)] and a.hops[0].roles == ("main",)


def test_two_parts_asking_of_a_title_s_two_forms_are_two_readings() -> None:
    q = "when did the chainsaw man manga end, and how many episodes did the anime get?"
    a = read(q, links(q, ("chainsaw man", work("chainsaw man"))))
    assert (a.attr, a.types["chainsaw man"][0]) == ("year", "manga")
    assert [(x.attr, x.types["chainsaw man"][0]) for x in a.more] == [("episode_count", "anime")]


def test_a_few_words_after_a_question_say_what_it_meant() -> None:
    from agentic_rag.understanding.text import asking
    q = "who made aot? like which studio"
    assert [q[a:b].strip() for a, b in asking(q)] == ["who made aot?", "like which studio"]
    a = read(q, links(q, ("aot", work("aot"))))
    assert hops(a) == [("animated_by",)]
    # a whole clause after "like" is no say of what was meant: the question stands
    q = "whats the point of dragon ball kai? like why does it exist if dbz already does"
    assert [q[a:b].strip() for a, b in asking(q)] == ["whats the point of dragon ball kai?"]


def test_a_title_someone_holds_is_no_work() -> None:
    q = "whats roy mustang's alchemist title"
    a = read(q, links(q, ("roy mustang", [cand("character", "Roy Mustang")])))
    assert a.intent == "lookup" and not a.hops


@pytest.mark.parametrize(("question", "what"), [
    ("who voices levi in the english dub?", "voice actors"),
    ("how many copies has the levi manga sold worldwide?", "sales or budgets"),
    ("whats levi's myanimelist score", "ratings or scores"),
])
def test_what_the_catalog_records_of_nothing_is_said_unrecorded(question: str, what: str) -> None:
    a = read(question, links(question, ("levi", [cand("character", "Levi Ackerman", "alias")])))
    assert (a.unrecorded, a.intent, a.hops) == (what, "lookup", [])


def test_a_singing_voice_and_a_musical_score_are_credits_not_unrecorded() -> None:
    q = "who composed the score for death note"
    assert read(q, links(q, ("death note", work("death note")))).unrecorded == ""


@pytest.mark.parametrize(("question", "direction"), [("which studio is the oldest", "asc"),
                                                     ("which studio was founded first", "asc"),
                                                     ("what is the newest studio", "desc")])
def test_the_oldest_studio_is_the_first_of_the_studios_ranked(question: str, direction: str) -> None:
    f = read(question, EntityLinks()).filter
    assert f is not None and (f.entity_type, f.rank) == ("studio", ("founded", direction))


def test_a_later_part_asks_of_the_form_the_first_named() -> None:
    q = "who created the one piece manga and what year did it start?"
    a = read(q, links(q, ("one piece", work("one piece"))))
    assert [x.types["one piece"][0] for x in (a, *a.more)] == ["manga", "manga"]


def test_works_listed_by_year_are_the_franchise_s_works_in_order() -> None:
    q = "list the bleach movies by year"
    a = read(q, links(q, ("bleach", work("bleach"))))
    assert (a.attr, a.fmt) == ("franchise_works", "movie")


def test_two_titles_sharing_staff_are_titles_though_one_is_a_name_too() -> None:
    q = "do frieren and death note share a staff member"
    frieren = [cand("character", "Frieren"), cand("anime", "Frieren: Beyond Journey's End", "alias"),
               cand("manga", "Frieren: Beyond Journey's End", "alias")]
    a = read(q, links(q, ("frieren", frieren), ("death note", work("death note"))))
    assert a.intent == "relation" and [a.types[m][0] for m in a.mentions] == ["anime", "anime"]


@pytest.mark.parametrize("q", ["is the zorb manga done yet?", "is zorb over yet", "has the zorb manga ended yet"])
def test_done_or_over_yet_asks_a_works_status(q: str) -> None:
    """"done yet" is the status asked in the words people use, not a description of the work."""
    assert read(q, links(q, ("zorb", work("Zorb")))).attr == "status"


def test_what_is_asked_of_whom_a_relation_reaches_is_read_in_their_description() -> None:
    """"who is luffy's dad and what does he do": the second part asks of the father what only his description says;
    "what does luffy's dad do" alike. A value the graph holds is a hop, not a description ("and who trained him")."""
    for q in ("who is luffy's dad and what does he do", "what does luffy's dad do", "what's luffy's dad's deal"):
        a = read(q, links(q, ("luffy", LUFFY)))
        assert a.hops and a.hops[-1].edges == ("family", "romantic") and a.describe, q
    q = "who is luffy's dad and who trained him"
    a = read(q, links(q, ("luffy", LUFFY)))
    assert not a.describe and len(a.hops) == 2
    q = "what does luffy do"  # no relation: the lookup, whose description is said anyway
    assert not read(q, links(q, ("luffy", LUFFY))).describe


def test_the_works_two_characters_appear_in_are_each_one_s_not_their_relation() -> None:
    q = "which anime do kushina and minato actually appear in"
    a = read(q, links(q, ("kushina", [cand("character", "Kushina Uzumaki")]),
                      ("minato", [cand("character", "Minato Namikaze")])))
    assert a.intent == "chain" and hops(a) == [("appears_in",)] and a.more and a.more[0].mentions == ["minato"]
    q = "how are kushina and minato related"
    a = read(q, links(q, ("kushina", [cand("character", "Kushina Uzumaki")]),
                      ("minato", [cand("character", "Minato Namikaze")])))
    assert a.intent == "relation"


def test_which_of_several_titles_came_first_ranks_them_by_year() -> None:
    q = "which of zorb, quux and blip came out first"
    a = read(q, links(q, ("zorb", work("Zorb")), ("quux", work("Quux")), ("blip", work("Blip"))))
    assert a.intent == "compare" and a.mentions == ["zorb", "quux", "blip"] and a.compare_field == "year"


def test_a_work_named_twice_is_one_name_and_its_words_ask_nothing() -> None:
    """"X Film: Red - who's the new character in X Film: Red": the second time is "it"; its "film" asks for no
    films of the franchise."""
    q = "Zorb Film: Red - who's the new character in Zorb Film: Red"
    zorb = [cand("anime", "Zorb Film: Red")]
    ls = links(q, ("Zorb Film: Red", zorb))
    second = q.rindex("Zorb Film: Red")
    ls = ls.model_copy(update={"mentions": [*ls.mentions, ls.mentions[0].model_copy(
        update={"start": second, "end": second + len("Zorb Film: Red")})]})
    f = _focus(q, ls)
    assert [m.start for m in f.mentions] == [0] and "film" not in f.text[second:].lower()
    assert f.text[second:].startswith("it ")
    a = read(q, ls)
    assert not a.hops and a.attr is None
