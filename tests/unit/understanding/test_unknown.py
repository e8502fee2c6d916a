"""Which words of a question look like a name the catalog lacks (understanding/unknown.py), without a database."""

from __future__ import annotations

import pytest

from agentic_rag.protocol import EntityLinks, LinkedMention
from agentic_rag.understanding.text import tokenize
from agentic_rag.understanding.unknown import englishlike, only_scope, titled_runs, unknown_names
from tests.unit.understanding.test_reading import cand, links


@pytest.mark.parametrize("word", ["rewatching", "bookshop", "keyring", "isnt", "theyve", "slickest", "insanely",
                                  "recomend", "animted", "superpowers", "unimpressed"])
def test_english_as_people_type_it(word: str) -> None:
    assert englishlike(word)


@pytest.mark.parametrize("word", ["kokushibo", "pakunoda", "kizaru", "hashirama", "haikyuu", "lelouch"])
def test_names_are_no_english(word: str) -> None:
    assert not englishlike(word)


def _unknown(question: str, linked: list[str], known: tuple[str, ...] = ()) -> list[str]:
    spans = [(question.index(n), question.index(n) + len(n)) for n in linked]
    links = EntityLinks.model_validate({"mentions": [{"text": question[a:b], "start": a, "end": b, "candidates": []}
                                                     for a, b in spans]})
    return unknown_names(question, tokenize(question), links.mentions, dict.fromkeys(known, 1), ())


def test_a_run_of_foreign_words_is_one_name_and_takes_in_a_capitalised_neighbour() -> None:
    assert _unknown("madara and Hashirama Senju founded the leaf", ["madara"]) == ["Hashirama Senju"]
    # "Yuki" is a word of another catalog name, typed with a capital beside the unknown one
    assert _unknown("gojo vs Yuki Tsukumo, whos stronger", ["gojo"], known=("yuki",)) == ["Yuki Tsukumo"]
    assert _unknown("what's Zorvath's deal in hxh", ["hxh"]) == ["Zorvath"]  # without the possessive


def test_beside_a_name_a_lower_case_word_counts_when_no_dictionary_has_it() -> None:
    assert _unknown("akainu vs Kizaru, which admiral", ["admiral"]) == ["akainu", "Kizaru"]
    assert _unknown("is kisame in naruto shippuden", ["naruto shippuden"]) == ["kisame"]
    assert _unknown("in what arc does luffy fight katakuri", ["luffy"]) == ["katakuri"]
    assert _unknown("vegito is goku and vegeta fused right", ["goku", "vegeta"]) == ["vegito"]
    # English the tokenizer's vocabulary lacks is in Webster's: "corgi", "spooky", "tetralogy", "recap"
    assert _unknown("who is the corgi in cowboy bebop", ["cowboy bebop"]) == []
    assert _unknown("that tall spooky guy in death note", ["death note"]) == []
    assert _unknown("the rebuild of evangelion tetralogy", ["evangelion"]) == []
    assert _unknown("the death note recap special", ["death note"]) == []
    # the fandom's own words, and a thing a name owns, are no name
    assert _unknown("i watched frieren on crunchyroll, any isekai like it", ["frieren"]) == []
    assert _unknown("what is ichigo's zanpakuto", ["ichigo"]) == []
    assert _unknown("is KNY better than jjk", ["jjk"]) == []  # an acronym


def test_a_capital_inside_a_sentence_is_a_name_though_one_letter_off_a_word() -> None:
    # "Pieck" is one letter off "piece", an English word and a word of One Piece; no mention covers it
    assert unknown_names("which seasons is Pieck in, and is she a Warrior like Reiner",
                         tokenize("which seasons is Pieck in, and is she a Warrior like Reiner"), [],
                         {"reiner": 1, "piece": 3}, ["pieck"]) == ["Pieck"]
    # ... but a typo beside a catalog word typed with a capital is more of that name ("Yagami Ligght")
    assert unknown_names("who directed the anime Yagami Ligght is from",
                         tokenize("who directed the anime Yagami Ligght is from"), [],
                         {"yagami": 1, "light": 2}, ["ligght"]) == []
    # ... and so is a word typed with a capital right after a name ("Frieren Beyond Jourmeys Ends")
    assert _unknown("so um Frieren Beyond Jourmeys Ends episode count", ["Frieren"]) == []
    # the first word of a sentence is typed with a capital whatever it is
    assert _unknown("Recomend me something like naruto", ["naruto"]) == []


