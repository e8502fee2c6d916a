"""Reading a question: the linked names, plus what the words around them ask for, become a plan.

No whole-question templates. The names come from :mod:`~agentic_rag.understanding.linker`; what is
asked comes from cue words anywhere in the rest of the question (:mod:`~agentic_rag.understanding.cues`);
hops compose by entity type: a relation that starts from an anime, asked of a character, first
follows the character to the anime it appears in ("the studio of Luffy's show"), and a relation
that starts from a manga, asked of an anime, first follows the anime to its source.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import itertools
import re
from dataclasses import dataclass, field
from typing import Literal

from agentic_rag.protocol import EntityLinks, LinkCandidate, LinkedMention
from agentic_rag.protocol.reading import ANY_TYPE, Analysis, Attr, Filter, Hop
from agentic_rag.protocol.roles import RoleInput
from agentic_rag.protocol.vocabulary import EntityType, hop_domain, hop_range
from agentic_rag.understanding import cues as C
from agentic_rag.understanding.asks import confident
from agentic_rag.understanding.cues import staff_roles
from agentic_rag.understanding.filters import lists, parse_filter, status_of, superlative
from agentic_rag.understanding.text import (
    ELLIPTIC_WORDS,
    Token,
    asking,
    english_words,
    focus,
    one_edit,
    questioning,
    referent,
    tokenize,
)

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
FAMILY = Hop(("family", "romantic"))
STUDIO_WORKS = Hop(("animated",), node_types=("anime",))

# What a hop starts from and leads to is the vocabulary's (hop_domain, hop_range); what an attribute is read off:
_ATTR_DOMAIN: dict[str, EntityType] = {
    "episode_count": "anime", "format": "anime", "first_episode": "anime", "genres": "anime", "volumes": "manga",
    "magazine": "manga",
    "founded": "studio", "count_characters": "anime", "sum_episodes": "anime", "count_studio": "studio",
    "count_author": "person", "count_franchise": "franchise", "franchise_works": "franchise", "count": "person",
    "sum_franchise": "franchise", "sum_volumes": "manga",
}
# From a type to the type a hop needs: the hop that gets there.
_COERCE: dict[tuple[EntityType, EntityType], Hop] = {
    ("character", "anime"): APPEARS, ("anime", "manga"): SOURCE, ("manga", "anime"): ADAPTATIONS,
    ("anime", "character"): MAIN_CAST, ("anime", "franchise"): PART_OF, ("manga", "franchise"): PART_OF,
    ("person", "manga"): Hop(("worked_on",), AUTHORS.roles, node_types=("manga",)),  # "X's manga"
}
_ANSWER: dict[str, EntityType] = {"anime": "anime", "show": "anime", "shows": "anime", "series": "anime",
                                  "movie": "anime", "film": "anime", "manga": "manga", "studio": "studio"}
_YEAR = re.compile(r"^(?:19|20)\d\d$")
MAX_TOGETHER = 12  # works one sum adds up
MAX_MORE = 3  # readings one question adds (credits asked together)
MAX_COMPARED = 6  # works one comparison ranks
YEARS_AFTER = 10  # words after a name two years may follow in, to tell two of its works apart
MIN_YEAR, MAX_YEAR = 1900, 2100  # the widest period a list of works is asked within
# The cue words an exemplar label stands for ("describe" asks for no relation: a lookup).
HINT_CUES: dict[str, tuple[str, ...]] = {
    "studio": ("studio",), "director": ("directed",), "music": ("music",), "author": ("wrote",),
    "cast": ("characters",), "appears": ("anime", "appears"), "sequel": ("sequel",), "prequel": ("prequel",),
    "source": ("manga", "based"), "adaptation": ("anime", "adaptation"), "year": ("year",),
    "episodes": ("episodes",), "volumes": ("volumes",), "founded": ("founded",), "family": ("family",),
    "mentor": ("mentor",), "rival": ("rival",),
}
_ROW_ATTRS: frozenset[str] = frozenset({"year", "episode_count", "volumes", "magazine", "founded", "format", "status",
                                        "genres"})
_FORMATS = {"movies": "movie", "films": "movie", "movie": "movie", "film": "movie", "ovas": "ova", "ova": "ova",
            "specials": "special", "special": "special", "tv": "tv"}
_CHATTER = re.compile(r"^.*?\b(?=(?:which|what|list|name|show me|give me|find|any)\b)", re.IGNORECASE)


@dataclass(slots=True)
class _Words:
    """The question's words outside the linked names."""

    keys: list[str]
    set: frozenset[str]
    text: str  # " w1 w2 ... " for phrase tests
    typed: frozenset[str] = frozenset()  # the type words that qualify a name ("mha tv", "hxh ovas")

    def has(self, *phrases: str) -> bool:
        return any(f" {p} " in self.text for p in phrases)

    def any(self, family: frozenset[str]) -> bool:
        return bool(self.set & family)

    def without(self, word: str) -> _Words:
        """These words less one ("son" once the son is a hop of its own)."""
        keys = [k for k in self.keys if k not in (word, f"{word}s")]
        return _Words(keys, frozenset(keys), " " + " ".join(keys) + " ", self.typed)

    def plus(self, cues: tuple[str, ...]) -> _Words:
        """These words with cue words added (what the sentence encoder read where no cue word stood)."""
        return _Words([*self.keys, *cues], self.set | frozenset(cues), self.text + " ".join(cues) + " ", self.typed)


@functools.cache
def _cue_typo(word: str) -> str:
    """A cue word typed with one letter wrong ("befor", "sequal", "episdes"): the cue word; any word English or
    the question's own vocabulary knows stays as typed."""
    if len(word) < MIN_CUE_TYPO or word in C.CUES or word in english_words() or word.isdigit():
        return word
    near = [c for c in _TYPO_CUES if abs(len(c) - len(word)) <= 1 and one_edit(word, c)]
    return near[0] if len(near) == 1 else word


MIN_CUE_TYPO = 5  # letters a word needs before it is read as a misspelt cue word
_TYPO_CUES = sorted(c for c in C.CUES if len(c) >= MIN_CUE_TYPO - 1)
# "the series composer", not "the tv series composer"
_SERIES_COMPOSER = re.compile(r"(?<!\btv )(?<!\btv-)\bseries composers?\b", re.IGNORECASE)


def _rest(question: str, tokens: list[Token], mentions: list[LinkedMention]) -> _Words:
    """The words no name covers, less the type words that qualify a name ("mappa (the studio)")."""
    qualifiers = {_qualifier(tokens, m)[1] for m in mentions}
    inside = [any(m.start <= t.start < m.end for m in mentions) or t.start in qualifiers for t in tokens]
    keys = [_cue_typo(t.key) for t, skip in zip(tokens, inside, strict=True) if not skip]
    text = " " + " ".join(keys) + " "
    for phrase, cue in C.PHRASES:
        text = text.replace(f" {phrase} ", f" {cue} " if cue else " ")
    if _SERIES_COMPOSER.search(question):  # the script's author, even where "series" also qualifies the name
        text = text.replace(" composers ", " composition ").replace(" composer ", " composition ")
    # "made before 2010": a time, not the work before it
    text = re.sub(r" (?:before|after|since|until) (?=(?:19|20)\d\d )", " ", text)
    if any(arrow in question for arrow in ("->", "→", "=>")):  # "aot final season part 2 -> ?": what comes next
        text += "sequel "
    if re.search(r"#\s*of\b", question):  # "# of characters"
        text += "number of "
    keys = text.split()
    # a cue word counts in the plural too ("senseis", "rivals")
    found = set(keys) | {k[:-1] for k in keys if len(k) > 3 and k.endswith("s")}
    typed = frozenset(t.key for t in tokens if t.start in qualifiers)
    return _Words(keys, frozenset(found), " " + " ".join(keys) + " ", typed)


def _qualifier(tokens: list[Token], m: LinkedMention) -> tuple[EntityType | None, int]:
    """The type a word right next to the mention names ("the X manga", "anime X", "X (the studio)"), and
    where that word is (-1: none)."""
    after = [t for t in tokens if t.start >= m.end][:2]
    before = [t for t in tokens if t.end <= m.start][-2:][::-1]
    near = [t for t in after if t.key not in C.ARTICLES][:1] + [t for t in before if t.key not in C.ARTICLES][:1]
    for t in near:
        if t.key in C.TYPE_WORD and any(c.entity.entity_type == C.TYPE_WORD[t.key] for c in m.candidates):
            return C.TYPE_WORD[t.key], t.start
    # ... or a word said apart from it: "tite kubo started bleach in which year? the manga I mean"
    keys = [t.key for t in tokens]
    for i, k in enumerate(keys):
        near_mean = ["i", "mean"] in (keys[i + 1:i + 3], keys[max(i - 2, 0):i], keys[max(i - 3, 0):i - 1])
        if k in ("manga", "anime") and any(c.entity.entity_type == k for c in m.candidates) and (
                near_mean or (keys[i + 1:i + 2] in (["one"], ["version"]) and keys[i - 1:i] == ["the"])):
            return C.TYPE_WORD[k], tokens[i].start
    # ... or a later word that points back at it: "I just started X, who are the main people in the show"
    for i, t in enumerate(tokens):
        said = C.TYPE_WORD.get(t.key)
        if t.start > m.end and said in ("anime", "manga") and keys[i - 1:i] in (["the"], ["this"], ["that"]) and \
                keys[i - 2:i - 1] in (["in"], ["of"], ["from"], ["for"]) and keys[i + 1:i + 2] != ["of"] and \
                any(c.entity.entity_type == said for c in m.candidates):
            return said, t.start
    return None, -1


