"""Catalog names as a question may use them, and the short forms an answer is checked for.

A name is "usable" in a question when its normalised form (lowercase, no accents, as in
``entity_name.norm``) names exactly one entity of the type the question implies; character,
person and studio names must not name anything else at all, since questions give them no type cue.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter, defaultdict
from dataclasses import dataclass

from agentic_rag.catalog.records import Anime, Catalog, Manga
from agentic_rag.eval.questions import GoldEntity
from agentic_rag.protocol.vocabulary import EntityType

STRICT_TYPES: frozenset[str] = frozenset({"character", "person", "studio"})
KEY_WORDS = re.compile(r"\b(?:Studio|Animation|Production|Pictures)\b")
PERSON_NAME = re.compile(r"^[A-Za-z][A-Za-z'-]+ [A-Za-z][A-Za-z'-]+$")


def ascii_fold(text: str) -> str:
    """``Tetsurō Araki`` -> ``Tetsuro Araki``: the spelling people type."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def norm(text: str) -> str:
    """The normalised form the catalog matches names on: lowercase, accents removed."""
    return ascii_fold(text).lower().strip()


@dataclass(frozen=True, slots=True)
class Entity:
    """One catalog entity: its type, natural key, primary name and other stored names."""

    type: EntityType
    key: str
    name: str
    aliases: tuple[str, ...] = ()

    @property
    def person_like(self) -> bool:
        return self.type in ("person", "character")


def _work_names(w: Anime | Manga) -> tuple[str, ...]:
    return tuple(n for n in (*w.aliases, w.title_romaji, w.title_native) if n)


class NameIndex:
    """Every stored name of the catalog, by normalised form, with the entities it names."""

    def __init__(self, cat: Catalog) -> None:
        self.entities: dict[tuple[str, str], Entity] = {}
        for a in cat.anime:
            self._add(Entity("anime", a.key, a.title, _work_names(a)))
        for m in cat.manga:
            self._add(Entity("manga", m.key, m.title, _work_names(m)))
        for c in cat.characters:
            self._add(Entity("character", c.key, c.name, tuple(n for n in (*c.aliases, c.name_native) if n)))
        for p in cat.people:
            self._add(Entity("person", p.key, p.name, tuple(n for n in (*p.aliases, p.native_name) if n)))
        for s in cat.studios:
            self._add(Entity("studio", s.key, s.name))
        for f in cat.franchises:
            self._add(Entity("franchise", f.key, f.name))
        owners: dict[str, set[tuple[str, str]]] = defaultdict(set)
        for e in self.entities.values():
            for n in (e.name, *e.aliases):
                owners[norm(n)].add((e.type, e.key))
        self.owners = {k: frozenset(v) for k, v in owners.items()}
        last_names = Counter(c.name.split()[-1] for c in cat.characters if len(c.name.split()) == 2)
        self.family_names = frozenset(ascii_fold(n) for n, k in last_names.items() if k > 1)
        self._surfaces: dict[Entity, tuple[str, ...]] = {}
        self._gold: dict[Entity, GoldEntity] = {}

    def _add(self, e: Entity) -> None:
        self.entities[(e.type, e.key)] = e

    def get(self, entity_type: str, key: str) -> Entity:
        return self.entities[(entity_type, key)]

    def known(self, text: str) -> bool:
        """Whether ``text`` is, once normalised, a stored name of anything."""
        return norm(text) in self.owners

    def usable(self, e: Entity, text: str) -> bool:
        """Whether ``text`` picks out ``e`` alone (within its type, or overall for strict types)."""
        if not ascii_fold(text).isascii():
            return False
        owners = self.owners.get(norm(text), frozenset())
        rivals = owners if e.type in STRICT_TYPES else {o for o in owners if o[0] == e.type}
        return rivals == {(e.type, e.key)}

    def surfaces(self, e: Entity) -> tuple[str, ...]:
        """Usable spellings of ``e``, the primary name first when it is usable."""
        if e not in self._surfaces:
            out = [ascii_fold(n) for n in (e.name, *e.aliases) if self.usable(e, n)]
            self._surfaces[e] = tuple(dict.fromkeys(out))
        return self._surfaces[e]

    def swappable(self, e: Entity, spelling: str) -> bool:
        """Whether ``spelling`` of ``e`` is a given name and a family name, which can be said surname
        first: any person's, a character's whose given name is an alias of its own (``Eren``) or whose
        family name another character shares; not an epithet such as ``All Might``."""
        if not PERSON_NAME.match(spelling):
            return False
        given, family = spelling.split(" ")
        return e.type == "person" or given in map(ascii_fold, e.aliases) or family in self.family_names

    def gold(self, e: Entity) -> GoldEntity:
        """The gold entry for ``e``: its first stored name no other entity of its type has."""
        if e not in self._gold:
            unique = (n for n in (e.name, *e.aliases)
                      if {o for o in self.owners[norm(n)] if o[0] == e.type} == {(e.type, e.key)})
            self._gold[e] = GoldEntity(entity_type=e.type, name=next(unique, e.name))
        return self._gold[e]

    def shared_names(self, min_types: int = 2) -> list[str]:
        """ASCII names that entities of at least ``min_types`` work/character types share."""
        out = []
        for n, owners in sorted(self.owners.items()):
            types = {t for t, _ in owners if t in ("anime", "manga", "character")}
            if len(types) >= min_types and n.isascii():
                out.append(self._spelling(n, owners))
        return out

    def _spelling(self, n: str, owners: frozenset[tuple[str, str]]) -> str:
        """How the catalog spells the normalised name ``n`` (the first owner's stored form)."""
        for t, k in sorted(owners):
            e = self.entities[(t, k)]
            for s in (e.name, *e.aliases):
                if norm(s) == n:
                    return ascii_fold(s)
        return n


