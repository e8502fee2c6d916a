"""Generated conversations (issue 38): chains of two to five turns built from catalog facts, each turn with its
gold, mixing the follow-up forms people use: a pronoun for the answer's person or studio, a question with no subject,
the other form of a work ("and the manga?"), another work in the same frame ("what about X?"), a correction to a
year, a new topic, and a pointing word with nothing behind it (asked back).

Each form has several phrasings per turn; the even ones make the *tune* half and the odd ones the *held* half, so a
held conversation is worded in ways no tuning saw. Seeded: a seed always yields the same file byte for byte. The gold
is read off the catalog's records, never off the method under test.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agentic_rag.catalog.records import Anime, Catalog, load_catalog

Split = Literal["tune", "held", "all"]
DEFAULT_SEED = 20261127
DEFAULT_COUNT = 120
MAX_ANY = 40

Turn = dict[str, Any]
Chain = Callable[["_World", random.Random, int], list[Turn] | None]


@dataclass(frozen=True, slots=True)
class _World:
    cat: Catalog

    def anime(self) -> list[Anime]:
        return [a for a in self.cat.anime if a.format == "tv"]

    def person(self, key: str) -> str:
        return next(p.name for p in self.cat.people if p.key == key)

    def studio(self, key: str) -> tuple[str, int | None]:
        s = next(s for s in self.cat.studios if s.key == key)
        return s.name, s.founded

    def directed(self, person: str) -> list[str]:
        return [a.title for a in self.cat.anime if any(c.person == person and c.role == "director" for c in a.staff)]

    def animated(self, studio: str) -> list[str]:
        return [a.title for a in self.cat.anime if studio in a.studios]


def _turn(question: str, qtype: str, gold: list[tuple[str, str]], contains: list[str] | None = None,
          any_of: list[str] | None = None, expect: str = "answered") -> Turn:
    return {"question": question, "type": qtype,
            "gold_entities": [{"entity_type": t, "name": n} for t, n in gold],
            "answer_contains": contains or [], "answer_any": (any_of or [])[:MAX_ANY], "min_any": 1,
            "expect_status": expect}


def _pick(options: tuple[str, ...], half: int, rng: random.Random) -> str:
    """One phrasing of the half asked for: even places for tune (0), odd for held (1)."""
    return rng.choice([o for i, o in enumerate(options) if i % 2 == half])


def _director(a: Anime) -> str | None:
    return next((c.person for c in a.staff if c.role == "director"), None)


def director_chain(w: _World, rng: random.Random, half: int) -> list[Turn] | None:
    """Who directed X; what else did that person direct (a pronoun); how many episodes (no subject)."""
    choices = [a for a in w.anime() if (d := _director(a)) and len(w.directed(d)) >= 2 and a.episodes]
    if not choices:
        return None
    a = rng.choice(choices)
    director = w.person(_director(a) or "")
    others = [t for t in w.directed(_director(a) or "") if t != a.title]
    return [
        _turn(_pick(("who directed {a}?", "{a} director?", "who was the director of {a}",
                     "do you know who directed {a}"), half, rng).format(a=a.title), "relation",
              [("anime", a.title)], [director]),
        _turn(_pick(("what else did they direct?", "anything else that person directed?",
                     "and what other anime did they direct", "which other shows has that person directed"),
                    half, rng), "relation", [("person", director)], any_of=others),
        _turn(_pick(("how many episodes?", "episode count?", "and how many episodes does it have",
                     "how many eps is it"), half, rng), "attribute", [("anime", a.title)], [str(a.episodes)]),
    ]


def studio_chain(w: _World, rng: random.Random, half: int) -> list[Turn] | None:
    """Which studio animated X; when was it founded (a pronoun, its kind read off the words)."""
    choices = [a for a in w.anime() if len(a.studios) == 1 and w.studio(a.studios[0])[1]]
    if not choices:
        return None
    a = rng.choice(choices)
    name, founded = w.studio(a.studios[0])
    return [
        _turn(_pick(("which studio animated {a}?", "who animated {a}", "what studio made {a}?",
                     "{a}: which studio?"), half, rng).format(a=a.title), "relation", [("anime", a.title)], [name]),
        _turn(_pick(("when was it founded?", "what year was that studio founded", "and when was it established?",
                     "how old is that studio, when was it founded"), half, rng), "attribute",
              [("studio", name)], [str(founded)]),
    ]


def form_chain(w: _World, rng: random.Random, half: int) -> list[Turn] | None:
    """A fact of an anime, then the same of the manga it adapts ("and the manga?")."""
    pairs = [(a, m) for a in w.anime() for m in w.cat.manga if m.key in a.adapted_from and m.title == a.title]
    if not pairs:
        return None
    a, m = rng.choice(pairs)
    return [
        _turn(_pick(("what year did the {a} anime start?", "when did the {a} anime come out",
                     "{a} anime: what year did it begin?", "what year did the anime of {a} start airing"),
                    half, rng).format(a=a.title), "attribute", [("anime", a.title)], [str(a.year)]),
        _turn(_pick(("and the manga?", "what about the manga?", "and the manga version?", "how about the manga"),
                    half, rng), "attribute", [("manga", m.title)], [str(m.year)]),
    ]


def about_chain(w: _World, rng: random.Random, half: int) -> list[Turn] | None:
    """Who directed X; "what about Y?" (the same question of another work); then a new topic."""
    with_director = [a for a in w.anime() if _director(a)]
    if len(with_director) < 3:
        return None
    a, b, c = rng.sample(with_director, 3)
    if len({_director(a), _director(b)}) < 2 or not c.studios:
        return None
    studio = w.studio(c.studios[0])[0]
    return [
        _turn(_pick(("who directed {a}?", "who was {a} directed by", "{a}, who directed it?",
                     "director of {a}?"), half, rng).format(a=a.title), "relation", [("anime", a.title)],
              [w.person(_director(a) or "")]),
        _turn(_pick(("what about {b}?", "and {b}?", "how about {b}", "ok and for {b}?"), half, rng).format(b=b.title),
              "relation", [("anime", b.title)], [w.person(_director(b) or "")]),
        _turn(_pick(("new question: which studio animated {c}?", "different thing, who animated {c}?",
                     "unrelated, but what studio made {c}", "switching topics: {c} was animated by which studio?"),
                    half, rng).format(c=c.title), "relation", [("anime", c.title)], [studio]),
    ]


def lost_chain(w: _World, rng: random.Random, half: int) -> list[Turn] | None:
    """A studio's founding year, then a pointing word nothing in the conversation can stand for: asked back."""
    studios = [s for s in w.cat.studios if s.founded]
    if not studios:
        return None
    s = rng.choice(studios)
    return [
        _turn(_pick(("when was {s} founded?", "what year was {s} established", "{s} founding year?",
                     "when did {s} start?"), half, rng).format(s=s.name), "attribute", [("studio", s.name)],
              [str(s.founded)]),
        _turn(_pick(("how old is she?", "what's his real name?", "who is her voice actor", "where was he born?"),
                    half, rng), "ambiguous", [], expect="needs_clarification"),
    ]


CHAINS: tuple[Chain, ...] = (director_chain, studio_chain, form_chain, about_chain, lost_chain)


def build_conversations(*, seed: int = DEFAULT_SEED, count: int = DEFAULT_COUNT, split: Split = "held",
                        catalog: Catalog | None = None) -> list[dict[str, Any]]:
    """``count`` conversations per half asked for, the chains taken in turn; each a record ``{"id", "turns"}``."""
    w = _World(catalog or load_catalog())
    halves = {"tune": (0,), "held": (1,), "all": (0, 1)}[split]
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for half in halves:
        rng = random.Random(f"conversations:{seed}:{half}")
        made, tries = 0, 0
        while made < count and tries < count * 20:
            tries += 1
            chain = CHAINS[tries % len(CHAINS)]
            turns = chain(w, rng, half)
            if turns is None:
                continue
            key = json.dumps([t["question"] for t in turns])
            if key in seen:
                continue
            seen.add(key)
            made += 1
            name = chain.__name__.removesuffix("_chain")
            out.append({"id": f"conv-{'tune' if half == 0 else 'held'}-{name}-{made:04d}", "turns": turns})
    return out


def write_conversations(path: Path, conversations: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in conversations), encoding="utf-8")
