"""The heuristic for a question about an attached image ("what anime is this from?", "who is this?").

With an image and no name linked, the question is about what the image shows: one search by the image alone
(the question itself as the query, which the loop turns into a search by the image only, see the image card)
in the collection the question asks for, then the answer is the entity whose images are closest.
"""

from __future__ import annotations

from agentic_rag.planners.heuristic.context import words
from agentic_rag.protocol import SearchIntent
from agentic_rag.protocol.limits import max_len
from agentic_rag.protocol.roles import CardEntity, ContextCard
from agentic_rag.protocol.vocabulary import EntityType

# the words that name the kind of entity asked for, the first that matches wins; else who is a character,
# and anything else an anime (what an image in this catalog most often comes from)
KIND_WORDS: tuple[tuple[frozenset[str], EntityType], ...] = (
    (frozenset({"manga", "mangas"}), "manga"),
    (frozenset({"studio", "studios"}), "studio"),
    (frozenset({"episode", "episodes", "scene"}), "episode"),
    (frozenset({"franchise", "franchises"}), "franchise"),
    (frozenset({"character", "characters"}), "character"),
    (frozenset({"person", "director", "author", "mangaka", "artist", "composer", "actor", "actress"}), "person"),
    (frozenset({"anime", "show", "series", "film", "movie"}), "anime"),
    (frozenset({"who", "whom", "whose"}), "character"),
)
# the cosine at which the closest image is a near copy of one of the entity's own: an answer, not a guess
IMAGE_MATCH = 0.9
PICTURED_LIMIT = 5
_QUERY = max_len(SearchIntent, "query")


def image_attached(cards: list[ContextCard]) -> bool:
    return any(c.source == "request" and "image" in c.data for c in cards)


def searched_by_image(cards: list[ContextCard]) -> bool:
    return any(c.source == "qdrant_search" and c.data.get("image") for c in cards)


def pictured_type(question: str) -> EntityType:
    """The kind of entity a question about an image asks for."""
    said = words(question)
    return next((kind for names, kind in KIND_WORDS if said & names), "anime")


def image_search(question: str) -> SearchIntent:
    kind = pictured_type(question)
    return SearchIntent(rationale=f"an image is attached and no name linked: search {kind} by the image",
                        entity_type=kind, query=" ".join(question.split())[:_QUERY] or "?", limit=PICTURED_LIMIT,
                        match="semantic")


def pictured(cards: list[ContextCard]) -> list[tuple[float, CardEntity]]:
    """What the image searches found, closest image first (the cosine of the images)."""
    found: list[tuple[float, CardEntity]] = []
    for c in cards:
        if c.source != "qdrant_search" or not c.data.get("image"):
            continue
        key = "score" if c.data.get("query") is None else "image_score"  # fused with words: the image's own
        scores = {r.get("id"): r.get(key) for r in c.data.get("rows", []) if isinstance(r, dict)}
        found += [(float(s), e) for e in c.entities if isinstance(s := scores.get(e.ref.id), int | float)]
    return sorted(found, key=lambda x: -x[0])
