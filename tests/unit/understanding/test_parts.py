"""Reading a message of several questions: where it splits, which names each part is read with, a total asked of a
list, a part no pass reads, and a message of more parts than are read.

No database: the links a linker would return are written here. The questions are written for these tests (none
is from an eval set).
"""

from __future__ import annotations

import re
import time

from agentic_rag.protocol import EntityLinks, EntityRef, LinkCandidate, LinkedMention
from agentic_rag.understanding.reading import read
from agentic_rag.understanding.reading.parts import MAX_PARTS, _clauses
from agentic_rag.understanding.text import sentences


def cand(entity_type: str, name: str, n: int, year: int | None = None) -> LinkCandidate:
    return LinkCandidate(entity=EntityRef(entity_type=entity_type, id=f"00000000-0000-4000-8000-{n:012d}"),  # type: ignore[arg-type]
                         name=name, matched=name, match="exact", year=year)


def links(question: str, *spans: tuple[str, list[LinkCandidate]]) -> EntityLinks:
    mentions = []
    for text, cands in spans:
        start = question.index(text)
        mentions.append(LinkedMention(text=text, start=start, end=start + len(text), candidates=cands))
    return EntityLinks(mentions=mentions)


BEBOP = [cand("anime", "Cowboy Bebop", 1, 1998)]
TRIGUN = [cand("anime", "Trigun", 2, 1998)]
KAKASHI = [cand("character", "Kakashi Hatake", 3)]


def parts(question: str) -> list[str]:
    return [question[a:b].strip() for a, b in _clauses(question)]


def test_a_series_of_questions_splits_at_every_comma_and_a_lone_clause_does_not() -> None:
    assert parts("trigun: how many episodes, which studio, and who did the soundtrack?") == [
        "trigun: how many episodes", "which studio", "who did the soundtrack?"]
    # one question with a comma in it, no series after: one part
    assert len(parts("the 1998 space western, how many episodes")) == 1
    # a part may tell what to do, when it asks something; "give me the order" only says how to answer
    assert parts("who did kakashi train? list them and tell me how many in total") == [
        "who did kakashi train", "list them and tell me how many in total"]
    assert len(parts("what comes after trigun? give me the order.")) == 1


def test_every_part_of_a_series_asks_what_it_says_of_the_one_name() -> None:
    q = "cowboy bebop anime: how many episodes, which studio, and who did the music?"
    a = read(q, links(q, ("cowboy bebop", BEBOP)))
    assert a.attr == "episode_count"
    assert [m.hops[0].edges for m in a.more] == [("animated_by",), ("staff",)]
    assert all(m.mentions == ["cowboy bebop"] for m in a.more) and not a.unread


def test_parts_that_name_their_own_entities_are_each_read_with_them() -> None:
    q = "how many episodes did trigun have, and is cowboy bebop finished?"
    a = read(q, links(q, ("trigun", TRIGUN), ("cowboy bebop", BEBOP)))
    assert (a.mentions, a.attr) == (["trigun"], "episode_count")
    assert [(m.mentions, m.attr) for m in a.more] == [(["cowboy bebop"], "status")]
    # a part that points back at the first ("the same person") is no question of its own
    q = "who directed trigun, and which cowboy bebop film did the same person direct?"
    a = read(q, links(q, ("trigun", TRIGUN), ("cowboy bebop", BEBOP)))
    assert a.mentions[:1] == ["trigun"] and not any(m.mentions == ["cowboy bebop"] and m.attr for m in a.more)


def test_a_total_asked_of_a_list_counts_it() -> None:
    q = "who did kakashi train? list them and tell me how many in total"
    a = read(q, links(q, ("kakashi", KAKASHI)))
    assert a.hops and a.hops[0].edges == ("mentor_of",) and a.attr == "count" and not a.more
    # without the total the list alone is asked
    q = "who did kakashi train?"
    assert read(q, links(q, ("kakashi", KAKASHI))).attr is None


