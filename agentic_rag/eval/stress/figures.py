"""Facts about numbers: comparison, attribute (one entity's value, or catalog-wide filters) and aggregate.

Filters list their results, so a filter fact is kept only when one to :data:`MAX_LISTED` entities
match, and never all it looks at (a threshold that keeps everything tests nothing). Thresholds of
"between" and "older than" never equal a value in the data, so that whether a bound is inclusive
cannot change the answer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from itertools import permutations

from agentic_rag.catalog.records import Anime, Manga
from agentic_rag.eval.stress.chains import magazine_short
from agentic_rag.eval.stress.facts import Builder, Fact, Ref, World, keep

MAX_LISTED = 4
SERIES = ("tv", "ova")
YEARS = range(1960, 2027)
Item = tuple[Ref, int]


def _compare(w: World, items: list[Item]) -> list[Fact]:
    """Every ordered pair with different values; the answer carries both."""
    return keep(w.fact({"a": ra, "b": rb}, [ra, rb], [str(va), str(vb)])
                for (ra, va), (rb, vb) in permutations(items, 2) if va != vb)


def _anime(w: World, value: Callable[[Anime], int | None], formats: Iterable[str] | None = None) -> list[Item]:
    fmts = set(formats) if formats is not None else None
    return [(("anime", a.key), v) for a in w.cat.anime
            if (fmts is None or a.format in fmts) and (v := value(a)) is not None]


def _manga(w: World, value: Callable[[Manga], int | None]) -> list[Item]:
    return [(("manga", m.key), v) for m in w.cat.manga if (v := value(m)) is not None]


def _studios(w: World) -> list[Item]:
    return [(("studio", s.key), s.founded) for s in w.cat.studios if s.founded is not None]


def more_episodes(w: World) -> list[Fact]:
    return _compare(w, _anime(w, lambda a: a.episodes, SERIES))


def earlier_anime(w: World) -> list[Fact]:
    return _compare(w, _anime(w, lambda a: a.year))


def more_volumes(w: World) -> list[Fact]:
    return _compare(w, _manga(w, lambda m: m.volumes))


def earlier_manga(w: World) -> list[Fact]:
    return _compare(w, _manga(w, lambda m: m.year))


def older_studio(w: World) -> list[Fact]:
    return _compare(w, _studios(w))


def _single(w: World, slot: str, items: list[Item]) -> list[Fact]:
    return keep(w.fact({slot: ref}, [ref], [str(v)]) for ref, v in items)


def anime_year(w: World) -> list[Fact]:
    return _single(w, "a", _anime(w, lambda a: a.year))


def anime_episodes(w: World) -> list[Fact]:
    return _single(w, "a", _anime(w, lambda a: a.episodes, (*SERIES, "special")))


def manga_volumes(w: World) -> list[Fact]:
    return _single(w, "m", _manga(w, lambda m: m.volumes))


def manga_year(w: World) -> list[Fact]:
    return _single(w, "m", _manga(w, lambda m: m.year))


def studio_founded(w: World) -> list[Fact]:
    return _single(w, "s", _studios(w))


def manga_magazine(w: World) -> list[Fact]:
    return keep(w.fact({"m": ("manga", m.key)}, [("manga", m.key)], [magazine_short(m.magazine)])
                for m in w.cat.manga if m.magazine)


def anime_studio(w: World) -> list[Fact]:
    return keep(w.fact({"a": ("anime", a.key)}, [("anime", a.key), ("studio", a.studios[0])],
                       [w.studio_short(a.studios[0])]) for a in w.cat.anime if len(a.studios) == 1)


def _listing(w: World, items: list[Item], test: Callable[[int], bool], words: dict[str, str],
             mentions: dict[str, Ref] | None = None) -> Fact | None:
    hits = [ref for ref, v in items if test(v)]
    if not 1 <= len(hits) <= min(MAX_LISTED, len(items) - 1):
        return None
    names: list[str] = []
    for t, k in hits:
        names += [w.studio_short(k)] if t == "studio" else w.phrase((t, k))
    return w.fact(mentions or {}, [*(mentions or {}).values(), *hits], names, words)


def _at_least(n: int) -> Callable[[int], bool]:
    return lambda v: v >= n


def _at_most(n: int) -> Callable[[int], bool]:
    return lambda v: v <= n


def _below(n: int) -> Callable[[int], bool]:
    return lambda v: v < n


def _between(lo: int, hi: int) -> Callable[[int], bool]:
    return lambda v: lo <= v <= hi


def _clear(items: list[Item], *bounds: int) -> bool:
    return not any(v in bounds for _, v in items)


# Which anime a filter looks at, and how a question names them.
ANIME_SETS: tuple[tuple[str, tuple[str, ...] | None], ...] = (
    ("anime", None), ("TV anime", ("tv",)), ("anime movies", ("movie",)),
)


def episodes_at_least(w: World) -> list[Fact]:
    items = _anime(w, lambda a: a.episodes)
    return keep(_listing(w, items, _at_least(n), {"n": str(n)}) for n in range(20, 501, 10))


def episodes_at_most(w: World) -> list[Fact]:
    items = _anime(w, lambda a: a.episodes, ("tv",))
    return keep(_listing(w, items, _at_most(n), {"n": str(n)}) for n in range(2, 31))


def episodes_between(w: World) -> list[Fact]:
    items = _anime(w, lambda a: a.episodes, SERIES)
    return keep(_listing(w, items, _between(lo, hi), {"lo": str(lo), "hi": str(hi)})
                for lo in range(5, 400, 5) for hi in range(lo + 5, lo + 105, 5) if _clear(items, lo, hi))


def aired_or_later(w: World) -> list[Fact]:
    out = []
    for what, formats in ANIME_SETS:
        items = _anime(w, lambda a: a.year, formats)
        out += [_listing(w, items, _at_least(y), {"year": str(y), "what": what}) for y in YEARS]
    return keep(out)


def aired_before(w: World) -> list[Fact]:
    out = []
    for what, formats in ANIME_SETS:
        items = _anime(w, lambda a: a.year, formats)
        out += [_listing(w, items, _below(y), {"year": str(y), "what": what})
                for y in YEARS if _clear(items, y)]
    return keep(out)


def volumes_at_least(w: World) -> list[Fact]:
    items = _manga(w, lambda m: m.volumes)
    return keep(_listing(w, items, _at_least(n), {"n": str(n)}) for n in range(5, 81, 5))


def volumes_at_most(w: World) -> list[Fact]:
    items = _manga(w, lambda m: m.volumes)
    return keep(_listing(w, items, _at_most(n), {"n": str(n)}) for n in range(1, 11))


def founded_before(w: World) -> list[Fact]:
    items = _studios(w)
    return keep(_listing(w, items, _below(y), {"year": str(y)}) for y in YEARS if _clear(items, y))


def founded_or_later(w: World) -> list[Fact]:
    items = _studios(w)
    return keep(_listing(w, items, _at_least(y), {"year": str(y)}) for y in YEARS)


def _by_studio(w: World, before: bool) -> list[Fact]:
    out = []
    for s in sorted(w.studios):
        items = [(("anime", a.key), a.year) for a in w.cat.anime if s in a.studios]
        for y in YEARS:
            if before and _clear(items, y):
                out.append(_listing(w, items, _below(y), {"year": str(y)}, {"s": ("studio", s)}))
            elif not before:
                out.append(_listing(w, items, _at_least(y), {"year": str(y)}, {"s": ("studio", s)}))
    return keep(out)


def studio_since(w: World) -> list[Fact]:
    return _by_studio(w, before=False)


def studio_before(w: World) -> list[Fact]:
    return _by_studio(w, before=True)


def _count(w: World, slot: str, counts: Counter[Ref]) -> list[Fact]:
    """Counts of two or more (a count of one would match any "1" in an answer)."""
    return keep(w.fact({slot: ref}, [ref], [str(n)]) for ref, n in sorted(counts.items()) if n >= 2)


def studio_count(w: World) -> list[Fact]:
    return _count(w, "s", Counter(("studio", s) for a in w.cat.anime for s in a.studios))


def author_manga_count(w: World) -> list[Fact]:
    return _count(w, "p", Counter(("person", p) for m in w.cat.manga for p in w.authors(m, "story_and_art",
                                                                                          "story", "art")))


def franchise_anime_count(w: World) -> list[Fact]:
    return _count(w, "f", Counter(("franchise", f) for f in w.cat.anime_franchise.values()))


def franchise_manga_count(w: World) -> list[Fact]:
    return _count(w, "f", Counter(("franchise", f) for f in w.cat.manga_franchise.values()))


def director_count(w: World) -> list[Fact]:
    """Anime directed, for people never credited as chief director (which "directed" would blur)."""
    chiefs = {p for a in w.cat.anime for p in w.staff(a, "chief_director")}
    counts = Counter(("person", p) for a in w.cat.anime for p in w.staff(a, "director") if p not in chiefs)
    return _count(w, "p", counts)


def composer_count(w: World) -> list[Fact]:
    return _count(w, "p", Counter(("person", p) for a in w.cat.anime for p in w.staff(a, "music")))


def anime_character_count(w: World) -> list[Fact]:
    return _count(w, "a", Counter(("anime", ap.anime) for c in w.cat.characters for ap in c.appears_in))


BUILDERS: dict[str, Builder] = {
    "more_episodes": more_episodes, "earlier_anime": earlier_anime, "more_volumes": more_volumes,
    "earlier_manga": earlier_manga, "older_studio": older_studio, "anime_year": anime_year,
    "anime_episodes": anime_episodes, "manga_volumes": manga_volumes, "manga_year": manga_year,
    "studio_founded": studio_founded, "manga_magazine": manga_magazine, "anime_studio": anime_studio,
    "episodes_at_least": episodes_at_least, "episodes_at_most": episodes_at_most,
    "episodes_between": episodes_between, "aired_or_later": aired_or_later, "aired_before": aired_before,
    "volumes_at_least": volumes_at_least, "volumes_at_most": volumes_at_most, "founded_before": founded_before,
    "founded_or_later": founded_or_later, "studio_since": studio_since, "studio_before": studio_before,
    "studio_count": studio_count, "author_manga_count": author_manga_count,
    "franchise_anime_count": franchise_anime_count, "franchise_manga_count": franchise_manga_count,
    "director_count": director_count, "composer_count": composer_count,
    "anime_character_count": anime_character_count,
}