def _type_word(tokens: list[Token], m: LinkedMention) -> tuple[EntityType | None, bool]:
    """The type a qualifying word names, and whether it says movie."""
    said, at = _qualifier(tokens, m)
    return said, any(t.start == at and t.key in C.MOVIE_WORDS for t in tokens)


_FILLER = frozenset(("version", "of", "the", "series", "adaptation", "anime", "remake", "one", "from", "in"))


def _year_near(tokens: list[Token], m: LinkedMention) -> int | None:
    """A year next to the name, over filler words ("the 2011 version of Hunter x Hunter"), that one of its
    readings has."""
    before = [t.key for t in tokens if t.end <= m.start][-4:][::-1]
    after = [t.key for t in tokens if t.start >= m.end][:4]
    near = list(itertools.takewhile(lambda w: not _YEAR.match(w) and w in _FILLER, before))
    near_after = list(itertools.takewhile(lambda w: not _YEAR.match(w) and w in _FILLER, after))
    for w in before[:max(2, len(near) + 1)] + after[:max(2, len(near_after) + 1)]:
        if _YEAR.match(w) and any(c.year == int(w) for c in m.candidates):
            return int(w)
    return None


def _best(m: LinkedMention, entity_type: EntityType, year: int | None, movie: bool) -> LinkCandidate | None:
    cands = [c for c in m.candidates if c.entity.entity_type == entity_type]
    if not cands:
        return None
    # match quality first (the list's order), then the year and format the question names
    return min(cands, key=lambda c: (c.year != year if year else False, movie and c.format != "movie",
                                     cands.index(c)))


# -- what is asked ---------------------------------------------------------------------------------


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


def _staff(w: _Words) -> Hop | None:
    if w.any(C.DIRECT):
        return Hop(("staff",), staff_roles("director"))
    if w.any(C.MUSIC):
        return Hop(("staff",), staff_roles("music"))
    if w.any(C.DESIGN) and "character" in w.text:
        return Hop(("staff",), staff_roles("design"))
    if w.any(C.SCRIPT):
        return Hop(("staff",), staff_roles("script"))
    if w.any(C.DRAW) and w.any(C.WRITE | C.CREATE):
        return AUTHORS
    if w.any(C.DRAW):
        return Hop(("staff",), staff_roles("drew"))
    if w.any(C.WRITE | C.CREATE):
        return Hop(("staff",), staff_roles("wrote"))
    return None


def _staff_roles_asked(w: _Words) -> list[Hop]:
    """Every credit the words ask for ("the director and composer of X"), in a fixed order."""
    cues = ((C.DIRECT, "director"), (C.MUSIC, "music"), (C.SCRIPT, "script"))
    hops = [Hop(("staff",), staff_roles(role)) for cue, role in cues if w.any(cue)]
    if w.any(C.DESIGN) and "character" in w.text:
        hops.append(Hop(("staff",), staff_roles("design")))
    return hops


def _count(w: _Words, anchor_types: set[EntityType]) -> _Ask | None:
    """"How many ..." questions over one named entity."""
    if w.any(C.EPISODES):
        # a sum of several works ("all the seasons", "combined"); "total episodes of X" is X's own count
        # ("series" alone is one: "the total episode count of the Dragon Ball Z TV series")
        several = C.ALL_SEASONS.search(w.text) or C.SEASON_COUNT.search(w.text) or w.set & {
            "seasons", "entries", "arcs", "parts", "cours", "together", "combined", "altogether", "added"}
        said = next((_FORMATS[x] for x in (*w.keys, *w.typed) if x in _FORMATS), None)
        every = w.set & {"ovas", "movies", "films", "specials", "all", "every", "combined", "altogether", "together",
                         "sum", "added", "adding"} or w.has("in total", "add up")
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


def _kin_of(tokens: list[Token], m: LinkedMention) -> str | None:
    """The family word a possessive name is followed by ("naruto's son" -> "son"), singular."""
    before = next((t for t in reversed(tokens) if t.start < m.end), None)
    after = next((t for t in tokens if t.start >= m.end), None)
    if before is None or after is None or not before.possessive:
        return None
    word = _singular(after.key)
    return word if word in C.FAMILY and word not in ("family", "married", "related") else None


def _singular(word: str) -> str:
    return word[:-1] if word.endswith("s") and word[:-1] in C.FAMILY else word


def _run_domain(w: _Words, either: tuple[EntityType, ...]) -> tuple[EntityType, ...]:
    """What a run's year or status is asked of: "when did it air" a show, "when was it serialized" a manga."""
    return ("anime",) if w.any(C.AIRED) else ("manga",) if w.any(C.PUBLISHED) else either


def _summing(w: _Words) -> bool:
    return w.any(C.SUM) or w.has("add up", "in all", "all together")


def _attributes(w: _Words) -> list[_Ask]:
    """Every attribute the words ask for, the most specific first ("year + how many episodes": both)."""
    asks: list[_Ask] = []
    numbered = C.EPISODE_N.search(w.text)
    if C.FIRST_EPISODE.search(w.text) or numbered:
        asks.append(_Ask([], "first_episode", domain=("anime",),
                         episode=int(numbered.group("n")) if numbered else 1))
    if w.any(C.GENRES):
        asks.append(_Ask([], "genres", domain=("anime", "manga")))
    if w.any(C.FOUNDED):
        asks.append(_Ask([], "founded", domain=("studio",)))
    if w.any(C.MAGAZINE) or w.has("published in", "ran in", "serialized in"):
        asks.append(_Ask([], "magazine", domain=("manga",)))
    if w.any(C.VOLUMES):
        asks.append(_Ask([], "volumes", domain=("manga",)))
    if w.any(C.EPISODES) or C.HOW_LONG.search(w.text):
        asks.append(_Ask([], "episode_count", domain=("anime",)))
    if w.any(C.FORMAT) or w.has("is it a movie", "what type", "what kind") or (
            " or " in w.text and len(w.set & C.FORMATS) >= 2):  # "a tv show or an ova"
        asks.append(_Ask([], "format", domain=("anime",)))
    if w.any(C.YEAR) or w.has("what year", "came out", "come out"):
        asks.append(_Ask([], "year", domain=_run_domain(w, ("anime", "manga", "studio"))))
    if w.any(C.STATUS) or w.has("still running", "still going"):
        asks.append(_Ask([], "status", domain=_run_domain(w, ("anime", "manga"))))
    return asks


def _attribute(w: _Words) -> _Ask | None:
    asks = _attributes(w)
    if not asks:
        return None
    first = asks[0]
    if first.attr != "first_episode":  # the others are read off the same row
        first.also = [a.attr for a in asks[1:] if a.attr in _ROW_ATTRS and set(a.domain) & set(first.domain)
                      # a studio's year is its founding; a run's years say whether it still runs
                      and (first.attr, a.attr) not in (("founded", "year"), ("year", "status"))]
    return first