def test_a_part_no_pass_reads_is_kept_to_be_said_and_a_bare_one_is_not() -> None:
    q = "how many episodes does trigun have and which gunslingers are in it?"
    a = read(q, links(q, ("trigun", TRIGUN)))
    assert a.attr == "episode_count" and a.unread == ["which gunslingers are in it"]
    q = "what year did trigun come out, and who was it?"  # asks nothing of its own: read with the whole
    assert read(q, links(q, ("trigun", TRIGUN))).unread == []


def test_a_message_of_forty_questions_reads_the_first_few_and_says_how_many_it_asked() -> None:
    q = "how many episodes does trigun have? " + " ".join(["who directed it?", "which studio made it?"] * 20)[:-1] + \
        "? what year did it air?"
    a = read(q, links(q, ("trigun", TRIGUN)))
    assert a.parts == (MAX_PARTS, 42)
    assert 1 + len(a.more) + len(a.unread) <= MAX_PARTS  # the parts past the first few are not read
    q = "how many episodes does trigun have? who directed it?"
    assert read(q, links(q, ("trigun", TRIGUN))).parts is None


def test_long_runs_of_blanks_split_in_linear_time() -> None:
    # a message whose names were blanked out holds runs of hundreds of spaces; splitting it into sentences must not
    # backtrack over them (it once took seconds per call: a denial of service by message length)
    text = "how many episodes does it have" + " " * 5000 + "and i was wondering who directed it"
    started = time.perf_counter()
    for _ in range(20):
        assert [text[a:b].strip() for a, b in sentences(text)] == [
            "how many episodes does it have", "and i was wondering who directed it"]
    assert time.perf_counter() - started < 5.0  # microseconds each; the backtracking form took hours here


def test_a_topic_named_first_is_what_every_part_after_it_asks_of() -> None:
    q = "trigun tv series: who did the music, and which studio produced it?"
    a = read(q, links(q, ("trigun", TRIGUN)))
    asked = [(x.mentions, x.hops[0].edges if x.hops else x.attr) for x in (a, *a.more)]
    assert asked == [(["trigun"], ("staff",)), (["trigun"], ("animated_by",))]
    # a list of what is asked after the topic: each item a part
    q = "three things about trigun: episode count, director, and the year it started?"
    a = read(q, links(q, ("trigun", TRIGUN)))
    assert {x.attr for x in (a, *a.more)} >= {"episode_count", "year"}
    assert any(x.hops and x.hops[0].edges == ("staff",) for x in (a, *a.more))
    # ... joined by "+" or "and", with no question word ("csm anime: studio + episode count?")
    for q in ("trigun anime: studio + episode count?", "trigun anime: studio and episode count?"):
        a = read(q, links(q, ("trigun", TRIGUN)))
        assert [x.hops[0].edges if x.hops else x.attr for x in (a, *a.more)] == [("animated_by",), "episode_count"], q


def test_a_colon_inside_a_title_or_parts_that_chain_are_no_topic() -> None:
    film = [cand("anime", "Trigun: Badlands Rumble", 4, 2010)]
    q = "Trigun: Badlands Rumble vs cowboy bebop, which is longer?"
    a = read(q, links(q, ("Trigun: Badlands Rumble", film), ("cowboy bebop", BEBOP)))
    assert a.intent == "compare"
    # "that" points at what the part before found: one chain, not two parts asked of the topic
    q = "trigun anime - what manga is it adapted from and where did that run"
    a = read(q, links(q, ("trigun", TRIGUN)))
    assert not a.more


def test_a_connective_after_a_question_mark_starts_a_part() -> None:
    assert parts("is trigun finished? also who directed it") == ["is trigun finished", "also who directed it"]
    assert parts("is trigun finished?? and which studio made it") == ["is trigun finished", "and which studio made it"]


def test_a_joining_word_alone_is_no_part_and_a_plus_joins_two() -> None:
    q = "When was Madhouse founded? Also, how many episodes does their Trigun adaptation have?"
    assert parts(q) == ["When was Madhouse founded", "how many episodes does their Trigun adaptation have?"]
    assert parts("trigun ep count + what anime comes right after it?") == ["trigun ep count",
                                                                          "what anime comes right after it?"]