def surname(name: str) -> str:
    """What an answer naming a person surely contains: the family name (``Tetsurō Araki`` -> ``Araki``)."""
    return ascii_fold(name).split()[-1]


def studio_short(name: str) -> str:
    """``Toei Animation`` -> ``Toei``; a name left too short to be distinctive (``Wit``) stays whole."""
    short = " ".join(KEY_WORDS.sub("", name).split())
    return short if len(short) >= 4 else name


def franchise_short(name: str) -> str:
    """``Demon Slayer: Kimetsu no Yaiba`` -> ``Demon Slayer``."""
    return name.split(":")[0].strip()


def character_short(e: Entity) -> str:
    """The part of a character's name every answer uses: a word of it that is also an alias, else
    the family name (``Izuku Midoriya`` -> ``Midoriya``), else the whole name; never under four
    letters ("Rei" is in "reiatsu")."""
    single = {a for a in e.aliases if " " not in a and len(a) >= 4}
    words = e.name.split()
    for word in words:
        if word in single:
            return ascii_fold(word)
    return ascii_fold(words[-1] if len(words) == 2 and len(words[-1]) >= 4 else e.name)


def after_hyphen(text: str) -> str:
    """``One-Punch Man`` -> ``Punch Man``: the part after a hyphen, which answers may drop or keep."""
    tail = text.rsplit("-", 1)[-1].strip()
    return tail if "-" in text and len(tail) >= 5 else text


def key_phrase(title: str, franchise: str) -> tuple[str, ...]:
    """Short, distinctive parts of a work's title that any answer naming it contains.

    The last segment after a colon or dash, without a leading "The", brackets or the franchise's
    name, cut before an apostrophe (answers often curl it) and after a hyphen (often dropped):
    ``Frieren: Beyond Journey's End`` -> ``Beyond Journey``, ``One-Punch Man`` -> ``Punch Man``.
    A segment too short to stand alone ("Movie", "Red") comes with the title's first segment, so
    that an answer that drops the colon still matches.
    """
    segments = re.split(r":\s+|\s+-\s+", title)
    seg = re.sub(r"^The\s+", "", segments[-1]).rstrip("!")
    if seg.lower().startswith(franchise.lower() + " "):
        rest = seg[len(franchise):].strip()
        if len(rest) >= 5 and not rest.lower().startswith("the "):
            seg = rest
    seg = re.sub(r"^\((.+)\)$", r"\1", seg)
    seg = after_hyphen(seg)
    if "'" in seg:
        before, _, after = seg.partition("'")
        seg = before.strip() if len(before.strip()) >= 5 else after.partition(" ")[2].strip()
    if " " in seg or len(seg) >= 6:
        return (ascii_fold(seg),)
    if len(segments) == 1:
        return (ascii_fold(title),)
    return (ascii_fold(segments[0]), ascii_fold(seg))


def work_phrases(cat: Catalog) -> dict[tuple[str, str], tuple[str, ...]]:
    """``key_phrase`` of every anime and manga; phrases two works of a type share get the first segment too."""
    shorts = {f.key: franchise_short(f.name) for f in cat.franchises}
    works: list[tuple[str, str, str, str]] = [
        *(("anime", a.key, a.title, shorts[cat.anime_franchise[a.key]]) for a in cat.anime),
        *(("manga", m.key, m.title, shorts[cat.manga_franchise[m.key]]) for m in cat.manga),
    ]
    out = {(t, k): key_phrase(title, fr) for t, k, title, fr in works}
    seen: dict[tuple[str, tuple[str, ...]], int] = defaultdict(int)
    for (t, _), ph in out.items():
        seen[(t, ph)] += 1
    for t, k, title, _ in works:
        if seen[(t, out[(t, k)])] > 1 and len(out[(t, k)]) == 1:
            first = re.split(r":\s+", title)[0]
            whole = (ascii_fold(after_hyphen(title)),)
            out[(t, k)] = whole if first == title else (ascii_fold(first), out[(t, k)][0])
    return out
