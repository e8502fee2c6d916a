"""Reading a request for recommendations: examples, what to recommend, the facts and the wish, what is left out.

The links are written here (no database), as in test_reading.py; none of these questions is in an eval set.
"""

from __future__ import annotations

import re

import pytest

from agentic_rag.protocol import EntityLinks, LinkedMention
from agentic_rag.understanding.reading import open_types, read
from tests.unit.understanding.test_reading import cand, links, work


def test_works_like_two_titles_with_a_decade_and_a_wish() -> None:
    q = "got any anime similar to Trigun and Outlaw Star? ideally from the 90s, gritty space westerns"
    a = read(q, links(q, ("Trigun", work("Trigun")), ("Outlaw Star", work("Outlaw Star"))))
    r = a.recommend
    assert a.intent == "recommend" and r is not None
    assert a.mentions == ["Trigun", "Outlaw Star"] and a.together
    assert all(a.types[m][0] == "anime" for m in a.mentions)
    assert (r.entity_type, r.year_min, r.year_max) == ("anime", 1990, 1999)
    assert "gritty" in r.wish and "space" in r.wish and "westerns" in r.wish


def test_reading_asks_for_manga_and_the_manga_is_the_example() -> None:
    q = "which manga should I read if I loved Berserk?"
    a = read(q, links(q, ("Berserk", work("Berserk"))))
    assert a.recommend is not None and a.recommend.entity_type == "manga"
    assert a.types["Berserk"][0] == "manga"


def test_facts_asked_of_the_picks() -> None:
    q = "recommend me something short and already finished like Mushishi, no movies please"
    a = read(q, links(q, ("Mushishi", work("Mushishi"))))
    r = a.recommend
    assert r is not None and r.short and r.finished is True
    assert "movie" not in r.formats and "tv" in r.formats
    q = "anything still airing that's similar to Dungeon Meshi?"
    r = read(q, links(q, ("Dungeon Meshi", work("Dungeon Meshi")))).recommend
    assert r is not None and r.finished is False


def test_what_the_asker_finished_is_no_wish_about_the_picks() -> None:
    q = "just finished Mushishi and I'm in love. what should I watch next that feels the same vibe?"
    r = read(q, links(q, ("Mushishi", work("Mushishi")))).recommend
    assert r is not None and r.finished is None


def test_a_title_after_a_negation_is_left_out() -> None:
    dungeon, berserk = work("Dungeon Meshi"), work("Berserk")
    q = "fantasy anime like Dungeon Meshi but not Berserk, too gory for me"
    a = read(q, links(q, ("Dungeon Meshi", dungeon), ("Berserk", berserk)))
    assert a.mentions == ["Dungeon Meshi"]
    assert {c.entity.id for c in berserk} <= a.exclude


def test_how_many_picks() -> None:
    q = "give me 3 or 4 shows like Mushishi"
    r = read(q, links(q, ("Mushishi", work("Mushishi")))).recommend
    assert r is not None and r.limit == 4
    q = "a couple of recs like Mushishi?"
    r = read(q, links(q, ("Mushishi", work("Mushishi")))).recommend
    assert r is not None and r.limit == 3


def test_a_type_the_catalog_does_not_hold_is_said() -> None:
    q = "any light novels like Mushishi?"
    a = read(q, links(q, ("light", [cand("character", "Light Yagami", "partial")]), ("Mushishi", work("Mushishi"))))
    assert a.recommend is not None and a.recommend.lacking == "light novels"
    assert a.mentions == ["Mushishi"], "the words of the type name no character"


@pytest.mark.parametrize("question", [
    "what other anime did the director of Mushishi direct?",
    "what is Mushishi like?",
    "I'd like to know who animated Mushishi",
    "my friend keeps recommending Mushishi. who directed it?",
    "what should I watch after Mushishi season 1?",
    "is Mushishi any good, and who made it?",
    "the composer of Mushishi also scored another show, which one?",
])
def test_questions_that_ask_for_facts_are_no_recommendations(question: str) -> None:
    a = read(question, links(question, ("Mushishi", work("Mushishi"))))
    assert a.recommend is None and a.intent != "recommend"


@pytest.mark.parametrize("question", [
    "loved Mushishi, anything else from that studio? tv only",
    "need a finished horror manga in the vein of Mushishi",
    "Mushishi scratched my slow folklore itch, got anything older in that vein?",
    "Mushishi fan here. any psychological manga that's finished?",
    "caught up on Mushishi and want another iyashikei manga",
    "any quiet anime movies from before 2005 that aren't Mushishi?",
    "anything with a Mushishi feel? slow, with real drama to it",
    "Mushishi was amazing!! recomend me something finished",
    "Mushishi is over for me. need another folklore manga that's still running",
])
def test_works_of_a_kind_asked_for_beside_a_liked_or_left_out_title_are_recommendations(question: str) -> None:
    a = read(question, links(question, ("Mushishi", work("Mushishi"))))
    assert a.recommend is not None and a.intent == "recommend"


