"""Reading context cards: which mentions are resolved to which entity, which steps already ran."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentic_rag.protocol.roles import CardEntity, ContextCard

_WORD = re.compile(r"[\w']+")
_LABEL = re.compile(r"^(.+) \((?:anime|manga|character|person|studio|franchise|episode)(?:, \d{4})?\)$")


def norm(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text)
    return "".join(c for c in folded if not unicodedata.combining(c)).lower()


def words(text: str) -> set[str]:
    return set(_WORD.findall(norm(text)))


def bare(label: str) -> str:
    """A graph label "Name (type, year)" without its type and year."""
    m = _LABEL.match(label)
    return m.group(1) if m else label


def qualifiers(detail: str) -> set[str]:
    """The qualifiers an edge's detail lists ("director, chief_director"): each whole, and each word of one
    ("brother" in "older brother"), so a hop's roles can name either."""
    whole = {x.strip() for x in detail.split(",") if x.strip()}
    return whole | {w for x in whole for w in x.split()}


def year_of(label: str) -> int | None:
    m = re.search(r", (\d{4})\)$", label)
    return int(m.group(1)) if m else None


def _exact(mention: str, entity: CardEntity, row: dict[str, Any]) -> bool:
    key = " ".join(norm(mention).split())
    names = [entity.name, *(str(x) for x in row.get("aliases") or [])]
    return any(" ".join(norm(n).split()) == key for n in names)


def names_match(mention: str, entity: CardEntity, row: dict[str, Any] | None = None) -> bool:
    """The entity is what the mention names: its name or an alias is the mention, or its name holds
    every word of the mention. A search hit that only resembles the mention is not the entity."""
    row = row or {}
    if _exact(mention, entity, row):
        return True
    m = words(mention)
    return bool(m) and (m <= words(entity.name) or any(m <= words(str(x)) for x in row.get("aliases") or []))


@dataclass(slots=True)
class Resolution:
    mention: str
    entity: CardEntity | None
    tried: list[str]  # entity types searched for this mention


def search_cards(cards: list[ContextCard], mention: str) -> list[ContextCard]:
    return [c for c in cards if c.source == "qdrant_search" and norm(str(c.data.get("query", ""))) == norm(mention)]


def resolve(cards: list[ContextCard], mention: str, types: Sequence[str] = (), year: int | None = None,
            others: Sequence[str] = ()) -> Resolution:
    """The first type (in ``types`` order) whose search results name the mention wins; among its
    matches an exact name or alias beats a partial one, then the asked year, then a name sharing
    words with the question's other mentions ("Season 3 or the Final Season"), then search rank."""
    found = search_cards(cards, mention)
    tried = [str(c.data.get("entity_type")) for c in found]
    order = [t for t in types if t in tried] + [t for t in tried if t not in types]
    context = set().union(*(words(o) for o in others)) - words(mention) if others else set()
    for entity_type in order:
        ranked: list[tuple[tuple[int, int, int, int], CardEntity]] = []
        for card in (c for c in found if c.data.get("entity_type") == entity_type):
            rows = {r.get("id"): r for r in card.data.get("rows", []) if isinstance(r, dict)}
            for rank, entity in enumerate(card.entities):
                row = rows.get(entity.ref.id, {})
                # an entity fetched by the id linking found is what the mention names, typo or not
                if not card.data.get("ids") and not names_match(mention, entity, row):
                    continue
                key = (0 if _exact(mention, entity, row) else 1,
                       0 if year is None or row.get("year") == year else 1,
                       0 if context & words(entity.name) else 1, rank)
                ranked.append((key, entity))
        if ranked:
            return Resolution(mention, min(ranked, key=lambda x: x[0])[1], tried)
    return Resolution(mention, None, tried)


def row_of(cards: list[ContextCard], entity_id: str) -> dict[str, Any]:
    """The raw row a search returned for an entity (payload fields such as anime_ids), if any."""
    for card in cards:
        for row in card.data.get("rows", []):
            if isinstance(row, dict) and row.get("id") == entity_id:
                return row
    return {}
