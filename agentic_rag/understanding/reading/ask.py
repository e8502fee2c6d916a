"""What the words ask of one name: a ranking, a count, a relation (hops) and the attributes read at the end."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from agentic_rag.protocol.reading import Attr
from agentic_rag.protocol.vocabulary import EntityType, hop_domain
from agentic_rag.understanding import cues as C
from agentic_rag.understanding.filters import superlative
from agentic_rag.understanding.reading.counts import _count, _summing
from agentic_rag.understanding.reading.hops import _FORMATS, APPEARS, _Ask
from agentic_rag.understanding.reading.relations import _relation
from agentic_rag.understanding.reading.words import _Words

_ROW_ATTRS: frozenset[str] = frozenset({"year", "episode_count", "volumes", "magazine", "founded", "format", "status",
                                        "genres"})


def _run_domain(w: _Words, either: tuple[EntityType, ...]) -> tuple[EntityType, ...]:
    """What a run's year or status is asked of: "when did it air" a show, "when was it serialized" a manga."""
    return ("anime",) if w.any(C.AIRED) else ("manga",) if w.any(C.PUBLISHED) else either


class AttrRule(NamedTuple):
    """An attribute the words ask for: when they do, and what it is read off (``run``: a run's, which the words
    may say is a show's or a manga's)."""

    attr: Attr
    when: Callable[[_Words], bool]
    domain: tuple[EntityType, ...]
    run: bool = False


def _cue(family: frozenset[str], phrases: tuple[str, ...] = ()) -> Callable[[_Words], bool]:
    return lambda w: w.any(family) or w.has(*phrases)


# Every attribute the words may ask for, the most specific first.
ATTRIBUTE_RULES: tuple[AttrRule, ...] = (
    AttrRule("first_episode", lambda w: bool(C.FIRST_EPISODE.search(w.text) or C.EPISODE_N.search(w.text)),
             ("anime",)),
    AttrRule("genres", _cue(C.GENRES), ("anime", "manga")),
    AttrRule("founded", _cue(C.FOUNDED), ("studio",)),
    AttrRule("magazine", _cue(C.MAGAZINE, C.MAGAZINE_PHRASES), ("manga",)),
    AttrRule("volumes", _cue(C.VOLUMES), ("manga",)),
    AttrRule("episode_count", lambda w: w.any(C.EPISODES), ("anime",)),
    # "how long is X": episodes of an anime, volumes of a manga (anchor.py reads the one its reading is)
    AttrRule("episode_count", lambda w: bool(C.HOW_LONG.search(w.text)), ("anime", "manga")),
    AttrRule("format", lambda w: _cue(C.FORMAT, C.FORMAT_PHRASES)(w) or (
        " or " in w.text and len(w.set & C.FORMATS) >= 2), ("anime",)),  # "a tv show or an ova"
    AttrRule("year", _cue(C.YEAR, C.YEAR_PHRASES), ("anime", "manga", "studio"), run=True),
    AttrRule("status", _cue(C.STATUS, C.STATUS_PHRASES), ("anime", "manga"), run=True),
)


def _attributes(w: _Words) -> list[_Ask]:
    """Every attribute the words ask for, the most specific first ("year + how many episodes": both)."""
    numbered = C.EPISODE_N.search(w.text)
    episode = int(numbered.group("n")) if numbered else 1  # "episode 12": the first episode's number, else 1
    return [_Ask([], r.attr, domain=_run_domain(w, r.domain) if r.run else r.domain,
                  episode=episode if r.attr == "first_episode" else 1) for r in ATTRIBUTE_RULES if r.when(w)]


def _attribute(w: _Words) -> _Ask | None:
    asks = _attributes(w)
    if not asks:
        return None
    first = asks[0]
    if first.attr != "first_episode":  # the others are read off the same row
        first.also = [a.attr for a in asks[1:] if a.attr in _ROW_ATTRS and set(a.domain) & set(first.domain)
                      # a studio's year is its founding; a run's years say whether it still runs
                      and (first.attr, a.attr) not in (("founded", "year"), ("year", "status"))]
    return first