def _relation(w: _Words, anchor_types: set[EntityType], after_anchor: frozenset[str] = frozenset()) -> list[Hop]:
    """The hops the words ask for, structural ones (sequel, source) before the final one (studio, staff)."""
    hops: list[Hop] = []
    answer = _answer_type(w)
    timeless = bool(anchor_types) and anchor_types <= {"person", "studio"}  # "before", "after": times, not sequels
    if C.LAST_SEASON.search(w.text) and not w.any(C.EPISODES) and "anime" in anchor_types:
        # "the last mha season", "which season is the latest one": the end of the sequel chain
        hops.append(Hop(("sequel",), kind="k_hop", include_start=True, last=True))
    elif C.LAST_SEASON.search(w.text) and not w.any(C.EPISODES) and anchor_types == {"character"}:
        hops.append(dataclasses.replace(APPEARS, last=True))  # "the final season of the anime with Deku"
    elif C.ALL_SEASONS.search(w.text):
        hops.append(Hop(("sequel",), kind="k_hop", include_start=True))
    elif (C.IN_ORDER.search(w.text) or w.any(C.ORDER)) and not w.set & _PLURAL_FORMATS:
        hops.append(SEQUEL_CHAIN)  # (the films "in order": the franchise's films, which are listed by year)
    elif anchor_types & {"anime"} and after_anchor & {"to", "of"} and after_anchor & {"sequel", "continuation",
                                                                                        "prequel"}:
        # "X is a sequel to what": what X follows; "X is the prequel to which show": what follows X
        hops.append(SEQUEL if "prequel" in after_anchor else PREQUEL)
    elif (w.any(C.PREQUEL) and not timeless) or (anchor_types & {"anime"} and (
            (after_anchor & C.FOLLOWS and "by" not in after_anchor)
            or ("after" in after_anchor and after_anchor & {"come", "came", "comes"}))):
        # "which anime does X follow on from", "does X come after something": X is the later one
        hops.append(PREQUEL)
    elif (w.any(C.SEQUEL) and not timeless) or (C.SEASON_TAG.search(w.text) and "anime" in anchor_types):
        hops.append(SEQUEL)  # "does one punch man have a s2": a season not linked to the name is what follows
        if _SEQUEL_AGAIN.search(w.text):
            hops.append(SEQUEL)  # "the sequel of its sequel", "what do i watch next and then after that"
    elif "side" in w.set or "spinoff" in w.set:
        hops.append(Hop(("side_story", "spinoff"), node_types=("anime",)))
    manga_asked = "manga" in w.set
    if manga_asked and w.any(C.SOURCE) and anchor_types & {"anime", "character"}:
        hops.append(SOURCE)
    elif "anime" in w.set and w.any(C.ADAPTATION | C.SOURCE) and "manga" in anchor_types:
        hops.append(ADAPTATIONS)
    elif not hops and anchor_types & {"anime"} and "manga" not in anchor_types and (
            answer == "manga" or w.set & {"source", "based"} or w.has("adapted from", "adapted off")):
        hops.append(SOURCE)  # "which manga is X based on", "X's source material, who made it"
    elif not hops and anchor_types == {"manga"} and (answer == "anime" or w.set & {"anime", "tv", "show"}
                                                     or w.any(C.ADAPTATION)):
        hops.append(ADAPTATIONS)  # "did the manga X ever get an anime": its adaptations
    if anchor_types == {"studio"} and w.any(C.STUDIO | C.MADE | C.WORKS) and not (
            w.any(C.FOUNDED) and not w.any(C.MADE | C.WORKS)):
        hops.append(STUDIO_WORKS)  # "everything CloverWorks animated" (not "when was that studio founded")
    elif (w.any(C.STUDIO) or w.has("animation studio", "produced by", "who produced", "who animated")) and \
            anchor_types != {"studio"}:
        hops.append(STUDIO)
        if w.any(C.MADE) and not w.any(C.FOUNDED) and (w.has("what did", "what has", "what else", "what other")
                                                         or answer == "anime"):
            hops.append(dataclasses.replace(STUDIO_WORKS, exclude_seen=True))  # "what else did X's studio make"
    elif anchor_types == {"person"} and w.set & {"who", "whom"} and (own := next(
            (staff_roles(v) for v in after_anchor if v in C.STAFF_VERBS), ())) and (asked := [
                h for h in _staff_roles_asked(w) if h.roles != own]):
        # "tsugumi ohba wrote a manga that became an anime - who scored the anime?": the person's own credit
        # leads to the works, and another credit of theirs is asked
        if set(own) & {"story", "story_and_art", "art", "original_creator"}:
            hops += [Hop(("worked_on",), own, node_types=("manga",)), ADAPTATIONS]
        else:
            hops.append(Hop(("worked_on",), own, node_types=("anime",)))
        hops.append(asked[0])
    elif (staff := _staff(w)) and anchor_types == {"person"} and (_person_acts(w) or after_anchor & C.STAFF_VERBS):
        # "which anime did Hiroshi Seko write": the person is the subject, the works are asked for
        kind = answer if answer in ("anime", "manga") else None
        roles = staff.roles
        if kind == "anime" and "story" in roles:
            roles += ("series_composition",)  # an anime's writer is its series composer
        on_anime = set(roles) <= {"director", "chief_director", "music", "character_design", "series_composition"}
        hops.append(Hop(("worked_on",), roles, node_types=("anime",) if on_anime else (kind,) if kind else (),
                        exclude_seen=w.any(C.OTHER)))
        if on_anime and "manga" in w.set:
            # "the magazine of the manga that became the anime X directed": on from the anime to its source,
            # and to its authors when they are asked ("who made the manga behind the anime X directed")
            hops.append(SOURCE)
            if w.set & {"who", "whom"} and w.any(C.MADE | C.WRITE | C.CREATE | C.DRAW):
                hops.append(AUTHORS)
    elif staff:
        # "who wrote X": its writer, and its artist when another person drew it (a name a reader expects)
        hops.append(AUTHORS if staff.roles == staff_roles("wrote") else staff)
        # "what other anime did the director of X direct", "what else did X's director direct", "X's composer
        # also scored another show": the person's other credits in that role
        if (w.any(C.OTHER) or "also" in w.set) and (w.any(C.WORKS) or _said_twice(w)):
            other: EntityType = "manga" if w.has("other manga", "another manga", "more manga") else "anime"
            hops.append(Hop(("worked_on",), staff.roles, node_types=(other,), exclude_seen=True))
    elif w.any(C.STUDENTS) or (w.any(C.MENTOR_VERBS) and after_anchor & C.MENTOR_VERBS):
        hops.append(STUDENTS)  # "X's students", "who did X train": X is the mentor
    elif w.any(C.MENTOR):
        hops.append(MENTORS)
        if sum(k in C.MENTOR for k in w.keys) >= 2 and " or " not in w.text and " and " not in w.text:
            hops.append(MENTORS)  # "who taught Frieren's teacher": the mentor's mentor
    elif w.any(C.RIVAL):
        hops.append(Hop(("rival",)))
    elif w.any(C.ENEMY):
        hops.append(Hop(("enemy",)))
    elif w.any(C.TEAMMATE):
        hops.append(Hop(("teammate",)))
    elif w.any(C.ALLY):
        hops.append(Hop(("ally",)))
    elif w.any(C.FAMILY):
        hops.append(FAMILY)
    elif w.any(C.CAST) or w.has("who is in", "who are in", "who's in", "who appears in", "who stars in") or \
            _PEOPLE_IN.search(w.text):
        hops.append(MAIN_CAST if w.any(C.MAIN) else CAST)
    elif anchor_types & {"person"} and w.any(C.WORKS | C.MADE):
        hops.append(Hop(("worked_on",), exclude_seen=w.any(C.OTHER)))
    elif anchor_types & {"studio"} and w.any(C.WORKS | C.MADE):
        hops.append(STUDIO_WORKS)
    elif anchor_types == {"character"} and (w.any(C.WORKS) or (w.any(C.APPEAR) and not w.has(
            "who is", "whos", "who was", "who s"))) and not hops:  # "who is X in Y" asks who, not where
        # "which manga is he in": the edge leads to both kinds of work, and the question names one
        works = APPEARS_MANGA if "manga" in w.set and not w.set & {"anime", "show", "series", "tv"} else APPEARS
        # "in which film is he the main character": only where X has a lead role
        hops.append(dataclasses.replace(works, roles=("main",)) if w.any(C.MAIN) else works)
    elif w.any(C.MADE) and anchor_types & {"anime", "manga"} and not w.set & {"movies", "films", "ovas", "specials"}:
        # who made X (not "which films have been made for X"); who made its source: the manga's authors
        hops.append(AUTHORS if hops and hop_range(hops[-1].edges) == "manga" else Hop(("staff",)))
    if w.any(C.WHOSE) and hops and hop_range(hops[-1].edges) == "manga":
        hops.append(AUTHORS)  # "based on whose manga"
    if hops and hops[0] is APPEARS and C.FIRST_SEASON.search(w.text):
        hops[0] = Hop(APPEARS.edges, node_types=APPEARS.node_types, first=True)
    return hops


_PLURAL_FORMATS = frozenset(("movies", "films", "ovas", "specials"))
# a second step along the sequels, said of the first ("what is next, and then after that")
_SEQUEL_AGAIN = re.compile(r" sequel (?:of|to) (?:the|its|that) sequel | (?:and|then) (?:then )?after that ")


def _said_twice(w: _Words) -> bool:
    """Whether a staff role is named and an act asked of that person ("X's director ... direct", "X's series
    composition guy - what else did he write")."""
    return len(w.set & (C.DIRECT | C.MUSIC | C.DESIGN | C.SCRIPT | C.DRAW | C.WRITE | C.CREATE | C.MADE)) >= 2


def _person_acts(w: _Words) -> bool:
    """Whether a named person is the subject of the staff verb ("what did X direct"), not the answer's
    link to it ("who directed the adaptation of X's manga", "the composer of X's show")."""
    return not w.set & (C.WHOSE | {"who"}) and not any(f" {n} of " in w.text for n in C.STAFF_NOUNS)


