"""How people ask: phrasing templates per question type, each bound to the kind of fact it needs.

A template's id is its position in its type's tuple (``t00``, ``t01``, ...), so new templates go
at the end. Placeholders: ``{a}`` a mention, ``{a's}`` its possessive, ``{n}``/``{year}``/... a
word of the fact; ``((plain||possessive))`` is rendered either way (see ``noise.render``). Templates
of a kind that needs a type cue carry one ("anime", "manga", "studio", "episodes", "aired").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agentic_rag.eval.questions import QuestionType

Split = Literal["tune", "held"]


@dataclass(frozen=True, slots=True)
class Template:
    kind: str
    text: str


def _t(*pairs: tuple[str, str]) -> tuple[Template, ...]:
    return tuple(Template(kind, text) for kind, text in pairs)


TEMPLATES: dict[QuestionType, tuple[Template, ...]] = {
    "lookup": _t(
        ("anime_about", "Tell me about the {a} anime."),
        ("anime_about", "what's the {a} anime about?"),
        ("anime_about", "{a} (anime) - quick summary pls"),
        ("anime_about", "hey, quick question: what is the anime {a}?"),
        ("anime_about", "Give me a short overview of the anime {a}, thanks!"),
        ("manga_about", "What's the {m} manga about?"),
        ("manga_about", "so um can you tell me about the manga {m}"),
        ("manga_about", "{m} manga: overview?"),
        ("character_about", "Who is {c}?"),
        ("character_about", "who's {c} again"),
        ("character_about", "{c} - which series is that character from?"),
        ("character_about", "Describe the character {c}."),
        ("character_about", "ok so who exactly is {c}? if you know"),
        ("person_about", "Who is {p}?"),
        ("person_about", "what is {p} known for"),
        ("person_about", "{p}: who's that, what did they work on"),
        ("character_about", "(({c} backstory||{c's} backstory)) in short?"),
    ),
    "cast": _t(
        ("main_cast", "Who are the main characters of {a}?"),
        ("main_cast", "list the main cast of the {a} anime"),
        ("main_cast", "{a} - who are the protagonists?"),
        ("main_cast", "Name the main characters in {a}, thanks"),
        ("director", "Who directed {a}?"),
        ("director", "((the director of {a}||{a's} director)), who was it?"),
        ("director", "{a} director?"),
        ("director", "hey, quick question: who was the director on {a}"),
        ("composer", "who did the music for {a}"),
        ("composer", "{a}: composer?"),
        ("composer", "Show me who composed the soundtrack of {a}."),
        ("designer", "Who did the character designs for {a}?"),
        ("writer", "who handled series composition on {a}? if you know"),
        ("manga_author", "Who wrote the {m} manga?"),
        ("manga_author", "{m} manga author?"),
        ("manga_artist", "who drew {m} (the manga)"),
        ("manga_artist", "Name the artist of the {m} manga."),
        ("manga_author", "so um who's the writer behind the manga {m}? thanks!"),
        ("main_cast", "(({a} main cast||{a's} main cast))?"),
    ),
    "relation": _t(
        ("kin", "How is {x} related to {y}?"),
        ("kin", "what is {x} to {y}?"),
        ("kin", "{x} is {y's} what?"),
        ("kin", "hey, quick question: how's {x} connected to {y}"),
        ("kin", "Explain the relationship of {x} to {y}."),
        ("kin", "what relation is {x} to {y}, if you know"),
        ("kin", "{x} -> {y}: relationship?"),
        ("kin", "Tell me how {x} is related to {y}."),
        ("kin", "so um is {x} related to {y} or not?"),
        ("kin", "in what way is {x} connected with {y}"),
        ("shared_staff", "What connects the {a} anime and the {b} anime?"),
        ("shared_staff", "{a} and {b} - who worked on both?"),
        ("shared_staff", "name someone who worked on both {a} and {b}"),
        ("shared_studio", "What do the anime {a} and {b} have in common behind the scenes?"),
        ("shared_studio", "{a} and {b}: same studio? which one"),
        ("shared_staff", "is there a staff member the {a} and {b} anime have in common? thanks!"),
    ),
    "comparison": _t(
        ("more_episodes", "Which has more episodes, {a} or {b}?"),
        ("more_episodes", "{a} vs {b}: which show is longer?"),
        ("more_episodes", "compare the episode counts of {a} and {b}"),
        ("more_episodes", "hey, quick question: does {a} have more episodes than {b}"),
        ("earlier_anime", "Which anime came out first, {a} or {b}?"),
        ("earlier_anime", "{a} or {b} (the anime) - which is older?"),
        ("earlier_anime", "did {a} air before {b} or not?"),
        ("earlier_anime", "Tell me which aired earlier: {a} or {b}."),
        ("more_volumes", "Which manga has more volumes, {a} or {b}?"),
        ("more_volumes", "{a} manga vs {b} manga, volume count?"),
        ("older_studio", "Which studio is older, {a} or {b}?"),
        ("older_studio", "{a} or {b}: which studio was founded first? thanks"),
        ("earlier_manga", "so um which manga started first, {a} or {b}"),
        ("more_episodes", "List the episode counts for {a} and {b}."),
        ("earlier_manga", "Compare when the {a} and {b} manga began serialization."),
        ("more_episodes", "(({a} episode count||{a's} episode count)) vs {b}?"),
    ),
    "adaptation": _t(
        ("source_manga", "Which manga is {a} adapted from?"),
        ("source_manga", "what manga is the {a} anime based on"),
        ("source_manga", "{a} anime - source material?"),
        ("source_manga", "Is the {a} anime based on a manga? Which one?"),
        ("source_manga", "hey, quick question: which manga did the {a} anime adapt?"),
        ("source_manga", "name the manga behind the anime {a}"),
        ("source_manga", "{a} (anime): original manga?"),
        ("adaptations", "What anime adaptations has the {m} manga had?"),
        ("adaptations", "Has the {m} manga been turned into an anime?"),
        ("adaptations", "list the anime based on the {m} manga"),
        ("adaptations", "{m} manga -> anime adaptations?"),
        ("adaptations", "so um did the manga {m} ever get an anime or not?"),
        ("adaptations", "Show me the anime made from {m} (the manga), thanks!"),
        ("source_manga", "(({a} anime source manga||{a's} source manga))?"),
    ),
    "sequel": _t(
        ("sequel_of", "What is the sequel to {a}?"),
        ("sequel_of", "what comes after {a}"),
        ("sequel_of", "{a} sequel?"),
        ("sequel_of", "((the sequel of {a}||{a's} sequel)) - what is it?"),
        ("sequel_of", "what do I watch after {a}? story-wise"),
        ("sequel_of", "Name the direct sequel of {a}."),
        ("sequel_of", "is there a follow-up to {a}? thanks!"),
        ("prequel_of", "What is the prequel to {a}?"),
        ("prequel_of", "what came before {a}"),
        ("prequel_of", "{a}: prequel?"),
        ("prequel_of", "Which anime does {a} follow on from?"),
        ("prequel_of", "so um what should i watch before {a}"),
        ("prequel_of", "tell me the prequel of {a} if you know"),
        ("prequel_of", "(({a} prequel||{a's} prequel)) - which one is it?"),
    ),
    "multi_hop": _t(
        ("char_studio", "Which studio animated the anime {c} appears in?"),
        ("char_studio", "{c's} anime - which studio made it?"),
        ("char_studio", "what studio made the show with {c} in it"),
        ("char_director", "Who directed the anime {c} is from?"),
        ("char_director", "hey, quick question: who's the director of the series featuring {c}?"),
        ("sequel_director", "Who directed the sequel of {a}?"),
        ("sequel_studio", "which studio did the sequel to {a}"),
        ("sequel_studio", "{a} -> sequel -> studio?"),
        ("source_artist", "who drew the manga {a} is based on"),
        ("source_artist", "Name the artist of the manga that the {a} anime adapts."),
        ("source_writer", "Who wrote the manga that {a} adapts?"),
        ("source_magazine", "Which magazine serialized the manga {a} is based on?"),
        ("source_magazine", "{a} anime: the source manga ran in which magazine?"),
        ("char_source_author", "who created the manga {c} comes from? thanks!"),
        ("sequel_director", "the sequel to {a} - who directed that one"),
        ("char_director", "(({c} anime||{c's} anime)): who directed it?"),
    ),
    "attribute": _t(
        ("anime_year", "What year did {a} first air?"),
        ("anime_year", "{a} anime - release year?"),
        ("anime_episodes", "How many episodes does {a} have?"),
        ("anime_episodes", "{a}: episodes?"),
        ("manga_volumes", "how many volumes did the {m} manga run for"),
        ("manga_magazine", "Which magazine serialized the {m} manga?"),
        ("studio_founded", "When was {s} founded?"),
        ("anime_studio", "{a} - which studio?"),
        ("anime_studio", "(({a} anime studio?||{a's} studio?))"),
        ("episodes_at_least", "Which anime have at least {n} episodes?"),
        ("episodes_between", "list anime with between {lo} and {hi} episodes"),
        ("aired_or_later", "show me {what} from {year} or later"),
        ("aired_before", "which {what} are older than {year}? thanks!"),
        ("volumes_at_least", "Name manga with at least {n} volumes."),
        ("founded_before", "hey, quick question: which studios were founded before {year}"),
        ("episodes_at_most", "which TV anime have at most {n} episodes"),
        ("studio_since", "{s} anime released in {year} or later?"),
        ("manga_volumes", "{m} manga: how many volumes?"),
        ("founded_or_later", "studios founded in {year} or later - list them"),
        ("studio_before", "Which {s} anime came out before {year}?"),
        ("manga_year", "when did the {m} manga start?"),
        ("volumes_at_most", "so um, which manga have at most {n} volumes"),
        ("studio_founded", "{s} (the studio): founding year?"),
        ("anime_episodes", "(({a} episode count||{a's} episode count))?"),
    ),
    "aggregate": _t(
        ("studio_count", "How many anime did {s} animate?"),
        ("studio_count", "{s}: number of anime in the catalog?"),
        ("studio_count", "count the anime made by {s}"),
        ("studio_count", "hey, quick question: how many shows has {s} done"),
        ("author_manga_count", "How many manga is {p} credited on?"),
        ("author_manga_count", "{p} - how many manga?"),
        ("franchise_anime_count", "How many anime are in the {f} franchise?"),
        ("franchise_anime_count", "number of anime entries in the {f} franchise pls"),
        ("franchise_manga_count", "how many manga does the {f} franchise have"),
        ("director_count", "How many anime did {p} direct?"),
        ("director_count", "{p}: how many anime directed? thanks!"),
        ("anime_character_count", "How many characters does the {a} anime have?"),
        ("franchise_anime_count", "so um, {f} franchise - total anime count?"),
        ("studio_count", "Tell me how many anime {s} has animated, if you know"),
        ("composer_count", "for how many anime did {p} compose the music"),
        ("anime_character_count", "count the characters in {a} (the anime)"),
        ("studio_count", "(({s} anime count||{s's} anime count)) in the catalog?"),
    ),
    "no_match": _t(
        ("absent_anime", "Tell me about the anime {x}."),
        ("absent_anime", "Who directed {x}?"),
        ("absent_anime", "which studio animated {x}"),
        ("absent_anime", "How many episodes does {x} have?"),
        ("absent_anime", "{x} - what's the sequel?"),
        ("absent_anime", "hey, quick question: who are the main characters of {x}?"),
        ("absent_anime", "{x} anime: year?"),
        ("absent_person", "What manga has {x} written?"),
        ("absent_person", "list the anime {x} directed"),
        ("absent_person", "Who is {x}?"),
        ("absent_character", "Is there a character named {x}?"),
        ("absent_character", "which anime is {x} from"),
        ("absent_studio", "Which anime did {x} make?"),
        ("absent_studio", "{x}: when was the studio founded? thanks!"),
        ("absent_character", "so um who is {x} related to"),
        ("absent_person", "{x's} works - show me"),
        ("absent_anime", "(({x} studio||{x's} studio)) - who made it?"),
    ),
    "ambiguous": _t(
        ("shared_name", "Tell me about {x}."),
        ("shared_name", "{x}"),
        ("shared_name", "What is {x}?"),
        ("shared_name", "{x}?"),
        ("shared_name", "Give me info on {x}."),
        ("shared_name", "who or what is {x}"),
        ("shared_name", "hey, quick question: what's {x}?"),
        ("shared_name", "so um, {x} - what can you tell me?"),
        ("shared_name", "i want to know more about {x}"),
        ("shared_name", "{x} info pls"),
        ("shared_name", "Show me {x}."),
        ("shared_name", "what do you have on {x}? thanks!"),
        ("shared_name", "anything on {x}?"),
        ("shared_name", "ok so {x}... details?"),
    ),
    # recommendations (issue 37): a work named, works like it asked for (templates alternate tune and held)
    "recommendation": _t(
        ("similar_anime", "anime like {a}?"),
        ("similar_anime", "any recommendations if I liked {a}?"),
        ("similar_anime", "what should I watch next if I loved {a}"),
        ("similar_anime", "looking for shows similar to {a}, got any?"),
        ("similar_manga", "manga similar to {m}?"),
        ("similar_manga", "recommend me some manga like {m}"),
        ("similar_anime", "{a} fan here - any similar anime you'd suggest?"),
        ("similar_anime", "something in the same vein as {a} please"),
        ("similar_manga", "if you liked the {m} manga, what else would you read?"),
        ("similar_manga", "any similar manga to {m}? i read it twice"),
        ("similar_anime", "suggest a few shows like {a}"),
        ("similar_anime", "i loved {a}. recs for more like it?"),
    ),
}


def template_split(tid: int) -> Split:
    """Which half a template belongs to: even ids tune, odd ids are held out.

    Templates of one kind sit next to each other, so alternating splits every kind with two or
    more templates across both halves.
    """
    return "tune" if tid % 2 == 0 else "held"
