"""Explanations read by method: cue words (why, how come, how did ...) over the plan the other passes make, the
names linked, and one name several entities share told apart by the message's other names.

No database: the links a linker would return are written here. None of these questions is in an eval set.
"""

from __future__ import annotations

import itertools

import pytest

from agentic_rag.protocol import EntityLinks, EntityRef, LinkCandidate, LinkedMention
from agentic_rag.understanding.reading import open_types, read

_ids = itertools.count(1)
F_BEBOP, F_FMA = "00000000-0000-4000-9000-000000000001", "00000000-0000-4000-9000-000000000002"


def cand(entity_type: str, name: str, match: str = "exact", franchises: tuple[str, ...] = (),
         same: LinkCandidate | None = None) -> LinkCandidate:
    ref = same.entity if same is not None else EntityRef(entity_type=entity_type,  # type: ignore[arg-type]
                                                          id=f"00000000-0000-4000-8000-{next(_ids):012d}")
    return LinkCandidate(entity=ref, name=name, matched=name, match=match,  # type: ignore[arg-type]
                         franchises=list(franchises))


def links(question: str, *spans: tuple[str, list[LinkCandidate]]) -> EntityLinks:
    mentions = []
    for text, cands in spans:
        start = question.index(text)
        mentions.append(LinkedMention(text=text, start=start, end=start + len(text), candidates=cands))
    return EntityLinks(mentions=mentions)


MIKASA = [cand("character", "Mikasa Ackerman", "alias")]
LEVI = [cand("character", "Levi Ackerman", "alias")]
KENNY = [cand("character", "Kenny Ackerman", "alias")]


@pytest.mark.parametrize("question", [
    "why does mikasa wear that red scarf in every season?",
    "how come mikasa is so strong compared to the others",
    "how did mikasa end up living with the family",
    "ok but what is mikasa actually, some kind of clan thing?",
])
def test_one_name_explained_is_the_name_itself_and_the_asking_words(question: str) -> None:
    # "in every season", "family": the words of the why are not a relation asked of her
    a = read(question, links(question, ("mikasa", MIKASA)))
    assert a.intent == "lookup" and a.mentions == ["mikasa"] and not a.hops and a.attr is None
    assert a.explain and "mikasa" in a.explain
    assert not a.by_meaning  # the why is quoted from her record: no exemplar reads what it asks


@pytest.mark.parametrize("question", [
    "which studio animated bleach",
    "how many episodes does bleach have",
    "how long is bleach",
    "how do you say bleach in japanese",
])
def test_no_explanation_without_its_cue_words(question: str) -> None:
    bleach = [cand("anime", "Bleach")]
    assert read(question, links(question, ("bleach", bleach))).explain == ""


def test_two_names_explained_keep_their_relation() -> None:
    q = "why does levi hate kenny so much, they're family right?"
    a = read(q, links(q, ("levi", LEVI), ("kenny", KENNY)))
    assert a.intent == "relation" and a.mentions == ["levi", "kenny"]
    assert a.explain.startswith("why does levi hate kenny")


@pytest.mark.parametrize(("question", "explained"), [
    ("how is levi related to kenny?", False),  # the relation asked: stated with its detail, no quotes
    ("how is levi related to kenny exactly?", True),
    ("how is levi even related to kenny", True),
    ("how is levi kenny's nephew?? they're not even family are they", True),  # the insisting word said after
    # "how was X the Y if ...": no relation said in the clause asked; the one after "if" is the puzzle, explained
    ("how was levi the strongest soldier if he trained under kenny", True),
    ("how was levi the strongest soldier, kenny trained him", True),
])
def test_how_related_is_an_explanation_when_a_word_insists(question: str, explained: bool) -> None:
    a = read(question, links(question, ("levi", LEVI), ("kenny", KENNY)))
    assert a.intent == "relation" and bool(a.explain) is explained


def test_a_third_person_is_related_to_the_first_too() -> None:
    goku, gohan, goten = ([cand("character", n, "alias")] for n in ("Son Goku", "Son Gohan", "Son Goten"))
    q = "why does goku train gohan and goten so differently"
    a = read(q, links(q, ("goku", goku), ("gohan", gohan), ("goten", goten)))
    assert a.intent == "relation" and a.mentions == ["goku", "gohan"]
    assert [(x.intent, x.mentions) for x in a.more] == [("relation", ["goku", "goten"])]
    assert all(x.explain for x in a.more)


def test_what_the_words_outside_the_explanation_ask_is_still_asked() -> None:
    q = "who animated bleach? and why does the last arc look so different"
    a = read(q, links(q, ("bleach", [cand("anime", "Bleach")])))
    assert [h.edges for h in a.hops] == [("animated_by",)]
    assert a.explain == "and why does the last arc look so different"


