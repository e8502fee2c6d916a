"""Reading context cards: which mentions are resolved to which entity, which steps already ran."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from agentic_rag.models.roles import CardEntity, ContextCard

_WORD = re.compile(r"[\w']+")


def norm(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text)
    return "".join(c for c in folded if not unicodedata.combining(c)).lower()


def words(text: str) -> set[str]:
    return set(_WORD.findall(norm(text)))


def names_match(mention: str, entity: CardEntity) -> bool:
    """The entity is what the mention names: matched by name in the index, or its name holds the words."""
    if entity.detail and "name" in entity.detail.split("matched by ", 1)[-1]:
        return True
    m, n = words(mention), words(entity.name)
    return bool(m) and m <= n


@dataclass(slots=True)
class Resolution:
    mention: str
    entity: CardEntity | None
    tried: list[str]  # entity types searched for this mention


def search_cards(cards: list[ContextCard], mention: str) -> list[ContextCard]:
    return [c for c in cards if c.source == "qdrant_search" and norm(str(c.data.get("query", ""))) == norm(mention)]


def resolve(cards: list[ContextCard], mention: str) -> Resolution:
    """The first searched type whose results name the mention wins; its best such result is the entity."""
    tried: list[str] = []
    for card in search_cards(cards, mention):
        tried.append(str(card.data.get("entity_type")))
        for entity in card.entities:
            if names_match(mention, entity):
                return Resolution(mention, entity, tried)
    return Resolution(mention, None, tried)


def row_of(cards: list[ContextCard], entity_id: str) -> dict[str, Any]:
    """The raw row a search returned for an entity (payload fields such as anime_ids), if any."""
    for card in cards:
        for row in card.data.get("rows", []):
            if isinstance(row, dict) and row.get("id") == entity_id:
                return row
    return {}


def step_cards(cards: list[ContextCard], source: str, kind: str | None = None) -> list[ContextCard]:
    """Cards of one step kind (``kind`` is the graph query_type or 'query' for pg_query)."""
    return [c for c in cards if c.source == source and (kind is None or c.data.get("kind") == kind)]