def test_a_possessive_that_only_qualifies_a_part_s_own_name_leaves_the_parts_apart() -> None:
    q = "When was Madhouse founded? Also, how many episodes does their Trigun adaptation have?"
    a = read(q, links(q, ("Madhouse", [cand("studio", "Madhouse", 4)]), ("Trigun", TRIGUN)))
    assert (a.mentions, a.attr) == (["Madhouse"], "founded")
    assert [(m.mentions, m.attr) for m in a.more] == [(["Trigun"], "episode_count")]
    # "the same person" points back for what it asks: read whole
    q = "Who directed Cowboy Bebop, and which Trigun film did the same person direct?"
    a = read(q, links(q, ("Cowboy Bebop", BEBOP), ("Trigun", TRIGUN)))
    assert not any(m.mentions == ["Trigun"] and not m.hops for m in a.more)


def test_parts_go_with_the_names_before_them() -> None:
    """A part that names nothing is asked of the part before it: two questions about one title, then one about
    another, are two readings, not a comparison of the two titles."""
    q = "When did the Trigun manga wrap up and how many volumes is it? Also how many episodes does Bebop have?"
    a = read(q, links(q, ("Trigun", [cand("manga", "Trigun", 7)]), ("Bebop", BEBOP)))
    assert a.intent != "compare" and a.mentions == ["Trigun"] and a.attr is not None
    assert [(m.mentions, m.attr) for m in a.more] == [(["Bebop"], "episode_count")]


def test_a_group_of_parts_about_one_title_is_read_part_by_part() -> None:
    """"How many episodes does X have and who directed it? And how many did Y have?": X's two parts each (its count
    and its director), then Y's."""
    q = "How many episodes does Bebop have and who directed it? And how many episodes did Trigun have?"
    a = read(q, links(q, ("Bebop", BEBOP), ("Trigun", [cand("anime", "Trigun", 9)])))
    assert a.mentions == ["Bebop"] and a.attr == "episode_count"
    asked = [(m.mentions, m.attr, [h.edges for h in m.hops]) for m in a.more]
    assert (["Trigun"], "episode_count", []) in asked and any(
        m == ["Bebop"] and ("staff",) in e for m, _, e in asked), asked


def test_where_a_manga_runs_is_its_magazine() -> None:
    q = "Two quick ones about the Trigun manga: who's the artist, and where does it run?"
    a = read(q, links(q, ("Trigun", [cand("manga", "Trigun", 8)])))
    assert a.hops and a.hops[0].edges == ("staff",)  # the artist
    assert [m.attr for m in a.more] == ["magazine"]


def test_a_part_that_says_which_form_of_the_topic_settles_it() -> None:
    q = "trigun questions: what year did the manga start, and what studio does the anime"
    both = [cand("manga", "Trigun", 9), cand("anime", "Trigun", 10)]
    a = read(q, links(q, ("trigun", both)))
    readings = [a, *a.more]
    assert not any(r.open for r in readings)
    assert readings[0].types["trigun"][0] == "manga"


def test_a_topic_said_first_and_set_apart_by_a_comma() -> None:
    q = "For Cowboy Bebop, who directed it and which studios animated it?"
    a = read(q, links(q, ("Cowboy Bebop", BEBOP)))
    hops = [h.edges for x in (a, *a.more) for h in x.hops]
    assert ("staff",) in hops and ("animated_by",) in hops


def test_what_a_work_follows_on_from_is_its_prequel() -> None:
    q = "trigun: number of episodes, its director, and which series it follows on from?"
    a = read(q, links(q, ("trigun", TRIGUN)))
    assert ("prequel",) in [h.edges for x in (a, *a.more) for h in x.hops]