def _ask(w: _Words, anchor_types: set[EntityType], after_anchor: frozenset[str] = frozenset(),
         every_type: frozenset[EntityType] = frozenset()) -> _Ask | None:
    words = f"{w.text} {' '.join(w.typed)}"
    framed = (w.set | w.typed) & {"season", "seasons", "series", "films", "movies", "film", "movie", "entries", "tv"}
    if (rank := superlative(words, "anime")) is not None and framed and not C.LAST_SEASON.search(w.text) and not \
            C.HOW_MANY.search(w.text.replace(" episode count", " ")):
        # "which dragon ball tv series has the most episodes": the extreme among the franchise's works
        fmt = next((_FORMATS[x] for x in (*w.keys, *w.typed) if x in _FORMATS), None)
        return _Ask([], "franchise_works", fmt=fmt or ("tv" if "season" in words else None), domain=("franchise",),
                    rank=rank)
    if (C.HOW_MANY.search(w.text) or (_summing(w) and w.any(C.EPISODES))) and (
            counted := _count(w, anchor_types)) is not None:
        structural = (("sequel",), ("prequel",), ("adapted_from",), ("adapted_into",))
        hops = [h for h in _relation(w, anchor_types, after_anchor) if h.edges in structural]
        if counted.attr in ("episode_count", "volumes"):
            counted.hops = hops + counted.hops
            counted.also = [x.attr for x in _attributes(w) if x.attr != counted.attr and x.attr in _ROW_ATTRS
                            and set(x.domain) & set(counted.domain)]
        return counted
    if w.any(C.NAMES) or (w.any(C.NATIVE) and w.set & {"title", "name", "called"}):
        return None  # "what's her nickname", "the japanese title of X": the entity itself, with its other names
    if w.has("spinoff manga", "spinoffs manga", "side manga") and not w.any(C.STAFF_NOUNS | C.WRITE | C.DRAW):
        # "mha spin-off manga": the franchise's manga (spin-offs are manga of the franchise, not sequels)
        return _Ask([], "franchise_works", domain=("franchise",), counted="manga")
    hops = _relation(w, anchor_types, after_anchor)
    attr = _attribute(w)
    if attr is not None and any(h.edges in (("staff",), ("animated_by",), ("features",)) for h in hops) and not (
            attr.attr == "founded" and hops[-1].edges == ("animated_by",)):
        attr = None  # the year in "who directed the 2011 series" picks the work; "when was its studio founded" asks
    if hops == [APPEARS] and attr is not None and every_type & set(attr.domain):
        hops = []  # "frieren's genres (the anime)": the attribute of the work the name also names
    if not hops and attr is None:
        # "bleach movies", "which one piece films are there": the franchise's works of that format
        fmt = next((_FORMATS[x] for x in w.keys if x in _FORMATS and x != "tv"), None)
        return _Ask([], "franchise_works", fmt=fmt, domain=("franchise",)) if fmt else None
    first = hops[0] if hops else None
    domain: tuple[EntityType, ...] = attr.domain if attr and not hops else ()
    if first is not None:
        d = hop_domain(first.edges)
        if first.edges == ("staff",):
            d = "manga" if set(first.roles) & {"story", "story_and_art", "art"} else "anime"
        elif first.edges == ("features",):
            d = "anime"
        domain = (d,) if d else ()
        if first is APPEARS or first.edges == ("worked_on",):
            domain = (d,) if d else ()
    if attr is None:
        return _Ask(hops, None, domain=domain)
    return _Ask(hops, attr.attr, domain=domain, also=attr.also, episode=attr.episode)


# -- the plan ----------------------------------------------------------------------------------------


def _coerce(start: EntityType, ask: _Ask) -> list[Hop]:
    """The hops of ``ask`` with the type changes they need inserted ("Luffy's studio": appears_in first)."""
    out: list[Hop] = []
    current = start

    def reach(d: EntityType | None) -> None:
        nonlocal current
        if d is not None and d != current:
            path = _route(current, d)
            if path is not None:
                out.extend(path)
                current = d

    for h in ask.hops:
        d = hop_domain(h.edges)
        if h.edges == ("staff",):
            d = "manga" if set(h.roles) & {"story", "story_and_art", "art"} else (
                current if current in ("anime", "manga") else "anime")
        elif h.edges == ("features",):
            d = current if current in ("anime", "manga") else "anime"
        reach(d)
        out.append(h)
        # a hop kept to one type ends there ("worked_on" a person's manga), else where its edge leads
        current = h.node_types[0] if len(h.node_types) == 1 else (hop_range(h.edges) or current)
    if ask.attr is not None:
        d = _ATTR_DOMAIN.get(ask.attr)
        if ask.attr in ("year", "status"):
            d = current if current in ("anime", "manga", "studio") else "anime"
        if ask.attr == "year" and current == "studio":
            ask.attr = "founded"
        reach(d)
    return out


def _route(start: EntityType, goal: EntityType) -> list[Hop] | None:
    """The fewest coercion hops from one type to another (at most two: a character to its anime's manga)."""
    if (start, goal) in _COERCE:
        return [_COERCE[(start, goal)]]
    for (a, mid), first in _COERCE.items():
        if a == start and (mid, goal) in _COERCE:
            return [first, _COERCE[(mid, goal)]]
    return None


def _pick_type(m: LinkedMention, wanted: tuple[EntityType, ...], said: EntityType | None) -> EntityType:
    types = [c.entity.entity_type for c in m.candidates]
    if said is not None:
        return said
    for t in wanted:
        if t in types:
            return t
    # a type a coercion can turn into what is wanted, else the best match
    for t in types:
        if any(_route(t, w) for w in wanted):
            return t
    return types[0]


def _add(a: Analysis, tokens: list[Token], m: LinkedMention, first: EntityType | None, *, fixed: bool) -> None:
    said, movie = _type_word(tokens, m)
    # the seasons inside a range share its last number's words ("seasons 1-3"): each goes by its own name
    key = m.text if m.text not in a.types or not m.candidates else m.candidates[0].name
    if fixed or said:
        a.fixed.add(key)
    year = _year_near(tokens, m)
    dated = {c.year for c in m.candidates if c.entity.entity_type == (first or "anime")}
    if year is None and len(dated) == 1 and len(m.candidates) == 1:
        year = next(iter(dated))  # a name told apart by a year further on ("..., the 1999 one or the 2011 one")
    order = [first] if first else []
    order += [c.entity.entity_type for c in m.candidates]
    types = tuple(dict.fromkeys(t for t in order if t))
    a.mentions.append(key)
    a.types[key] = types
    if year:
        a.years[key] = year
    a.linked[key] = {t: c for t in types if (c := _best(m, t, year, movie)) is not None}


# set while :func:`consults_asks` reads a question: whether the reading reached the point where, with no cue word,
# it turns to what the question asks by meaning (``links.asks``)
_CONSULTED: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar("asks_consulted", default=None)


def consults_asks(question: str, links: EntityLinks | None) -> bool:
    """Whether reading ``question`` would act on what it asks by meaning (``links.asks``, the MiniLM encoder's
    nearest exemplars): only a name no cue word says anything about turns to it. Read without them, a question
    that never reaches that point reads the same with them, so linking embeds only the questions that do."""
    seen: list[bool] = []
    token = _CONSULTED.set(seen)
    try:
        read(question, links.model_copy(update={"asks": []}) if links is not None else None)
    finally:
        _CONSULTED.reset(token)
    return bool(seen)


def reading_of(inp: RoleInput) -> Analysis:
    """The reading a role input carries (the loop reads each question once, where it is linked); read here only
    for an input built without one (a prompt an outside client sent to the chat route, a test)."""
    return inp.reading if inp.reading is not None else read(inp.question, inp.links)


def read(question: str, links: EntityLinks | None) -> Analysis:
    """The plan of ``question`` given the names linked in it; a question in two parts ("who directed X, and
    which studio made it?") is a plan with one more in ``more``, or one longer chain ("which studio made
    X, and when was that studio founded?")."""
    question, links, excluded = _except(question, links)
    a = _read_parts(question, links)
    for x in (a, *a.more):
        x.exclude |= excluded
    return a


_EXCEPT = re.compile(r"\b(?:besides|apart from|aside from|other than|except(?: for)?|excluding|not counting|"
                     r"not including|leav(?:e|es|ing) out|omit(?:ting)?|skipp?(?:ing)?|ignoring|minus|but not)\b",
                     re.IGNORECASE)
_JOINED = re.compile(r"^[\s,&]*(?:(?:and|or|nor|the|a|an)\b[\s,&]*)*$", re.IGNORECASE)
_CLAUSE_END = re.compile(r"[,;:?!()]")
_KIND_AFTER = re.compile(r"(?:\s+(?:tv|films?|movies?|ovas?|specials?|series|anime|manga|versions?|arcs?|ones?|shows?|"
                         r"seasons?)\b){1,3}", re.IGNORECASE)
MAX_LEFT_OUT = 40  # characters a left-out description may run to its comma ("apart from the Bebop crew,")