def test_without_a_name_a_lower_case_word_counts_unless_it_is_described() -> None:
    assert _unknown("and who taught the brothers alchemy", []) == []  # a word of Webster's inside a sentence
    assert _unknown("how many volumes does berserk have", []) == ["berserk"]  # ... where a count is asked of a name
    assert _unknown("berserk how many episodes", []) == ["berserk"]
    assert _unknown("the show with a corgi and a telepathic girl", []) == []
    assert _unknown("how many episodes", []) == []
    assert len(_unknown("Aaaqx Bbbqx, Cccqx, Dddqx and Eeeqx", [])) == 3  # bounded


def test_capitalised_words_no_mention_covers_are_one_name_though_each_is_a_catalog_word_or_typo() -> None:
    # "Mikoshi" is a word of another catalog name and "Torvaku" one letter off one: neither is foreign alone
    assert unknown_names("did Mikoshi Torvaku fight ichigo", tokenize("did Mikoshi Torvaku fight ichigo"), [],
                         {"mikoshi": 2, "ichigo": 3}, ["torvaku"]) == ["Mikoshi Torvaku"]
    # words that are all the catalog's may be one of its names typed short ("Mari Illustrious Makinami")
    assert _unknown("Mikoshi Torvaku which films", [], known=("mikoshi", "torvaku")) == []
    # two capitalised English words are no name
    assert _unknown("is the Final Season good in aot", ["aot"], known=("final", "season")) == []
    assert _unknown("Who Is Kakashi", ["Kakashi"], known=("is",)) == []


def test_a_numbering_after_a_name_is_its_own() -> None:
    assert _unknown("is Zorblax No. 12 by mappa", ["mappa"], known=("no",)) == ["Zorblax No. 12"]
    assert _unknown("is Zorblax Vol. 3 out", []) == ["Zorblax Vol. 3"]
    assert _unknown("Does Zorblax Show Up", [], known=("show",)) == ["Zorblax"]  # a capitalised word, no numbering
    assert _unknown("is Zorblax. 3 of them", []) == ["Zorblax"]  # a sentence's end, then a number


def test_a_type_word_the_catalog_names_use_leads_a_name() -> None:
    assert _unknown("did Studio Quibble animate naruto", ["naruto"], known=("studio",)) == ["Studio Quibble"]
    # typed in lower case it is the word, not a name; alone it is the word too
    assert _unknown("which studio Quibble made naruto", ["naruto"], known=("studio",)) == ["Quibble"]
    assert _unknown("which Studio made naruto", ["naruto"], known=("studio",)) == []
    # a type word no catalog name uses leads nothing
    assert _unknown("Manga Recommendations for naruto fans", ["naruto"]) == []


def test_a_phrase_where_a_name_goes_is_a_name_though_every_word_is_english() -> None:
    assert _unknown("was trigun animated by kyoto animation or by madhouse?", ["trigun", "madhouse"]) == [
        "kyoto animation"]
    assert _unknown("how does tokyo revengers compare to trigun", ["trigun"]) == ["tokyo revengers"]
    # a pointing word, a number or a cue word there is no name
    assert _unknown("trigun was made by two studios, which ones?", ["trigun"]) == []
    assert _unknown("which anime were animated by the same studio as trigun", ["trigun"]) == []


def test_where_a_question_asks_about_a_name_a_phrase_with_a_foreign_word_is_one() -> None:
    """Asking whether the catalog has it, one side of "X <more> than Y", who someone is in a work: a name, when a
    word of it is no English word (English ones there are a description: "is it darker than")."""
    assert _unknown("is trigun darker than hellsing or nah", ["hellsing"]) == ["trigun"]
    assert _unknown("is vash stampede in here?", []) == ["vash stampede"]
    assert _unknown("do you have vash stampede", []) == ["vash stampede"]
    assert _unknown("who's meryl in trigun?", ["trigun"]) == ["meryl"]
    assert _unknown("who is strongest in trigun?", ["trigun"]) == []
    assert _unknown("is it darker than trigun", ["trigun"]) == []
    assert _unknown("id rather read the manga than watch tbh", []) == []


