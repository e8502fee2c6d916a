"""Relations: the hops the words ask for, as ordered tables of rules (first match wins in each group), each
rule a named predicate over the words and the hops it yields."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass

from agentic_rag.protocol.reading import Hop
from agentic_rag.protocol.vocabulary import EDGE_WORDS, EntityType, hop_range
from agentic_rag.understanding import cues as C
from agentic_rag.understanding.cues import staff_roles
from agentic_rag.understanding.reading.hops import (
    ADAPTATIONS,
    APPEARS,
    APPEARS_MANGA,
    AUTHORS,
    CAST,
    FAMILY,
    MAIN_CAST,
    MENTORS,
    PREQUEL,
    SEQUEL,
    SEQUEL_CHAIN,
    SOURCE,
    STUDENTS,
    STUDIO,
    STUDIO_WORKS,
    _answer_type,
)
from agentic_rag.understanding.reading.words import _Words

_PLURAL_FORMATS = frozenset(("movies", "films", "ovas", "specials"))
# a second step along the sequels, said of the first ("what is next, and then after that")
_SEQUEL_AGAIN = re.compile(r" sequel (?:of|to) (?:the|its|that) sequel | (?:and|then) (?:then )?after that ")
# "who are the main people in X", "the important guys of X": the people of a work are its characters
_PEOPLE_IN = re.compile(r"\bwho\b.*\b(?:people|folks|guys|ones)\s+(?:in|of|from)\b")
# the one a work is about, asked of the work ("who's the main character of mob psycho 100", "who is the protagonist"),
# not a work picked by who it is about ("is there a bleach movie where hitsugaya is the main guy")
_MAIN_ROLE = re.compile(r"\bwho(?:'s|’s|se)?\b.*(?:\bmain\s+(?:character|protagonist|guy|girl|hero|heroine)\b|"
                        r"\bprotagonists?\b|\bmcs?\b|\bheroine\b)")
_WORK_TYPES = frozenset(("anime", "manga", "franchise"))


# The credit the words ask for, the first that holds: a role's cue words, and the hop to its people.
STAFF_RULES: tuple[tuple[str, Callable[[_Words], bool], Hop], ...] = (
    ("director", lambda w: w.any(C.DIRECT), Hop(("staff",), staff_roles("director"))),
    ("music", lambda w: w.any(C.MUSIC), Hop(("staff",), staff_roles("music"))),
    ("design", lambda w: w.any(C.DESIGN) and "character" in w.text, Hop(("staff",), staff_roles("design"))),
    ("script", lambda w: w.any(C.SCRIPT), Hop(("staff",), staff_roles("script"))),
    ("story and art", lambda w: w.any(C.DRAW) and w.any(C.WRITE | C.CREATE), AUTHORS),
    ("art", lambda w: w.any(C.DRAW), Hop(("staff",), staff_roles("drew"))),
    ("story", lambda w: w.any(C.WRITE | C.CREATE), Hop(("staff",), staff_roles("wrote"))),
)


def _staff(w: _Words) -> Hop | None:
    return next((hop for _, when, hop in STAFF_RULES if when(w)), None)


def _staff_roles_asked(w: _Words) -> list[Hop]:
    """Every credit the words ask for ("the director and composer of X"), in a fixed order."""
    cues = ((C.DIRECT, "director"), (C.MUSIC, "music"), (C.SCRIPT, "script"))
    hops = [Hop(("staff",), staff_roles(role)) for cue, role in cues if w.any(cue)]
    if w.any(C.DESIGN) and "character" in w.text:
        hops.append(Hop(("staff",), staff_roles("design")))
    return hops


@dataclass(slots=True)
class _Asked:
    """What the rules read: the words, the anchor's types, the words after it (when it is the subject of its own
    verb), the answer's type word, and the hops the groups before have yielded."""

    w: _Words
    types: set[EntityType]
    after: frozenset[str]
    answer: EntityType | None
    hops: list[Hop]

    @property
    def timeless(self) -> bool:
        """"before", "after" said of a person or a studio are times, not sequels."""
        return bool(self.types) and self.types <= {"person", "studio"}


@dataclass(frozen=True, slots=True)
class Rule:
    """One reading of the words: when it holds, the hops it yields (fixed hops, or made from the words)."""

    name: str
    when: Callable[[_Asked], bool]
    hops: tuple[Hop, ...] | Callable[[_Asked], list[Hop]]

    def yields(self, x: _Asked) -> list[Hop]:
        return list(self.hops) if isinstance(self.hops, tuple) else self.hops(x)


def _cue(family: frozenset[str]) -> Callable[[_Asked], bool]:
    return lambda x: x.w.any(family)


