"""Filters: conditions on the whole catalog ("Madhouse anime before 2010"), a chain that starts from entities
described by their fields, and a work described by what happens in it."""

from __future__ import annotations

import re

from agentic_rag.protocol import EntityLinks, LinkedMention
from agentic_rag.protocol.reading import Analysis, Filter
from agentic_rag.protocol.vocabulary import EntityType
from agentic_rag.understanding import cues as C
from agentic_rag.understanding.filters import lists, parse_filter, status_of
from agentic_rag.understanding.linker import STOP
from agentic_rag.understanding.reading.ask import _ask
from agentic_rag.understanding.reading.coerce import _coerce, _fits_type
from agentic_rag.understanding.reading.counts import MAX_YEAR, MIN_YEAR
from agentic_rag.understanding.reading.focus import _Question
from agentic_rag.understanding.reading.hops import STUDIO, STUDIO_WORKS
from agentic_rag.understanding.reading.words import _rest
from agentic_rag.understanding.text import (
    tokenize,
)
from agentic_rag.understanding.unknown import SCOPE_BEFORE

_CHATTER = re.compile(r"^.*?\b(?=(?:which|what|list|name|show me|give me|find|any)\b)", re.IGNORECASE)


# A work or a character named by what happens in it: from the noun to the clause's end is the description
# (the search by meaning and by the synopsis's words reads it), the rest asks ("who animated ...").
_DESCRIPTION = re.compile(
    r"(?:^\s*|\b(?:the|a|an|that|this|some|one)\s+)(?:\w+\s+)?(?P<noun>anime|shows?|series|manga|comics?|movies?|"
    r"films?|one|guy|girl|boy|kid|man|woman|dude|character)\s+(?:where|about|with|in which|that|which|who|whose|"
    r"when|set in|featuring)\b"
    r"(?:(?!,\s*(?:and\s+|but\s+)?(?:who|whom|what|when|which|how|where|is|was|did|does|do)\b)[^?;!])*",
    re.IGNORECASE)


# ... where "that ran in V Jump" may be a list by a field's value, "about", "where" say what happens in it
_STORY = re.compile(r"\b(?:where|about|in which|set in|featuring)\b", re.IGNORECASE)


_DESCRIBED_KINDS: dict[str, tuple[EntityType, ...]] = {
    **dict.fromkeys(("anime", "show", "series", "movie", "film"), ("anime", "manga", "character")),
    **dict.fromkeys(("manga", "comic"), ("manga", "anime", "character")),
    **dict.fromkeys(("guy", "girl", "boy", "kid", "man", "woman", "dude", "character"),
                    ("character", "anime", "manga")),
}


DESCRIBED_ANY: tuple[EntityType, ...] = ("anime", "manga", "character")


def _described(question: str) -> Analysis:
    """A question that names nothing: what it asks of the entry its description means, if it says."""
    a = Analysis(intent="lookup", mentions=[], described=DESCRIBED_ANY)
    m = _DESCRIPTION.search(question)
    if m is None:
        return a
    noun, a.description = m.group("noun").lower(), " ".join(m.group().split())
    a.described = _DESCRIBED_KINDS.get(noun) or _DESCRIBED_KINDS.get(noun[:-1], DESCRIBED_ANY)
    asked = question[:m.start()] + " " * (m.end() - m.start()) + question[m.end():]
    ask = _ask(_rest(asked, tokenize(asked), []), {a.described[0]})
    if ask is None or not _fits_type(a.described[0], ask.domain):
        return a
    a.hops, a.attr, a.also = _coerce(a.described[0], ask), ask.attr, ask.also
    a.intent = "aggregate" if ask.attr and ask.attr.startswith(("count", "sum")) else \
        "attribute" if ask.attr and not a.hops else "chain"
    return a


# a description that picks entities by their fields, inside a question that asks something of them
_DESCRIBED = re.compile(
    r"\b(?:the|a|an)\s+(?:only\s+)?(?P<noun>manga|anime|studios?|tv series|series|shows?|films?|movies?)\s+"
    r"(?:(?:that|which)\s+)?(?:(?:was|were|is|are|got|has been|have been)\s+)?"
    r"(?P<verb>serialized|serialised|published|ran|running|founded|established|set up|aired|released|premiered)\b"
    r"(?P<rest>[^,?;!]*)", re.IGNORECASE)