def test_a_part_without_a_verb_of_its_own_asks_as_the_part_before_did() -> None:
    s1, s2 = [cand("anime", "Trigun", 2, 1998)], [cand("anime", "Trigun Season 2", 5, 2000)]
    q = "trigun anime: who directed s1, who took over for s2, and how many episodes did s2 run?"
    mentions = [LinkedMention(text="trigun", start=0, end=6, candidates=s1)]
    for at in [m.start() for m in re.finditer(r"\bs2\b", q)]:
        mentions.append(LinkedMention(text="s2", start=at, end=at + 2, candidates=s2))
    a = read(q, EntityLinks(mentions=mentions))
    asked = [(x.mentions, x.hops[0].edges if x.hops else x.attr) for x in (a, *a.more)]
    assert asked[0] == (["trigun"], ("staff",))
    assert (["s2"], ("staff",)) in asked, "who took over for s2: directed, as the part before asked"
    assert (["s2"], "episode_count") in asked
    assert not a.unread


def test_each_of_two_asked_twice_is_two_comparisons() -> None:
    s2 = [cand("anime", "Trigun Season 2", 5, 2000)]
    q = "trigun and s2 - which studio made each one and how many eps does each have"
    a = read(q, links(q, ("trigun", TRIGUN), ("s2", s2)))
    assert [(x.intent, x.compare_field) for x in (a, *a.more)] == [("compare", "studios"), ("compare", "episode_count")]


def test_it_in_a_later_part_is_the_form_the_part_before_said() -> None:
    both = [cand("anime", "Trigun", 2, 1998), cand("manga", "Trigun", 6, 1995)]
    q = "trigun: how many volumes did the main manga end up with, what year did it finish?"
    a = read(q, links(q, ("trigun", both)))
    assert [x.types["trigun"][0] for x in (a, *a.more)] == ["manga", "manga"]


def test_two_values_then_a_credit_are_three_parts() -> None:
    q = "How long is trigun in episodes, when did it finish, and who composed its score?"
    a = read(q, links(q, ("trigun", TRIGUN)))
    asked = [x.hops[0].edges if x.hops else x.attr for x in (a, *a.more)]
    assert asked == ["episode_count", "year", ("staff",)]
    assert "episode_count" not in a.also, "the episodes once"


def test_parts_that_each_name_their_own_work_and_one_has_no_verb() -> None:
    film = [cand("anime", "Trigun: Badlands Rumble", 4, 2010)]
    q = "how many episodes did trigun have, how many did badlands rumble have, and what year did badlands rumble start"
    spans = [("trigun", TRIGUN)]
    mentions = links(q, *spans).mentions
    for m in re.finditer("badlands rumble", q):
        mentions.append(LinkedMention(text="badlands rumble", start=m.start(), end=m.end(), candidates=film))
    a = read(q, EntityLinks(mentions=mentions))
    asked = [(x.mentions, x.attr) for x in (a, *a.more)]
    assert asked[:2] == [(["trigun"], "episode_count"), (["badlands rumble"], "episode_count")]


def test_one_value_asked_of_each_form_of_a_topic_is_two_parts() -> None:
    both = [cand("anime", "Trigun", 2, 1998), cand("manga", "Trigun", 6, 1995)]
    q = "trigun: what year did the manga start, and what year did the anime premiere?"
    a = read(q, links(q, ("trigun", both)))
    assert [(x.types["trigun"][0], x.attr) for x in (a, *a.more)] == [("manga", "year"), ("anime", "year")]


def test_parts_that_each_ask_what_one_record_tells_are_each_read() -> None:
    q = "techniques question - what's megumi's technique called, what's nobara's, and what does nanami use?"
    found = links(q, ("megumi", [cand("character", "Megumi Fushiguro", 11)]),
                  ("nobara", [cand("character", "Nobara Kugisaki", 12)]),
                  ("nanami", [cand("character", "Kento Nanami", 13)]))
    a = read(q, found)
    assert [x.mentions for x in (a, *a.more)] == [["megumi"], ["nobara"], ["nanami"]]
    assert all(x.intent == "lookup" for x in (a, *a.more))
