"""The catalog as GraphQL types: one per entity type, behind the ``Entity`` interface, with their relations.

Every relation field reads through the request's :class:`~agentic_rag.api.graphql.loaders.Loaders`: the edges of
all the entities asked for at one level in one statement, then their targets' records in one statement per
type. A relation is a page: at most ``limit`` (1 to :data:`MAX_PAGE`) targets, the most popular first.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Sequence
from typing import Annotated, Any, ClassVar

import asyncpg
import strawberry

from agentic_rag.api.graphql.context import Context
from agentic_rag.api.graphql.errors import ClientError
from agentic_rag.protocol.vocabulary import EDGE_TYPE_BY_NAME, STORED_EDGE_TYPES

__all__ = ["ENTITY_CLASSES", "MAX_PAGE", "Entity", "EntityRef", "EntityType", "Limit", "entities_of", "page"]

Info = strawberry.Info[Context, None]
MAX_PAGE = 50
DEFAULT_PAGE = 10
Limit = Annotated[int, strawberry.argument(description=f"Most items, 1 to {MAX_PAGE}.")]
ANIME_TO_ANIME = tuple(e.name for e in EDGE_TYPE_BY_NAME.values()
                       if e.src == ("anime",) and e.dst == ("anime",) and e.derived_via is None)


@strawberry.enum(description="The kinds of catalog entity.")
class EntityType(enum.Enum):
    ANIME = "anime"
    MANGA = "manga"
    CHARACTER = "character"
    PERSON = "person"
    STUDIO = "studio"
    FRANCHISE = "franchise"
    EPISODE = "episode"


def page(limit: int) -> int:
    """``limit`` when it is a page size we serve; a client error otherwise."""
    if not 1 <= limit <= MAX_PAGE:
        raise ClientError("validation_error", f"limit: must be 1 to {MAX_PAGE}, got {limit}")
    return limit


async def entities_of(info: Info, refs: Sequence[tuple[str, str]]) -> list[Entity]:
    """The entities of ``refs`` (type, id) that exist, in order; every type's records in one batch."""
    loads = [(t, info.context.loaders.record(t, i)) for t, i in refs]  # all keys queued before the first await
    out: list[Entity] = []
    for entity_type, pending in loads:
        row = await pending
        if row is not None:
            out.append(ENTITY_CLASSES[entity_type].of(row))
    return out


async def entity_of(info: Info, entity_type: str, id_: str) -> Entity | None:
    found = await entities_of(info, [(entity_type, id_)])
    return found[0] if found else None


@strawberry.type(description="A stored relation from an entity: its label, its detail (a role, a kinship), "
                             "and the entity at the other end.")
class Link:
    relation: str = strawberry.field(description="The relation's label (sequel, features, animated_by, ...).")
    detail: str | None = strawberry.field(description="What the relation's data adds: a role, how two are related.")
    target: strawberry.Private[tuple[str, str]]

    @strawberry.field(description="The entity at the other end.")
    async def entity(self, info: Info) -> Entity | None:
        return await entity_of(info, *self.target)


@strawberry.interface(description="A catalog entity; each type adds its own fields and relations.")
class Entity:
    entity_type_name: ClassVar[str] = ""

    id: strawberry.ID = strawberry.field(description="The entity's canonical UUID.")
    name: str = strawberry.field(description="Its primary name (an anime's or manga's title).")
    popularity: int = strawberry.field(description="Popularity, higher is more popular.")

    @classmethod
    def of(cls, row: asyncpg.Record) -> Entity:
        """The GraphQL object of one row of its type's record query."""
        fields: dict[str, Any] = {k: v for k, v in dict(row).items() if k in cls.__annotations__ or k in _COMMON}
        return cls(**fields)

    @strawberry.field(description="What kind of entity this is.")
    def entity_type(self) -> EntityType:
        return EntityType(type(self).entity_type_name)

    @strawberry.field(description="Stored relations from this entity, optionally only those labelled one of "
                                  "`relations`.")
    async def links(self, info: Info, relations: list[str] | None = None, limit: Limit = DEFAULT_PAGE) -> list[Link]:
        if relations is not None and (unknown := sorted(set(relations) - set(STORED_EDGE_TYPES))):
            raise ClientError("validation_error", f"relations: unknown {', '.join(unknown)[:200]}; known: "
                                                  f"{', '.join(STORED_EDGE_TYPES)}")
        edges = await info.context.loaders.edges(self.id, relations or STORED_EDGE_TYPES, None, page(limit))
        return [Link(relation=e.rel, detail=e.detail, target=(e.dst_type, e.dst)) for e in edges]

    async def _related(self, info: Info, rels: Sequence[str], dst_type: str, limit: int) -> list[Any]:
        edges = await info.context.loaders.edges(self.id, rels, dst_type, page(limit))
        return await entities_of(info, [(e.dst_type, e.dst) for e in edges])

    async def _one(self, info: Info, rel: str, dst_type: str) -> Any:
        found = await self._related(info, (rel,), dst_type, 1)
        return found[0] if found else None


