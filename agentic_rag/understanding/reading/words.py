"""The words no name covers: the cue words read from them, with typos, plurals and cue phrases normalised."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from agentic_rag.protocol import LinkedMention
from agentic_rag.understanding import cues as C
from agentic_rag.understanding.reading.names import _qualifier
from agentic_rag.understanding.text import (
    ELLIPTIC_WORDS,
    Token,
    english_words,
    one_edit,
)


@dataclass(slots=True)
class _Words:
    """The question's words outside the linked names."""

    keys: list[str]
    set: frozenset[str]
    text: str  # " w1 w2 ... " for phrase tests
    typed: frozenset[str] = frozenset()  # the type words that qualify a name ("mha tv", "hxh ovas")

    def has(self, *phrases: str) -> bool:
        return any(f" {p} " in self.text for p in phrases)

    def any(self, family: frozenset[str]) -> bool:
        return bool(self.set & family)

    def without(self, word: str) -> _Words:
        """These words less one ("son" once the son is a hop of its own)."""
        keys = [k for k in self.keys if k not in (word, f"{word}s")]
        return _Words(keys, frozenset(keys), " " + " ".join(keys) + " ", self.typed)

    def plus(self, cues: tuple[str, ...]) -> _Words:
        """These words with cue words added (what the sentence encoder read where no cue word stood)."""
        return _Words([*self.keys, *cues], self.set | frozenset(cues), self.text + " ".join(cues) + " ", self.typed)


@functools.cache
def _cue_typo(word: str) -> str:
    """A cue word typed with one letter wrong ("befor", "sequal", "episdes"): the cue word; any word English or
    the question's own vocabulary knows stays as typed."""
    if len(word) < MIN_CUE_TYPO or word in C.CUES or word in english_words() or word.isdigit():
        return word
    near = [c for c in _TYPO_CUES if abs(len(c) - len(word)) <= 1 and one_edit(word, c)]
    if len(near) > 1:  # "directd": a letter left out ("directed") before one typed wrong ("directs")
        near = [c for c in near if len(c) == len(word) + 1] or near
    return near[0] if len(near) == 1 else word


MIN_CUE_TYPO = 5  # letters a word needs before it is read as a misspelt cue word


_TYPO_CUES = sorted(c for c in C.CUES if len(c) >= MIN_CUE_TYPO - 1)


# "the series composer", not "the tv series composer"
_SERIES_COMPOSER = re.compile(r"(?<!\btv )(?<!\btv-)\bseries composers?\b", re.IGNORECASE)


def _rest(question: str, tokens: list[Token], mentions: list[LinkedMention]) -> _Words:
    """The words no name covers, less the type words that qualify a name ("mappa (the studio)")."""
    qualifiers = {_qualifier(tokens, m)[1] for m in mentions}
    inside = [any(m.start <= t.start < m.end for m in mentions) or t.start in qualifiers for t in tokens]
    keys = [_cue_typo(t.key) for t, skip in zip(tokens, inside, strict=True) if not skip]
    text = " " + " ".join(keys) + " "
    for phrase, cue in C.PHRASES:
        text = text.replace(f" {phrase} ", f" {cue} " if cue else " ")
    if _SERIES_COMPOSER.search(question):  # the script's author, even where "series" also qualifies the name
        text = text.replace(" composers ", " composition ").replace(" composer ", " composition ")
    # "made before 2010": a time, not the work before it
    text = re.sub(r" (?:before|after|since|until) (?=(?:19|20)\d\d )", " ", text)
    if any(arrow in question for arrow in ("->", "→", "=>")):  # "aot final season part 2 -> ?": what comes next
        text += "sequel "
    if re.search(r"#\s*of\b", question):  # "# of characters"
        text += "number of "
    keys = text.split()
    # a cue word counts in the plural too ("senseis", "rivals")
    found = set(keys) | {k[:-1] for k in keys if len(k) > 3 and k.endswith("s")}
    typed = frozenset(t.key for t in tokens if t.start in qualifiers)
    return _Words(keys, frozenset(found), " " + " ".join(keys) + " ", typed)


def _asked_words(tokens: list[Token], asked: list[tuple[int, int]], mentions: list[LinkedMention]) -> list[Token]:
    """The words cues are read from: those of the sentences that ask or wonder, and the names and type words
    kept from those that only tell ("My son finished the original Naruto series. What should he watch next?"
    asks no status); a short ask ("Which one?") reads the sentence before it whole."""
    inside = [t for t in tokens if any(a <= t.start < b for a, b in asked)]
    if len(inside) <= ELLIPTIC_WORDS or len(inside) == len(tokens):
        return tokens
    return [t for t in tokens
            if t in inside or t.key in C.TYPE_WORD or any(m.start <= t.start < m.end for m in mentions)]
