"""Turning a template and a fact into the text a person would type, noise included.

Each kind of noise fires per question with its own probability and is reported by tag: ``alias``
(a stored alias instead of the name), ``surname_first`` (``Yagami Light``), ``typo`` (one letter
substituted, doubled or dropped in one name of five letters or more; at most one per question),
``possessive`` (``Bones' studio``), ``chatter`` (words before or after), ``lowercase`` and
``no_punct`` (sentence punctuation dropped).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from agentic_rag.eval.stress.facts import Fact
from agentic_rag.eval.stress.names import PERSON_NAME, NameIndex


@dataclass(frozen=True, slots=True)
class Rates:
    """How often each kind of noise fires."""

    alias: float = 0.25
    surname_first: float = 0.25
    typo: float = 0.25
    possessive: float = 0.5
    chatter: float = 0.15
    lowercase: float = 0.3
    no_punct: float = 0.2


PREFIXES = ("hey, quick question: ", "so um ", "ok so ", "hi! ", "random question but ", "quick one - ",
            "sorry if this is obvious, ")
SUFFIXES = (" thanks!", " thx", " if you know", " pls", " cheers", " (asking for a friend)")
# a template that already chats gets no more of it
CHATTY = re.compile(r"\b(?:hey|so um|ok so|thanks|thx|pls|if you know|cheers|or not)\b", re.IGNORECASE)
NEIGHBOURS = {
    "a": "qwsz", "b": "vghn", "c": "xdfv", "d": "serfcx", "e": "wsdr", "f": "drtgvc", "g": "ftyhbv", "h": "gyujnb",
    "i": "ujko", "j": "huikmn", "k": "jiolm", "l": "kop", "m": "njk", "n": "bhjm", "o": "iklp", "p": "ol",
    "q": "wa", "r": "edft", "s": "awedxz", "t": "rfgy", "u": "yhji", "v": "cfgb", "w": "qase", "x": "zsdc",
    "y": "tghu", "z": "asx",
}
SLOT = re.compile(r"\{(\w+)('s)?\}")
ALTERNATIVE = re.compile(r"\(\((.+?)\|\|(.+?)\)\)")


def possessive(name: str) -> str:
    return name + ("'" if name.endswith("s") else "'s")


def typo(word: str, rng: random.Random) -> str:
    """One slip in ``word``: a neighbouring key, a doubled letter or a dropped one (never the first letter)."""
    i = rng.randrange(1, len(word))
    ch = word[i]
    how = rng.choice(("substitute", "double", "drop"))
    if how == "double":
        return word[:i] + ch + word[i:]
    if how == "drop":
        return word[:i] + word[i + 1:]
    sub = rng.choice(NEIGHBOURS.get(ch.lower(), "e"))
    return word[:i] + (sub.upper() if ch.isupper() else sub) + word[i + 1:]


def _misspell(name: str, names: NameIndex, rng: random.Random) -> str | None:
    """``name`` with one typo in one of its words of five letters or more; None if it has none."""
    words = [m for m in re.finditer(r"[A-Za-z]+", name) if len(m.group()) >= 5]
    if not words:
        return None
    for _ in range(5):
        m = rng.choice(words)
        out = name[:m.start()] + typo(m.group(), rng) + name[m.end():]
        if not names.known(out):
            return out
    return None


class Renderer:
    """Renders questions with noise; one per generation run."""

    def __init__(self, names: NameIndex, rates: Rates | None = None) -> None:
        self.names = names
        self.rates = rates or Rates()

    def _spellings(self, fact: Fact, rng: random.Random, tags: list[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        swappable: list[str] = []
        for slot, e in fact.mentions.items():
            surfaces = self.names.surfaces(e)
            out[slot] = surfaces[0]
            if len(surfaces) > 1 and rng.random() < self.rates.alias:
                out[slot] = rng.choice(surfaces[1:])
                tags.append("alias")
            if self.names.swappable(e, out[slot]):
                swappable.append(slot)
        for slot, text in fact.words.items():
            out[slot] = text
            if fact.named.get(slot) == "person" and PERSON_NAME.match(text):
                swappable.append(slot)
        for slot in swappable:
            if rng.random() < self.rates.surname_first:
                given, family = out[slot].split(" ")
                out[slot] = f"{family} {given}"
                tags.append("surname_first")
        named = [*fact.mentions, *fact.named]
        if named and rng.random() < self.rates.typo:
            slot = rng.choice(named)
            if (slip := _misspell(out[slot], self.names, rng)) is not None:
                out[slot] = slip
                tags.append("typo")
        return out

    def _chatter(self, out: str, starts_with_name: bool, rng: random.Random, tags: list[str]) -> str:
        """Words before or after the question; after a filler ("so um") the question goes on in lowercase."""
        if rng.random() < self.rates.chatter:
            prefix = rng.choice(PREFIXES)
            if not starts_with_name and (not prefix.endswith((": ", "! ", "- ")) or rng.random() < 0.5):
                out = out[0].lower() + out[1:]
            tags.append("chatter")
            return prefix + out
        if rng.random() < self.rates.chatter:
            tags.append("chatter")
            return out + rng.choice(SUFFIXES)
        return out

    def render(self, text: str, fact: Fact, rng: random.Random) -> tuple[str, tuple[str, ...]]:
        """The question text for ``fact`` in the words of ``text``, and the noise it got."""
        tags: list[str] = []
        spell = self._spellings(fact, rng, tags)
        if (alt := ALTERNATIVE.search(text)) is not None:
            pick = 2 if rng.random() < self.rates.possessive else 1
            text = text[:alt.start()] + alt.group(pick) + text[alt.end():]
        if "'s}" in text:
            tags.append("possessive")
        out = SLOT.sub(lambda m: possessive(spell[m.group(1)]) if m.group(2) else spell[m.group(1)], text)
        if not CHATTY.search(text):
            out = self._chatter(out, starts_with_name=text.startswith(("{", "((")), rng=rng, tags=tags)
        if rng.random() < self.rates.lowercase and out != out.lower():
            out = out.lower()
            tags.append("lowercase")
        if rng.random() < self.rates.no_punct:
            # a dot inside a token ("J.C.Staff", "1.0") is part of a name, not punctuation
            stripped = re.sub(r"[?!,;:\"']|\.(?=\s|$)", "", out)
            stripped = " ".join(stripped.split())
            if stripped and stripped != out:
                out = stripped
                tags.append("no_punct")
        return out, tuple(tags)