def _filtered_chain(question: str) -> Analysis | None:
    """A chain that starts from entities described by their fields, not named: "who composed the music for
    the anime adapted from the manga serialized in Ura Sunday" starts from the manga a filter finds."""
    m = _DESCRIBED.search(question)
    if m is None:
        return None
    noun = m.group("noun").lower()
    noun = {"studio": "studios", "show": "shows", "film": "films", "movie": "movies"}.get(noun, noun)
    f = parse_filter(f"which {noun} {m.group('verb')}{m.group('rest')}")
    if f is None or not (f.where or f.words) or f.count or f.rank is not None:
        return None
    rest = question[:m.start()] + " " * (m.end() - m.start()) + question[m.end():]
    tokens = tokenize(rest)
    w = _rest(rest, tokens, [])
    et: EntityType = "studio" if f.entity_type == "studio" else "manga" if f.entity_type == "manga" else "anime"
    if et == "studio" and w.any(C.MADE | C.STUDIO | C.ADAPTATION) and w.any(C.WORKS):
        # "the music of the anime made by the studio founded in 2000": on from the studio's works
        ask = _ask(w, {"anime"})
        if ask is None or not ask.hops or ask.hops[0] == STUDIO:
            return None
        a = Analysis(intent="chain", mentions=[], filter=f, attr=ask.attr, also=ask.also, role=ask.role)
        a.hops = [STUDIO_WORKS, *_coerce("anime", ask)]
        return a
    ask = _ask(w, {et})
    if ask is None or not (ask.hops or ask.attr) or not _fits_type(et, ask.domain):
        return None
    a = Analysis(intent="chain", mentions=[], filter=f, attr=ask.attr, also=ask.also, role=ask.role)
    a.hops = _coerce(et, ask)
    return a


def _period(question: str, qualifiers: set[int]) -> tuple[int, int] | None:
    """The years a list of works is asked within ("before 2010", "in the 2000s"), less a year that picks a
    name ("the 2011 one")."""
    f = parse_filter(f"anime {' '.join(question.split())}")
    lo, hi = MIN_YEAR, MAX_YEAR
    for c in f.where if f else []:
        if c["field"] != "year" or c["value"] in qualifiers:
            continue
        y = int(c["value"])
        lo = max(lo, y + 1 if c["op"] == "gt" else y if c["op"] in ("gte", "eq") else lo)
        hi = min(hi, y - 1 if c["op"] == "lt" else y if c["op"] in ("lte", "eq") else hi)
    return (lo, hi) if (lo, hi) != (MIN_YEAR, MAX_YEAR) else None


_STUDIO_MADE = re.compile(r"\b(?:make|made|makes|animate|animated|animates|produce|produced|done|release|released)\b",
                          re.IGNORECASE)


def _filter(question: str, mentions: list[LinkedMention]) -> Filter | None:
    """A catalog-wide filter, when the question names no work or character to be about."""
    if any({c.entity.entity_type for c in m.candidates} & {"anime", "manga", "character"} and
           not {c.entity.entity_type for c in m.candidates} & {"studio", "person"} for m in mentions):
        return None
    # a studio or person named with a typo or an alias is matched to facet values by its catalog name
    for m in sorted(mentions, key=lambda m: -m.start):
        top = m.candidates[0]
        if top.entity.entity_type in ("studio", "person") and top.match != "exact":
            question = question[:m.start] + top.name + question[m.end:]
    q = " ".join(question.split()).rstrip("?.! ")
    found = parse_filter(q)
    if found is None or not found.where:  # chatter before the question: read it from its head word on
        found = parse_filter(_CHATTER.sub("", q, count=1)) or found
    if found is None and not mentions and (status := status_of(q)) in ("airing", "ongoing"):
        # "what's still airing": airing is said of anime, ongoing of manga
        found = parse_filter(f"{'anime' if status == 'airing' else 'manga'} {q}")
    if (found is None or not found.where) and any(m.candidates[0].entity.entity_type == "studio" for m in mentions) \
            and _STUDIO_MADE.search(q) and not C.FOUNDED & set(q.lower().split()):
        # "what did MAPPA make after 2020": a studio's works are anime, under the same conditions
        works = parse_filter(f"anime {q}")
        found = works if works is not None and works.where else found
    return found


# the fields a filter reads from no name ("finished", "before 2010"); with none, its words may still be a value the
# search resolves ("Akutamj Gege - how many manga?": the author, typed wrong)
_NAMELESS = frozenset(("status", "year", "end_year", "format", "episode_count", "volumes", "genres", "popularity"))


