"""Facts for recommendation questions: a work named, and the works a recommendation may fairly give.

Which picks are acceptable is a rule over the catalog's records, stated here and not taken from the method under
test: a work of the same type and of another franchise (a recommendation never offers the named work's own) that
shares its studio, a credited person (staff of an anime, authors of a manga) or at least half of its genres (two
at least). A recommendation is judged right when its answer names one of them (``min_any`` 1). A work with fewer
than three such works, or with so many that naming any work would pass, makes no question.
"""

from __future__ import annotations

from agentic_rag.catalog.records import Anime, Manga
from agentic_rag.eval.stress.facts import Builder, Fact, World, keep

MIN_ACCEPTABLE = 3
MAX_ACCEPTABLE = 40  # answer_any's bound is 50; past this the catalog's works would mostly be acceptable anyway


def _shared_genres(a: list[str], b: list[str]) -> bool:
    need = max(2, (len(a) + 1) // 2)
    return len(set(a) & set(b)) >= need


def _anime_people(a: Anime) -> set[str]:
    return {c.person for c in a.staff}


def similar_anime(w: World) -> list[Fact]:
    out = []
    franchise = w.cat.anime_franchise
    for a in w.cat.anime:
        if a.format != "tv" or a.key not in franchise:
            continue
        ok = [b.title for b in w.cat.anime if franchise.get(b.key) != franchise[a.key] and (
            set(a.studios) & set(b.studios) or _anime_people(a) & _anime_people(b)
            or _shared_genres(a.genres, b.genres))]
        if MIN_ACCEPTABLE <= len(ok) <= MAX_ACCEPTABLE:
            fact = w.fact({"a": ("anime", a.key)}, [("anime", a.key)], [])
            if fact is not None:
                out.append(Fact(mentions=fact.mentions, gold=fact.gold, any_of=tuple(dict.fromkeys(ok))))
    return keep(out)


def _authors(m: Manga) -> set[str]:
    return {c.person for c in m.authors}


def similar_manga(w: World) -> list[Fact]:
    out = []
    franchise = w.cat.manga_franchise
    for m in w.cat.manga:
        if m.key not in franchise:
            continue
        ok = [n.title for n in w.cat.manga if franchise.get(n.key) != franchise[m.key] and (
            _authors(m) & _authors(n) or _shared_genres(m.genres, n.genres))]
        if MIN_ACCEPTABLE <= len(ok) <= MAX_ACCEPTABLE:
            fact = w.fact({"m": ("manga", m.key)}, [("manga", m.key)], [])
            if fact is not None:
                out.append(Fact(mentions=fact.mentions, gold=fact.gold, any_of=tuple(dict.fromkeys(ok))))
    return keep(out)


BUILDERS: dict[str, Builder] = {"similar_anime": similar_anime, "similar_manga": similar_manga}
