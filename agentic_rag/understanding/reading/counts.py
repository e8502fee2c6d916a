"""Sums, counts and rankings: "how many ..." over one name, and one sum over several named works."""

from __future__ import annotations

import re

from agentic_rag.protocol.reading import Analysis, Hop
from agentic_rag.protocol.vocabulary import EntityType
from agentic_rag.understanding import cues as C
from agentic_rag.understanding.reading.focus import _Question
from agentic_rag.understanding.reading.hops import _FORMATS, _Ask
from agentic_rag.understanding.reading.names import _add
from agentic_rag.understanding.reading.relations import _staff
from agentic_rag.understanding.reading.words import _Words

MIN_YEAR, MAX_YEAR = 1900, 2100  # the widest period a list of works is asked within
MAX_TOGETHER = 12  # works one sum adds up


def _count(w: _Words, anchor_types: set[EntityType]) -> _Ask | None:
    """"How many ..." questions over one named entity."""
    if w.any(C.EPISODES):
        # a sum of several works ("all the seasons", "combined"); "total episodes of X" is X's own count
        # ("series" alone is one: "the total episode count of the Dragon Ball Z TV series")
        several = C.ALL_SEASONS.search(w.text) or C.SEASON_COUNT.search(w.text) or w.set & {
            "seasons", "entries", "arcs", "parts", "cours", "together", "combined", "altogether", "added"}
        said = next((_FORMATS[x] for x in (*w.keys, *w.typed) if x in _FORMATS), None)
        every = w.set & {"ovas", "movies", "films", "specials", "all", "every", "combined", "altogether", "together",
                         "sum", "added", "adding"} or w.has(*C.IN_TOTAL_PHRASES)
        if every and said and said != "tv" and not C.SEASON_COUNT.search(w.text):
            # "the hxh ovas combined": every work of that format in the franchise. (TV series are summed along
            # the sequel chain: a franchise's TV works include its spin-offs, which "all of Naruto" leaves out.)
            return _Ask([], "sum_franchise", fmt=said, domain=("franchise",))
        if (w.any(C.TOTAL) or _summing(w)) and (several or (every and said)):
            # seasons are TV series: "all the seasons" leaves the films out
            tv = said == "tv" or w.set & {"tv", "seasons", "season", "series", "without", "excluding"}
            fmt = "tv" if tv else None
            return _Ask([Hop(("sequel",), kind="k_hop", include_start=True, count=_season_count(w))], "sum_episodes",
                        fmt=fmt, domain=("anime",))
        return _Ask([], "episode_count", domain=("anime",))
    if w.any(C.VOLUMES):
        if (w.any(C.TOTAL) or _summing(w)) and "person" in anchor_types and not anchor_types & {"manga", "franchise"}:
            # "all of Gege Akutami's manga, how many volumes in total": the sum over the person's manga
            done = True if w.any(C.ENDED) or w.set & {"completed", "complete"} else False if w.set & {
                "ongoing", "running", "unfinished"} else None
            return _Ask([], "sum_volumes", domain=("person",), finished=done)
        return _Ask([], "volumes", domain=("manga",))
    if "seasons" in w.set and "anime" in anchor_types:  # "how many seasons does X have": X and its sequels
        return _Ask([Hop(("sequel",), kind="k_hop", include_start=True, node_types=("anime",))], "count",
                    domain=("anime",))
    if "characters" in w.set:
        return _Ask([], "count_characters", domain=("anime", "manga"))
    # the format counted ("how many Naruto movies"), not one let in ("movies included")
    fmt = None if w.set & {"included", "including", "incl"} else next(
        (_FORMATS[x] for x in w.keys if x in _FORMATS and x != "tv"), None)
    if ("person" in anchor_types and not {"studio", "franchise"} & anchor_types - {"person"}) or w.any(
            C.DIRECT | C.MUSIC | C.SCRIPT | C.WRITE | C.DRAW):
        staff = _staff(w)
        if staff is not None and staff.roles and staff.roles[0] in ("director", "music", "character_design",
                                                                      "series_composition"):
            return _Ask([Hop(("worked_on",), staff.roles, node_types=("anime",))], "count", role=staff.roles[0],
                        domain=("person",))
        if "person" in anchor_types and "manga" not in w.set and w.set & {"anime", "shows", "series", "show"}:
            # "how many anime is X credited on": every credit, whatever the role
            return _Ask([Hop(("worked_on",), node_types=("anime",))], "count", domain=("person",))
        if "person" in anchor_types:
            return _Ask([], "count_author", domain=("person",))
    if "studio" in anchor_types and (w.any(C.STUDIO | C.MADE | C.WORKS) or not fmt):
        return _Ask([], "count_studio", domain=("studio",))
    if "franchise" in anchor_types or "franchise" in w.set or fmt:
        return _Ask([], "count_franchise", fmt=fmt, domain=("franchise",),
                    counted="manga" if "manga" in w.set else "anime")
    return None


def _season_count(w: _Words) -> int:
    """How many seasons a sum names ("the three wit studio aot seasons": the first three); 0: all."""
    n = C.SEASON_COUNT.search(w.text)
    if n is None:
        return 0
    return int(n.group("n")) if n.group("n").isdigit() else C.NUMBERS.get(n.group("n"), 0)


def _summing(w: _Words) -> bool:
    return w.any(C.SUM) or w.has(*C.SUM_PHRASES)


_RANGE_WORDS = re.compile(r"\b(?:through|thru|until|till)\b|^\W*(?:to\b|[-–—]+\s*$)", re.IGNORECASE)


def _together(q: _Question) -> Analysis | None:
    """Several works named in one sum ("naruto and shippuden, how many episodes together")."""
    question, w, tokens, mentions = q.text, q.w, q.tokens, q.mentions
    works = [m for m in mentions if "anime" in {c.entity.entity_type for c in m.candidates}]
    if len(works) >= 2 and w.any(C.EPISODES) and (w.any(C.TOTAL) or _summing(w) or "+" in question or w.set & {
            "plus"}) and \
            (not C.ALL_SEASONS.search(w.text) or w.set & {"both", "two"}):
        # ("all the X seasons, counting Y": the chain, Y is in it; "the two series together": the two)
        # "s1 + s2 episodes combined", "naruto and shippuden, how many episodes together": one sum
        if len(works) == 2 and _RANGE_WORDS.search(question[works[0].end:works[1].start]):
            # "from season 1 through the Final Season": the run between them, along the sequel chain
            last = next((c.year for c in works[1].candidates if c.entity.entity_type == "anime"), None)
            a = Analysis(intent="aggregate", mentions=[], attr="sum_episodes", fmt="tv",
                         hops=[Hop(("sequel",), kind="k_hop", include_start=True)],
                         period=(MIN_YEAR, last) if last else None)  # up to the second one
            _add(a, tokens, works[0], "anime", fixed=True)
            return a
        a = Analysis(intent="aggregate", mentions=[], attr="sum_episodes", together=True)
        for m in works[:MAX_TOGETHER]:
            _add(a, tokens, m, "anime", fixed=True)
        return a
    books = [m for m in mentions if "manga" in {c.entity.entity_type for c in m.candidates}]
    if len(books) >= 2 and w.any(C.VOLUMES) and (w.any(C.TOTAL) or _summing(w) or "+" in question or w.set & {
            "plus"}):
        # "the main manga plus the No Regrets spin-off, how many volumes altogether": one sum
        a = Analysis(intent="aggregate", mentions=[], attr="sum_volumes", together=True)
        for m in books[:MAX_TOGETHER]:
            _add(a, tokens, m, "manga", fixed=True)
        return a
    return None
