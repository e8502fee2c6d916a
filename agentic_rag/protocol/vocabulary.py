"""The closed vocabularies of the catalog: entity types, relation labels, graph edge types.

Everything a model may name is listed here and nowhere else. The protocol builds its ``Literal``
types from these lists, the catalog's data files are checked against them, and the SQL migrations
mirror them (a test keeps them in step). How each edge is said in words (:data:`EDGE_WORDS`) and
which type a hop along edges starts from and leads to (:func:`hop_domain`, :func:`hop_range`) are
here too, so the question reader, the answer writer, the model's forms and ``compare`` share one
source. A leaf: it imports nothing of ours.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Literal, cast, get_args

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


# -- how a hop is typed ----------------------------------------------------------------------------------------

# Where an edge leads to several types, the one a hop along it is read to reach unless the question names
# another (the hop then keeps that type: "which manga is Light in"): people mostly ask for the anime.
PREFERRED_RANGE: dict[str, EntityType] = {"appears_in": "anime", "worked_on": "anime"}
# Hops the question reader leaves untyped though the vocabulary types them: a kin step alone ("naruto's son",
# "sasuke's daughter's mother") keeps the type the reading had reached, so what follows it is composed as it
# always was (typing it as a character would insert a coercion before it where a work was reached).
UNTYPED_HOPS: frozenset[tuple[str, ...]] = frozenset({("family",)})


def _one(types: set[str]) -> EntityType | None:
    return cast(EntityType, next(iter(types))) if len(types) == 1 else None


@cache
def hop_domain(edges: tuple[str, ...]) -> EntityType | None:
    """The one type a hop along ``edges`` starts from; None where they start from several (``staff``: an anime
    or a manga, which the reader decides from the roles asked) or the hop is in :data:`UNTYPED_HOPS`."""
    if edges in UNTYPED_HOPS:
        return None
    return _one({t for e in edges for t in EDGE_TYPE_BY_NAME[e].src})


@cache
def hop_range(edges: tuple[str, ...]) -> EntityType | None:
    """The one type a hop along ``edges`` leads to, taking :data:`PREFERRED_RANGE` where an edge leads to
    several; None where they still lead to several or the hop is in :data:`UNTYPED_HOPS`."""
    if edges in UNTYPED_HOPS:
        return None
    return _one({t for e in edges for t in ((PREFERRED_RANGE[e],) if e in PREFERRED_RANGE
                                            else EDGE_TYPE_BY_NAME[e].dst)})


# -- how an edge is said --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EdgeWords:
    """How one edge is said in words, one column per use. Where two uses say an edge differently, both are
    kept: an answer's sentence and a form's option are each tuned to their reader."""

    links: str  # how one entity stands to the next, "X <links> Y": answer sentences and paths
    step: str  # a form's option for following it, "{x}": the entity's label ("studio that animated {x}")
    shared: str | None = None  # compare: what two entities have in common along it ("studios"); None: not compared
    missing: str | None = None  # an answer's "the catalog records no <missing> for X"; None: the edge's name
    plural: str | None = None  # the people it leads to, listed ("X's rivals: ..."); None: not listed so


# In the order a form offers an entity's steps: the common questions first.
EDGE_WORDS: dict[str, EdgeWords] = {
    "features": EdgeWords("features", "characters of {x}", shared="characters", missing="characters"),
    "staff": EdgeWords("credits", "staff of {x}: director, author, composer, designers", shared="staff",
                       missing="staff credit"),
    "animated_by": EdgeWords("was animated by", "studio that animated {x}", shared="studios", missing="studio"),
    "adapted_from": EdgeWords("is adapted from", "manga {x} is based on", shared="source material",
                              missing="source manga"),
    "adapted_into": EdgeWords("was adapted into", "anime made from {x}", missing="anime adaptation"),
    "sequel": EdgeWords("is followed by", "sequel of {x}, what comes after", missing="sequel"),
    "prequel": EdgeWords("follows", "prequel of {x}, what came before", missing="prequel"),
    "appears_in": EdgeWords("appears in", "works {x} appears in", shared="works", missing="appearance"),
    "worked_on": EdgeWords("worked on", "works of {x}", shared="works"),
    "animated": EdgeWords("animated", "anime animated by {x}", shared="works"),
    "includes": EdgeWords("includes", "works in {x}", shared="works"),
    "part_of": EdgeWords("belongs to", "franchise of {x}", shared="franchise"),
    "has_episode": EdgeWords("has the episode", "episode titles of {x}"),
    "episode_of": EdgeWords("is an episode of", "anime of the episode {x}"),
    "side_story": EdgeWords("has the side story", "side stories of {x}"),
    "parent_story": EdgeWords("is a side story of", "main story of {x}"),
    "spinoff": EdgeWords("has the spin-off", "spin-offs of {x}"),
    "spinoff_of": EdgeWords("is a spin-off of", "series {x} is a spin-off of"),
    "alternative_version": EdgeWords("is another version of", "other versions of {x}"),
    "summary": EdgeWords("summarises", "story {x} recaps"),
    "summarized_by": EdgeWords("is summarised by", "recaps of {x}"),
    "family": EdgeWords("is family of", "family of {x}"),
    "ally": EdgeWords("is an ally of", "allies of {x}", plural="allies"),
    "rival": EdgeWords("is a rival of", "rivals of {x}", plural="rivals"),
    "enemy": EdgeWords("is an enemy of", "enemies of {x}", plural="enemies"),
    "teammate": EdgeWords("is a teammate of", "teammates of {x}", plural="teammates"),
    "romantic": EdgeWords("is the partner of", "partner of {x}"),
    "mentor_of": EdgeWords("mentored", "students of {x}", missing="student"),
    "student_of": EdgeWords("was taught by", "mentor of {x}", missing="mentor"),
    "same_studio": EdgeWords("shares a studio with", "anime from the same studio as {x}"),
    "shared_staff": EdgeWords("shares staff with", "works sharing staff with {x}"),
    "shares_franchise": EdgeWords("shares a franchise with", "works in the same franchise as {x}"),
    "co_appears": EdgeWords("appears alongside", "characters appearing with {x}"),
}
