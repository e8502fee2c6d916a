"""The named hops the passes build plans from, and what one name is asked (an :class:`_Ask`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from agentic_rag.protocol.reading import Attr, Hop
from agentic_rag.protocol.vocabulary import EntityType
from agentic_rag.understanding import cues as C
from agentic_rag.understanding.reading.words import _Words

SEQUEL, PREQUEL = Hop(("sequel",)), Hop(("prequel",))


SEQUEL_CHAIN = Hop(("sequel",), kind="k_hop")


STUDIO = Hop(("animated_by",))


SOURCE, ADAPTATIONS = Hop(("adapted_from",)), Hop(("adapted_into",), node_types=("anime",))


CAST = Hop(("features",), node_types=("character",))


MAIN_CAST = Hop(("features",), ("main",), node_types=("character",))


APPEARS = Hop(("appears_in",), node_types=("anime",))


APPEARS_MANGA = Hop(("appears_in",), node_types=("manga",))  # "which manga is Light in"


AUTHORS = Hop(("staff",), ("story_and_art", "story", "art", "original_creator"))


MENTORS = Hop(("student_of",))


STUDENTS = Hop(("mentor_of",))


PART_OF = Hop(("part_of",), node_types=("franchise",))


INCLUDES = Hop(("includes",), node_types=("anime",))  # a franchise's anime


FAMILY = Hop(("family", "romantic"))


STUDIO_WORKS = Hop(("animated",), node_types=("anime",))


_ANSWER: dict[str, EntityType] = {"anime": "anime", "show": "anime", "shows": "anime", "series": "anime",
                                  "movie": "anime", "film": "anime", "manga": "manga", "studio": "studio"}


_FORMATS = {"movies": "movie", "films": "movie", "movie": "movie", "film": "movie", "ovas": "ova", "ova": "ova",
            "specials": "special", "special": "special", "tv": "tv"}


@dataclass(slots=True)
class _Ask:
    hops: list[Hop]
    attr: Attr | None = None
    role: str | None = None
    fmt: str | None = None
    domain: tuple[EntityType, ...] = ()  # the type the first hop (or the attribute) starts from
    counted: EntityType = "anime"  # what a franchise count counts
    also: list[Attr] = field(default_factory=list)  # more values read off the same rows
    episode: int = 1
    rank: tuple[str, str] | None = None  # the extreme asked among a franchise's works
    finished: bool | None = None  # only the finished (or the running) works a sum adds up


def _answer_type(w: _Words) -> EntityType | None:
    return _ANSWER.get(m.group("w")) if (m := C.ANSWER_TYPE.search(w.text)) else None