def test_a_title_after_aren_t_or_outside_of_is_left_out_and_done_airing_means_finished() -> None:
    q = "any quiet anime movies that aren't Mushishi?"
    mushishi = work("Mushishi")
    a = read(q, links(q, ("Mushishi", mushishi)))
    assert {c.entity.id for c in mushishi} <= a.exclude
    q = "something like Mushishi that's done airing"
    r = read(q, links(q, ("Mushishi", work("Mushishi")))).recommend
    assert r is not None and r.finished is True


@pytest.mark.parametrize("question", [
    "which other anime did that same director of Mushishi direct?",
    "who composed Mushishi's music, and did that composer score any other anime?",
    "Mushishi was great, was there another movie that follows it?",
    "the composer of Mushishi also did music for another show right? which one",
])
def test_asking_what_else_someone_made_is_a_fact_even_with_other_anime(question: str) -> None:
    a = read(question, links(question, ("Mushishi", work("Mushishi"))))
    assert a.recommend is None


def test_what_to_watch_after_a_title_is_no_sequel_of_it_and_drama_is_a_wish() -> None:
    q = "what should I watch after Mushishi if I want another finished TV series from the same studio?"
    a = read(q, links(q, ("Mushishi", work("Mushishi"))))
    assert a.recommend is not None and not any(h.edges == ("sequel",) for h in a.hops)
    q = "anything with a Mushishi feel? slow, with real drama to it"
    r = read(q, links(q, ("Mushishi", work("Mushishi")))).recommend
    assert r is not None and r.lacking is None and "drama" in r.wish


@pytest.mark.parametrize("question", [
    "any space western in the spirit of Trigun?",
    "Trigun is my comfort watch. Could you point me to another space western anime?",
    "need a space western anime that isn't Trigun",
    "I've only watched Trigun. Any space western films I could move on to?",
])
def test_more_ways_of_asking_for_works_like_one(question: str) -> None:
    a = read(question, links(question, ("Trigun", work("Trigun"))))
    assert a.intent == "recommend" and a.recommend is not None
    assert "space" in a.recommend.wish and not {"spirit", "comfort", "point", "move", "ve"} & set(
        a.recommend.wish.split())


@pytest.mark.parametrize("question", ["I need a list of anime by Madhouse", "give me a rundown of the Trigun anime"])
def test_a_list_or_a_rundown_asked_for_is_no_recommendation(question: str) -> None:
    names = [n for n in ("Madhouse", "Trigun") if n in question]
    a = read(question, links(question, *((n, work(n)) for n in names)))
    assert a.intent != "recommend"


def test_decades_said_together_are_one_span_and_martial_arts_is_a_genre() -> None:
    q = "Grew up on Trigun. Can you recommend a finished martial arts anime series from the 80s or 90s?"
    a = read(q, links(q, ("Trigun", work("Trigun"))))
    r = a.recommend
    assert r is not None and (r.year_min, r.year_max, r.finished) == (1980, 1999, True)
    assert not a.hops  # "arts" is no artist asked for: Trigun itself is the example
    assert "martial" in r.wish


def test_a_liked_work_s_vibe_wanted_is_a_recommendation() -> None:
    q = "I want something with Trigun's vibe, a gritty space western. Finished TV only and obviously not Trigun."
    a = read(q, links(q, ("Trigun", work("Trigun"))))
    assert a.intent == "recommend" and a.recommend is not None and a.recommend.finished is True


@pytest.mark.parametrize("question", [
    "Just finished Trigun and I want another *completed* manga with that same gritty edge.",
    "is there a space western anime thats more of a comedy? dont say more trigun",
    "need something gritty to binge after trigun. tv series only, 2020 or newer",
])
def test_markup_existential_asks_and_something_to_binge_are_recommendations(question: str) -> None:
    a = read(question, links(question, ("Trigun", work("Trigun"))) if "Trigun" in question else links(
        question, ("trigun", work("Trigun"))))
    assert a.intent == "recommend" and a.recommend is not None


def test_a_decade_ruled_out_means_newer_works() -> None:
    q = "any newer space westerns like Trigun? nothing from the 90s"
    r = read(q, links(q, ("Trigun", work("Trigun")))).recommend
    assert r is not None and (r.year_min, r.year_max) == (2000, None)