def test_names_typed_short_lower_or_with_an_english_word_after_them() -> None:
    assert _unknown("how does reze know vash", ["vash"]) == ["reze"]  # four letters, lower case, beside a name
    assert _unknown("whats the deal between Vash and Soi Fon", ["Vash"]) == ["Soi Fon"]
    assert _unknown("in trigun, does Vash beat up Tanktop Master?", ["trigun", "Vash"]) == ["Tanktop Master"]
    # two lower-case words no dictionary has, one a catalog word and one not: a name ("hayao miyazaki")
    assert _unknown("did hayao miyazaki work on trigun", ["trigun"], known=("miyazaki",)) == ["hayao miyazaki"]
    # chat is no name
    assert _unknown("trigun total eps incl the ova lmao", ["trigun"]) == []


def test_a_name_asked_for_by_whether_the_catalog_has_it() -> None:
    """"is X in your catalog": X is a name however it is spelled ("zorb;quux": two English-looking halves joined by a
    sign), unless the words are plain English or point ("are there any OVAs", "do you have listed")."""
    assert _unknown("is zorb;quux in your catalog? if so is it like trigun", ["trigun"]) == ["zorb;quux"]
    assert _unknown("does your catalog have Gate Keepers", []) == ["Gate Keepers"]
    assert _unknown("are there any OVAs in the catalog", []) == []
    assert _unknown("how many of his manga do you have listed?", []) == []
    assert _unknown("is it in your catalog", []) == []
    # the whole of what is asked for, however it is typed: English words in lower case too
    assert _unknown("is sailor moon in the catalog?", []) == ["sailor moon"]
    assert _unknown("do you have anything on kyoto animation?", []) == ["kyoto animation"]
    assert _unknown("tell me about sword art online", []) == ["sword art online"]
    assert _unknown("tell me about the show where a boy eats a fruit", []) == []
    assert _unknown("is black clover in here too? thats pierrot right", ["pierrot"]) == ["black clover"]
    assert _unknown("is anything in here by mappa", ["mappa"]) == []


def test_the_work_a_credit_is_asked_of_is_a_name_however_it_is_typed() -> None:
    """"is X made by the same studio as Y": X is in a work's place, English words or not."""
    assert _unknown("is blue lock made by the same studio as jjk?", ["jjk"]) == ["blue lock"]
    assert _unknown("was it made by mappa", ["mappa"]) == []
    assert _unknown("was the movie also animated by mappa", ["mappa"]) == []


def test_two_capitalised_words_one_of_them_short_and_no_english_word_are_a_name() -> None:
    # "Petra" is a word of the vocabulary (the city), "Vok" too short to be foreign alone: together a name
    assert _unknown("Was Petra Vok part of Levi's squad?", ["Levi"]) == ["Petra Vok"]
    assert _unknown("Is Levi In The Squad", ["Levi"], known=("squad",)) == []  # Title Case says nothing


def test_a_compound_of_two_three_letter_pieces_is_no_english_word() -> None:
    assert not englishlike("shisui")
    assert englishlike("keyring") and englishlike("sunset")


def test_a_capitalised_name_asked_to_be_in_a_work_the_question_names() -> None:
    # "Jean" and "Havoc" are both English words; asked to be in a work, typed with capitals, they are a name
    assert _unknown("Is Kelly Havoc in Trigun? one of Vash's guys", ["Trigun", "Vash"]) == ["Kelly Havoc"]
    assert _unknown("which of them are NOT in Trigun?", ["Trigun"]) == []  # shouting is no name
    assert _unknown("is he in Trigun", ["Trigun"]) == []


def test_names_in_a_pick_between_two_after_studio_and_with_a_sign_inside() -> None:
    # two English words picked between, beside a side that links: a name
    assert _unknown("which one has more episodes, solar drift or trigun?", ["trigun"]) == ["solar drift"]
    assert _unknown("which has more episodes, trigun or solar drift?", ["trigun"]) == ["solar drift"]
    assert _unknown("which is better, action or comedy?", []) == []  # one word each: no name
    # "studio" and the word after it, typed in lower case too; not a word that goes on with the question
    assert _unknown("did studio quibble animate trigun?", ["trigun"]) == ["studio quibble"]
    assert _unknown("what did the studio behind trigun make", ["trigun"]) == []
    assert _unknown("which studio animated trigun", ["trigun"]) == []
    # a sign inside a word joins two halves into one name
    assert _unknown("Is Zorb;Quux also by Madhouse?", ["Madhouse"]) == ["Zorb;Quux"]


