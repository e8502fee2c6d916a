"""Reading a choice among listed names: the list, the predicate each is tested for, and whether it is negated.

No database: the links a linker would return are written here. The questions are written for these tests (none
is from an eval set).
"""

from __future__ import annotations

import pytest

from agentic_rag.protocol import EntityLinks
from agentic_rag.protocol.reading import Analysis
from agentic_rag.understanding.reading import read
from tests.unit.understanding.test_reading import cand, links, work


def char(name: str, match: str = "alias") -> list:  # type: ignore[type-arg]
    return [cand("character", name, match)]


def among(a: Analysis) -> tuple[list[str], bool, str | None, tuple[str, ...] | None, tuple[str, ...]]:
    assert a.intent == "among" and a.among is not None, a
    x = a.among
    return x.candidates, x.negated, x.target, x.hop.edges if x.hop else None, x.group


def test_which_is_not_in_a_work_tests_each_listed_character_for_an_appearance_in_it() -> None:
    q = "which of these isn't in Spy x Family: Anya, Yor, Nami or Bond?"
    a = read(q, links(q, ("Spy x Family", work("Spy x Family")), ("Anya", char("Anya Forger")),
                      ("Yor", char("Yor Forger")), ("Nami", char("Nami", "exact")), ("Bond", char("Bond Forger"))))
    assert among(a) == (["Anya", "Yor", "Nami", "Bond"], True, "Spy x Family", ("appears_in",), ())
    assert a.among is not None and a.among.hop is not None and a.among.hop.node_types == ("anime",)
    assert a.types["Spy x Family"][0] == "anime"  # a character is in the anime unless the question says manga
    assert a.mentions == ["Anya", "Yor", "Nami", "Bond", "Spy x Family"]


def test_the_type_word_beside_the_other_name_says_which_work() -> None:
    q = "who out of luffy, zoro and gon never shows up in the one piece manga"
    a = read(q, links(q, ("luffy", char("Monkey D. Luffy")), ("zoro", char("Roronoa Zoro")),
                      ("gon", char("Gon Freecss")), ("one piece", work("One Piece"))))
    assert among(a)[:4] == (["luffy", "zoro", "gon"], True, "one piece", ("appears_in",))
    assert a.types["one piece"][0] == "manga" and a.among is not None and a.among.hop is not None
    assert a.among.hop.node_types == ("manga",)


@pytest.mark.parametrize(("question", "edges", "roles"), [
    ("which of these was not animated by Bones: Mob Psycho 100, Soul Eater, Naruto", ("animated_by",), ()),
    ("which of these wasn't directed by Tetsuro Araki: Mob Psycho 100, Soul Eater, Naruto",
     ("staff",), ("director", "chief_director")),
])
def test_a_work_made_by_a_studio_or_credited_to_a_person(question: str, edges: tuple[str, ...],
                                                           roles: tuple[str, ...]) -> None:
    other = "Bones" if "Bones" in question else "Tetsuro Araki"
    kind = "studio" if other == "Bones" else "person"
    a = read(question, links(question, (other, [cand(kind, other)]), ("Mob Psycho 100", work("Mob Psycho 100")),
                             ("Soul Eater", work("Soul Eater")), ("Naruto", work("Naruto"))))
    assert among(a)[:4] == (["Mob Psycho 100", "Soul Eater", "Naruto"], True, other, edges)
    assert a.among is not None and a.among.hop is not None and a.among.hop.roles == roles
    assert all(a.types[m] == ("anime",) or a.types[m][0] == "anime" for m in a.among.candidates)


def test_the_positive_form_is_the_same_method_not_negated() -> None:
    q = "which of the following were made by Bones: Mob Psycho 100, Soul Eater or Naruto?"
    a = read(q, links(q, ("Bones", [cand("studio", "Bones")]), ("Mob Psycho 100", work("Mob Psycho 100")),
                      ("Soul Eater", work("Soul Eater")), ("Naruto", work("Naruto"))))
    assert among(a)[:4] == (["Mob Psycho 100", "Soul Eater", "Naruto"], False, "Bones", ("animated_by",))