def test_a_similarly_dark_series_wished_after_a_title_is_a_recommendation() -> None:
    q = "Having completed Trigun, I would like a similarly dark anime series from another franchise."
    a = read(q, links(q, ("Trigun", work("Trigun"))))
    assert a.intent == "recommend" and a.recommend is not None and "dark" in a.recommend.wish


def test_a_title_after_not_the_main_is_left_out() -> None:
    q = "any space western manga thats already completed? just not the main Trigun manga"
    a = read(q, links(q, ("Trigun", work("Trigun"))))
    assert a.intent == "recommend" and a.exclude


def test_a_title_set_aside_by_besides_says_what_the_picks_are_not() -> None:
    q = "trigun had me laughing. besides trigun itself, any other space western shows with comedy?"
    first, second = q.index("trigun"), q.index("trigun", 1)
    linked = EntityLinks(mentions=[LinkedMention(text="trigun", start=at, end=at + 6, candidates=work("Trigun"))
                                   for at in (first, second)])
    a = read(q, linked)
    assert a.intent == "recommend"


def test_something_just_as_dark_next_is_a_recommendation() -> None:
    q = "Finished Trigun. I need something just as dark and brutal next, and nothing from the Trigun franchise."
    a = read(q, links(q, ("Trigun", work("Trigun"))))
    assert a.intent == "recommend" and a.recommend is not None and "dark" in a.recommend.wish


@pytest.mark.parametrize("question", [
    "need smth funny to watch after Mushishi, preferably a series",
    "Mushishi had me in tears lol. got anything else thats slow + quiet with a wandering main guy??",
    "My son watched every episode of Mushishi and wants another really long folklore/ghost show",
    "Give me something with Mushishi vibes. TV series only.",
    "Mushishi is still going and i want another ONGOING manga w/ that quiet energy. what's out there",
])
def test_wants_said_in_passing_are_recommendations(question: str) -> None:
    a = read(question, links(question, ("Mushishi", work("Mushishi"))))
    assert a.recommend is not None and a.intent == "recommend"


def test_what_to_pick_up_next_with_the_title_left_out_is_a_recommendation() -> None:
    q = "Mushishi manga readers, what should i pick up next?? not Mushishi itself"
    first, second = q.index("Mushishi"), q.rindex("Mushishi")
    linked = EntityLinks(mentions=[LinkedMention(text="Mushishi", start=at, end=at + 8, candidates=work("Mushishi"))
                                   for at in (first, second)])
    a = read(q, linked)
    assert a.recommend is not None and a.recommend.entity_type == "manga"


def test_a_studio_s_other_works_to_check_out_are_wanted_though_the_studio_animated_something() -> None:
    q = "Mushishi was gorgeous. does the studio that animated it have any other shows or films i could check out?"
    r = read(q, links(q, ("Mushishi", work("Mushishi")))).recommend
    assert r is not None
    assert set(r.formats) == {"tv", "movie"}, "shows or films: both, not films alone"


def test_long_is_a_wish_and_done_with_it_is_no_wish_that_the_picks_be_finished() -> None:
    q = "wants another really long folklore show like Mushishi with hundreds of episodes. he's done with Mushishi."
    r = read(q, links(q, ("Mushishi", work("Mushishi")))).recommend
    assert r is not None and r.long and not r.short and r.finished is None
    q = "something like Mushishi that's not too long"
    r = read(q, links(q, ("Mushishi", work("Mushishi")))).recommend
    assert r is not None and r.short and not r.long


def test_a_work_the_picks_are_like_is_no_pick_from_its_studio() -> None:
    q = "I'm looking for an anime along the lines of Mushishi that was made by the same studio. Is there anything?"
    mushishi = work("Mushishi")
    a = read(q, links(q, ("Mushishi", mushishi)))
    assert a.recommend is not None and a.hops and a.hops[-1].edges == ("animated_by",), "the studio's works"
    assert {c.entity.id for c in mushishi} <= a.exclude, "like Mushishi: not Mushishi itself"


@pytest.mark.parametrize("question", [
    "Looking for a completed manga I can buy in one go: something finished with between 10 and 20 volumes. "
    "What are my options?",
])
def test_a_want_in_a_telling_sentence_with_no_work_named_stays_a_catalog_question(question: str) -> None:
    a = read(question, EntityLinks(mentions=[]))
    assert a.recommend is None