_COMMON = {"id", "name", "popularity"}


@strawberry.type(description="An anime: a series, film, OVA, ONA or special.")
class Anime(Entity):
    entity_type_name: ClassVar[str] = "anime"

    title: str
    title_native: str | None
    title_romaji: str | None
    aliases: list[str]
    format: str = strawberry.field(description="tv, movie, ova, ona or special.")
    year: int
    end_year: int | None
    episode_count: int | None
    status: str = strawberry.field(description="finished or airing.")
    genres: list[str]
    synopsis: str | None

    @strawberry.field(description="The franchise it belongs to.")
    async def franchise(self, info: Info) -> Franchise | None:
        found: Franchise | None = await self._one(info, "part_of", "franchise")
        return found

    @strawberry.field(description="The studios that animated it.")
    async def studios(self, info: Info, limit: Limit = DEFAULT_PAGE) -> list[Studio]:
        return await self._related(info, ("animated_by",), "studio", limit)

    @strawberry.field(description="Its characters, the most popular first (the role is a link's detail).")
    async def characters(self, info: Info, limit: Limit = DEFAULT_PAGE) -> list[Character]:
        return await self._related(info, ("features",), "character", limit)

    @strawberry.field(description="People credited on it (roles are a link's detail).")
    async def staff(self, info: Info, limit: Limit = DEFAULT_PAGE) -> list[Person]:
        return await self._related(info, ("staff",), "person", limit)

    @strawberry.field(description="The manga it adapts.")
    async def source_manga(self, info: Info, limit: Limit = DEFAULT_PAGE) -> list[Manga]:
        return await self._related(info, ("adapted_from",), "manga", limit)

    @strawberry.field(description="The anime that continue its story.")
    async def sequels(self, info: Info, limit: Limit = DEFAULT_PAGE) -> list[Anime]:
        return await self._related(info, ("sequel",), "anime", limit)

    @strawberry.field(description="The anime that come before it in the story.")
    async def prequels(self, info: Info, limit: Limit = DEFAULT_PAGE) -> list[Anime]:
        return await self._related(info, ("prequel",), "anime", limit)

    @strawberry.field(description="Every related anime: sequels, prequels, side stories, spin-offs, other "
                                  "versions, summaries (the label is a link's relation).")
    async def related_anime(self, info: Info, limit: Limit = DEFAULT_PAGE) -> list[Anime]:
        return await self._related(info, ANIME_TO_ANIME, "anime", limit)

    @strawberry.field(description="Its episodes in order.")
    async def episodes(self, info: Info, limit: Limit = DEFAULT_PAGE) -> list[Episode]:
        return await self._related(info, ("has_episode",), "episode", limit)


@strawberry.type(description="A manga.")
class Manga(Entity):
    entity_type_name: ClassVar[str] = "manga"

    title: str
    title_native: str | None
    title_romaji: str | None
    aliases: list[str]
    year: int
    end_year: int | None
    volumes: int | None
    status: str = strawberry.field(description="finished or ongoing.")
    magazine: str | None
    genres: list[str]
    synopsis: str | None

    @strawberry.field(description="The franchise it belongs to.")
    async def franchise(self, info: Info) -> Franchise | None:
        found: Franchise | None = await self._one(info, "part_of", "franchise")
        return found

    @strawberry.field(description="Its authors (story, art: a link's detail).")
    async def authors(self, info: Info, limit: Limit = DEFAULT_PAGE) -> list[Person]:
        return await self._related(info, ("staff",), "person", limit)

    @strawberry.field(description="Its characters, the most popular first.")
    async def characters(self, info: Info, limit: Limit = DEFAULT_PAGE) -> list[Character]:
        return await self._related(info, ("features",), "character", limit)

    @strawberry.field(description="The anime adapted from it.")
    async def adaptations(self, info: Info, limit: Limit = DEFAULT_PAGE) -> list[Anime]:
        return await self._related(info, ("adapted_into",), "anime", limit)


