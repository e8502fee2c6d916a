"""What a question asks, as a plan: the entities it names, the hops from them, what is read at the end."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from agentic_rag.protocol.links import LinkCandidate
from agentic_rag.protocol.vocabulary import EntityType
from agentic_rag.understanding.filters import Filter

Intent = Literal["relation", "compare", "chain", "attribute", "aggregate", "filter", "lookup"]
# What is read off the final entities: a catalog column, the first episode, or an aggregate.
Attr = Literal["year", "episode_count", "volumes", "magazine", "founded", "format", "status", "genres",
               "first_episode",
               "count_studio", "count_author", "count_franchise", "franchise_works", "count_characters",
               "sum_episodes", "sum_franchise", "sum_volumes", "count"]

ANY_TYPE: tuple[EntityType, ...] = ("character", "anime", "manga", "person", "studio", "franchise")
WORK: tuple[EntityType, ...] = ("anime", "manga")


@dataclass(frozen=True, slots=True)
class Hop:
    """One traversal from each entity of the previous level."""

    edges: tuple[str, ...]
    roles: tuple[str, ...] = ()  # keep neighbors whose edge qualifier is one of these (staff role, "main")
    kind: str = "neighbors"  # or "k_hop" for a whole chain (sequels in order)
    node_types: tuple[EntityType, ...] = ()
    first: bool = False  # keep only the earliest result ("the first TV season")
    last: bool = False  # keep only the latest result ("the last season")
    count: int = 0  # keep only the earliest this many ("the three Wit Studio seasons"); 0: all
    exclude_seen: bool = False  # drop entities already met on the way ("what *other* anime")
    include_start: bool = False  # keep the entities the hop starts from ("both seasons": the first and its sequels)


@dataclass(slots=True)
class Analysis:
    """What a question asks: the names to resolve, the hops to follow, what to read at the end."""

    intent: Intent
    mentions: list[str]
    types: dict[str, tuple[EntityType, ...]] = field(default_factory=dict)  # per mention, preferred first
    years: dict[str, int] = field(default_factory=dict)  # a year that picks one reading of a name
    # mention -> entity type -> the entity linking picked for that reading (its id and primary name)
    linked: dict[str, dict[str, LinkCandidate]] = field(default_factory=dict)
    fixed: set[str] = field(default_factory=set)  # mentions whose type the question's wording decides
    open: dict[str, tuple[EntityType, ...]] = field(default_factory=dict)  # ... or leaves to choose among
    hops: list[Hop] = field(default_factory=list)
    attr: Attr | None = None
    compare_field: str | None = None
    role: str | None = None  # a staff role an aggregate counts
    fmt: str | None = None  # a format an aggregate counts
    counted: EntityType = "anime"  # what a count over a franchise counts
    also: list[Attr] = field(default_factory=list)  # more values to read off the same rows
    episode: int = 1  # which episode a first_episode question means ("episode 19 title")
    filter: Filter | None = None
    together: bool = False  # every mention is a start ("s1 + s2 episodes combined"), not only the first
    more: list[Analysis] = field(default_factory=list)  # the plans of a question's other parts
    rank: tuple[str, str] | None = None  # (field, asc|desc): the extreme asked among a franchise's works
    period: tuple[int, int] | None = None  # the years the works a chain ends in must fall in ("... before 2010")
    finished: bool | None = None  # only the finished (or the running) works a sum adds up
    exclude: set[str] = field(default_factory=set)  # entity ids the question leaves out ("besides Goku")
    # nothing is named: the kinds of entry a description may mean, the one it says first ("the show where ...")
    described: tuple[EntityType, ...] = ()
    description: str = ""  # ... and its words, when the question says where they start ("the show where ...")


def staff_roles(word: str) -> tuple[str, ...]:
    """The staff roles a verb or noun names ("directed" -> director); empty: every credit."""
    w = word.lower()
    if "music" in w or "compos" in w or "scor" in w or "soundtrack" in w or w == "ost":
        return ("music",)
    if "design" in w:
        return ("character_design",)
    if "direct" in w:
        return ("director", "chief_director")
    if "screenplay" in w or "script" in w or "composition" in w:
        return ("series_composition",)
    if any(x in w for x in ("drew", "draw", "illustrat", "artist", "art")):
        return ("story_and_art", "art")
    if any(x in w for x in ("wrote", "writ", "author", "creat", "mangaka")):
        return ("original_creator", "story_and_art", "story")
    return ()