def _except(question: str, links: EntityLinks | None) -> tuple[str, EntityLinks | None, set[str]]:
    """The question without what it leaves out ("who is in X besides Goku and Vegeta", "every season not
    counting the final one"): those words blanked, the names among them unlinked, and their entity ids."""
    mentions = sorted(links.mentions if links else [], key=lambda m: m.start)
    out: list[LinkedMention] = []
    spans: list[tuple[int, int]] = []
    for cue in _EXCEPT.finditer(question):
        end = cue.end()
        while (m := next((m for m in mentions if m.start >= end), None)) is not None and \
                _JOINED.match(question[end:m.start]):
            out.append(m)
            end = m.end
        if end > cue.end() and (kind := _KIND_AFTER.match(question, end)):
            end = kind.end()  # "leave out the Mugen Train film": the type word goes with its name
        if end > cue.end() and (stop := _CLAUSE_END.search(question, end)) and len(
                question[end:stop.start()].split()) <= 2:
            end = stop.start()  # "apart from the Bebop crew, ...": a word or two after the name go with it
        if end == cue.end():  # no name follows: the words up to the clause's end are what is left out
            stop = _CLAUSE_END.search(question, end)
            close = stop.start() if stop else len(question.rstrip())
            end = close if close - end <= MAX_LEFT_OUT else end
        spans.append((cue.start(), end))
    if not spans:
        return question, links, set()
    for lo, hi in spans:
        question = question[:lo] + " " * (hi - lo) + question[hi:]
    kept = [m for m in mentions if m not in out]
    ids = {c.entity.id for m in out for c in m.candidates}
    return question, (links.model_copy(update={"mentions": kept}) if links else None), ids


def _read_parts(question: str, links: EntityLinks | None) -> Analysis:
    whole = _read(question, links)
    linked = list(links.mentions) if links else []
    text = focus(question, [(m.start, m.end) for m in linked])
    parts = _clauses(text)
    if len(parts) < 2 or whole.filter is not None or whole.intent in ("relation", "compare"):
        return whole
    first, second = parts[0], parts[1]
    own = [m for m in linked if first[0] <= m.start < first[1]]
    if not own or any(second[0] <= m.start < second[1] for m in linked):
        return whole  # each part names its own entities, or the first names none: read as one
    a1 = _read(_only(text, [first]), EntityLinks(mentions=own))
    # the second part is about what the first is about ("... and who illustrates its source?")
    anchor = next((m for m in own if a1.mentions[:1] == [m.text]), own[-1])
    a2 = _read(_only(text, [second, (anchor.start, anchor.end)]), EntityLinks(mentions=[anchor]))
    if not (a1.hops or a1.attr) or a1.filter:
        return whole
    if a1.mentions[:1] != whole.mentions[:1]:
        return whole  # the first part alone is about another name than the question: read it whole
    reached = hop_range(a1.hops[-1].edges) if a1.hops and a1.attr is None else None
    later = text[second[0]:second[1]].lower()
    # a work the first part reached is "it" too ("what's the sequel of X and who directed it"); a person or a
    # studio is not ("who directed X, and which studio made it": it is X)
    # ("what should he watch next, and what comes after that": "that" alone is the work just reached)
    pronoun = {"anime": "|it|its|that", "manga": "|it|its|that", "person": "|he|him|his|she|her",
               "studio": "|its|their",
               "character": "|he|him|his|she|her"}.get(
        reached or "", "")
    back = re.search(rf"\b(?:(?:that|this|same|its|their|those|these) (?:{_BACK[reached]})s?|those|these|them|they"
                     rf"{pronoun})\b", later) if reached is not None else None
    if reached is not None and back is not None:
        # "... and when was that studio founded", "... and what studios animated those": the second part
        # starts where the first ended
        later = later[:back.start()] + " " * (back.end() - back.start()) + later[back.end():]
        tokens = tokenize(later)
        ask = _ask(_rest(later, tokens, []), {reached})
        # a bare "that" goes on along a chain ("... and what comes after that"); "how many episodes would that
        # come to" asks of the whole question, not of the work the first part reached
        if ask is not None and _fits_type(reached, ask.domain) and (ask.hops or back.group() != "that"):
            a1.hops += _coerce(reached, ask)
            a1.attr, a1.also = ask.attr, ask.also
            if a1.attr in (None, "year") and hop_range(a1.hops[-1].edges) in ("anime", "manga") and (
                    period := _period(later, set())) is not None:
                a1.period, a1.attr = period, None  # "... which of its anime came out between 2003 and 2011"
            return a1
    if not (a2.hops or a2.attr) or a2.filter or not a2.mentions or not (a1.hops or a2.hops):
        return whole  # (two attributes of one entity: the whole reading reads both off one row)
    if a2.attr == "episode_count" and not a2.hops and a1.hops and a1.hops[-1].kind == "k_hop" and \
            a1.hops[-1].include_start:
        return whole  # "all three seasons of X ..., how many episodes would that come to": one sum
    a1.more = [a2]
    return a1


# words that point back at what the first part of a question found ("that studio", "the same director")
_BACK: dict[EntityType, str] = {"studio": "studio|company|animation studio", "person": "director|composer|person|"
                                "guy|author|mangaka|artist|writer|creator|man|woman", "anime": "show|series|anime|"
                                "season|movie|film", "manga": "manga|comic", "character": "character|guy|girl"}
_CLAUSE = re.compile(r"(?:,\s*(?:and|but|also)\s+|[,:]\s*(?=(?:who|whom|what|which|when|where|how)\b)|;\s*|\?\s+|"
                     r"\s+and\s+(?=(?:who|whom|what|which|when|where|how|is|are|was|were|did|does|do)\b))",
                     re.IGNORECASE)


_POINTS_BACK = re.compile(r"\b(?:he|she|him|his|her|it|its|they|them|their|those|these|that)\b")


def _clauses(text: str) -> list[tuple[int, int]]:
    """The parts of a question that each ask something, split at ", and", ";" or "?" before a question word."""
    out, start = [], 0
    for m in _CLAUSE.finditer(text):
        rest = text[m.end():].lstrip().lower()
        if m.group().strip() in (",", ":") and not _POINTS_BACK.search(rest):
            continue  # "X's director, what else has he directed" is two parts; "..., how many episodes" is one
        # (a question word may follow its preposition: "..., and in which film is he the lead")
        if re.match(r"(?:(?:in|on|for|from|by|with|at)\s+(?=wh))?(?:who|whom|whose|what|which|when|where|how|is|are|"
                    r"was|were|did|does|do|can|could)\b", rest):
            out.append((start, m.start()))
            start = m.end()
    out.append((start, len(text)))
    return [(a, b) for a, b in out if text[a:b].strip()]


