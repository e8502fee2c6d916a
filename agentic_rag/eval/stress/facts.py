"""Facts a question can be built on, and the catalog view the fact builders read.

A :class:`Fact` names the entities a question mentions (by slot), the literal words it fills in
(numbers, years, names absent from the catalog), its gold entities and the strings a correct answer
contains. Builders only return facts whose answer is unique and well defined by the data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from agentic_rag.catalog.records import Anime, Catalog, Manga
from agentic_rag.eval.questions import ExpectStatus, GoldEntity
from agentic_rag.eval.stress.names import (
    Entity,
    NameIndex,
    after_hyphen,
    franchise_short,
    studio_short,
    surname,
    work_phrases,
)

MIN_ANSWER = 4
Ref = tuple[str, str]
"""``(entity type, natural key)``."""


@dataclass(frozen=True, slots=True)
class Fact:
    """What one question asks about and what a correct run returns."""

    mentions: dict[str, Entity] = field(default_factory=dict)
    words: dict[str, str] = field(default_factory=dict)
    named: dict[str, str] = field(default_factory=dict)
    """Word slots that hold a name ("person" or "title"), which noise may misspell or reorder."""
    gold: tuple[GoldEntity, ...] = ()
    answers: tuple[str, ...] = ()
    expect: ExpectStatus = "answered"
    any_of: tuple[str, ...] = ()  # acceptable answers, of which a correct one names ``min_any`` (recommendations)
    min_any: int = 1


class World:
    """The catalog with the lookups fact builders need: by key, by relation, by name."""

    def __init__(self, cat: Catalog) -> None:
        self.cat = cat
        self.names = NameIndex(cat)
        self.phrases = work_phrases(cat)
        self.anime = {a.key: a for a in cat.anime}
        self.manga = {m.key: m for m in cat.manga}
        self.people = {p.key: p for p in cat.people}
        self.studios = {s.key: s for s in cat.studios}
        self.franchise_short = {f.key: after_hyphen(franchise_short(f.name)) for f in cat.franchises}
        self._sequels: dict[str, set[str]] = {a.key: set() for a in cat.anime}
        for a in cat.anime:
            for link in a.relations:
                if link.type == "sequel":
                    self._sequels[a.key].add(link.to)
                elif link.type == "prequel":
                    self._sequels[link.to].add(a.key)

    def ent(self, ref: Ref) -> Entity:
        return self.names.get(*ref)

    def fact(self, mentions: dict[str, Ref], gold: Iterable[Ref], answers: Iterable[str],
             words: dict[str, str] | None = None, short_ok: bool = False) -> Fact | None:
        """A fact, or None when some mentioned entity has no spelling a question can use, or an
        answer string is too short to tell a right answer from a wrong one ("ONE" is in "someone");
        numbers, and words where ``short_ok``, may be short."""
        ents = {slot: self.ent(ref) for slot, ref in mentions.items()}
        if not all(self.names.surfaces(e) for e in ents.values()):
            return None
        answers = list(answers)
        if not short_ok and any(len(a) < MIN_ANSWER and not a.isdigit() for a in answers):
            return None
        gold_entities = tuple(dict.fromkeys(self.names.gold(self.ent(r)) for r in gold))
        return Fact(mentions=ents, words=words or {}, gold=gold_entities,
                    answers=tuple(dict.fromkeys(answers)))

    def sequels(self, key: str) -> list[str]:
        return sorted(self._sequels[key])

    def prequels(self, key: str) -> list[str]:
        return sorted(k for k, nexts in self._sequels.items() if key in nexts)

    def staff(self, a: Anime, *roles: str) -> list[str]:
        """Person keys credited on ``a`` in any of ``roles``, in credit order, each once."""
        return list(dict.fromkeys(c.person for c in a.staff if c.role in roles))

    def authors(self, m: Manga, *roles: str) -> list[str]:
        return list(dict.fromkeys(c.person for c in m.authors if c.role in roles))

    def sole_director(self, a: Anime) -> str | None:
        """The one director of ``a``; None when there are several, none, or a chief director too."""
        directors = self.staff(a, "director", "chief_director")
        return directors[0] if len(directors) == 1 and self.staff(a, "director") == directors else None

    def phrase(self, ref: Ref) -> tuple[str, ...]:
        return self.phrases[ref]

    def surname(self, person: str) -> str:
        return surname(self.ent(("person", person)).name)

    def studio_short(self, studio: str) -> str:
        return studio_short(self.studios[studio].name)


Builder = Callable[[World], list[Fact]]


def keep(facts: Iterable[Fact | None]) -> list[Fact]:
    """Drop the facts a builder could not phrase."""
    return [f for f in facts if f is not None]