@pytest.mark.parametrize(("question", "edge"), [
    ("of gojo, nanami, yuji and megumi, who has never taught anyone?", "mentor_of"),
    ("which of these has no teacher: gojo, nanami, yuji, megumi", "student_of"),
    ("gojo, nanami, yuji or megumi - which one isn't somebody's student?", "student_of"),
])
def test_a_relation_to_anyone_is_an_edge_from_each_that_reaches_anything(question: str, edge: str) -> None:
    named = [("gojo", "Satoru Gojo"), ("nanami", "Kento Nanami"), ("yuji", "Yuji Itadori"),
             ("megumi", "Megumi Fushiguro")]
    a = read(question, links(question, *((t, char(n)) for t, n in named)))
    assert among(a) == (["gojo", "nanami", "yuji", "megumi"], True, None, (edge,), ())


def test_a_relation_to_a_named_character_is_read_from_its_role_word() -> None:
    q = "which of these isn't Gojo's student: yuji, megumi, nobara or toji?"
    a = read(q, links(q, ("Gojo", char("Satoru Gojo")), ("yuji", char("Yuji Itadori")),
                      ("megumi", char("Megumi Fushiguro")), ("nobara", char("Nobara Kugisaki")),
                      ("toji", char("Toji Fushiguro"))))
    assert among(a)[:4] == (["yuji", "megumi", "nobara", "toji"], True, "Gojo", ("student_of",))


@pytest.mark.parametrize(("question", "group", "said"), [
    ("which of these is NOT a jujutsu sorcerer: yuji, megumi, nobara, toji?", ("jujutsu", "sorcerer"),
     "a jujutsu sorcerer"),
    ("which one of them was never part of the phantom troupe - chrollo, hisoka, killua", ("phantom", "troupe"),
     "part of the phantom troupe"),
    ("i think all of these are hunters: gon, killua, leorio, kurapika. which one isn't?", ("hunters",), "hunters"),
])
def test_a_group_the_catalog_has_no_entry_for_is_the_words_a_record_must_say(question: str, group: tuple[str, ...],
                                                                            said: str) -> None:
    names = sorted((w for w in ("yuji", "megumi", "nobara", "toji", "chrollo", "hisoka", "killua", "gon", "leorio",
                                "kurapika") if f" {w}" in f" {question}"), key=question.index)
    a = read(question, links(question, *((n, char(n.title())) for n in names)))
    assert among(a) == (names, True, None, None, group)
    assert a.among is not None and a.among.said == said


def test_names_the_catalog_lacks_are_kept_as_typed() -> None:
    q = "which of these is not in Naruto: Kakashi, Zorblax, Gaara or Quinnetta?"
    lk = links(q, ("Naruto", work("Naruto")), ("Kakashi", char("Kakashi Hatake")), ("Gaara", char("Gaara", "exact")))
    a = read(q, lk.model_copy(update={"unknown": ["Zorblax", "Quinnetta"]}))
    assert among(a)[:3] == (["Kakashi", "Gaara"], True, "Naruto")
    assert a.among is not None and a.among.unlisted == ["Zorblax", "Quinnetta"]


def test_a_list_of_only_names_the_catalog_lacks_is_said_so() -> None:
    q = "which of these is not in Naruto: Zorblax, Quinnetta or Varnimoth?"
    lk = links(q, ("Naruto", work("Naruto"))).model_copy(update={"unknown": ["Zorblax", "Quinnetta", "Varnimoth"]})
    a = read(q, lk)
    assert a.among is not None and a.among.candidates == [] and a.mentions == []
    assert a.among.unlisted == ["Zorblax", "Quinnetta", "Varnimoth"]


def test_a_listed_name_with_two_readings_is_left_to_the_names_beside_it() -> None:
    q = "which of these isn't in Spy x Family: anya, franky, yor?"
    franky = [cand("character", "Franky", "exact"), cand("character", "Franky Franklin", "alias")]
    a = read(q, links(q, ("Spy x Family", work("Spy x Family")), ("anya", char("Anya Forger")), ("franky", franky),
                      ("yor", char("Yor Forger"))))
    assert a.among is not None and a.among.readings["franky"] == tuple(c.entity.id for c in franky)


