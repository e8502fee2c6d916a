"""Coercion by type: the hops a type change needs ("Luffy's studio": the anime he appears in first), and the
reading of a name a plan starts from."""

from __future__ import annotations

from agentic_rag.protocol import LinkedMention
from agentic_rag.protocol.reading import Hop
from agentic_rag.protocol.vocabulary import EntityType, hop_domain, hop_range
from agentic_rag.understanding.reading.hops import ADAPTATIONS, APPEARS, AUTHORS, MAIN_CAST, PART_OF, SOURCE, _Ask

# What a hop starts from and leads to is the vocabulary's (hop_domain, hop_range); what an attribute is read off:
_ATTR_DOMAIN: dict[str, EntityType] = {
    "episode_count": "anime", "format": "anime", "first_episode": "anime", "genres": "anime", "volumes": "manga",
    "magazine": "manga",
    "founded": "studio", "count_characters": "anime", "sum_episodes": "anime", "count_studio": "studio",
    "count_author": "person", "count_franchise": "franchise", "franchise_works": "franchise", "count": "person",
    "sum_franchise": "franchise", "sum_volumes": "manga",
}


# From a type to the type a hop needs: the hop that gets there.
_COERCE: dict[tuple[EntityType, EntityType], Hop] = {
    ("character", "anime"): APPEARS, ("anime", "manga"): SOURCE, ("manga", "anime"): ADAPTATIONS,
    ("anime", "character"): MAIN_CAST, ("anime", "franchise"): PART_OF, ("manga", "franchise"): PART_OF,
    ("person", "manga"): Hop(("worked_on",), AUTHORS.roles, node_types=("manga",)),  # "X's manga"
}


def _coerce(start: EntityType, ask: _Ask) -> list[Hop]:
    """The hops of ``ask`` with the type changes they need inserted ("Luffy's studio": appears_in first)."""
    out: list[Hop] = []
    current = start

    def reach(d: EntityType | None) -> None:
        nonlocal current
        if d is not None and d != current:
            path = _route(current, d)
            if path is not None:
                out.extend(path)
                current = d

    for h in ask.hops:
        d = hop_domain(h.edges)
        if h.edges == ("staff",):
            d = "manga" if set(h.roles) & {"story", "story_and_art", "art"} else (
                current if current in ("anime", "manga") else "anime")
        elif h.edges == ("features",):
            d = current if current in ("anime", "manga") else "anime"
        reach(d)
        out.append(h)
        # a hop kept to one type ends there ("worked_on" a person's manga), else where its edge leads
        current = h.node_types[0] if len(h.node_types) == 1 else (hop_range(h.edges) or current)
    if ask.attr is not None:
        d = _ATTR_DOMAIN.get(ask.attr)
        if ask.attr in ("year", "status"):
            d = current if current in ("anime", "manga", "studio") else "anime"
        if ask.attr == "year" and current == "studio":
            ask.attr = "founded"
        reach(d)
    return out


def _route(start: EntityType, goal: EntityType) -> list[Hop] | None:
    """The fewest coercion hops from one type to another (at most two: a character to its anime's manga)."""
    if (start, goal) in _COERCE:
        return [_COERCE[(start, goal)]]
    for (a, mid), first in _COERCE.items():
        if a == start and (mid, goal) in _COERCE:
            return [first, _COERCE[(mid, goal)]]
    return None


def _pick_type(m: LinkedMention, wanted: tuple[EntityType, ...], said: EntityType | None) -> EntityType:
    types = [c.entity.entity_type for c in m.candidates]
    if said is not None:
        return said
    for t in wanted:
        if t in types:
            return t
    # a type a coercion can turn into what is wanted, else the best match
    for t in types:
        if any(_route(t, w) for w in wanted):
            return t
    return types[0]


def _fits_type(t: EntityType, domain: tuple[EntityType, ...]) -> bool:
    return not domain or t in domain or any(_route(t, d) for d in domain)


def _fits(m: LinkedMention, domain: tuple[EntityType, ...]) -> bool:
    """Whether some reading of the mention is, or leads by coercion to, what the asked hop starts from."""
    types = {c.entity.entity_type for c in m.candidates}
    return not domain or any(t in types or any(_route(x, t) for x in types) for t in domain)