def _ask(w: _Words, anchor_types: set[EntityType], after_anchor: frozenset[str] = frozenset(),
         every_type: frozenset[EntityType] = frozenset()) -> _Ask | None:
    words = f"{w.text} {' '.join(w.typed)}"
    framed = (w.set | w.typed) & {"season", "seasons", "series", "films", "movies", "film", "movie", "entries", "tv"}
    if framed - {"season", "seasons"} and not framed & {"season", "seasons"} and C.LISTED_IN_ORDER.search(w.text) \
            and not C.HOW_MANY.search(w.text):
        # "name the MHA movies oldest first", "the bleach movies in release order": all of them, in order (the
        # franchise's works are listed by year), not the first alone; seasons in order are the sequel chain's
        fmt = next((_FORMATS[x] for x in (*w.keys, *w.typed) if x in _FORMATS), None)
        return _Ask([], "franchise_works", fmt=fmt or ("tv" if "season" in words else None), domain=("franchise",))
    if (rank := superlative(words, "anime")) is not None and framed and not C.LAST_SEASON.search(w.text) and not \
            C.HOW_MANY.search(w.text.replace(" episode count", " ")):
        # "which dragon ball tv series has the most episodes": the extreme among the franchise's works
        fmt = next((_FORMATS[x] for x in (*w.keys, *w.typed) if x in _FORMATS), None)
        return _Ask([], "franchise_works", fmt=fmt or ("tv" if "season" in words else None), domain=("franchise",),
                    rank=rank)
    if (C.HOW_MANY.search(w.text) or (_summing(w) and w.any(C.EPISODES))) and (
            counted := _count(w, anchor_types)) is not None:
        structural = (("sequel",), ("prequel",), ("adapted_from",), ("adapted_into",))
        hops = [h for h in _relation(w, anchor_types, after_anchor) if h.edges in structural]
        if counted.attr in ("episode_count", "volumes"):
            counted.hops = hops + counted.hops
            counted.also = [x.attr for x in _attributes(w) if x.attr != counted.attr and x.attr in _ROW_ATTRS
                            and set(x.domain) & set(counted.domain)]
        return counted
    if w.any(C.NAMES) or (w.any(C.NATIVE) and w.set & {"title", "name", "called"}):
        return None  # "what's her nickname", "the japanese title of X": the entity itself, with its other names
    if w.has(*C.SPINOFF_MANGA_PHRASES) and not w.any(C.STAFF_NOUNS | C.WRITE | C.DRAW):
        # "mha spin-off manga": the franchise's manga (spin-offs are manga of the franchise, not sequels)
        return _Ask([], "franchise_works", domain=("franchise",), counted="manga")
    hops = _relation(w, anchor_types, after_anchor)
    attr = _attribute(w)
    if attr is not None and any(h.edges in (("staff",), ("animated_by",), ("features",)) for h in hops) and not (
            attr.attr == "founded" and hops[-1].edges == ("animated_by",)):
        attr = None  # the year in "who directed the 2011 series" picks the work; "when was its studio founded" asks
    if hops == [APPEARS] and attr is not None and every_type & set(attr.domain):
        hops = []  # "frieren's genres (the anime)": the attribute of the work the name also names
    if not hops and attr is None:
        # "bleach movies", "which one piece films are there": the franchise's works of that format
        fmt = next((_FORMATS[x] for x in w.keys if x in _FORMATS and x != "tv"), None)
        return _Ask([], "franchise_works", fmt=fmt, domain=("franchise",)) if fmt else None
    first = hops[0] if hops else None
    domain: tuple[EntityType, ...] = attr.domain if attr and not hops else ()
    if first is not None:
        d = hop_domain(first.edges)
        if first.edges == ("staff",):
            d = "manga" if set(first.roles) & {"story", "story_and_art", "art"} else "anime"
        elif first.edges == ("features",):
            d = "anime"
        domain = (d,) if d else ()
        if first is APPEARS or first.edges == ("worked_on",):
            domain = (d,) if d else ()
    if attr is None:
        return _Ask(hops, None, domain=domain)
    return _Ask(hops, attr.attr, domain=domain, also=attr.also, episode=attr.episode)