def test_the_vibe_of_a_title_and_excluding_its_franchise() -> None:
    q = "Looking for anime with the grim vibe of Mushishi, but please exclude the Mushishi franchise entirely."
    first, second = q.index("Mushishi"), q.rindex("Mushishi")
    mushishi = work("Mushishi")
    linked = EntityLinks(mentions=[LinkedMention(text="Mushishi", start=at, end=at + 8, candidates=mushishi)
                                   for at in (first, second)])
    a = read(q, linked)
    assert a.recommend is not None
    assert {c.entity.id for c in mushishi} <= a.exclude


@pytest.mark.parametrize("question", [
    "Is there another really long folklore/ghost TV series (100+ episodes) he could get into that has nothing to do "
    "with Mushishi?",
    "Anything in the same quiet slice-of-life lane as Mushishi but from another series? Manga or anime both fine.",
    "Mushishi is my all-time favourite. Which other Artland productions would you point me to, outside the Mushishi "
    "franchise?",
    "Mushishi was great. Are there any other folklore anime films in the catalog that came out before 2010?",
])
def test_more_works_of_a_kind_with_the_title_left_out(question: str) -> None:
    mushishi = work("Mushishi")
    spans = [LinkedMention(text="Mushishi", start=m.start(), end=m.end(), candidates=mushishi)
             for m in re.finditer("Mushishi", question)]
    a = read(question, EntityLinks(mentions=spans))
    assert a.recommend is not None


def test_a_number_of_episodes_over_or_under() -> None:
    q = "something like Mushishi with 100+ episodes"
    r = read(q, links(q, ("Mushishi", work("Mushishi")))).recommend
    assert r is not None and r.long
    q = "something like Mushishi, a completed TV anime under 100 episodes"
    r = read(q, links(q, ("Mushishi", work("Mushishi")))).recommend
    assert r is not None and not r.long


def test_a_length_said_in_numbers_bounds_the_picks() -> None:
    q = "Can you suggest a shorter adventure anime like Mushishi (under 30 episodes)?"
    r = read(q, links(q, ("Mushishi", work("Mushishi")))).recommend
    assert r is not None and r.most == 29 and r.least is None
    q = "any manga like Mushishi with more than 40 volumes?"
    r = read(q, links(q, ("Mushishi", work("Mushishi")))).recommend
    assert r is not None and r.least == 41 and r.entity_type == "manga"


def test_an_example_s_readings_need_no_question_and_a_like_said_apart_from_the_ask() -> None:
    q = "old school stuff like Mushishi but obviously not Mushishi itself... something that started before 2000?"
    mushishi = work("Mushishi")
    spans = [LinkedMention(text="Mushishi", start=m.start(), end=m.end(), candidates=mushishi)
             for m in re.finditer("Mushishi", q)]
    a = read(q, EntityLinks(mentions=spans))
    assert a.recommend is not None and a.recommend.year_max == 1999
    assert all(open_types(a, m) == () for m in a.mentions), "no clarification between an example's readings"


def test_a_read_wanted_next_and_a_binge_wanted_across_a_dash_are_recommendations() -> None:
    q = "mushishi wrecked me lol. i want to READ something next — a finished fantasy manga. not mushishi obviously"
    a = read(q, links(q, ("mushishi", work("Mushishi"))))
    assert a.recommend is not None and a.recommend.entity_type == "manga" and a.recommend.finished is True
    q = "I want a huge binge — a completed show with at least 200 episodes. I've seen all of Mushishi, skip that."
    r = read(q, links(q, ("Mushishi", work("Mushishi")))).recommend
    assert r is not None and r.least == 200 and r.finished is True


def test_a_decade_spelled_out_and_a_refused_running_show_mean_finished_then() -> None:
    q = "What TV series from the nineties would you recommend? I don't want something that's still going."
    r = read(q, None).recommend
    assert r is not None and (r.year_min, r.year_max, r.finished) == (1990, 1999, True)
    q = "recommend something like Mushishi that is still airing"
    r = read(q, links(q, ("Mushishi", work("Mushishi")))).recommend
    assert r is not None and r.finished is False


def test_a_studio_left_out_is_a_condition_on_the_picks_not_a_chain_to_it() -> None:
    q = "Mushishi was honestly gorgeous. Is there another fantasy TV series, made by some studio other than Artland?"
    artland = cand("studio", "Artland")
    a = read(q, links(q, ("Mushishi", work("Mushishi")), ("Artland", [artland])))
    assert a.intent == "recommend" and a.recommend is not None
    assert a.mentions == ["Mushishi"] and not a.hops  # the example, not the works of its studio
    assert artland.entity.id in a.exclude  # the studio is left out (the similar step leaves out its works)
    # praise with any adverb is a like ("was honestly gorgeous"), and more "stuff" of a kind is works wanted
    q = "just finished Monster and i want more psychological stuff, tv only"
    assert read(q, links(q, ("Monster", work("Monster")))).intent == "recommend"