def _first_match(rules: tuple[Rule, ...], x: _Asked) -> list[Hop]:
    """The hops of the first rule that holds (none: no hops)."""
    return next((r.yields(x) for r in rules if r.when(x)), [])


# -- along the works' order: sequels, prequels, seasons, side stories

LAST_IN_CHAIN = Hop(("sequel",), kind="k_hop", include_start=True, last=True)
WHOLE_CHAIN = Hop(("sequel",), kind="k_hop", include_start=True)
LAST_APPEARANCE = dataclasses.replace(APPEARS, last=True)
SIDE_STORIES = Hop(("side_story", "spinoff"), node_types=("anime",))
OTHER_VERSIONS = Hop(("alternative_version",), node_types=("anime",))


def _last_season(x: _Asked) -> bool:
    return bool(C.LAST_SEASON.search(x.w.text)) and not x.w.any(C.EPISODES)


def _sequel_said_of_anchor(x: _Asked) -> bool:
    """"X is a sequel to what", "X is the prequel to which show": the anchor is the subject."""
    return bool(x.types & {"anime"} and x.after & {"to", "of"} and x.after & {"sequel", "continuation", "prequel"})


def _anchor_follows(x: _Asked) -> bool:
    """"which anime does X follow on from", "does X come after something": X is the later one."""
    return bool((x.w.any(C.PREQUEL) and not x.timeless) or (x.types & {"anime"} and (
        (x.after & C.FOLLOWS and "by" not in x.after) or ("after" in x.after and x.after & {"come", "came", "comes"}))))


def _other_version(x: _Asked) -> bool:
    return bool("anime" in x.types and (x.w.any(C.REMAKE) or C.OTHER_VERSION.search(x.w.text)) and not (
        x.w.any(C.ADAPTATION | C.SOURCE) or x.w.has(*C.ADAPTED_FROM_PHRASES) or x.w.set & {"adapted", "based"}))


def _next_one(x: _Asked) -> bool:
    # "does one punch man have a s2": a season not linked to the name is what follows
    return bool((x.w.any(C.SEQUEL) and not x.timeless) or (C.SEASON_TAG.search(x.w.text) and "anime" in x.types))


ORDER_RULES: tuple[Rule, ...] = (
    # "the last mha season", "which season is the latest one": the end of the sequel chain
    Rule("last season", lambda x: _last_season(x) and "anime" in x.types, (LAST_IN_CHAIN,)),
    Rule("last season with", lambda x: _last_season(x) and x.types == {"character"},
         (LAST_APPEARANCE,)),  # "the final season of the anime with Deku"
    Rule("all seasons", lambda x: bool(C.ALL_SEASONS.search(x.w.text)), (WHOLE_CHAIN,)),
    # (the films "in order": the franchise's films, which are listed by year)
    Rule("in order", lambda x: bool((C.IN_ORDER.search(x.w.text) or x.w.any(C.ORDER))
                                    and not x.w.set & _PLURAL_FORMATS), (SEQUEL_CHAIN,)),
    Rule("sequel to what", _sequel_said_of_anchor, lambda x: [SEQUEL if "prequel" in x.after else PREQUEL]),
    Rule("prequel", _anchor_follows, (PREQUEL,)),
    # "the sequel of its sequel", "what do i watch next and then after that": two steps
    Rule("sequel", _next_one, lambda x: [SEQUEL, SEQUEL] if _SEQUEL_AGAIN.search(x.w.text) else [SEQUEL]),
    Rule("side story", lambda x: "side" in x.w.set or "spinoff" in x.w.set, (SIDE_STORIES,)),
    # "did the 1999 hxh anime get a remake", "is there another version of X" (not "adapted from the Murata remake")
    Rule("other version", _other_version, (OTHER_VERSIONS,)),
)

# -- between a manga and its anime

SOURCE_RULES: tuple[Rule, ...] = (
    Rule("manga source", lambda x: bool("manga" in x.w.set and x.w.any(C.SOURCE) and x.types & {"anime", "character"}),
         (SOURCE,)),
    Rule("anime adaptation", lambda x: "anime" in x.w.set and x.w.any(C.ADAPTATION | C.SOURCE)
         and "manga" in x.types, (ADAPTATIONS,)),
    # "which manga is X based on", "X's source material, who made it"
    Rule("based on", lambda x: bool(not x.hops and x.types & {"anime"} and "manga" not in x.types and (
        x.answer == "manga" or x.w.set & {"source", "based"} or x.w.has(*C.ADAPTED_FROM_PHRASES))), (SOURCE,)),
    # "did the manga X ever get an anime": its adaptations
    Rule("got an anime", lambda x: bool(not x.hops and x.types == {"manga"} and (
        x.answer == "anime" or x.w.set & {"anime", "tv", "show"} or x.w.any(C.ADAPTATION))), (ADAPTATIONS,)),
)

