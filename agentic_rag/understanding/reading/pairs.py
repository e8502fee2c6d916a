"""Pairs: a question naming two entities asks how they are related or compares them (or checks a guess)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from agentic_rag.protocol import LinkedMention
from agentic_rag.protocol.reading import Analysis, Hop
from agentic_rag.protocol.vocabulary import EntityType
from agentic_rag.understanding import cues as C
from agentic_rag.understanding.reading.coerce import _pick_type
from agentic_rag.understanding.reading.focus import _Question
from agentic_rag.understanding.reading.hops import APPEARS, APPEARS_MANGA, STUDIO, _answer_type
from agentic_rag.understanding.reading.names import _add, _readings, _type_word
from agentic_rag.understanding.reading.relations import _staff
from agentic_rag.understanding.reading.words import _Words

MAX_COMPARED = 10  # works one comparison ranks


Pair = Literal["relation", "compare"]
_PEOPLE: frozenset[EntityType] = frozenset(("character", "person"))
_ORDERED = C.EPISODES | C.VOLUMES | C.YEAR | C.STUDIO  # what two works are compared on


@dataclass(frozen=True, slots=True)
class _Two:
    """Two names: the words around them, their readings, what is typed between them."""

    w: _Words
    kinds: list[set[EntityType]]
    between: str

    @property
    def works(self) -> bool:
        return all(k & {"anime", "manga", "studio"} for k in self.kinds[:2])

    @property
    def people(self) -> bool:
        return all(k & _PEOPLE for k in self.kinds[:2])

    @property
    def titles(self) -> bool:
        return all(k & {"anime", "manga"} for k in self.kinds[:2])

    def joined(self, word: str) -> bool:
        """Whether the words join two things with ``word`` ("X or Y")."""
        return f" {word} " in self.w.text


def _compared_by_sign(x: _Two) -> bool:
    """"DBZ > Shippuden eps?", "AoT s1 & JJK s1 same studio?"."""
    w = x.w
    return x.works and bool(re.search(r"[<>≥≤]|\bvs\b", x.between) or (w.set & {"same", "different"} and (
        w.any(C.STUDIO | C.EPISODES | C.VOLUMES | C.YEAR | C.DIRECT | C.MUSIC | C.WRITE))))


def _compared_by_words(x: _Two) -> bool:
    """"compare X and Y", "is X longer than Y", "how is X different from Y", "X or Y, which came out first"."""
    w = x.w
    return w.any(C.COMPARE) or w.has("different from", "different than", "different to") or (
        w.any(C.COMPARATIVE) and (x.joined("or") or "than" in w.set or (
        x.works and (x.joined("and") or not x.between.strip(" ,"))))) or (
        x.joined("or") and ("first" in w.set or w.has(*C.CAME_OUT_PHRASES)))


_FIRST_LAST = frozenset(("first", "earliest", "oldest", "newest", "latest"))


def _which_first(x: _Two) -> bool:
    """"which of A, B and C came out first", "which of these is the most recent": the works ranked by when."""
    w = x.w
    return x.titles and "which" in w.set and (bool(w.set & _FIRST_LAST) or w.has("most recent")) and (
        w.any(C.YEAR) or w.has(*C.CAME_OUT_PHRASES) or bool(w.set & (_FIRST_LAST - {"first"})) or
        w.has("most recent"))


# How two names are read, the first rule that holds; none: the question is about one of them.
PAIR_RULES: tuple[tuple[str, Callable[[_Two], bool], Pair], ...] = (
    ("sign or same", _compared_by_sign, "compare"),
    ("works joined by &", lambda x: "&" in x.between and x.works and x.w.any(_ORDERED), "compare"),
    ("compare words", _compared_by_words, "compare"),
    ("before or after", lambda x: x.works and x.w.any(C.BEFORE_AFTER) and (  # "did X air before Y"
        x.w.any(C.YEAR | C.FOUNDED | C.ENDED) or x.w.has(*C.CAME_OUT_PHRASES)), "compare"),
    ("which came first", _which_first, "compare"),
    ("worked on both", lambda x: x.works and x.w.any(C.WORKED | C.BOTH), "relation"),
    ("related", lambda x: x.w.any(C.RELATED) or (x.w.any(C.FAMILY | C.MENTOR) and x.people), "relation"),
    ("two people", lambda x: x.people and not x.titles, "relation"),
    ("which one", lambda x: x.joined("or") and (x.w.any(_ORDERED) or x.w.has(*C.WHICH_ONE_PHRASES)), "compare"),
    ("two titles", lambda x: x.joined("and") and x.titles and x.w.any(_ORDERED), "compare"),
)


def _pair(w: _Words, kinds: list[set[EntityType]], between: str = "") -> Pair | None:
    """relation or compare, for a question naming two entities (``between``: what is typed between them);
    None: it is about one of them."""
    x = _Two(w, kinds, between)
    return next((pair for _, when, pair in PAIR_RULES if when(x)), None)


# a question that checks a guess: "X was Y right?", "isn't X by Y?", "was X done by Y"
_YES_NO = re.compile(r"\b(?:right|correct|true|isn'?t it|wasn'?t it|no)\s*\?|"
                     r"^\W*(?:was|is|did|does|were|isn'?t|wasn'?t)\b", re.IGNORECASE)


def _partner_type(compared: list[LinkedMention]) -> EntityType | None:
    """The work type a relation's other name has, when that name is only one kind of work ("what does Jaco the
    Galactic Patrolman, a manga, have to do with Dragon Ball": Dragon Ball's manga); None when none is."""
    works = [{c.entity.entity_type for c in m.candidates} & {"anime", "manga"} for m in compared]
    single = [next(iter(t)) for t in works if len(t) == 1]
    return single[0] if len(set(single)) == 1 and any(len(t) > 1 for t in works) else None