def test_another_name_of_the_same_entity_is_that_entity() -> None:
    usagi = cand("character", "Usagi Tsukino", "alias")
    title = [cand("franchise", "Sailor Moon"), cand("manga", "Sailor Moon"), cand("anime", "Sailor Moon"),
             cand("character", "Usagi Tsukino", "alias", same=usagi)]
    q = "how did usagi actually turn into sailor moon?"
    a = read(q, links(q, ("usagi", [usagi]), ("sailor moon", title)))
    assert a.intent == "lookup" and a.mentions == ["usagi"]
    assert a.linked["usagi"]["character"].entity == usagi.entity
    assert open_types(a, "usagi") == ("character",)  # one reading: nothing to clarify


def test_one_word_of_several_names_after_an_article_is_a_kind() -> None:
    lee = [cand("character", "Rock Lee", "alias")]
    hyuga = [cand("character", "Neji Hyuga", "partial"), cand("character", "Hinata Hyuga", "partial")]
    q = "rock lee isnt a hyuga so how does he keep up in taijutsu"
    a = read(q, links(q, ("rock lee", lee), ("hyuga", hyuga)))
    assert a.mentions == ["rock lee"] and a.explain


def test_a_shared_name_is_read_as_the_one_the_other_names_franchise_has() -> None:
    wong = cand("character", "Edward Wong Hau Pepelu Tivrusky IV", "alias", (F_BEBOP,))
    elric = cand("character", "Edward Elric", "alias", (F_FMA,))
    q = "just started cowboy bebop. why does ed talk like that?"
    a = read(q, links(q, ("cowboy bebop", [cand("anime", "Cowboy Bebop", franchises=(F_BEBOP,))]),
                      ("ed", [elric, wong])))
    assert a.mentions == ["ed"] and a.linked["ed"]["character"].entity == wong.entity
    assert open_types(a, "ed") == ()  # told apart: no clarification asks which Ed


def test_a_shared_name_stays_open_when_nothing_tells_it_apart() -> None:
    wong = cand("character", "Edward Wong Hau Pepelu Tivrusky IV", "alias", (F_BEBOP,))
    elric = cand("character", "Edward Elric", "alias", (F_FMA,))
    q = "why does ed talk like that?"
    a = read(q, links(q, ("ed", [elric, wong])))
    assert open_types(a, "ed") == ("character",)


TRIGUN_TV = [cand("anime", "Trigun")]
TRIGUN_FILM = [cand("anime", "Trigun: Badlands Rumble")]


@pytest.mark.parametrize("question", [
    "how does badlands rumble relate to trigun?",
    "how does badlands rumble tie into the trigun story",
    "how is badlands rumble different from trigun",
])
def test_how_two_works_are_related_quotes_what_they_say(question: str) -> None:
    """Between two works the relation alone ("is followed by") says little: their synopses are quoted ("tie into",
    "different from" ask it too)."""
    a = read(question, links(question, ("badlands rumble", TRIGUN_FILM), ("trigun", TRIGUN_TV)))
    assert a.intent in ("relation", "compare") and a.mentions == ["badlands rumble", "trigun"] and a.explain


def test_a_work_set_apart_before_two_people_asked_related_sets_the_scene() -> None:
    q = "In Trigun, how are Vash and Knives connected?"
    a = read(q, links(q, ("Trigun", TRIGUN_TV), ("Vash", [cand("character", "Vash")]),
                      ("Knives", [cand("character", "Knives")])))
    assert a.intent == "relation" and a.mentions == ["Vash", "Knives"]
    # not without a word that asks it, nor a work that is part of the sentence ("the Trigun film with Vash and ...")
    q = "who directed the Trigun film with Vash and Knives in it"
    a = read(q, links(q, ("Trigun", TRIGUN_TV), ("Vash", [cand("character", "Vash")]),
                      ("Knives", [cand("character", "Knives")])))
    assert a.mentions[:2] != ["Vash", "Knives"]


def test_what_a_work_has_to_do_with_a_title_of_two_forms_is_its_own_form() -> None:
    """"has to do with" relates; the title shared by an anime and a manga is read as the form the other work has."""
    q = "What does Badlands Zine have to do with Trigun?"
    trigun = [cand("anime", "Trigun"), cand("manga", "Trigun")]
    a = read(q, links(q, ("Badlands Zine", [cand("manga", "Badlands Zine")]), ("Trigun", trigun)))
    assert a.intent == "relation" and a.types["Trigun"][0] == "manga"