# -- the final hop: who made it, who is in it, who someone is to someone

OTHER_STUDIO_WORKS = dataclasses.replace(STUDIO_WORKS, exclude_seen=True)
# the edges between characters, each asked by its cue words (the vocabulary's names)
PEER_HOPS: dict[str, Hop] = {edge: Hop((edge,)) for edge in C.PEER_EDGES if edge in EDGE_WORDS}


def _studio_works(x: _Asked) -> bool:
    """"everything CloverWorks animated" (not "when was that studio founded")."""
    w = x.w
    return x.types == {"studio"} and w.any(C.STUDIO | C.MADE | C.WORKS) and not (
        w.any(C.FOUNDED) and not w.any(C.MADE | C.WORKS))


_ANIMATE = frozenset(("animate", "animates", "animated", "animating", "do", "done", "produce"))


def _studio(x: _Asked) -> list[Hop]:
    w = x.w
    # "what else did X's studio make", "what else did the studio of X animate" (the verb a studio does: animating)
    made = w.any(C.MADE) or bool(w.set & _ANIMATE)
    if made and not w.any(C.FOUNDED) and (w.has(*C.OTHER_WORKS_PHRASES) or x.answer == "anime"):
        return [STUDIO, OTHER_STUDIO_WORKS]
    return [STUDIO]


def _own_credit(x: _Asked) -> tuple[tuple[str, ...], list[Hop]]:
    """The credit a person's own verb names ("X wrote ..."), and the others the words ask for."""
    own = next((staff_roles(v) for v in x.after if v in C.STAFF_VERBS), ())
    return own, [h for h in _staff_roles_asked(x.w) if h.roles != own] if own else []


def _another_credit(x: _Asked) -> bool:
    """"tsugumi ohba wrote a manga that became an anime - who scored the anime?"."""
    return bool(x.types == {"person"} and x.w.set & {"who", "whom"} and _own_credit(x)[1])


def _another_credit_hops(x: _Asked) -> list[Hop]:
    # the person's own credit leads to the works, and another credit of theirs is asked
    own, asked = _own_credit(x)
    if set(own) & {"story", "story_and_art", "art", "original_creator"}:
        return [Hop(("worked_on",), own, node_types=("manga",)), ADAPTATIONS, asked[0]]
    return [Hop(("worked_on",), own, node_types=("anime",)), asked[0]]


def _person_credits(x: _Asked) -> bool:
    """"which anime did Hiroshi Seko write": the person is the subject, the works are asked for."""
    return bool(_staff(x.w) and x.types == {"person"} and (_person_acts(x.w) or x.after & C.STAFF_VERBS))


def _person_credits_hops(x: _Asked) -> list[Hop]:
    w, staff = x.w, _staff(x.w)
    assert staff is not None
    kind = x.answer if x.answer in ("anime", "manga") else None
    roles = staff.roles
    if kind != "manga" and "story" in roles:
        roles += ("series_composition",)  # an anime's writer is its series composer ("what has X written")
    on_anime = set(roles) <= {"director", "chief_director", "music", "character_design", "series_composition"}
    hops = [Hop(("worked_on",), roles, node_types=("anime",) if on_anime else (kind,) if kind else (),
                exclude_seen=w.any(C.OTHER))]
    if on_anime and "manga" in w.set:
        # "the magazine of the manga that became the anime X directed": on from the anime to its source,
        # and to its authors when they are asked ("who made the manga behind the anime X directed")
        hops.append(SOURCE)
        if w.set & {"who", "whom"} and w.any(C.MADE | C.WRITE | C.CREATE | C.DRAW):
            hops.append(AUTHORS)
    return hops


def _credit_hops(x: _Asked) -> list[Hop]:
    w, staff = x.w, _staff(x.w)
    assert staff is not None
    # "who wrote X": its writer, and its artist when another person drew it (a name a reader expects)
    hops = [AUTHORS if staff.roles == staff_roles("wrote") else staff]
    # "what other anime did the director of X direct", "what else did X's director direct", "X's composer
    # also scored another show": the person's other credits in that role
    if (w.any(C.OTHER) or "also" in w.set) and (w.any(C.WORKS) or _said_twice(w)):
        other: EntityType = "manga" if w.has(*C.OTHER_MANGA_PHRASES) else "anime"
        hops.append(Hop(("worked_on",), staff.roles, node_types=(other,), exclude_seen=True))
    return hops


def _mentors(x: _Asked) -> list[Hop]:
    w = x.w
    if sum(k in C.MENTOR for k in w.keys) >= 2 and " or " not in w.text and " and " not in w.text:
        return [MENTORS, MENTORS]  # "who taught Frieren's teacher": the mentor's mentor
    return [MENTORS]


