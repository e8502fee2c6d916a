"""The closed vocabularies of the catalog: entity types, relation labels, graph edge types.

Everything a model may name is listed here and nowhere else. The protocol builds its ``Literal``
types from these lists, the catalog's data files are checked against them, and the SQL migrations
mirror them (a test keeps them in step). A leaf: it imports nothing of ours.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

EntityType = Literal["anime", "manga", "character", "episode", "franchise", "studio", "person"]
ENTITY_TYPES: tuple[EntityType, ...] = get_args(EntityType)

AnimeFormat = Literal["tv", "movie", "ova", "ona", "special"]
AnimeRelation = Literal[
    "sequel", "prequel", "side_story", "spinoff", "alternative_version", "parent_story", "summary"
]
CharacterRelation = Literal[
    "family", "ally", "rival", "enemy", "teammate", "romantic", "mentor_of", "student_of"
]
CharacterRole = Literal["main", "supporting"]
AnimeStaffRole = Literal[
    "original_creator", "director", "chief_director", "series_composition", "character_design",
    "music", "producer",
]
MangaAuthorRole = Literal["story_and_art", "story", "art"]


@dataclass(frozen=True, slots=True)
class EdgeType:
    """One label of the graph: which node types it joins, its inverse, how it is stored."""

    name: str
    src: tuple[str, ...]
    dst: tuple[str, ...]
    inverse: str
    description: str
    derived_via: str | None = None  # traversed through this intermediate node type, never stored


def _e(name: str, src: str, dst: str, inverse: str, description: str, via: str | None = None) -> EdgeType:
    return EdgeType(name, tuple(src.split("|")), tuple(dst.split("|")), inverse, description, via)


EDGE_TYPES: tuple[EdgeType, ...] = (
    _e("sequel", "anime", "anime", "prequel", "the target continues the story of the source"),
    _e("prequel", "anime", "anime", "sequel", "the target comes before the source in the story"),
    _e("side_story", "anime", "anime", "parent_story", "the target is a side story of the source"),
    _e("parent_story", "anime", "anime", "side_story", "the target is the main story the source branches from"),
    _e("spinoff", "anime", "anime", "spinoff_of", "the target is a spin-off of the source"),
    _e("spinoff_of", "anime", "anime", "spinoff", "the source is a spin-off of the target"),
    _e("alternative_version", "anime", "anime", "alternative_version",
       "another adaptation of the same source material"),
    _e("summary", "anime", "anime", "summarized_by", "the source summarises or recaps the target"),
    _e("summarized_by", "anime", "anime", "summary", "the target summarises or recaps the source"),
    _e("adapted_from", "anime", "manga", "adapted_into", "the anime adapts the manga"),
    _e("adapted_into", "manga", "anime", "adapted_from", "the manga was adapted into the anime"),
    _e("appears_in", "character", "anime|manga", "features", "the character appears in the work"),
    _e("features", "anime|manga", "character", "appears_in", "the work features the character"),
    _e("episode_of", "episode", "anime", "has_episode", "the episode belongs to the anime"),
    _e("has_episode", "anime", "episode", "episode_of", "the anime has this episode"),
    _e("animated_by", "anime", "studio", "animated", "the studio animated the anime"),
    _e("animated", "studio", "anime", "animated_by", "the studio animated the anime"),
    _e("staff", "anime|manga", "person", "worked_on", "the person is credited on the work (role in detail)"),
    _e("worked_on", "person", "anime|manga", "staff", "the person is credited on the work (role in detail)"),
    _e("part_of", "anime|manga", "franchise", "includes", "the work belongs to the franchise"),
    _e("includes", "franchise", "anime|manga", "part_of", "the franchise includes the work"),
    _e("family", "character", "character", "family", "relatives (detail says how)"),
    _e("ally", "character", "character", "ally", "allies or companions"),
    _e("rival", "character", "character", "rival", "rivals"),
    _e("enemy", "character", "character", "enemy", "enemies or antagonists of each other"),
    _e("teammate", "character", "character", "teammate", "members of the same team, crew or squad"),
    _e("romantic", "character", "character", "romantic", "romantic partners or spouses"),
    _e("mentor_of", "character", "character", "student_of", "the source mentors the target"),
    _e("student_of", "character", "character", "mentor_of", "the source is a student of the target"),
    # Derived edges are two hops through an intermediate node; the graph executor expands them
    # with a fanout cap so that a hub (a studio with thousands of works) cannot blow up a query.
    _e("same_studio", "anime", "anime", "same_studio", "animated by a common studio", via="studio"),
    _e("shared_staff", "anime|manga", "anime|manga", "shared_staff", "a person credited on both", via="person"),
    _e("co_appears", "character", "character", "co_appears", "both appear in a common work", via="anime"),
    _e("shares_franchise", "anime|manga", "anime|manga", "shares_franchise", "both belong to one franchise",
       via="franchise"),
)
EDGE_TYPE_BY_NAME: dict[str, EdgeType] = {e.name: e for e in EDGE_TYPES}
EdgeTypeName = Literal[
    "sequel", "prequel", "side_story", "parent_story", "spinoff", "spinoff_of", "alternative_version",
    "summary", "summarized_by", "adapted_from", "adapted_into", "appears_in", "features", "episode_of",
    "has_episode", "animated_by", "animated", "staff", "worked_on", "part_of", "includes", "family",
    "ally", "rival", "enemy", "teammate", "romantic", "mentor_of", "student_of", "same_studio",
    "shared_staff", "co_appears", "shares_franchise",
]
STORED_EDGE_TYPES: tuple[str, ...] = tuple(e.name for e in EDGE_TYPES if e.derived_via is None)