@strawberry.type(description="A character.")
class Character(Entity):
    entity_type_name: ClassVar[str] = "character"

    name_native: str | None
    aliases: list[str]
    description: str | None

    @strawberry.field(description="The anime it appears in, the most popular first.")
    async def anime(self, info: Info, limit: Limit = DEFAULT_PAGE) -> list[Anime]:
        return await self._related(info, ("appears_in",), "anime", limit)

    @strawberry.field(description="The manga it appears in.")
    async def manga(self, info: Info, limit: Limit = DEFAULT_PAGE) -> list[Manga]:
        return await self._related(info, ("appears_in",), "manga", limit)

    @strawberry.field(description="Characters it is related to (family, ally, rival, ...: a link's relation).")
    async def related_characters(self, info: Info, limit: Limit = DEFAULT_PAGE) -> list[Character]:
        rels = [e.name for e in EDGE_TYPE_BY_NAME.values() if e.src == ("character",) and e.dst == ("character",)
                and e.derived_via is None]
        return await self._related(info, rels, "character", limit)


@strawberry.type(description="A person: a director, composer, author, ...")
class Person(Entity):
    entity_type_name: ClassVar[str] = "person"

    native_name: str | None
    aliases: list[str]

    @strawberry.field(description="The anime they are credited on.")
    async def anime(self, info: Info, limit: Limit = DEFAULT_PAGE) -> list[Anime]:
        return await self._related(info, ("worked_on",), "anime", limit)

    @strawberry.field(description="The manga they wrote or drew.")
    async def manga(self, info: Info, limit: Limit = DEFAULT_PAGE) -> list[Manga]:
        return await self._related(info, ("worked_on",), "manga", limit)


@strawberry.type(description="An animation studio.")
class Studio(Entity):
    entity_type_name: ClassVar[str] = "studio"

    founded: int | None

    @strawberry.field(description="The anime it animated, the most popular first.")
    async def anime(self, info: Info, limit: Limit = DEFAULT_PAGE) -> list[Anime]:
        return await self._related(info, ("animated",), "anime", limit)


@strawberry.type(description="A franchise: the anime and manga of one story world.")
class Franchise(Entity):
    entity_type_name: ClassVar[str] = "franchise"

    description: str | None

    @strawberry.field(description="Its anime, the most popular first.")
    async def anime(self, info: Info, limit: Limit = DEFAULT_PAGE) -> list[Anime]:
        return await self._related(info, ("includes",), "anime", limit)

    @strawberry.field(description="Its manga.")
    async def manga(self, info: Info, limit: Limit = DEFAULT_PAGE) -> list[Manga]:
        return await self._related(info, ("includes",), "manga", limit)


@strawberry.type(description="One episode of an anime.")
class Episode(Entity):
    entity_type_name: ClassVar[str] = "episode"

    title: str | None
    number: int
    season: int | None
    aired: dt.date | None

    @strawberry.field(description="The anime it belongs to.")
    async def anime(self, info: Info) -> Anime | None:
        found: Anime | None = await self._one(info, "episode_of", "anime")
        return found


ENTITY_CLASSES: dict[str, type[Entity]] = {
    c.entity_type_name: c for c in (Anime, Manga, Character, Person, Studio, Franchise, Episode)}


@strawberry.type(description="A reference to a catalog entity, with the entity itself when it exists.")
class EntityRef:
    entity_type: EntityType
    id: strawberry.ID

    @strawberry.field(description="The entity, or null when the catalog no longer has it.")
    async def entity(self, info: Info) -> Entity | None:
        return await entity_of(info, self.entity_type.value, str(self.id))