def _where_character_appears(x: _Asked) -> bool:
    w = x.w  # "who is X in Y" asks who, not where
    return x.types == {"character"} and (w.any(C.WORKS) or (w.any(C.APPEAR) and not w.has(*C.WHO_IS_PHRASES))) \
        and not x.hops


def _appearances(x: _Asked) -> list[Hop]:
    w = x.w
    # "which manga is he in": the edge leads to both kinds of work, and the question names one
    works = APPEARS_MANGA if "manga" in w.set and not w.set & {"anime", "show", "series", "tv"} else APPEARS
    # "in which film is he the main character": only where X has a lead role
    return [dataclasses.replace(works, roles=("main",)) if w.any(C.MAIN) else works]


FINAL_RULES: tuple[Rule, ...] = (
    Rule("studio's works", _studio_works, (STUDIO_WORKS,)),
    Rule("studio", lambda x: (x.w.any(C.STUDIO) or x.w.has(*C.STUDIO_PHRASES)) and x.types != {"studio"}, _studio),
    Rule("another credit", _another_credit, _another_credit_hops),
    Rule("person's credits", _person_credits, _person_credits_hops),
    Rule("credit", lambda x: _staff(x.w) is not None, _credit_hops),
    # "X's students", "who did X train": X is the mentor
    Rule("students", lambda x: bool(x.w.any(C.STUDENTS) or (x.w.any(C.MENTOR_VERBS) and x.after & C.MENTOR_VERBS)),
         (STUDENTS,)),
    Rule("mentor", _cue(C.MENTOR), _mentors),
    *(Rule(edge, _cue(C.PEER_EDGES[edge]), (hop,)) for edge, hop in PEER_HOPS.items()),
    Rule("family", _cue(C.FAMILY), (FAMILY,)),
    Rule("cast", lambda x: x.w.any(C.CAST) or x.w.has(*C.CAST_PHRASES) or bool(_PEOPLE_IN.search(x.w.text)) or (
        bool(x.types & _WORK_TYPES) and not x.types & {"character", "person"} and bool(_MAIN_ROLE.search(x.w.text))),
         lambda x: [MAIN_CAST if x.w.any(C.MAIN) else CAST]),
    Rule("person's works", lambda x: bool(x.types & {"person"} and x.w.any(C.WORKS | C.MADE)),
         lambda x: [Hop(("worked_on",), exclude_seen=x.w.any(C.OTHER))]),
    Rule("studio's anime", lambda x: bool(x.types & {"studio"} and x.w.any(C.WORKS | C.MADE)), (STUDIO_WORKS,)),
    Rule("appears in", _where_character_appears, _appearances),
    # who made X (not "which films have been made for X"); who made its source: the manga's authors
    Rule("made by", lambda x: bool(x.w.any(C.MADE) and x.types & {"anime", "manga"} and not x.w.set & _PLURAL_FORMATS),
         lambda x: [AUTHORS if x.hops and hop_range(x.hops[-1].edges) == "manga" else Hop(("staff",))]),
)


def _relation(w: _Words, anchor_types: set[EntityType], after_anchor: frozenset[str] = frozenset()) -> list[Hop]:
    """The hops the words ask for, structural ones (sequel, source) before the final one (studio, staff): the
    first rule that holds in each group, in order."""
    x = _Asked(w, anchor_types, after_anchor, _answer_type(w), [])
    for rules in (ORDER_RULES, SOURCE_RULES, FINAL_RULES):
        x.hops += _first_match(rules, x)
    hops = x.hops
    if w.any(C.WHOSE) and hops and hop_range(hops[-1].edges) == "manga":
        hops.append(AUTHORS)  # "based on whose manga"
    if hops and hops[0] is APPEARS and C.FIRST_SEASON.search(w.text):
        hops[0] = Hop(APPEARS.edges, node_types=APPEARS.node_types, first=True)
    return hops


def _said_twice(w: _Words) -> bool:
    """Whether a staff role is named and an act asked of that person ("X's director ... direct", "X's series
    composition guy - what else did he write")."""
    return len(w.set & (C.DIRECT | C.MUSIC | C.DESIGN | C.SCRIPT | C.DRAW | C.WRITE | C.CREATE | C.MADE)) >= 2


def _person_acts(w: _Words) -> bool:
    """Whether a named person is the subject of the staff verb ("what did X direct"), not the answer's
    link to it ("who directed the adaptation of X's manga", "the composer of X's show")."""
    return not w.set & (C.WHOSE | {"who"}) and not any(f" {n} of " in w.text for n in C.STAFF_NOUNS)