_OR = re.compile(r"\s*,?\s*or\s+", re.IGNORECASE)


_STAFF_WORDS = frozenset(("staff", "worked", "work", "crew"))  # people credited on both ("share a staff member")


def _any_reading(m: LinkedMention) -> set[EntityType]:
    """Every type a mention's name or alias reads as (not its best readings alone)."""
    return {c.entity.entity_type for c in m.candidates if c.match in ("exact", "alias")}


def _works_asked_of_people(w: _Words) -> bool:
    """"which anime do X and Y appear in", "what shows are X and Y both in": works asked, by appearing in them, with
    no relation between the two said."""
    return bool(w.any(C.WORKS) and w.set & {"which", "what"} and w.set & {"appear", "appears", "appeared", "in"}
                and not w.any(C.RELATED | C.FAMILY | C.MENTOR | C.STUDENTS | C.ALLY | C.ENEMY | C.RIVAL | C.TEAMMATE
                              | C.COMPARE | C.COMPARATIVE | C.STAFF_NOUNS | C.STAFF_VERBS | C.MADE))


def _read_pair(q: _Question) -> Analysis | None:
    """Two names related or compared ("how are X and Y related", "which is longer, X or Y")."""
    question, w, tokens, mentions = q.text, q.w, q.tokens, q.mentions
    kinds = q.kinds
    if len(mentions) >= 3 and not kinds[0] & _PEOPLE and all(k & _PEOPLE for k in kinds[1:3]) and w.any(
            C.RELATED) and re.search(r"[,:]", question[mentions[0].end:mentions[1].start]):
        # "In MHA, how are Shoto and Dabi connected?": a work named, then set apart, before two people asked
        # related sets the scene; they are the pair
        mentions, kinds = mentions[1:], kinds[1:]
    # "In X, who's the bigger threat to Vegeta: Jiren or Beerus?": two names joined by "or" after the others are
    # the pair asked to choose between
    joined = next((i for i in range(1, len(mentions) - 1)
                   if _OR.fullmatch(question[mentions[i].end:mentions[i + 1].start])
                   and re.search(r"[:\u2014\u2013]|\s-\s", question[mentions[i - 1].end:mentions[i].start])), None)
    if joined is not None:
        mentions, kinds = mentions[joined:], kinds[joined:]
    widened = len(mentions) >= 2 and _pair(w, kinds, question[mentions[0].end:mentions[1].start]) is None and \
        w.any(_STAFF_WORDS) and _pair(w, wide := [_any_reading(m) for m in mentions], "") == "relation"
    if widened:
        kinds = wide  # "do frieren and death note share a staff member": the titles, though "Frieren" is a name too
    if len(mentions) == 2 and all(k & {"character"} for k in kinds) and _works_asked_of_people(w):
        # "which anime do kushina and minato appear in": each one's works, side by side (not how they are related)
        hop = APPEARS_MANGA if "manga" in w.set and not w.set & {"anime", "show", "series", "tv"} else APPEARS
        a, second = Analysis(intent="chain", mentions=[], hops=[hop]), Analysis(intent="chain", mentions=[], hops=[hop])
        _add(a, tokens, mentions[0], "character", fixed=True)
        _add(second, tokens, mentions[1], "character", fixed=True)
        a.more = [second]
        return a
    if len(mentions) >= 2 and (pair := _pair(w, kinds, question[mentions[0].end:mentions[1].start])) is not None:
        a = Analysis(intent=pair, mentions=[])
        people = all(k & {"character", "person"} for k in kinds[:2]) and not widened
        # two people are related as people; a name that is only a work makes the pair about works
        wanted: tuple[EntityType, ...] = ("character", "person", "anime", "manga", "studio") \
            if pair == "relation" and people else ("anime", "manga", "studio", "character", "person")
        # "of the Death Note, Bleach and Naruto manga, which began first": every work named is compared
        compared = mentions[:2] if pair == "relation" or not all(k & {"anime", "manga", "studio"} for k in kinds) \
            else mentions[:MAX_COMPARED]
        qualified = [_type_word(tokens, m)[0] for m in compared]
        # "which manga ...", "... volumes", "the X and Y manga": one type word speaks for both names
        shared = next((t for t in qualified if t), None) or _answer_type(w) or (
            "manga" if pair == "compare" and w.any(C.VOLUMES | C.MAGAZINE) else None) or (
            _partner_type(compared) if pair == "relation" else None)
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
            if a.compare_field == "studios" and len(a.mentions) >= 3 and all(
                    a.types[m][0] == "anime" for m in a.mentions):
                # "what studio made A, B and C", "did A, B and C have the same studio": no order to put them in,
                # each one's studio (as "who wrote A, B and C" reads)
                a.intent, a.hops, a.together, a.compare_field = "chain", [STUDIO], True, None
        elif all(k & {"anime", "manga"} for k in kinds[:2]) and (w.any(C.WORKED) or w.has(*C.WORKED_PHRASES)):
            # "someone who worked on both": the path runs through the staff (only through the people credited where
            # the words say the work: "share a staff member", "worked on both"; "can someone explain" says none)
            a.hops = [Hop(("staff", "worked_on"))] if w.any(_STAFF_WORDS) else [Hop(("staff",))]
        return a
    return None