def test_works_sought_by_conditions_beside_a_work_named() -> None:
    """Seeking words before an indefinite, with conditions a work's fields hold, beside a work named as an example or
    left out: a recommendation, though no cue word or type noun says so."""
    q = "trigun made me want some old school space adventure. smth that started before 2005 and is already done pls"
    a = read(q, links(q, ("trigun", work("Trigun"))))
    r = a.recommend
    assert r is not None and a.mentions == ["trigun"], "Trigun is the example"
    assert r.year_max == 2004 and r.finished is True
    q = "need a MASSIVE shonen to binge, like 200+ episodes, and it has to be finished. and dont say trigun"
    trigun = work("Trigun")
    a = read(q, links(q, ("trigun", trigun)))
    assert a.recommend is not None and a.recommend.least == 200 and a.recommend.finished is True
    assert {c.entity.id for c in trigun} <= a.exclude, "said not to be one"
    # no conditions: a want is no recommendation by itself ("I want a summary of Trigun")
    q = "i want a summary of trigun"
    assert read(q, links(q, ("trigun", work("Trigun")))).recommend is None


def test_something_asked_by_its_conditions_and_the_act_wanted_before_a_work() -> None:
    q = "loved trigun but 74 volumes is a LOT lol. something supernatural thats finished and under 15 volumes?"
    a = read(q, links(q, ("trigun", work("Trigun"))))
    r = a.recommend
    assert r is not None and r.entity_type == "manga", "volumes are a manga's"
    assert r.finished is True and r.most == 14
    q = "watched the trigun anime, now i want to READ a space manga. not trigun tho"
    trigun = work("Trigun")
    at = [i for i in range(len(q)) if q.startswith("trigun", i)]
    linked = EntityLinks(mentions=[LinkedMention(text="trigun", start=i, end=i + 6, candidates=trigun) for i in at])
    a = read(q, linked)
    assert a.recommend is not None and a.recommend.entity_type == "manga"
    # ... but an errand is no wish for works ("I'd like to order a copy of the Trigun manga")
    q = "I'd like to order a japanese copy of the Trigun manga, what is its title in japanese?"
    assert read(q, links(q, ("Trigun", work("Trigun")))).recommend is None


def test_any_ideas_asks_for_picks_by_the_wish_alone() -> None:
    q = "looking for something short, finished and funny, under 15 episodes. any ideas?"
    a = read(q, EntityLinks())
    assert a.intent == "recommend" and a.recommend is not None and a.recommend.finished is True
    assert "funny" in a.recommend.wish


def test_an_asking_sentence_of_only_the_something_wanted_is_a_recommendation() -> None:
    """"something cozy and wholesome, slice of life with comedy?": no question word, no work named, the something
    asked for; "something wrong?" and "anything else?" ask nothing of the kind."""
    q = "my gf doesnt like gore or sad stuff. something cozy and wholesome, slice of life with comedy? we'd watch it"
    a = read(q, EntityLinks())
    assert a.recommend is not None and {"cozy", "comedy"} <= set(a.recommend.wish.split())
    for q in ("anything else?", "something wrong?", "anything about the studio?"):
        assert read(q, EntityLinks()).recommend is None, q


def test_a_wish_word_said_again_before_a_new_word_is_kept() -> None:
    """"something dark ... dark fantasy": the genre said whole, not "dark ... fantasy"."""
    q = ("need something dark like aot but i dont want to start another 80 ep commitment. dark fantasy tv show, "
         "already finished, under 30 episodes. and not more attack on titan pls")
    a = read(q, links(q, ("aot", work("Attack on Titan")), ("attack on titan", work("Attack on Titan"))))
    assert a.recommend is not None and "dark fantasy" in a.recommend.wish, a.recommend.wish


def test_seeking_another_of_a_kind_beside_a_work_left_out_and_a_vibe_sought() -> None:
    q = ("zorb wrecked me emotionally (in a good way). looking for another fantasy adventure where a group travels "
         "together. not zorb obviously")
    ls = links(q, ("zorb", work("Zorb")))
    again = q.rindex("zorb")
    ls = ls.model_copy(update={"mentions": [*ls.mentions, ls.mentions[0].model_copy(
        update={"start": again, "end": again + 4})]})
    a = read(q, ls)
    assert a.recommend is not None and a.exclude
    q = "anything set in old-timey japan? like a historical setting with swords and monsters, thats the vibe im after"
    a = read(q, EntityLinks())
    assert a.recommend is not None and "historical" in a.recommend.wish
