"""Facts reached along links: adaptation, sequel and multi-hop questions."""

from __future__ import annotations

from collections import defaultdict

from agentic_rag.catalog.records import Anime
from agentic_rag.eval.stress.facts import Builder, Fact, Ref, World, keep
from agentic_rag.eval.stress.names import ascii_fold


def magazine_short(name: str) -> str:
    """``Weekly Shōnen Jump`` -> ``Shonen Jump``: answers often drop the frequency."""
    words = ascii_fold(name).split()
    return " ".join(words[1:]) if words[0] in ("Weekly", "Monthly") and len(words) > 2 else " ".join(words)


def source_manga(w: World) -> list[Fact]:
    return keep(w.fact({"a": ("anime", a.key)}, [("anime", a.key), ("manga", a.adapted_from[0])],
                       w.phrase(("manga", a.adapted_from[0])))
                for a in w.cat.anime if len(a.adapted_from) == 1)


def adaptations(w: World) -> list[Fact]:
    """Manga adapted into one to three anime; the answer names them all."""
    into: dict[str, list[str]] = defaultdict(list)
    for a in w.cat.anime:
        for m in a.adapted_from:
            into[m].append(a.key)
    out = []
    for m, anime in sorted(into.items()):
        if len(anime) <= 3:
            refs: list[Ref] = [("anime", a) for a in anime]
            out.append(w.fact({"m": ("manga", m)}, [("manga", m), *refs], [p for r in refs for p in w.phrase(r)]))
    return keep(out)


def _only(keys: list[str]) -> str | None:
    return keys[0] if len(keys) == 1 else None


def sequel_of(w: World) -> list[Fact]:
    return keep(w.fact({"a": ("anime", a)}, [("anime", a), ("anime", s)], w.phrase(("anime", s)))
                for a in sorted(w.anime) if (s := _only(w.sequels(a))) is not None)


def prequel_of(w: World) -> list[Fact]:
    return keep(w.fact({"a": ("anime", a)}, [("anime", a), ("anime", p)], w.phrase(("anime", p)))
                for a in sorted(w.anime) if (p := _only(w.prequels(a))) is not None)


def _character_anime(w: World) -> dict[str, list[Anime]]:
    return {c.key: [w.anime[ap.anime] for ap in c.appears_in] for c in w.cat.characters}


def char_studio(w: World) -> list[Fact]:
    """Characters all of whose anime were made by the same single studio."""
    out = []
    for c, shows in sorted(_character_anime(w).items()):
        studios = {tuple(a.studios) for a in shows}
        if len(studios) == 1 and len(s := next(iter(studios))) == 1:
            via: list[Ref] = [("anime", shows[0].key)] if len(shows) == 1 else []
            out.append(w.fact({"c": ("character", c)}, [("character", c), *via, ("studio", s[0])],
                              [w.studio_short(s[0])]))
    return keep(out)


def char_director(w: World) -> list[Fact]:
    """Characters all of whose anime had the same single director."""
    out = []
    for c, shows in sorted(_character_anime(w).items()):
        directors = {w.sole_director(a) for a in shows}
        if len(directors) == 1 and (p := next(iter(directors))) is not None:
            via: list[Ref] = [("anime", shows[0].key)] if len(shows) == 1 else []
            out.append(w.fact({"c": ("character", c)}, [("character", c), *via, ("person", p)], [w.surname(p)]))
    return keep(out)


def sequel_director(w: World) -> list[Fact]:
    out = []
    for a in sorted(w.anime):
        s = _only(w.sequels(a))
        if s is not None and (p := w.sole_director(w.anime[s])) is not None:
            out.append(w.fact({"a": ("anime", a)}, [("anime", a), ("anime", s), ("person", p)], [w.surname(p)]))
    return keep(out)


def sequel_studio(w: World) -> list[Fact]:
    out = []
    for a in sorted(w.anime):
        s = _only(w.sequels(a))
        if s is not None and len(studios := w.anime[s].studios) == 1:
            out.append(w.fact({"a": ("anime", a)}, [("anime", a), ("anime", s), ("studio", studios[0])],
                              [w.studio_short(studios[0])]))
    return keep(out)


def _source_credit(w: World, *roles: str) -> list[Fact]:
    out = []
    for a in w.cat.anime:
        if len(a.adapted_from) == 1:
            m = a.adapted_from[0]
            people = w.authors(w.manga[m], *roles)
            if len(people) == 1:
                out.append(w.fact({"a": ("anime", a.key)}, [("anime", a.key), ("manga", m), ("person", people[0])],
                                  [w.surname(people[0])]))
    return keep(out)


def source_artist(w: World) -> list[Fact]:
    return _source_credit(w, "story_and_art", "art")


def source_writer(w: World) -> list[Fact]:
    return _source_credit(w, "story_and_art", "story")


def source_magazine(w: World) -> list[Fact]:
    out = []
    for a in w.cat.anime:
        if len(a.adapted_from) == 1 and (mag := w.manga[a.adapted_from[0]].magazine) is not None:
            out.append(w.fact({"a": ("anime", a.key)}, [("anime", a.key), ("manga", a.adapted_from[0])],
                              [magazine_short(mag)]))
    return keep(out)


def char_source_author(w: World) -> list[Fact]:
    """Characters from exactly one manga, made by one person alone."""
    out = []
    for c in w.cat.characters:
        if len(c.manga) == 1:
            people = w.authors(w.manga[c.manga[0]], "story_and_art", "story", "art")
            if len(people) == 1:
                out.append(w.fact({"c": ("character", c.key)},
                                  [("character", c.key), ("manga", c.manga[0]), ("person", people[0])],
                                  [w.surname(people[0])]))
    return keep(out)


BUILDERS: dict[str, Builder] = {
    "source_manga": source_manga, "adaptations": adaptations, "sequel_of": sequel_of, "prequel_of": prequel_of,
    "char_studio": char_studio, "char_director": char_director, "sequel_director": sequel_director,
    "sequel_studio": sequel_studio, "source_artist": source_artist, "source_writer": source_writer,
    "source_magazine": source_magazine, "char_source_author": char_source_author,
}
