"""What the reader makes of a question: the names to resolve, the hops to follow, what is read at the end.

:class:`Analysis` is computed once per run (``agentic_rag.understanding.reading.read``, where the question is
linked) and handed to every role in its typed input (``protocol/roles.py``), so no role reads the question again.
Plain dataclasses: the reader builds one up pass by pass; pydantic validates and serializes them where a role
input crosses a handle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from agentic_rag.protocol.links import LinkCandidate
from agentic_rag.protocol.vocabulary import EntityType

FilterKind = Literal["list", "top"]


@dataclass(slots=True)
class Filter:
    """A catalog-wide question: which entity type, the conditions read from the wording, the facets to match."""

    entity_type: str
    kind: FilterKind = "list"
    where: list[dict[str, Any]] = field(default_factory=list)
    words: str = ""  # the wording left for facet values (studio, magazine, genre names)
    group_by: str | None = None
    count: bool = False  # "how many anime came out in 2022": the number of matches, not the list
    rank: tuple[str, str] | None = None  # (field, asc|desc): "which has the most episodes", "the oldest studio"
    shown: tuple[str, ...] = ()  # counts to say beside each match ("... along with their volume counts")
    total: str | None = None  # the field summed over the matches ("total episodes of Madhouse's TV series")


@dataclass(slots=True)
class Recommend:
    """A request for works like the examples (the reading's resolved names, or where its hops lead): what to
    recommend, the wish in words, the facts the picks must have, how many."""

    entity_type: Literal["anime", "manga"] = "anime"
    wish: str = ""  # searched by meaning beside the examples ("dark psychological")
    year_min: int | None = None
    year_max: int | None = None
    formats: tuple[str, ...] = ()  # anime formats to keep ("a movie": movie; "not a movie": the others)
    finished: bool | None = None
    short: bool = False  # "something short": a dozen episodes, ten volumes
    long: bool = False  # "a really long show", "hundreds of episodes": fifty episodes, thirty volumes or more
    most: int | None = None  # "under 30 episodes": at most this many episodes (anime) or volumes (manga)
    least: int | None = None  # "over 100 episodes": at least this many
    limit: int = 5
    lacking: str | None = None  # a type asked for that the catalog does not hold ("light novels")


Intent = Literal["relation", "compare", "chain", "attribute", "aggregate", "filter", "lookup", "recommend",
                 "among"]
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
class Among:
    """A choice among names the question lists ("which of these is NOT in X: A, B or C?"): a predicate tested for
    each, and whether the answer is those it holds for or those it fails for (a set difference).

    The predicate is one of three: ``hop`` reaches ``target`` from the candidate ("in X", "made by X"); ``hop`` reaches
    anything, no target ("anyone's teacher"); or, no hop, the candidate's record says every ``group`` word (a group
    the catalog has no entry for: "a hashira", "straw hats")."""

    candidates: list[str]  # the listed names that linked (keys of Analysis.types), in the question's order
    negated: bool  # "not", "isn't", "never": the answer is the candidates the predicate does not hold for
    target: str | None = None  # the mention the predicate relates each candidate to
    hop: Hop | None = None  # the edges followed from each candidate
    group: tuple[str, ...] = ()  # the group's words a record must say, folded ("league", "villains")
    # or, no hop, a value of the candidate's own record: (field, op, value), op "eq", "lt", "lte", "gt", "gte" or
    # "names" (the field's value is spelled in the value's words): ("status", "eq", "finished"), ("year", "lt", 2010),
    # ("magazine", "names", "serialized in weekly shonen jump")
    value: tuple[str, str, str | int] | None = None
    said: str = ""  # the predicate's words as typed ("a hashira", "in the league of villains")
    unlisted: list[str] = field(default_factory=list)  # listed names the catalog does not have, as typed
    # a listed name with several strong readings of the list's type ("annie"): their entity ids, best linked first;
    # the one sharing works with the other names is meant, so it is no clarification
    readings: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(slots=True)
class Analysis:
    """What a question asks: the names to resolve, the hops to follow, what to read at the end."""

    intent: Intent
    mentions: list[str]
    types: dict[str, tuple[EntityType, ...]] = field(default_factory=dict)  # per mention, preferred first
    years: dict[str, int] = field(default_factory=dict)  # a year that picks one reading of a name
    picked: set[str] = field(default_factory=set)  # names whose one reading the message's other names pick ("ed")
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
    # the reading reached a name no cue word says anything about, where it reads what is asked by meaning
    # (``EntityLinks.asks``): only then does linking embed the question (nine runs in ten it does not)
    by_meaning: bool = False
    recommend: Recommend | None = None  # works like the resolved names are asked for, not facts about them
    # an explanation is asked ("why is Al's soul in armour?", "how are Eren and Zeke related exactly?"): the asking
    # words, which the answer's quoted sentences (of the records' descriptions) are chosen by, nearest in meaning;
    # empty: none is asked
    explain: str = ""
    # the results of this reading less those of ``more[0]`` are the answer ("which demon slayer anime is zenitsu
    # missing from": the franchise's anime, less his)
    minus: bool = False
    # words asked of whom the hops reach that the catalog holds only in descriptions ("who is luffy's dad and what
    # does he do"): the reached records' sentences nearest them are quoted
    describe: str = ""
    among: Among | None = None  # a choice among listed names by a predicate ("which of these is not in X: ...")
    # a group the catalog has no entry for, whose members are asked among one work's characters ("who are the hashira
    # in demon slayer"): its words as typed; a member's own record says them
    members: str = ""
    # what is asked that the catalog records of nothing ("who voices levi": voice actors), said as not recorded
    unrecorded: str = ""
    # a message of several questions (:mod:`agentic_rag.understanding.reading.parts`): how many it asks, when more
    # than are read, (read, asked): "Answered the first 4 of 40 questions"; None: every one is read
    parts: tuple[int, int] | None = None
    unread: list[str] = field(default_factory=list)  # parts no pass reads anything of, as typed: said, not dropped
