"""Reading a question without a model: what it asks (intent), which names it mentions, of what type.

A small rule-based semantic parser. A question is a *frame* over a noun phrase: "Which studio
animated <NP>?", "Who directed <NP>?", "How many volumes did <NP> run for?". The noun phrase is
either a name or itself a relative description ("the anime Luffy appears in", "the sequel to X",
"the manga that X adapts") that :mod:`~agentic_rag.models.heuristic.phrases` unfolds into a name
plus graph hops. The result is a plan: resolve the names, follow the hops, then read an attribute
or run an aggregate. Questions that filter the whole catalog go to
:mod:`~agentic_rag.models.heuristic.filters` instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from agentic_rag.catalog.vocabulary import EntityType
from agentic_rag.models.heuristic.filters import Filter, parse_filter
from agentic_rag.models.heuristic.phrases import ANIME, WORK, Hop, Phrase, clean, noun_phrase, staff_roles

Intent = Literal["relation", "compare", "chain", "attribute", "aggregate", "filter", "lookup"]
# What is read off the final entities: a catalog column, the first episode, or an aggregate.
Attr = Literal["year", "episode_count", "volumes", "magazine", "founded", "format", "status", "first_episode",
               "count_studio", "count_author", "count_franchise", "count_characters", "sum_episodes", "count"]

ANY_TYPE: tuple[EntityType, ...] = ("character", "anime", "manga", "person", "studio", "franchise")
RELATION_TYPES: tuple[EntityType, ...] = ("character", "anime", "person", "manga", "studio")

_NP = r"(.+?)"
_STAFF_VERBS = (r"directed|(?:composed|did|wrote) the (?:music|soundtrack|score) (?:for|of)|scored|"
                r"wrote and drew|wrote|drew|draws|"
                r"illustrates|illustrated|created|did the character designs? for|designed the characters (?:of|for)|"
                r"is credited on|are credited on|was credited on|made")
_STAFF_NOUNS = (r"director|composer|author|writer|artist|illustrator|creator|character designer|mangaka|"
                r"original creator|staff")


@dataclass(frozen=True, slots=True)
class Frame:
    intent: Intent
    pattern: re.Pattern[str]
    hops: tuple[Hop, ...] = ()
    attr: Attr | None = None
    types: tuple[EntityType, ...] = WORK  # what a plain name in the frame is, in order


def _fr(intent: Intent, pattern: str, hops: tuple[Hop, ...] = (), attr: Attr | None = None,
        types: tuple[EntityType, ...] = WORK) -> Frame:
    return Frame(intent, re.compile(pattern, re.IGNORECASE), hops, attr, types)


SEQUEL, PREQUEL = Hop(("sequel",)), Hop(("prequel",))
SEQUEL_CHAIN = Hop(("sequel",), kind="k_hop")
STUDIO = Hop(("animated_by",))
SOURCE, ADAPTATIONS = Hop(("adapted_from",)), Hop(("adapted_into",), node_types=("anime",))
CAST = Hop(("features",), node_types=("character",))
MAIN_CAST = Hop(("features",), ("main",), node_types=("character",))
APPEARS = Hop(("appears_in",), node_types=("anime",))
AUTHORS = Hop(("staff",), ("story_and_art", "story", "art", "original_creator"))

# Frames over one noun phrase ("{NP}"), most specific first. The NP group is always named np.
FRAMES: tuple[Frame, ...] = (
    _fr("chain", rf"^(?:which|what) studios? (?:animated|made|produced|animates|is behind|was behind|did) {_NP}$",
        (STUDIO,), types=ANIME),
    _fr("chain", rf"^who (?:animated|produced) {_NP}$", (STUDIO,), types=ANIME),
    _fr("chain", rf"^what other (?:anime|shows?|series|works?) (?:did|has) {_NP} (?:direct|directed)$",
        (Hop(("worked_on",), ("director", "chief_director"), node_types=("anime",), exclude_seen=True),),
        types=("person",)),
    _fr("chain", rf"^who (?:mentors|mentored|trains|trained|teaches|taught) {_NP}$", (Hop(("student_of",)),),
        types=("character",)),
    _fr("chain", rf"^who (?:is|was|are|were) (?:the )?(?:mentors?|teachers?|masters?) of {_NP}$",
        (Hop(("student_of",)),), types=("character",)),
    _fr("chain", rf"^who (?:is|was|are|were) {_NP}'s? (?:mentors?|teachers?|masters?)$", (Hop(("student_of",)),),
        types=("character",)),
    _fr("chain", rf"^who (?:is|was|are|were) {_NP}'s? (?:(?:father|mother|parents?|brothers?|sisters?|siblings?|"
                 rf"sons?|daughters?|children|grandfather|grandmother|family|wife|husband|uncle|aunt|cousin)s?)$",
        (Hop(("family", "romantic")),), types=("character",)),
    _fr("chain", rf"^who (?P<verb>{_STAFF_VERBS}) {_NP}$"),
    _fr("chain", rf"^who (?:is|was|are|were) the (?P<noun>{_STAFF_NOUNS})s? (?:of|for|on|behind) {_NP}$"),
    _fr("chain", rf"^(?:who|which characters|what characters) (?:are|were) (?:the )?main (?:characters|cast|"
                 rf"protagonists) (?:of|in) {_NP}$", (MAIN_CAST,)),
    _fr("chain", rf"^(?:which|what) characters (?:star|are the main characters) in {_NP}$", (MAIN_CAST,)),
    _fr("chain", rf"^(?:who|which characters|what characters) (?:are|were) (?:the )?(?:characters|cast) "
                 rf"(?:of|in) {_NP}$", (CAST,)),
    _fr("chain", rf"^(?:which|what) characters (?:show up|appear|are|feature|are featured) in {_NP}$", (CAST,)),
    _fr("chain", rf"^(?:list|name) the (?:main )?(?:characters|cast) (?:of|in) {_NP}$", (CAST,)),
    _fr("chain", rf"^(?:which|what|in which|in what) (?:anime|series|shows?|works?)(?: does| is| do| are| did)? "
                 rf"{_NP} (?:appear|star|feature)?\s*(?:in|from)$", (APPEARS,), types=("character",)),
    _fr("chain", rf"^where (?:is|does|did) {_NP} (?:from|appear)$", (APPEARS,), types=("character",)),
    # adaptations: the source of an anime, the anime of a manga (optionally with the source's authors)
    _fr("chain", rf"^(?:which|what) manga (?:is|was) {_NP} (?:adapted from|based on),? and who (?:made|wrote|drew|"
                 rf"created) it$", (SOURCE, AUTHORS), types=ANIME),
    _fr("chain", rf"^{_NP} is (?:adapted from|based on) which manga,? and who (?:made|wrote|drew|created|"
                 rf"illustrates|draws) it$", (SOURCE, AUTHORS), types=ANIME),
    _fr("chain", rf"^{_NP} is (?:adapted from|based on) a manga\W+who (?P<verb>draws|drew|wrote|writes|created|"
                 rf"illustrates|illustrated) (?:that|the|this) manga$", (SOURCE,), types=ANIME),
    _fr("chain", rf"^does {_NP} adapt .+?,? and who (?P<verb>illustrates|illustrated|draws|drew|wrote|writes) "
                 rf"(?:its|the) source$", (SOURCE,), types=ANIME),
    _fr("chain", rf"^(?:which|what) manga (?:is|was) {_NP} (?:adapted from|based on)$", (SOURCE,), types=ANIME),
    _fr("chain", rf"^{_NP} is (?:adapted from|based on) which manga$", (SOURCE,), types=ANIME),
    _fr("chain", rf"^is {_NP} based on a manga$", (SOURCE,), types=ANIME),
    _fr("chain", rf"^(?:what|which) anime (?:adaptations? )?(?:has|have|did) {_NP} (?:had|get|got|gotten|received)$",
        (ADAPTATIONS,), types=("manga",)),
    _fr("chain", rf"^(?:has|was|have|were) {_NP} (?:been )?(?:turned|adapted|made) into (?:an? )?anime$",
        (ADAPTATIONS,), types=("manga",)),
    _fr("chain", rf"^(?:which|what) anime (?:are|were|is) (?:based on|adapted from|made from) {_NP}$",
        (ADAPTATIONS,), types=("manga",)),
    _fr("chain", rf"^(?:which|what) anime (?:adapts?|adapted) {_NP}$", (ADAPTATIONS,), types=("manga",)),
    # sequels and prequels: one step, or the whole chain in order
    _fr("chain", rf"^(?:in )?what order (?:does|do|did) {_NP} continue(?: after its first season)?$",
        (SEQUEL_CHAIN,), types=ANIME),
    _fr("chain", rf"^(?:list|name) (?:all )?(?:of )?the {_NP} (?:seasons|series|films|movies) in order$",
        (SEQUEL_CHAIN,), types=ANIME),
    _fr("chain", rf"^(?:in )?what order (?:should i watch|do i watch|are) {_NP}$", (SEQUEL_CHAIN,), types=ANIME),
    _fr("chain", rf"^(?:what|which)(?:'s| is| are| was) the (?:next )?sequels? (?:to|of|for) {_NP}$", (SEQUEL,),
        types=ANIME),
    _fr("chain", rf"^what(?:'s| is) the next (?:season|series|film|movie|entry) (?:after|of) {_NP}$", (SEQUEL,),
        types=ANIME),
    _fr("chain", rf"^what (?:comes|came|follows|followed) (?:right )?(?:after )?{_NP}$", (SEQUEL,), types=ANIME),
    _fr("chain", rf"^(?:does|did) {_NP} (?:have|get) a sequel$", (SEQUEL,), types=ANIME),
    _fr("chain", rf"^{_NP} got a sequel\W+which one$", (SEQUEL,), types=ANIME),
    _fr("chain", rf"^which .+? came (?:right )?after {_NP}$", (SEQUEL,), types=ANIME),
    _fr("chain", rf"^(?:what|which)(?:'s| is| are| was) the prequels? (?:to|of|for) {_NP}$", (PREQUEL,), types=ANIME),
    _fr("chain", rf"^is there a prequel (?:to|of|for) {_NP}$", (PREQUEL,), types=ANIME),
    _fr("chain", rf"^what (?:comes|came) (?:right )?before {_NP}$", (PREQUEL,), types=ANIME),
    _fr("chain", rf"^which .+? came (?:right )?before {_NP}$", (PREQUEL,), types=ANIME),
    _fr("chain", rf"^(?:did|was|were|is) the same studio (?:make|made|animate|animated|produce|behind|responsible "
                 rf"for) (?:both|all) (?:of )?(?:the )?{_NP} (?:seasons|series|films|movies)$",
        (Hop(("sequel",), kind="k_hop", include_start=True), STUDIO), types=ANIME),
    # the works of a person or studio
    _fr("chain", rf"^(?:what|which) (?:anime|shows?|series|titles|works) (?:did|has|have) {_NP} (?:make|made|"
                 rf"animate|animated|produce|produced)$", (Hop(("animated",), node_types=("anime",)),),
        types=("studio",)),
    _fr("chain", rf"^(?:what|which) (?:manga|anime|works?|titles) (?:did|has|have) {_NP} (?:written|drawn|created|"
                 rf"write|draw|create|directed|direct|worked on|work on)$", (Hop(("worked_on",)),), types=("person",)),
    # attributes of one entity
    _fr("attribute", rf"^(?:what year|when) (?:did|was|were) {_NP} (?:first )?(?:air|aired|come out|released|"
                     rf"premiere|premiered|start|started|begin|published)$", attr="year"),
    _fr("attribute", rf"^(?:what year|when) was {_NP} founded$", attr="founded", types=("studio",)),
    _fr("attribute", rf"^how many episodes (?:does|did|do|has|have) {_NP} (?:have|has|had|run for)?$",
        attr="episode_count", types=ANIME),
    _fr("attribute", rf"^how many episodes (?:are|were) (?:there )?in {_NP}$", attr="episode_count", types=ANIME),
    _fr("attribute", rf"^how many volumes (?:does|did|do|has|have|is|was) {_NP} (?:have|has|had|run for|run|span|"
                     rf"spanned|long)?$", attr="volumes", types=("manga",)),
    _fr("attribute", rf"^(?:which|what) magazine (?:serialized|serialised|published|ran|runs|carried) {_NP}$",
        attr="magazine", types=("manga",)),
    _fr("attribute", rf"^(?:in )?(?:which|what) magazine (?:was|is) {_NP} (?:serialized|serialised|published)(?: in)?$",
        attr="magazine", types=("manga",)),
    _fr("attribute", rf"^what (?:format|kind of release|type) is {_NP}$", attr="format", types=ANIME),
    _fr("attribute", rf"^what(?:'s| is| was) the (?:title of the |name of the )?first episode of {_NP}(?: called)?$",
        attr="first_episode", types=ANIME),
    _fr("attribute", rf"^what (?:is|was) {_NP}'s first episode(?: called)?$", attr="first_episode", types=ANIME),
    # aggregates over one named entity
    _fr("aggregate", rf"^how many (?:anime|titles|shows|series|works) (?:did|has|have) {_NP} (?:make|made|"
                     rf"animate|animated|produce|produced)$", attr="count_studio", types=("studio",)),
    _fr("aggregate", rf"^how many manga (?:is|was|has|did) {_NP} (?:been )?(?:credited on|written|drawn|write|draw|"
                     rf"create|created)$", attr="count_author", types=("person",)),
    _fr("aggregate", rf"^how many anime are (?:there )?in (?:the )?{_NP} franchise$", attr="count_franchise",
        types=("franchise",)),
    _fr("aggregate", rf"^how many (?P<fmt>movies|films|ovas|tv series|specials) (?:of |in )?(?:the )?{_NP}"
                     rf"(?: franchise)? (?:are there|exist|has there been)$", attr="count_franchise",
        types=("franchise",)),
    _fr("aggregate", rf"^how many {_NP} (?P<fmt>movies|films|ovas|tv series|specials) (?:are there|exist)$",
        attr="count_franchise", types=("franchise",)),
    _fr("aggregate", rf"^how many characters (?:does|did) {_NP} (?:have|feature)$", attr="count_characters",
        types=ANIME),
    _fr("aggregate", rf"^how many episodes do (?:the )?(?:\w+ )?{_NP} (?:seasons|series) have(?: combined| in total|"
                     rf" altogether| together)?$", (Hop(("sequel",), kind="k_hop", include_start=True),),
        attr="sum_episodes", types=ANIME),
    _fr("aggregate", rf"^(?:for )?how many anime did {_NP} (?:do|handle|write|compose) (?P<role>series composition|"
                     rf"the music|music|character designs?|direction)(?: for)?$", attr="count", types=("person",)),
    _fr("aggregate", rf"^how many anime did {_NP} (?P<role>direct|compose music for|write)$", attr="count",
        types=("person",)),
)
_ROLE_WORDS = {"series composition": "series_composition", "music": "music", "the music": "music",
               "compose music for": "music", "character design": "character_design",
               "character designs": "character_design", "direction": "director", "direct": "director",
               "write": "series_composition"}
_FMT = {"movies": "movie", "films": "movie", "ovas": "ova", "tv series": "tv", "specials": "special"}

RELATION = tuple(re.compile(p, re.IGNORECASE) for p in (
    rf"^how (?:is|are|was|were) {_NP} (?:related|connected|linked) (?:to|with) {_NP}$",
    rf"^how (?:is|are|was|were) {_NP} and {_NP} (?:related|connected|linked)$",
    rf"^what(?:'s| is| are) the (?:relationship|relation|connection|link)s? between {_NP} and {_NP}$",
    rf"^what (?:connects|links|relates) {_NP} (?:and|to|with) {_NP}$",
    rf"^what do {_NP} and {_NP} have in common(?: .*)?$",
))
COMPARE = tuple(re.compile(p, re.IGNORECASE) for p in (
    rf"^compare (?:the )?(?:studios?|episodes?|episode counts?|volumes?|years?|release years?|"
    rf"lengths?) (?:behind|of|for) {_NP} (?:and|with|to|vs\.?|versus) {_NP}(?:: .*)?$",
    rf"^compare {_NP} (?:and|with|to|vs\.?|versus) {_NP}(?:: .*)?$",
    rf"^(?:what(?:'s| is| are) the )?differences? between {_NP} and {_NP}$",
    rf"^{_NP} (?:vs\.?|versus) {_NP}(?:: .*)?$",
    rf"^(?:which|what) (?:one )?(?:has|had|is|was|came out|aired|ran|started) [\w ]+?, {_NP} or {_NP}$",
    rf"^(?:did|does|is|was|were) {_NP} or {_NP} (?:have|has|had|come|air|run|start)\b.*$",
))
# The attribute a comparison asks about, by its wording (first match wins; none: every difference).
COMPARE_FIELDS = (
    (re.compile(r"\bstudios?\b|\banimat", re.I), "studios"),
    (re.compile(r"\bvolumes?\b", re.I), "volumes"),
    (re.compile(r"\bepisodes?\b|\blonger\b|\bshorter\b", re.I), "episode_count"),
    (re.compile(r"\bfirst\b|\bearlier\b|\bolder\b|\bnewer\b|\brecent\b|\bcame out\b|\baired\b|\byears?\b|"
                r"\breleased\b", re.I), "year"),
)
TITLE_LOOKUP = tuple(re.compile(p, re.IGNORECASE) for p in (
    rf"^what (?:is|are|was) {_NP} called in (?:japanese|romaji)(?: \(romaji\))?$",
    rf"^what is the (?:japanese|romaji|native) (?:title|name) of {_NP}$",
))
LOOKUP = TITLE_LOOKUP + tuple(re.compile(p, re.IGNORECASE) for p in (
    rf"^(?:tell me (?:about|more about)|give me (?:some )?info(?:rmation)? (?:on|about)|info on|about|describe|"
    rf"explain|what do you know about|who or what is|who or what are) {_NP}$",
    rf"^(?:who|what) (?:is|are|was|were) {_NP}'s? (?:powers?|abilities|ability|techniques?|quirks?|story|plot|"
    rf"personality|role|job|goal)$",
    rf"^is there (?:an? )?(?:character|anime|manga|studio|person) (?:named|called) {_NP}$",
    rf"^(?:who is|who's|who are|what is|what's|what are|what was|who was) {_NP}(?: about)?$",
))


@dataclass(slots=True)
class Analysis:
    """What a question asks: the names to resolve, the hops to follow, what to read at the end."""

    intent: Intent
    mentions: list[str]
    types: dict[str, tuple[EntityType, ...]] = field(default_factory=dict)
    years: dict[str, int] = field(default_factory=dict)  # a year that picks one reading of a name
    hops: list[Hop] = field(default_factory=list)
    attr: Attr | None = None
    compare_field: str | None = None
    role: str | None = None  # a staff role an aggregate counts
    fmt: str | None = None  # a format an aggregate counts
    filter: Filter | None = None


def _add(a: Analysis, p: Phrase) -> None:
    a.mentions.append(p.name)
    a.types[p.name] = p.types
    if p.year:
        a.years[p.name] = p.year


def _frame(q: str) -> Analysis | None:
    for frame in FRAMES:
        m = frame.pattern.match(q)
        if m is None:
            continue
        np = [g for i, g in enumerate(m.groups(), 1) if g and i not in {
            frame.pattern.groupindex.get(k) for k in ("verb", "noun", "role", "fmt")}]
        if not np:
            continue
        phrase = noun_phrase(np[-1], frame.types)
        hops = list(frame.hops)
        words = m.groupdict()
        if words.get("verb") or words.get("noun"):
            hops.append(Hop(("staff",), staff_roles(words.get("verb") or words.get("noun") or "")))
        a = Analysis(intent=frame.intent, mentions=[], hops=[*phrase.hops, *hops], attr=frame.attr,
                     role=_ROLE_WORDS.get((words.get("role") or "").lower()),
                     fmt=_FMT.get((words.get("fmt") or "").lower()))
        if a.attr == "count" and a.role:
            a.hops.append(Hop(("worked_on",), (a.role,), node_types=("anime",)))
        _add(a, phrase)
        return a
    return None


def analyze(question: str) -> Analysis:
    """The plan of ``question``; unknown shapes become a lookup of the whole question."""
    q = " ".join(question.split()).rstrip("?.! ").strip()
    for pattern in RELATION:
        if m := pattern.match(q):
            a = Analysis(intent="relation", mentions=[])
            for g in m.groups():
                _add(a, noun_phrase(g, RELATION_TYPES))
            return a
    for pattern in COMPARE:
        if m := pattern.match(q):
            a = Analysis(intent="compare", mentions=[])
            for g in m.groups():
                _add(a, noun_phrase(g, ("anime", "manga", "character", "studio", "person")))
            a.compare_field = next((f for rx, f in COMPARE_FIELDS if rx.search(q)), None)
            return a
    if framed := _frame(q):
        return framed
    if f := parse_filter(q):
        return Analysis(intent="filter", mentions=[], filter=f)
    for pattern in LOOKUP:
        if m := pattern.match(q):
            a = Analysis(intent="lookup", mentions=[])
            # a question about a title ("called in Japanese") is about a work, the anime first
            _add(a, noun_phrase(m.group(1), WORK if pattern in TITLE_LOOKUP else ANY_TYPE))
            return a
    rest = clean(q)
    a = Analysis(intent="lookup", mentions=[])
    if rest:
        _add(a, noun_phrase(rest, ANY_TYPE))
    return a


__all__ = ["ANY_TYPE", "Analysis", "Attr", "Hop", "Intent", "analyze", "clean"]