_FORM_WORDS = {w: t for w, t in C.TYPE_WORD.items() if t in ("anime", "manga")}  # a type word of either form
_WHEN_COMPARED = frozenset(("first", "before", "after", "earlier", "later", "older", "newer", "sooner"))


def _forms(q: _Question) -> Analysis | None:
    """One title's two forms set side by side ("Frieren: which came out first, the manga or the anime?", "did the
    evangelion manga start before the tv anime?"): the title's manga and its anime compared by year."""
    if len(q.mentions) != 1 or not q.w.set & _WHEN_COMPARED:
        return None
    m = q.mentions[0]
    said = {_FORM_WORDS[t.key] for t in q.tokens if t.key in _FORM_WORDS}
    kinds: tuple[EntityType, EntityType] = ("manga", "anime")
    forms = {t: [c for c in m.candidates if c.entity.entity_type == t] for t in kinds}
    if said != {"manga", "anime"} or not all(forms.values()):
        return None
    a = Analysis(intent="compare", mentions=[], compare_field="year")
    for t, cands in forms.items():
        _add(a, q.tokens, m.model_copy(update={"text": f"{m.text} {t}", "candidates": cands}), t, fixed=True)
    return a


def _guess(q: _Question) -> Analysis | None:
    """A guess at a work's studio, checked by asking for it ("bebop was sunrise right?")."""
    whole, w, tokens, mentions = q.whole, q.w, q.tokens, q.mentions
    if len(mentions) >= 2 and _YES_NO.search(whole) and not w.any(C.OTHER) and not C.HOW_MANY.search(w.text):
        # "chainsaw man anime was ufotable right?", "is bebop by sunrise or bones?": a guess at a work's studio is
        # checked by asking for it (the answer names the studio that did, whichever it is)
        by_studio = [m for m in mentions if _readings(m) == {"studio"}]
        guessed = [m for m in mentions if m not in by_studio and "anime" in _readings(m)]
        if by_studio and len(guessed) == 1 and len(by_studio) + 1 == len(mentions):
            a = Analysis(intent="chain", mentions=[], hops=[STUDIO])
            _add(a, tokens, guessed[0], "anime", fixed=True)
            return a
    return None
