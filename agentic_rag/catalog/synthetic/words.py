"""The synthetic catalog's vocabularies: the word lists its text is built from, and its enumerations.

Every word is checked at import to be safe as an unquoted COPY text field and as a quoted array
element, so generated rows never need escaping.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

Arr = npt.NDArray[Any]  # the numpy arrays passed throughout the generator, of any dtype

# -- vocabularies ---------------------------------------------------------------------------------

_SYLLABLES = (
    ("ka", "カ"), ("ki", "キ"), ("ku", "ク"), ("ke", "ケ"), ("ko", "コ"), ("sa", "サ"), ("shi", "シ"),
    ("su", "ス"), ("se", "セ"), ("so", "ソ"), ("ta", "タ"), ("chi", "チ"), ("tsu", "ツ"), ("te", "テ"),
    ("to", "ト"), ("na", "ナ"), ("ni", "ニ"), ("no", "ノ"), ("ne", "ネ"), ("ha", "ハ"), ("hi", "ヒ"),
    ("fu", "フ"), ("ho", "ホ"), ("ma", "マ"), ("mi", "ミ"), ("mu", "ム"), ("me", "メ"), ("mo", "モ"),
    ("ya", "ヤ"), ("yu", "ユ"), ("yo", "ヨ"), ("ra", "ラ"), ("ri", "リ"), ("ru", "ル"), ("re", "レ"),
    ("ro", "ロ"), ("wa", "ワ"), ("ga", "ガ"), ("gi", "ギ"), ("go", "ゴ"), ("da", "ダ"), ("do", "ド"),
    ("ba", "バ"), ("bi", "ビ"), ("ji", "ジ"), ("ze", "ゼ"), ("ryu", "リュウ"), ("kyo", "キョウ"),
    ("sho", "ショウ"), ("hana", "ハナ"), ("a", "ア"), ("i", "イ"), ("e", "エ"), ("o", "オ"),
)
_ADJECTIVES = (
    "Crimson", "Silent", "Eternal", "Hidden", "Broken", "Golden", "Last", "Iron", "Wandering", "Burning",
    "Frozen", "Hollow", "Scarlet", "Azure", "Forgotten", "Shattered", "Radiant", "Phantom", "Restless",
    "Midnight", "Distant", "Savage", "Gentle", "Endless",
)
_NOUNS = (
    "Blade", "Sky", "Kingdom", "Promise", "Garden", "Storm", "Requiem", "Frontier", "Covenant", "Horizon",
    "Tide", "Lantern", "Chronicle", "Oath", "Citadel", "Labyrinth", "Melody", "Ember", "Harbor", "Crown",
    "Signal", "Orbit", "Moon", "Rebellion",
)
GENRES = (
    "action", "adventure", "comedy", "drama", "fantasy", "dark_fantasy", "sci_fi", "mecha", "mystery",
    "romance", "slice_of_life", "sports", "supernatural", "horror", "psychological", "historical",
    "martial_arts", "thriller",
)
_MAGAZINES = (
    "Weekly Shōnen Kite", "Monthly Comic Lantern", "Weekly Young Harbor", "Shōnen Orbit+",
    "Monthly Shōjo Ember", "Comic Frontier", "Big Comic Tide", "Seinen Citadel", "Web Manga Signal",
)
_ARCHETYPES = (
    "an orphaned swordsman", "a reluctant prodigy", "a disgraced knight", "a young alchemist", "a street thief",
    "an exiled princess", "a rookie pilot", "a retired assassin", "a wandering healer", "a high-school detective",
    "a cursed mage", "a stubborn apprentice",
)
_GOALS = (
    "must unravel a conspiracy", "searches for a lost sibling", "fights to protect a small town",
    "seeks revenge for a fallen master", "tries to break an ancient curse", "enters a deadly tournament",
    "races to stop a coming war", "hunts the monsters that destroyed their home",
    "sets out to map the unknown world", "struggles to keep a promise",
)
_TRAITS = (
    "hot-headed", "calm", "cheerful", "ruthless", "loyal", "mysterious", "clumsy", "brilliant", "proud", "kind",
)
_PARTS = (
    "swordsman", "mage", "strategist", "pilot", "healer", "captain", "detective", "rival", "villain", "mentor",
    "student", "sniper",
)
_STUDIO_FORMS = ("Studio {}", "{} Animation", "{} Pictures", "{} Works", "Team {}", "{} Studio")
_FORMATS = ("tv", "movie", "ova", "ona", "special")
_FORMAT_P = (0.55, 0.15, 0.10, 0.12, 0.08)
_FORMAT_WORDS = ("TV series", "film", "OVA", "web series", "special")
_NOMINAL_EPISODES = (12, 13, 24, 25, 26, 50, 64, 148)
ANIME_RELATIONS = ("sequel", "side_story", "summary", "spinoff", "alternative_version")
ANIME_STAFF_ROLES = (
    "original_creator", "director", "chief_director", "series_composition", "character_design", "music",
    "producer",
)
MANGA_AUTHOR_ROLES = ("story_and_art", "story", "art")
CHARACTER_ROLES = ("main", "supporting")
# Character relationship types, their inverse, how often they occur, and what details they carry.
CHARACTER_RELATIONS = ("family", "ally", "rival", "enemy", "teammate", "romantic", "mentor_of", "student_of")
_CHARACTER_INVERSE = np.array([0, 1, 2, 3, 4, 5, 7, 6], dtype=np.int8)
_CHARACTER_REL_P = (0.15, 0.25, 0.14, 0.14, 0.15, 0.05, 0.12, 0.0)
_FAMILY_DETAILS = ("brother", "sister", "father", "mother", "cousin", "grandfather", "uncle", "aunt", "son", "daughter")


def _check_vocabularies() -> None:
    """Every word is safe as an unquoted COPY text field and as a quoted array element."""
    words = [w for pair in _SYLLABLES for w in pair]
    words += [*_ADJECTIVES, *_NOUNS, *GENRES, *_MAGAZINES, *_ARCHETYPES, *_GOALS, *_TRAITS, *_PARTS]
    words += [*(f.format("x") for f in _STUDIO_FORMS), *_FAMILY_DETAILS]
    bad = [w for w in words if any(ch in w for ch in '\\\t\n\r"{},')]
    if bad:
        raise AssertionError(f"vocabulary words need escaping: {bad}")


_check_vocabularies()

_SYL_R = np.array([r for r, _ in _SYLLABLES], dtype=object)
_SYL_RC = np.array([r.capitalize() for r, _ in _SYLLABLES], dtype=object)
_SYL_K = np.array([k for _, k in _SYLLABLES], dtype=object)
_EMPTY = np.array([""], dtype=object)


def _obj(words: tuple[str, ...]) -> Arr:
    return np.array(words, dtype=object)


_ADJ, _NOUN, _GEN = _obj(_ADJECTIVES), _obj(_NOUNS), _obj(GENRES)