@pytest.mark.parametrize("question", [
    "which of these came out first: Naruto, Bleach or One Piece?",  # a comparison, not a choice by a predicate
    "which is older, Naruto or Bleach?",
    "who directed Naruto and Bleach?",
    "how many episodes do Naruto and Bleach have, not counting the movies?",
    "which of these is the longest: Naruto, Bleach or One Piece?",
    "which of the two has more chapters, Naruto or Bleach? we can't decide",
    "which works of One Piece aren't movies, besides Naruto and Bleach?",  # names left out of a list asked for
    "I love Naruto, Bleach too. which part of One Piece is best?",  # one work's parts, not a choice among names
])
def test_a_question_that_is_no_choice_by_a_predicate_is_read_as_before(question: str) -> None:
    spans = [(n, work(n)) for n in ("Naruto", "Bleach", "One Piece") if n in question]
    assert read(question, links(question, *spans)).among is None


def test_a_negation_inside_a_name_negates_nothing() -> None:
    q = "which of these are in Bleach: No Game No Life, Naruto?"
    a = read(q, links(q, ("Bleach", work("Bleach")), ("No Game No Life", work("No Game No Life")),
                      ("Naruto", work("Naruto"))))
    assert a.among is not None and not a.among.negated


def test_one_name_is_no_list() -> None:
    q = "which one wasn't made by Khara?"
    assert read(q, links(q, ("Khara", [cand("studio", "Khara")]))).among is None


def test_no_links_is_no_choice() -> None:
    q = "which of these isn't a pirate: a, b or c?"
    assert read(q, EntityLinks()).among is None


def test_a_party_someone_led_is_their_teammates() -> None:
    q = "Wolfwood, Meryl, Milly, Knives — who among them was never part of Vash's original party?"
    a = read(q, links(q, *((n, char(n)) for n in ("Wolfwood", "Meryl", "Milly", "Knives", "Vash"))))
    candidates, negated, target, edges, _ = among(a)
    assert candidates == ["Wolfwood", "Meryl", "Milly", "Knives"] and negated and target == "Vash"
    assert edges == ("teammate",)


def test_a_group_named_after_one_of_and_a_cue_word_beside_others() -> None:
    q = "Wolfwood, Meryl, Milly, Knives: which of them is not one of the Gung-Ho Guns?"
    a = read(q, links(q, *((n, char(n)) for n in ("Wolfwood", "Meryl", "Milly", "Knives"))))
    assert a.among is not None and a.among.group == ("gung", "ho", "guns")
    q = "wolfwood, meryl, milly.. which one is NOT an s-class hero?"
    a = read(q, links(q, *((n, char(n)) for n in ("wolfwood", "meryl", "milly"))))
    assert a.among is not None and a.among.group == ("s", "class", "hero")


def test_missing_from_negates_and_a_list_says_items_with_their_form() -> None:
    q = "of the main four (gon, killua, kurapika, leorio), who's missing from the Zorb OVA?"
    a = read(q, links(q, ("gon", char("Gon")), ("killua", char("Killua")), ("kurapika", char("Kurapika")),
                      ("leorio", char("Leorio")), ("Zorb", work("Zorb"))))
    assert among(a)[:3] == (["gon", "killua", "kurapika", "leorio"], True, "Zorb")
    # "the X TV series", "Y (1999)": the item's form and year are the item's own, the list runs on
    q = "Quux, the Zorb TV series, Blip (1999), Blop: which of these were NOT animated by Bonez?"
    a = read(q, links(q, ("Quux", work("Quux")), ("Zorb", work("Zorb")), ("Blip (1999", work("Blip")),
                      ("Blop", work("Blop")), ("Bonez", [cand("studio", "Bonez")])))
    assert among(a)[0] == ["Quux", "Zorb", "Blip (1999", "Blop"] and among(a)[1]
