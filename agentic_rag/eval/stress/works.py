"""Facts about single works and who is in them or made them: lookup, cast and relation questions."""

from __future__ import annotations

import re
from collections import defaultdict
from itertools import combinations

from agentic_rag.catalog.records import Character
from agentic_rag.eval.stress.facts import Builder, Fact, World, keep
from agentic_rag.eval.stress.names import character_short

# Words of a family or romantic link's detail an answer uses whichever way it is told; "sibling"
# is left out since answers say "brother" or "sister" instead.
KIN_WORDS = frozenset({
    "granddaughter", "grandson", "grandfather", "grandmother", "brother", "sister", "father", "mother", "son",
    "daughter", "wife", "husband", "cousin", "uncle", "aunt", "twin", "guardian", "parent", "child",
    "girlfriend", "boyfriend", "fiancé", "fiancée", "partner", "lover",
})


def kin_word(detail: str | None) -> str | None:
    """The first kinship word of a link's detail: ``older half-brother`` -> ``brother``."""
    return next((w for w in re.findall(r"[a-zé]+", (detail or "").lower()) if w in KIN_WORDS), None)


def character_franchise(w: World, c: Character) -> str:
    return w.franchise_short[w.cat.anime_franchise[c.appears_in[0].anime]]


def anime_about(w: World) -> list[Fact]:
    return keep(w.fact({"a": ("anime", a.key)}, [("anime", a.key)], w.phrase(("anime", a.key)))
                for a in w.cat.anime)


def manga_about(w: World) -> list[Fact]:
    out = []
    for m in w.cat.manga:
        writers = w.authors(m, "story_and_art", "story")
        out.append(w.fact({"m": ("manga", m.key)}, [("manga", m.key)], [w.surname(writers[0])]))
    return keep(out)


def character_about(w: World) -> list[Fact]:
    return keep(w.fact({"c": ("character", c.key)}, [("character", c.key)], [character_franchise(w, c)])
                for c in w.cat.characters)


def person_about(w: World) -> list[Fact]:
    """People all of whose credits lie in one franchise: the answer names it."""
    franchises: dict[str, set[str]] = defaultdict(set)
    for a in w.cat.anime:
        for credit in a.staff:
            franchises[credit.person].add(w.cat.anime_franchise[a.key])
    for m in w.cat.manga:
        for mc in m.authors:
            franchises[mc.person].add(w.cat.manga_franchise[m.key])
    return keep(w.fact({"p": ("person", p)}, [("person", p)], [w.franchise_short[next(iter(fs))]])
                for p, fs in sorted(franchises.items()) if len(fs) == 1)


def main_cast(w: World) -> list[Fact]:
    """Anime with two to four main characters; the answer names them all."""
    mains: dict[str, list[Character]] = defaultdict(list)
    for c in w.cat.characters:
        for ap in c.appears_in:
            if ap.role == "main":
                mains[ap.anime].append(c)
    out = []
    for a, cast in sorted(mains.items()):
        if 2 <= len(cast) <= 4:
            refs = [("character", c.key) for c in cast]
            shorts = [character_short(w.ent(r)) for r in refs]
            out.append(w.fact({"a": ("anime", a)}, [("anime", a), *refs], shorts))
    return keep(out)


def _sole_credit(w: World, role: str) -> list[Fact]:
    out = []
    for a in w.cat.anime:
        people = w.staff(a, role)
        if len(people) == 1:
            out.append(w.fact({"a": ("anime", a.key)}, [("anime", a.key), ("person", people[0])],
                              [w.surname(people[0])]))
    return keep(out)


def director(w: World) -> list[Fact]:
    out = []
    for a in w.cat.anime:
        if (p := w.sole_director(a)) is not None:
            out.append(w.fact({"a": ("anime", a.key)}, [("anime", a.key), ("person", p)], [w.surname(p)]))
    return keep(out)


def composer(w: World) -> list[Fact]:
    return _sole_credit(w, "music")


def designer(w: World) -> list[Fact]:
    return _sole_credit(w, "character_design")


def writer(w: World) -> list[Fact]:
    return _sole_credit(w, "series_composition")


def _manga_credit(w: World, *roles: str) -> list[Fact]:
    out = []
    for m in w.cat.manga:
        people = w.authors(m, *roles)
        if len(people) == 1:
            out.append(w.fact({"m": ("manga", m.key)}, [("manga", m.key), ("person", people[0])],
                              [w.surname(people[0])]))
    return keep(out)


def manga_author(w: World) -> list[Fact]:
    return _manga_credit(w, "story_and_art", "story")


def manga_artist(w: World) -> list[Fact]:
    return _manga_credit(w, "story_and_art", "art")


def kin(w: World) -> list[Fact]:
    """Pairs of characters joined by exactly one family, romantic or rival link.

    A link's detail says what its target is to its source (``Eren -[father]-> Grisha``), so the
    question asks how the target (``x``) is related to the source (``y``).
    """
    links: dict[frozenset[str], list[tuple[str, str, str | None]]] = defaultdict(list)
    for c in w.cat.characters:
        for link in c.relations:
            word = "rival" if link.type == "rival" else kin_word(link.detail)
            told = word if link.type in ("family", "romantic", "rival") else None
            links[frozenset((c.key, link.to))].append((c.key, link.to, told))
    out = []
    for _, found in sorted(links.items(), key=lambda kv: sorted(kv[0])):
        if len(found) == 1 and found[0][2] is not None:
            src, dst, word = found[0]
            out.append(w.fact({"x": ("character", dst), "y": ("character", src)},
                              [("character", dst), ("character", src)], [str(word)], short_ok=True))
    return keep(out)


def _pairs_across_franchises(w: World) -> list[tuple[str, str]]:
    keys = sorted(w.anime)
    return [(a, b) for a, b in combinations(keys, 2) if w.cat.anime_franchise[a] != w.cat.anime_franchise[b]]


def shared_staff(w: World) -> list[Fact]:
    """Anime of different franchises with exactly one person and no studio in common."""
    out = []
    for a, b in _pairs_across_franchises(w):
        x, y = w.anime[a], w.anime[b]
        people = {c.person for c in x.staff} & {c.person for c in y.staff}
        if len(people) == 1 and not set(x.studios) & set(y.studios):
            p = next(iter(people))
            out.append(w.fact({"a": ("anime", a), "b": ("anime", b)},
                              [("anime", a), ("anime", b), ("person", p)], [w.surname(p)]))
    return keep(out)


def shared_studio(w: World) -> list[Fact]:
    """Anime of different franchises with exactly one studio and no person in common."""
    out = []
    for a, b in _pairs_across_franchises(w):
        x, y = w.anime[a], w.anime[b]
        studios = set(x.studios) & set(y.studios)
        if len(studios) == 1 and not {c.person for c in x.staff} & {c.person for c in y.staff}:
            s = next(iter(studios))
            out.append(w.fact({"a": ("anime", a), "b": ("anime", b)},
                              [("anime", a), ("anime", b), ("studio", s)], [w.studio_short(s)]))
    return keep(out)


BUILDERS: dict[str, Builder] = {
    "anime_about": anime_about, "manga_about": manga_about, "character_about": character_about,
    "person_about": person_about, "main_cast": main_cast, "director": director, "composer": composer,
    "designer": designer, "writer": writer, "manga_author": manga_author, "manga_artist": manga_artist,
    "kin": kin, "shared_staff": shared_staff, "shared_studio": shared_studio,
}