def test_a_name_a_slot_took_is_said_once() -> None:
    assert _unknown("studio quibble founded", []) == ["studio quibble"]
    assert _unknown("is Bones an older studio than MAPPA?", ["Bones", "MAPPA"]) == []
    assert _unknown("Zorb;Quux is the best. How many episodes does Zorb;Quux have?", []) == ["Zorb;Quux"]


def test_names_made_by_someone_or_compared_in_a_slot() -> None:
    assert _unknown("did madhouse also make zorbian drift? and when was it founded", ["madhouse"]) == [
        "zorbian drift"]
    assert _unknown("did madhouse make good shows?", ["madhouse"]) == []  # English words there: no name
    assert _unknown("is zorbian quest by the same araki who directed trigun?", ["araki", "trigun"]) == [
        "zorbian quest"]
    assert _unknown("Is Solar Drift an older studio than Madhouse?", ["Madhouse"]) == ["Solar Drift"]
    assert _unknown("vash from solar drift vs denji, who had it worse?", ["vash", "denji"]) == ["solar drift"]


def test_a_name_one_side_of_as_much_as() -> None:
    assert _unknown("is zorbian quest as brutal as trigun?", ["trigun"]) == ["zorbian quest"]
    assert _unknown("is it as long as trigun", ["trigun"]) == []


def test_a_name_that_credits_a_work_or_has_more_of_something_than_another() -> None:
    # the subject of a credit ("did X work on Y"), typed with capitals, though each word is English
    assert _unknown("Did Tokyo Studio work on any Trigun season?", ["Trigun"]) == ["Tokyo Studio"]
    # one side of "does X have more episodes than Y", with a word no dictionary has
    assert _unknown("does zorvath saga have more episodes than trigun?", ["trigun"]) == ["zorvath saga"]
    # what was made, before a dash
    assert _unknown("Which studio made Zorvath Moon — the same one as Trigun?", ["Trigun"]) == ["Zorvath Moon"]
    # words of the catalog's own names typed short in lower case are no name it lacks ("toei": Toei Animation)
    assert _unknown("is trigun from a manga or did toei just make it up", ["trigun"], known=("toei",)) == []


def test_the_pair_said_before_which_is_asked() -> None:
    assert _unknown("silver lantern or trigun - which anime has more episodes", ["trigun"]) == ["silver lantern"]
    assert _unknown("trigun or silver lantern, which is longer?", ["trigun"]) == ["silver lantern"]


def test_a_member_asked_of_a_group() -> None:
    assert _unknown("Was Beyond Birthday one of Vash's brothers, alongside Knives?", ["Vash", "Knives"]) == [
        "Beyond Birthday"]


def test_a_name_said_first_beside_another_with_and() -> None:
    assert _unknown("Black Lantern and Trigun were both done by Madhouse, right?", ["Trigun", "Madhouse"]) == [
        "Black Lantern"]
    # a question's own first word is no part of a name
    assert _unknown("Have Hayato Mori and Vash ever met?", ["Vash"]) == ["Hayato Mori"]
    assert _unknown("In Trigun, who is Melinda Desmond and how is she related to Vash?", ["Trigun", "Vash"]) == [
        "Melinda Desmond"]


def _proper(question: str, linked: list[str], known: tuple[str, ...] = ()) -> list[str]:
    spans = [(question.index(n), question.index(n) + len(n)) for n in linked]
    links = EntityLinks.model_validate({"mentions": [{"text": question[a:b], "start": a, "end": b, "candidates": []}
                                                     for a, b in spans]})
    tokens = tokenize(question)
    return [question[tokens[a].start:tokens[b].end] for a, b in
            titled_runs(question, tokens, links.mentions, dict.fromkeys(known, 1))]