def _catalog(q: _Question) -> tuple[Analysis | None, Filter | None]:
    """Conditions on the whole catalog, or a work described and not named: the reading, or the filter
    a name's reading falls back to."""
    question, whole, w, mentions = q.text, q.whole, q.w, q.mentions
    linked, asked = q.linked, q.asked
    # "how many episodes did <a title we lack> run for" counts a work's episodes, never the catalog's works
    if not mentions and (chained := _filtered_chain(question)) is not None:
        return chained, None  # "the studio of the anime adapted from the manga serialized in Ura Sunday"
    f = _filter(question, mentions)
    if not linked and whole != question and (f is None or not f.where):
        # "a movie night with anime films from 2013. Which ones came out that year?": the conditions are
        # said before the question that asks for them
        told = _filter(whole, [])
        # ... or the question is a list that only points back at them ("... ran in Jump+. Which manga ran there?")
        if told is not None and (told.where or (told.words and (f is None or not f.words) and any(
                lists(question[a:b]) for a, b in asked))):
            f = told
    if f is not None and C.HOW_MANY_OF_A_WORK.search(w.text) and not any(
            c["field"] in ("episode_count", "volumes") for c in f.where):
        f = None  # unless the list is by that count too ("which series have 50+ episodes, and how many each")
    if f is not None:
        # "how many anime ...", not "..., and how many episodes does each have"
        f.count = bool(C.HOW_MANY.search(C.HOW_MANY_OF_A_WORK.sub(" ", w.text)))
        # "... along with their volume counts": each match's count said beside it
        f.shown = tuple(x for x, cue in (("episode_count", C.EPISODES), ("volumes", C.VOLUMES)) if w.any(cue))
        summed = {"anime": "episode_count", "manga": "volumes"}.get(f.entity_type)
        if summed in f.shown and (w.any(C.SUM) or w.has(*C.ADD_UP_PHRASES)) and not any(
                c["field"] == summed for c in f.where):
            f.total, f.count = summed, False  # "total eps across all the madhouse tv series": one sum
    if f is not None and not mentions and f.words and f.where and q.links is not None and all(
            c["field"] in _NAMELESS for c in f.where) and any(
            set(n.lower().split()) <= set(f.words.lower().split()) for n in q.links.unknown or ()):
        return None, None  # "is the berserk manga finished": asked of a name the catalog lacks, not of its works
    if f is not None and f.where:  # conditions on the whole catalog ("Madhouse anime before 2010")
        return Analysis(intent="aggregate" if f.count or f.total else "filter", mentions=[], filter=f), f
    if not mentions and (f is None or (f.rank is None and not f.count and (d := _DESCRIPTION.search(question)) and
                                       _STORY.search(d.group()))):
        return _described(question), f  # "who animated the show where a student finds a notebook that kills"
    return None, f


# "who gave luffy the straw hat", "who took Jet Black's arm", "who is L's handler": a character asked for by what its
# own record says of it and of the name the question gives (its description, or the detail of a relation told of it),
# in words no cue reads
_WHO = re.compile(r"\bwho(?:m|se)?\b", re.IGNORECASE)
FILLER = frozenset(("exactly", "actually", "really", "like", "again", "anyway", "tho", "though", "just", "even",
                     "ever", "also", "lol", "pls", "please", "now", "then", "there", "here"))
# words of their own (besides the name) a question needs to describe someone: one is enough to search, since the
# search then asks the record it picks to share the name too and to stand out (planners/heuristic/progress.py)
DESCRIBED_WORDS = 1
IN_WORK_WORDS = 2  # ... and beside only the work it is set in
_WHO_ALONE = re.compile(r"\bwho(?:'s|’s)?(?![\w'’])", re.IGNORECASE)  # "who", not "whose pov is it told from"
_PEOPLE: frozenset[EntityType] = frozenset(("character", "person"))
_WORKS: frozenset[EntityType] = frozenset(("anime", "manga", "franchise"))


def asks_who(question: str) -> bool:
    """Whether ``question`` asks who (the cheap test before :func:`described_beside`'s reading)."""
    return _WHO.search(question) is not None


def described_beside(question: str, a: Analysis, links: EntityLinks | None) -> bool:
    """Whether ``question`` asks who is described beside the one name it gives ("who gave luffy the straw hat"), or
    in the one work it names ("who's the captain of the 6th division in bleach"):
    a "who" question with words of its own that no cue reads, read (``a``, without what the encoder's nearest
    question asks) as no more than that name's lookup: no relation, value or list asked. A work it is set in ("who is
    L's handler in death note") is no second name. The record those words pick out answers it, when it is not the
    name's own."""
    if links is None or a.filter is not None or a.recommend is not None or a.explain or a.among is not None or \
            a.more or a.described or not a.mentions:
        return False
    if a.intent != "lookup" or a.hops or a.attr is not None:
        return False
    people = [m for m in a.mentions if {c.entity.entity_type for c in a.linked.get(m, {}).values()} & _PEOPLE]
    if len(people) > 1 or not asks_who(question) or any(
            m not in people and not {c.entity.entity_type for c in a.linked.get(m, {}).values()} <= _WORKS
            for m in a.mentions):
        return False
    if not people and not _WHO_ALONE.search(question):
        return False  # (a work's own record tells whose story it is: "whose pov is the first special told from")
    named = [(m.start, m.end) for m in links.mentions]
    own = [t.key for t in tokenize(question) if not any(s <= t.start < e for s, e in named)
           and t.key.isalpha() and len(t.key) > 2 and t.key not in STOP and t.key not in C.CUES
           and t.key not in FILLER]
    # one of a work's characters, described by words alone ("who's the captain of the 6th division in bleach"):
    # two words of its own at least, as a description that names nobody needs
    return len(own) >= (DESCRIBED_WORDS if people else IN_WORK_WORDS)


def beside_words(question: str, links: EntityLinks) -> str:
    """``question`` less the works it is set in ("... in death note": names of no person or character, with the
    word that sets them), for the search that picks who is described beside the name it gives."""
    for m in sorted(links.mentions, key=lambda m: -m.start):
        if m.candidates and not {c.entity.entity_type for c in m.candidates} & _PEOPLE:
            before, after = question[:m.start], question[m.end:]
            setting = SCOPE_BEFORE.search(before)
            question = (before[:setting.start()] if setting else before) + after
    return " ".join(question.split())
