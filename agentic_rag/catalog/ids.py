"""Stable entity ids: uuid5 of ``"<entity type>:<natural key>"`` under the project's namespace.

Re-ingesting the same record always yields the same id, on any machine.
"""

from __future__ import annotations

import uuid

ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/agentic-rag/catalog")


def entity_id(entity_type: str, key: str) -> uuid.UUID:
    """The stable id of an entity from its natural key."""
    return uuid.uuid5(ID_NAMESPACE, f"{entity_type}:{key}")


def episode_key(anime_key: str, number: int) -> str:
    """The natural key of an episode: its anime's key and its number."""
    return f"{anime_key}#{number}"