def test_capitalised_words_inside_a_sentence_are_a_proper_name_though_english() -> None:
    """Two words or more typed with capitals inside a sentence, that no mention covers and that hold a word no
    catalog name uses: a proper name ("Sailor Moon", "Fairy Tail"), left to the catalog's prose to say whether it
    tells of it."""
    assert _proper("Was Sailor Moon made by the same studio that animated Dragon Ball?", ["Dragon Ball"]) == [
        "Sailor Moon"]
    assert _proper("Which is longer, Naruto or Fairy Tail? Episode counts please.", ["Naruto"]) == ["Fairy Tail"]
    assert _proper("What has Kyoto Animation made compared to ufotable?", ["ufotable"],
                   known=("animation",)) == ["Kyoto Animation"]
    assert _proper("is Kaiju No. 8 made by the same studio as jjk", ["jjk"]) == ["Kaiju No. 8"]  # its numbering too


@pytest.mark.parametrize(("question", "linked", "known"), [
    ("Sailor Moon is what studio", [], ()),  # a sentence's first word may be capitalised for the sentence
    ("Which Studio Animated The Show Naruto", ["Naruto"], ()),  # Title Case says nothing
    ("who beat the Demon King in frieren", ["frieren"], ("demon", "king")),  # the catalog's own words
    ("is Naruto a Hidden Leaf ninja", ["Naruto"], ("hidden", "leaf")),
    ("I really liked it", [], ()),  # one word
])
def test_no_proper_name_where_capitals_say_nothing_or_the_words_are_the_catalogs(
        question: str, linked: list[str], known: tuple[str, ...]) -> None:
    assert _proper(question, linked, known) == []


def test_a_title_between_the_and_what_it_is_is_a_name_unless_english_describes_it() -> None:
    assert _unknown("who directed the tokyo ghoul anime?", []) == ["tokyo ghoul"]
    assert _unknown("is the berserk manga finished or still going", []) == ["berserk"]
    assert _unknown("is the original manga finished", []) == []  # a cue word
    assert _unknown("who made the dark anime with the notebook", []) == []  # English describes it
    # the catalog's own words ("the V Jump manga": a magazine it has)
    assert _unknown("are any of the V Jump manga still running", [], known=("jump",)) == []


def _work_at(question: str, text: str) -> list[LinkedMention]:
    return links(question, (text, [cand("anime", text)])).mentions


@pytest.mark.parametrize(("question", "known", "scoped"), [
    ("In Jujutsu Kaisen, what is Hiromi Higuruma's domain expansion?", "Jujutsu Kaisen", True),
    ("which breathing style does Yoriichi use in Demon Slayer?", "Demon Slayer", True),
    ("Jujutsu Kaisen: who is Hiromi Higuruma?", "Jujutsu Kaisen", True),
    ("did Kyoto Animation work on Frieren?", "Frieren", False),  # the known name is asked about
    ("is Yoriichi stronger than Demon Slayer's Tanjiro?", "Demon Slayer", False),
])
def test_a_known_work_only_where_an_unknown_name_is_set(question: str, known: str, scoped: bool) -> None:
    mentions = _work_at(question, known)
    assert only_scope(question, mentions, ["x"]) is scoped
    assert not only_scope(question, mentions, [])


@pytest.mark.parametrize(("question", "known"), [
    ("does Kokushibo show up in the Hashira Training Arc? and who directed that season", "Hashira Training Arc"),
    ("Was Hayao Miyazaki involved in Cowboy Bebop in any capacity?", "Cowboy Bebop"),
    ("what's Feitan's deal in hunter x hunter? is he in the 2011 anime much", "2011 anime"),
    ("is mirko ranked higher than all might in mha", "mha"),
])
def test_a_known_work_the_unknown_name_is_asked_to_be_in_is_no_scope(question: str, known: str) -> None:
    assert not only_scope(question, _work_at(question, known), ["x"])


def test_a_work_asked_done_too_and_a_name_asked_in_my_title_are_names() -> None:
    assert _unknown("which studio animated frieren, and did they also do vinland saga?", ["frieren"]) == \
        ["vinland saga"]
    assert _unknown("is mirko in my hero academia season 6?", ["my hero academia season 6"]) == ["mirko"]
    assert _unknown("did they also do anything else?", []) == []