@pytest.mark.parametrize("question", [
    "Trigun: which came out first, the manga or the anime?",
    "did the trigun anime come out before or after the manga?",
])
def test_one_title_s_two_forms_set_side_by_side_are_compared_by_year(question: str) -> None:
    trigun = [cand("anime", "Trigun"), cand("manga", "Trigun")]
    at = question.lower().index("trigun")
    name = question[at:at + len("trigun")]
    a = read(question, links(question, (name, trigun)))
    assert a.intent == "compare" and a.compare_field == "year" and not a.more
    assert sorted(a.types[m][0] for m in a.mentions) == ["anime", "manga"]


def test_a_work_set_apart_before_a_name_is_the_scene_it_is_explained_in() -> None:
    vortex = [cand("manga", "Trigun Maximum")]
    vash = [cand("character", "Vash the Stampede"), cand("anime", "Vash"), cand("manga", "Vash")]
    q = "In Trigun Maximum, why is Vash treated as a fugitive when he comes back to the city?"
    a = read(q, links(q, ("Trigun Maximum", vortex), ("Vash", vash)))
    assert a.explain and a.together
    assert a.mentions == ["Vash", "Trigun Maximum"]
    assert a.types["Vash"][0] == "character", "the person in that work, not a work of the same name"


def test_the_asking_sentences_before_the_why_choose_the_quotes_too() -> None:
    q = "What's actually different about Trigun Stampede compared to the original Trigun? Why would I watch it?"
    at = q.rindex("Trigun")
    linked = links(q, ("Trigun Stampede", [cand("anime", "Trigun Stampede")]))
    linked.mentions.append(LinkedMention(text="Trigun", start=at, end=at + 6, candidates=[cand("anime", "Trigun")]))
    a = read(q, linked)
    assert a.intent == "compare"
    assert a.explain is not None and a.explain.startswith("What's actually different")


def test_how_an_event_came_about_between_two_people_is_explained_not_only_related() -> None:
    vash, knives = [cand("character", "Vash the Stampede")], [cand("character", "Millions Knives")]
    q = "how did vash end up being knives's enemy"
    a = read(q, links(q, ("vash", vash), ("knives", knives)))
    assert a.intent == "relation" and a.explain, "an event: the answer quotes why"
    q = "how is vash related to knives"
    a = read(q, links(q, ("vash", vash), ("knives", knives)))
    assert a.intent == "relation" and not a.explain, "a state: the relation says it"


@pytest.mark.parametrize("question", [
    "What made Vash drop his gun into the desert in the first place?",
    "What's Vash's motive for dropping his gun into the desert in the first place?",
    "Vash isn't a plant, so where did his arm gun come from?",
    "What's driving Vash in the desert?",
])
def test_a_cause_asked_without_why_is_a_why(question: str) -> None:
    a = read(question, links(question, ("Vash", [cand("character", "Vash the Stampede")])))
    assert a.explain
    # ... and "what studio made Vash's show" is a credit, no cause
    q = "what studio made Vash's show?"
    assert not read(q, links(q, ("Vash", [cand("character", "Vash the Stampede")]))).explain


def test_a_cause_asked_of_a_name_said_she_or_he_is_the_character_s() -> None:
    """"what made Mikasa ... her motivation": a work is never "she", so a name that is a work and a character too
    is read as the character whose record tells why."""
    mikasa = [cand("anime", "Mikasa"), cand("character", "Mikasa Ackerman", "alias")]
    q = "What made Mikasa set out on a journey after the war? I'd like to understand her motivation."
    a = read(q, links(q, ("Mikasa", mikasa)))
    assert a.explain and a.types["Mikasa"][0] == "character"
    q = "What made Mikasa set out on a journey after the war?"  # no pronoun: the reading it had
    assert read(q, links(q, ("Mikasa", mikasa))).types["Mikasa"][0] == "anime"


def test_a_work_the_why_happens_in_said_after_the_name_is_its_scene_too() -> None:
    q = "wait why is vash a little kid again in trigun maximum??"
    a = read(q, links(q, ("vash", [cand("character", "Vash the Stampede")]),
                      ("trigun maximum", [cand("manga", "Trigun Maximum")])))
    assert a.explain and a.together and a.mentions == ["vash", "trigun maximum"]


def test_a_title_owned_by_the_character_named_is_a_thing_the_why_is_the_character_s() -> None:
    """"why did ryuk drop his death note": the notebook is his; the one explained is Ryuk."""
    q = "why did quux drop his zorb note into the human world anyway"
    a = read(q, links(q, ("quux", [cand("character", "Quux")]), ("zorb note", [cand("anime", "Zorb Note")])))
    assert a.explain and a.mentions[0] == "quux" and a.types["quux"][0] == "character"