def _only(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with everything outside ``spans`` blanked (offsets kept)."""
    out = list(re.sub(r"\S", " ", text))
    for a, b in spans:
        out[a:b] = text[a:b]
    return "".join(out)


def _fits_type(t: EntityType, domain: tuple[EntityType, ...]) -> bool:
    return not domain or t in domain or any(_route(t, d) for d in domain)


def _read(question: str, links: EntityLinks | None) -> Analysis:
    linked = list(links.mentions) if links else []
    whole = question
    # a long message: read the sentences that ask (and the one naming what they ask about), not the story
    asked = asking(question)
    question = focus(question, [(m.start, m.end) for m in linked])
    kept, dropped = _settings(question, _distinct([m for m in linked if question[m.start:m.end].strip()]))
    if kept and not any(a <= m.start < b for a, b in asked for m in kept):
        # the asking sentences name nothing: "he", "that series" say which of the names before they mean
        refers: set[str] = {"person": {"person", "character"}, "work": {"anime", "manga", "franchise"}}.get(
            referent(" ".join(question[a:b] for a, b in asked)) or "", set())
        kept = [m for m in kept if _readings(m) & refers] or kept
    for lo, hi in dropped:
        question = question[:lo] + " " * (hi - lo) + question[hi:]
    # "the manga one rather than the anime", "before it ended": words that ask for nothing
    question = _UNASKED.sub(lambda x: " " * len(x.group()), question)
    tokens = tokenize(question)
    mentions = _owned(question, _by_years(tokens, kept))
    if len(mentions) >= 2 and (pronoun := _WHO_IS_HE.search(question)) is not None:
        # "Frieren keeps remembering this Himmel dude, who is he again": the one he stands for, the nearest before
        said_before = [m for m in mentions if m.end <= pronoun.start() and _readings(m) & {"character", "person"}]
        mentions = said_before[-1:] or mentions
    w = _rest(question, _asked_words(tokens, questioning(whole), mentions), mentions)
    kinds = [_readings(m) for m in mentions]
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
    if len(mentions) >= 2 and (pair := _pair(w, kinds, question[mentions[0].end:mentions[1].start])) is not None:
        a = Analysis(intent=pair, mentions=[])
        people = all(k & {"character", "person"} for k in kinds[:2])
        # two people are related as people; a name that is only a work makes the pair about works
        wanted: tuple[EntityType, ...] = ("character", "person", "anime", "manga", "studio") \
            if pair == "relation" and people else ("anime", "manga", "studio", "character", "person")
        # "of the Death Note, Bleach and Naruto manga, which began first": every work named is compared
        compared = mentions[:2] if pair == "relation" or not all(k & {"anime", "manga", "studio"} for k in kinds) \
            else mentions[:MAX_COMPARED]
        qualified = [_type_word(tokens, m)[0] for m in compared]
        # "which manga ...", "... volumes", "the X and Y manga": one type word speaks for both names
        shared = next((t for t in qualified if t), None) or _answer_type(w) or (
            "manga" if pair == "compare" and w.any(C.VOLUMES | C.MAGAZINE) else None)
        for m, own in zip(compared, qualified, strict=False):
            pick = own or (shared if shared and any(c.entity.entity_type == shared for c in m.candidates) else None)
            _add(a, tokens, m, _pick_type(m, wanted, pick), fixed=True)
        if pair == "compare" and (staff := _staff(w)) is not None and staff.roles:
            # "did X and Y have the same director": each one's credit for that role, side by side
            a.intent, a.hops = "chain", [staff]
            second = Analysis(intent="chain", mentions=[], hops=[staff])
            for key in a.mentions[1:]:
                second.mentions.append(key)
                second.types[key], second.linked[key] = a.types.pop(key), a.linked.pop(key)
                if key in a.years:
                    second.years[key] = a.years.pop(key)
                second.fixed.add(key)
            a.mentions, a.more = a.mentions[:1], [second]
            return a
        if pair == "compare":
            studios = all(a.types[m][0] == "studio" for m in a.mentions)  # "which studio is older": not their studios
            a.compare_field = next((f for rx, f in C.COMPARE_FIELDS if rx.search(w.text)
                                    and not (studios and f == "studios")), None)
        elif all(k & {"anime", "manga"} for k in kinds[:2]) and (w.any(C.WORKED) or w.has("who worked")):
            a.hops = [Hop(("staff",))]  # "someone who worked on both": the path runs through the staff
        return a
    if len(mentions) >= 2 and _YES_NO.search(whole) and not w.any(C.OTHER) and not C.HOW_MANY.search(w.text):
        # "chainsaw man anime was ufotable right?", "is bebop by sunrise or bones?": a guess at a work's studio is
        # checked by asking for it (the answer names the studio that did, whichever it is)
        by_studio = [m for m in mentions if _readings(m) == {"studio"}]
        guessed = [m for m in mentions if m not in by_studio and "anime" in _readings(m)]
        if by_studio and len(guessed) == 1 and len(by_studio) + 1 == len(mentions):
            a = Analysis(intent="chain", mentions=[], hops=[STUDIO])
            _add(a, tokens, guessed[0], "anime", fixed=True)
            return a
    # "how many episodes did <a title we lack> run for" counts a work's episodes, never the catalog's works
    if not mentions and (chained := _filtered_chain(question)) is not None:
        return chained  # "the studio of the anime adapted from the manga serialized in Ura Sunday"
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
        if summed in f.shown and (w.any(C.SUM) or w.has("add up", "in all")) and not any(
                c["field"] == summed for c in f.where):
            f.total, f.count = summed, False  # "total eps across all the madhouse tv series": one sum
    if f is not None and f.where:  # conditions on the whole catalog ("Madhouse anime before 2010")
        return Analysis(intent="aggregate" if f.count or f.total else "filter", mentions=[], filter=f)
    if not mentions and (f is None or (f.rank is None and not f.count and (d := _DESCRIPTION.search(question)) and
                                       _STORY.search(d.group()))):
        return _described(question)  # "who animated the show where a student finds a notebook that kills"
    anchor = _anchor(tokens, mentions)
    label = confident(links.asks) if links else None
    hinted = label if label in HINT_CUES else None
    for candidate in _anchors(tokens, mentions):
        said, _ = _type_word(tokens, candidate)
        # the subject's own verb: "does X follow on from" (the words after X, when X is asked about)
        subject = any(t.key in ("does", "did", "do") for t in tokens if t.end <= candidate.start)
        after = frozenset(t.key for t in tokens if t.start >= candidate.end) if subject else frozenset()
        verb = next((t.key for t in tokens if t.start >= candidate.end), "")
        tail = " ".join(t.key for t in tokens if t.start >= candidate.end)
        if not after and _COPULA_SEQUEL.match(tail):
            after = frozenset(tail.split()[:5])  # "X is a sequel to what": X is the subject
        if not after and verb in C.STAFF_VERBS:
            after = frozenset((verb,))  # "the anime that X directed": X is the subject of its own verb
        # "how many Dragon Ball anime": the type word is what is counted, not which Dragon Ball is meant
        counting = C.HOW_MANY.search(w.text) is not None and said in ("anime", "manga")
        types = {said} if said and not counting else _readings(candidate)
        every = frozenset(c.entity.entity_type for c in candidate.candidates)
        ask = _ask(w, types, after, every)
        kin = _kin_of(tokens, candidate) if "character" in every else None
        rest = _ask(w.without(kin), types, after, every) if kin is not None else None
        if kin is not None and rest is not None and rest.hops:
            # "who trained naruto's son", "sasuke's daughter's mother": the son first, then what is asked of him
            then = rest.hops
            if then[0] == FAMILY:
                kin2 = next((k for k in w.without(kin).keys if k in C.FAMILY), None)
                then = [Hop(("family",), (_singular(kin2),)), *then[1:]] if kin2 else []
            if then:
                ask = dataclasses.replace(rest, hops=[Hop(("family",), (kin,)), *then])
        who_is = w.has("who is", "whos", "who s", "who was") and types <= {"character", "person"}
        if ask is None and not who_is and (consulted := _CONSULTED.get()) is not None:
            consulted.append(True)
        if ask is None and hinted is not None and not who_is:
            # no cue word: what the question means, by its exemplars ("who is X" describes X)
            ask = _ask(w.plus(HINT_CUES[hinted]), types, after, every)
        if ask is None or not _fits(candidate, ask.domain):
            continue  # "ONE's webcomic ... who illustrates its source": the question is about the work
        anchor = candidate
        if ask is not None:
            start = _pick_type(anchor, ask.domain, None if counting else said)
            hops = _coerce(start, ask)  # may change what is read ("year" of a studio: founded)
            if C.FIRST_SEASON.search(w.text) and not any(h.first for h in hops):
                # "the first anime season adapted from X's manga": the earliest of the anime met on the way
                at = next((i for i, h in enumerate(hops) if h.edges in (("adapted_into",), ("appears_in",))), None)
                if at is not None:
                    hops[at] = dataclasses.replace(hops[at], first=True)
            a = Analysis(intent="aggregate" if ask.attr and ask.attr.startswith(("count", "sum")) else
                         "attribute" if ask.attr and not ask.hops else "chain", mentions=[],
                         attr=ask.attr, role=ask.role, fmt=ask.fmt, counted=ask.counted, also=ask.also, rank=ask.rank,
                         episode=ask.episode, finished=ask.finished)
            a.hops = hops
            if a.attr == "count" and a.role and not any(h.edges == ("worked_on",) for h in a.hops):
                a.hops.append(Hop(("worked_on",), (a.role,), node_types=("anime",)))
            _add(a, tokens, anchor, start, fixed=True)
            if a.attr == "sum_episodes" and a.hops:
                # "all the X tv seasons, counting Y": Y is added to the run when the chain does not reach it
                for m in linked:
                    if any(lo <= m.start < hi and (_COUNTING.match(whole[lo:hi]) or _INCLUDED.search(whole[lo:hi]))
                           for lo, hi in dropped) and any(
                            c.entity.entity_type == "anime" for c in m.candidates) and m.text not in a.mentions:
                        _add(a, tokens, m, "anime", fixed=True)
                        a.together = True
            if a.hops and a.attr is None and hop_range(a.hops[-1].edges) in ("anime", "manga"):
                a.period = _period(question, set(a.years.values()))  # "what did X's studio make before 2010"
            credits = _staff_roles_asked(w)
            if a.hops and a.hops[-1].edges == ("staff",) and a.attr is None and a.hops[-1].roles in [
                    h.roles for h in credits] and not any(h.edges == ("worked_on",) for h in a.hops):
                # "X's director and composer": one more reading per credit asked
                for other in credits[:MAX_MORE]:
                    if other.roles != a.hops[-1].roles:
                        a.more.append(_same_start(a, [*a.hops[:-1], other]))
            at = next((i for i, h in enumerate(a.hops) if hop_range(h.edges) == "manga"), None)
            source_facts: tuple[tuple[Attr, frozenset[str]], ...] = (("magazine", C.MAGAZINE), ("volumes", C.VOLUMES))
            facts = [x for x, cue in source_facts if w.any(cue)]
            if at is not None and a.attr is None and not a.more and (facts or w.has(
                    "where did it run", "where did that run", "where it ran", "where did the manga run")):
                # "what is X based on, who made it, and where did it run": the source manga's own facts too
                more = a if at == len(a.hops) - 1 else _same_start(a, a.hops[:at + 1])
                more.attr, more.also = (facts or ["magazine"])[0], facts[1:]
                if more is not a:
                    a.more.append(more)
            strong = {c.entity.entity_type for c in anchor.candidates if c.match in ("exact", "alias")}
            if a.attr in ("year", "status") and not hops and not said and {"anime", "manga"} <= strong & set(
                    ask.domain) and a.mentions[-1] not in a.years:
                # "when did Chainsaw Man start": the manga's run or the anime's? Both are read the same way
                a.open[a.mentions[-1]] = ("anime", "manga")
            return a
    if f is not None:
        return Analysis(intent="filter", mentions=[], filter=f)
    a = Analysis(intent="lookup", mentions=[])
    if anchor is not None:
        said, movie = _type_word(tokens, anchor)
        if movie and not any(c.format == "movie" for c in anchor.candidates):
            # "is there a spy x family movie": no film has that name, so the franchise's films are asked for
            a = Analysis(intent="attribute", mentions=[], attr="franchise_works", fmt="movie")
            start = _pick_type(anchor, ("franchise",), None)
            a.hops = _coerce(start, _Ask([], "franchise_works", domain=("franchise",)))
            _add(a, tokens, anchor, start, fixed=True)
            return a
        if said is None and w.any(C.TITLE):  # "what is X called in Japanese": a work's title
            said = next((t for t in ("anime", "manga") if any(c.entity.entity_type == t for c in anchor.candidates)),
                        None)
        _add(a, tokens, anchor, said, fixed=said is not None)
    return a


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


def _owned(question: str, mentions: list[LinkedMention]) -> list[LinkedMention]:
    """"Hiromu Arakawa's Fullmetal Alchemist manga": a person's name in the possessive before a work's says
    whose the work is; the question is about the work."""
    out = []
    for m, nxt in itertools.zip_longest(mentions, mentions[1:]):
        if nxt is not None and _readings(m) <= {"person"} and _readings(nxt) & {"anime", "manga"} and \
                _POSSESSIVE_GAP.fullmatch(question[m.end:nxt.start]):
            continue
        out.append(m)
    return out


_POSSESSIVE_GAP = re.compile(r"(?:['’]s|s['’]|['’])\s+")


def _asked_words(tokens: list[Token], asked: list[tuple[int, int]], mentions: list[LinkedMention]) -> list[Token]:
    """The words cues are read from: those of the sentences that ask or wonder, and the names and type words
    kept from those that only tell ("My son finished the original Naruto series. What should he watch next?"
    asks no status); a short ask ("Which one?") reads the sentence before it whole."""
    inside = [t for t in tokens if any(a <= t.start < b for a, b in asked)]
    if len(inside) <= ELLIPTIC_WORDS or len(inside) == len(tokens):
        return tokens
    return [t for t in tokens
            if t in inside or t.key in C.TYPE_WORD or any(m.start <= t.start < m.end for m in mentions)]


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


def _same_start(a: Analysis, hops: list[Hop]) -> Analysis:
    """Another reading from the same names as ``a``, along other hops."""
    return Analysis(intent="chain", mentions=list(a.mentions), types=dict(a.types), years=dict(a.years),
                    linked={k: dict(v) for k, v in a.linked.items()}, fixed=set(a.fixed), hops=hops)


# the words just before a magazine's name: a name there is part of the magazine's
_MAGAZINE_NAMED = re.compile(r"\b(?:ran|run|runs|running|serialized|serialised|published|printed) in(?: the)?"
                             r"(?: \w+){0,3}\s*$", re.IGNORECASE)


def _settings(question: str, mentions: list[LinkedMention]) -> tuple[list[LinkedMention], list[tuple[int, int]]]:
    """The mentions the question is about, less asides: a work that only says where the character before it
    is from ("who is Ryuk death note", "Rem in Death Note"), a name in brackets or after "not", "counting"
    ("..., not ONE's webcomic"). Also the spans left out, to be read as no part of the question."""
    tokens = tokenize(question)
    brackets = [b.span() for b in re.finditer(r"\([^()]*\)", question)]
    out: list[LinkedMention] = []
    dropped: list[tuple[int, int]] = []
    for m in mentions:
        inside = next(((a, b) for a, b in brackets if a < m.start and m.end < b), None)
        # a bracket a name runs into is part of it ("aot seasons (1-3)"), not an aside
        if inside is not None and any(not (inside[0] < o.start < inside[1]) for o in mentions) and not any(
                o.start < inside[0] < o.end for o in mentions):
            dropped.append(inside)  # "(the murata one, not the webcomic)": an aside about another name
            continue
        before = [t for t in tokens if t.end <= m.start and not any(o.start <= t.start < o.end for o in mentions)
                  and t.key not in C.ARTICLES][-1:]
        if before and before[0].key in C.ASIDE and len(mentions) > 1:
            # "how many manga has ONE made, counting the webcomic", "..., not ONE's webcomic": an aside
            dropped.append((before[0].start, m.end))
            continue
        after = [t for t in tokens if t.start >= m.end][:1]
        if after and after[0].key in ("included", "inclusive") and len(mentions) > 1:
            dropped.append((m.start, after[0].end))  # "..., the final season included": as "counting" before it
            continue
        if _readings(m) <= {"character", "person"} and _MAGAZINE_NAMED.search(question[:m.start]):
            continue  # "manga that ran in monthly shonen ace": the words name a magazine (kept, as its name)
        after = [t for t in tokens if t.start >= m.end][:1]
        if before and before[0].key in ("which", "what") and after and after[0].key in C.TYPE_WORD and len(
                mentions) > 1 and not _readings(m) & {"character", "person"}:
            # "which evangelion movie is mari in": the name says which works the answer is among
            dropped.append((m.start, m.end))
            continue
        x = out[-1] if out else None
        if x is not None and (aside := _aside(question, x, m)) is not None:
            dropped.append(aside)  # "ufotable, you know the demon slayer people, ...": says who x is
            continue
        if x is not None and _readings(x) <= {"character"} and not _readings(m) & {"character", "person"}:
            between = [t for t in tokens if x.end <= t.start < m.start]
            if not between or (between[-1].key in ("in", "from", "of") and len(between) <= 5):
                dropped.append((between[-1].start if between else x.end, m.end))
                continue
        out.append(m)
    return out, dropped


# words that open a description of the name before them: "X, you know the Y people, ...", "X who fights Y, ..."
_APPOSITION = re.compile(r"\s*,\s*(?:you know|y know|ya know|i mean|aka|like)\s+(?:the\s+|that\s+|those\s+)?$",
                         re.IGNORECASE)
_RELATIVE = re.compile(r"\s+(?:who|that)\s+(?:\w+\s+){1,2}(?:the\s+)?$", re.IGNORECASE)
APPOSITION_WORDS = 4  # words after the name the description may run to its comma


def _aside(question: str, x: LinkedMention, m: LinkedMention) -> tuple[int, int] | None:
    """Where a name only describes the one before it, the span to leave out: an apposition between commas
    ("ufotable, you know the demon slayer people, when were they founded") or a relative clause before a comma
    ("boros who fights caped baldy, the season hes in was animated by who"), when what follows the comma points
    back at the first name; else None."""
    between = question[x.end:m.start]
    rest = question[m.end:]
    comma = re.match(rf"\s*(?:\S+\s+){{0,{APPOSITION_WORDS}}}?\S*?,", rest)
    if comma is None:
        return None
    after = rest[comma.end():]
    if _APPOSITION.fullmatch(between) and referent(after) is not None:
        return x.end, m.end + comma.end() - 1
    if _RELATIVE.fullmatch(between) and _readings(x) & {"character", "person"} and referent(after) == "person":
        return x.end, m.end + comma.end() - 1
    return None


def _distinct(mentions: list[LinkedMention]) -> list[LinkedMention]:
    """The mentions less repeats of one name ("Khara ... the studio Khara"): the first of each is kept."""
    seen: set[tuple[str, ...]] = set()
    out: list[LinkedMention] = []
    for m in mentions:
        key = tuple(c.entity.id for c in m.candidates)
        if key not in seen:
            seen.add(key)
            out.append(m)
    return out


def _readings(m: LinkedMention) -> set[EntityType]:
    """The types of the mention's best matches (an exact title outranks a character's alias)."""
    rank = m.candidates[0].match if m.candidates else None
    return {c.entity.entity_type for c in m.candidates if c.match == rank}


def _anchor(tokens: list[Token], mentions: list[LinkedMention]) -> LinkedMention | None:
    """The mention a one-entity question is about: the last one ("which Dragon Ball series came after
    the original Dragon Ball", "the anime adaptation of Tatsuki Fujimoto's Chainsaw Man"), unless it only
    says where the one before it is from ("sasha blouse from aot")."""
    if not mentions:
        return None
    if len(mentions) >= 2:
        x, y = mentions[-2], mentions[-1]
        between = [t.key for t in tokens if x.end <= t.start < y.start]
        if between and between[0] in ("from", "in", "of") and len(between) <= 2:
            return x
    return mentions[-1]


def _answer_type(w: _Words) -> EntityType | None:
    return _ANSWER.get(m.group("w")) if (m := C.ANSWER_TYPE.search(w.text)) else None


def _by_years(tokens: list[Token], mentions: list[LinkedMention]) -> list[LinkedMention]:
    """"hxh 1999 vs 2011": one name, two of its works told apart by year, is two mentions."""
    out: list[LinkedMention] = []
    for i, m in enumerate(mentions):
        # "hxh 1999 vs 2011", "which hxh is longer, the 1999 one or the 2011 one": two years after the name,
        # joined by "or", "vs", "and", before any other name
        stop = mentions[i + 1].start if i + 1 < len(mentions) else None
        after = [t for t in tokens if m.end <= t.start and (stop is None or t.start < stop)][:YEARS_AFTER]
        at = [j for j, t in enumerate(after) if _YEAR.match(t.key)]
        if len(at) == 2 and any(t.key in ("vs", "versus", "or", "and") for t in after[at[0] + 1:at[1]]):
            y1, y2 = int(after[at[0]].key), int(after[at[1]].key)
            first = [c for c in m.candidates if c.year == y1]
            second = [c for c in m.candidates if c.year == y2]
            if first and second:
                t2 = after[at[1]]
                out += [m.model_copy(update={"candidates": first}),
                        LinkedMention(text=t2.raw, start=t2.start, end=t2.end, candidates=second)]
                continue
        out.append(m)
    return out


def _anchors(tokens: list[Token], mentions: list[LinkedMention]) -> list[LinkedMention]:
    """The mentions a one-entity question may be about, the likeliest first: the one right after "after" or
    "before" ("after the mugen train movie which demon slayer season is next"), else :func:`_anchor`'s."""
    first = _anchor(tokens, mentions)
    if first is None:
        return []
    # "all the demon slayer tv seasons, counting the mugen train arc": the name the seasons are of
    offsets = list(itertools.accumulate((len(t.key) + 1 for t in tokens[:-1]), initial=0))
    if (every := C.ALL_SEASONS.search(" ".join(t.key for t in tokens))) is not None:
        at = {t.start for t, o in zip(tokens, offsets, strict=True) if every.start() <= o < every.end()}
        first = next((m for m in mentions if m.start in at), first)
    ordered = [first, *(m for m in reversed(mentions) if m is not first)]
    after_word = [m for m in ordered if [t.key for t in tokens if t.end <= m.start and t.key not in C.ARTICLES][-1:]
                  in (["after"], ["before"])]
    ranked = after_word + [m for m in ordered if m not in after_word]
    # a name the question qualifies ("the One-Punch Man anime") is what it is about; a name linked by one
    # rare word of it is the weakest reading: tried last
    return sorted(ranked, key=lambda m: (bool(m.candidates) and m.candidates[0].match == "partial",
                                         m not in after_word and _qualifier(tokens, m)[0] is None))


def _fits(m: LinkedMention, domain: tuple[EntityType, ...]) -> bool:
    """Whether some reading of the mention is, or leads by coercion to, what the asked hop starts from."""
    types = {c.entity.entity_type for c in m.candidates}
    return not domain or any(t in types or any(_route(x, t) for x in types) for t in domain)


def _pair(w: _Words, kinds: list[set[EntityType]], between: str = "") -> Literal["relation", "compare"] | None:
    """relation or compare, for a question naming two entities (``between``: what is typed between them);
    None: it is about one of them."""
    people = {"character", "person"}
    works = all(k & {"anime", "manga", "studio"} for k in kinds[:2])
    if works and (re.search(r"[<>≥≤]|\bvs\b", between) or (w.set & {"same", "different"} and (
            w.any(C.STUDIO | C.EPISODES | C.VOLUMES | C.YEAR | C.DIRECT | C.MUSIC | C.WRITE)))):
        return "compare"  # "DBZ > Shippuden eps?", "AoT s1 & JJK s1 same studio?"
    if "&" in between and works and w.any(C.EPISODES | C.VOLUMES | C.YEAR | C.STUDIO):
        return "compare"
    if w.any(C.COMPARE) or (w.any(C.COMPARATIVE) and (" or " in w.text or "than" in w.set or (
            works and (" and " in w.text or not between.strip(" ,"))))) or (
            " or " in w.text and ("first" in w.set or w.has("came out", "come out"))):
        return "compare"
    if works and w.any(C.BEFORE_AFTER) and (w.any(C.YEAR | C.FOUNDED | C.ENDED) or w.has("come out", "came out")):
        return "compare"  # "did X air before Y"
    if works and w.any(C.WORKED | C.BOTH):
        return "relation"
    if w.any(C.RELATED) or (w.any(C.FAMILY | C.MENTOR) and all(k & people for k in kinds[:2])):
        return "relation"
    if all(k & people for k in kinds[:2]) and not all(k & {"anime", "manga"} for k in kinds[:2]):
        return "relation"
    if " or " in w.text and (w.any(C.EPISODES | C.VOLUMES | C.YEAR | C.STUDIO) or w.has("which one")):
        return "compare"
    if " and " in w.text and all(k & {"anime", "manga"} for k in kinds[:2]) and (
            w.any(C.EPISODES | C.VOLUMES | C.YEAR | C.STUDIO)):
        return "compare"
    return None


_COPULA_SEQUEL = re.compile(r"(?:is|was|s) (?:a |the |an )?(?:sequel|prequel|continuation) (?:to|of)\b")
_RANGE_WORDS = re.compile(r"\b(?:through|thru|until|till)\b|^\W*(?:to\b|[-–—]+\s*$)", re.IGNORECASE)
_COUNTING = re.compile(r"\s*(?:counting|including|incl|plus)\b", re.IGNORECASE)
_INCLUDED = re.compile(r"\b(?:included|inclusive)\s*$", re.IGNORECASE)
_FORMAT_WORD = r"(?:specials?|ovas?|movies?|films?|onas?)\b"
_LEFT_OUT = rf"{_FORMAT_WORD}(?:\s+(?:or|and|nor)\s+(?:the\s+)?{_FORMAT_WORD})*"
# a question that checks a guess: "X was Y right?", "isn't X by Y?", "was X done by Y"
_YES_NO = re.compile(r"\b(?:right|correct|true|isn'?t it|wasn'?t it|no)\s*\?|"
                     r"^\W*(?:was|is|did|does|were|isn'?t|wasn'?t)\b", re.IGNORECASE)
_WHO_IS_HE = re.compile(r"\bwho(?:\s+is|\s+was|\s*'s|s)\s+(?:he|she)\b(?!\s+(?:to|for|in|of|with)\b)", re.IGNORECASE)
# "who are the main people in X", "the important guys of X": the people of a work are its characters
_PEOPLE_IN = re.compile(r"\bwho\b.*\b(?:people|folks|guys|ones)\s+(?:in|of|from)\b")
_UNASKED = re.compile(r"\b(?:i|we|he|she|they|just|already)\s+(?:just\s+|already\s+)?(?:finished|completed|watched|"
                      r"binged|saw|read)\b|"  # what the asker did ("just finished HxH 1999, what next"), not a status
                      r"\b(?:i|we)\s+(?:just\s+|finally\s+|recently\s+)?(?:started|began)\b|"  # ... not a date
                      r"\b(?:(?:rather|other) than|instead of|(?:and |but )?not)(?: the| an?)? (?:anime|manga|movies?|"
                      r"films?|shows?|(?:tv )?series|tv show)\b|"
                      r"\bbefore (?:it |they |the (?:manga|series|anime) )?(?:ended|finished|wrapped(?: up)?|concluded|"
                      r"ending|finishing)\b|"
                      # formats left out of a sum: "without the specials or the ova", "no movie" ("not counting
                      # ...", "excluding ..." are left out before, by _except)
                      rf"\bwithout\b[^,;()?]{{0,40}}?\b{_LEFT_OUT}|\bno (?:the )?{_LEFT_OUT}", re.IGNORECASE)
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


def open_types(a: Analysis, mention: str) -> tuple[str, ...]:
    """The entity types ``mention`` may still be: every type of a bare name ("Tell me about Naruto"),
    else the one the question's reading chose (a type word or the relation asked); none with a year."""
    if mention in a.years:
        return ()
    if mention in a.open:
        return a.open[mention]
    types = a.types.get(mention, ())
    return types[:1] if mention in a.fixed else types


__all__ = ["ANY_TYPE", "consults_asks", "open_types", "read", "reading_of"]
