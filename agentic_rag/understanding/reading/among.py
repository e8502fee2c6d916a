"""Among: a choice among names the question lists, by a predicate, said or negated.

"which of these is NOT in Mob Psycho 100 III: Serizawa, Dimple, Shimazaki or Ritsu?", "out of jiraiya, iruka, shikamaru
and might guy, who isnt anyone's teacher?", "which of these were animated by mappa: ...". Three parts, each read by
method, none from a sentence:

- the list: names joined by commas, "or", "and"; after a colon or a dash, an item that links nothing is a name the
  catalog lacks, said so in the answer (as are the names linking reports unknown);
- the predicate: a relation to another name of the question, its edge taken from one table by the two names' types
  (:data:`TO_TARGET`: a character is in a work, a work was made by a studio or credits a person, ...); a relation to
  anyone ("anyone's teacher", "has a rival"); else a group the catalog has no entry for ("a hashira", "straw hats"),
  whose words a candidate's own record must say;
- a negation cue ("not", "isn't", "never", "none of"): the answer is the candidates the predicate fails for.

The planner tests the predicate for every candidate with the graph primitives; the answer is the set difference.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import get_args

from agentic_rag.protocol import EntityLinks, LinkedMention
from agentic_rag.protocol.reading import Among, Analysis, Hop
from agentic_rag.protocol.vocabulary import PREFERRED_RANGE, AnimeStaffRole, EntityType, MangaAuthorRole
from agentic_rag.understanding import cues as C
from agentic_rag.understanding.filters import YEAR_OPS, YEAR_SAID, status_of
from agentic_rag.understanding.reading.asides import _EXCEPT
from agentic_rag.understanding.reading.names import _add, _type_word
from agentic_rag.understanding.reading.relations import _staff
from agentic_rag.understanding.reading.words import _rest, _Words
from agentic_rag.understanding.text import Token, fold, tokenize

MAX_ITEM_WORDS = 4  # words an item of a list after a colon may run to and still be one name the catalog lacks
MAX_GROUP_WORDS = 4  # words a group the catalog has no entry for may run to ("league of villains")

# a negation cue; "not counting", "but not", "not including" leave something out of a sum instead (asides.py)
_NEGATION = re.compile(r"\b(?:not|no|nobody|never|none|neither|nor|isnt|wasnt|arent|werent|doesnt|didnt|dont|"
                       r"hasnt|havent|hadnt|aint|wont|cant|couldnt|missing|absent)\b|n['’]t\b", re.IGNORECASE)
_NOT_NEGATION = re.compile(r"\b(?:not (?:counting|including|the (?:anime|manga|movies?|films?|shows?))|but not|"
                           r"rather than|other than)\b", re.IGNORECASE)
# the question picks among the names it lists
_CHOOSING = re.compile(r"\b(?:which|who|whom|what)\b|\bout of\b|\bamong(?:st)?\b", re.IGNORECASE)
# ... said outright: the positive form ("which of these were animated by X") needs one of these
_OF_THESE = re.compile(r"\b(?:of|out of|among(?:st)?) (?:these|those|them|the following|the \w+ (?:below|above))\b|"
                       r"\bwhich ones?\b|\bwhich (?:(?:one|ones|two|three|four|five|\d) )?of\b|\bout of\b",
                       re.IGNORECASE)  # (not "which part of", "which season of": one work's parts)
_AMONG_THESE = re.compile(r"\b(?:of|out of|among(?:st)?) (?:these|those|them|the following)\b", re.IGNORECASE)
# a comparison among the names instead ("which of the two is longer", "the most episodes")
_COMPARING = re.compile(rf"\b(?:{'|'.join(sorted(C.COMPARATIVE | C.COMPARE))}|most|least|fewest|\w{{3,}}est)\b",
                        re.IGNORECASE)
# a list of names left out, right before it ("besides A and B")
_LEFT_OUT = re.compile(rf"(?:{_EXCEPT.pattern})\W*$", re.IGNORECASE)
# what stands between two items of a list
_SEPARATOR = re.compile(r"[\s,/&]*(?:\b(?:and|or|nor)\b[\s,]*)?(?:the\s+)?", re.IGNORECASE)
_FORM_SAID = re.compile(r"^\s*(?:tv\s+)?(?:series|show|anime|manga|movie|film|ova)\b", re.IGNORECASE)
_SPLIT = re.compile(r"\s*(?:,|/|&|\bor\b|\band\b|\bnor\b)\s*", re.IGNORECASE)
# where a list after a colon or a dash ends: a sentence's end (not the dot of "1.0")
_LIST_END = re.compile(r"[?!;]|\.(?=\s|$)")
_INTRO = re.compile(r":|\s[-–—]\s")

# the words the predicate's own words start after, and those stripped before and after them
_PREDICATE_START = frozenset(("which", "who", "whom", "what", "these", "those", "them", "one", "ones", "following",
                              "is", "are", "was", "were", "be", "been", "am", "isnt", "wasnt", "arent", "werent",
                              "not", "never", "t", "none", "neither", "doesnt", "didnt", "dont", "hasnt", "havent",
                              "does", "did", "do", "has", "have", "had"))
_ADVERBS = frozenset(("actually", "really", "even", "ever", "still", "also", "all", "truly", "technically"))
_LEADING = frozenset(("in", "of", "on", "from", "at", "part", "member", "members", "a", "an", "the", "one"))
_COPULAS = frozenset(("is", "are", "was", "were", "be", "been", "am", "isnt", "wasnt", "arent", "werent", "not",
                      "never", "t"))
_RANKING = frozenset(("most", "least", "best", "worst", "first", "last", "popular", "same"))
_JOINING = frozenset(("of", "the", "a", "an", "and"))  # inside a group's name ("league of villains")
_TRAILING = frozenset(("with", "to", "by", "for", "from", "in", "of", "at", "on", "about", "whether", "if", "anymore",
                       "then", "now", "right", "the", "a"))

# a relation to anyone: "anyone's teacher", "has a rival", "trained anybody"
_ANYONE = frozenset(("anyone", "anybody", "someone", "somebody", "any", "nobody", "noone", "no"))
_HAS = frozenset(("has", "have", "had", "got", "hasnt", "havent", "hadnt"))
_MENTOR_NOUNS = C.MENTOR - C.MENTOR_VERBS | {"mentor", "mentors"}
_FIGHTS = frozenset(("fought", "fights", "fight"))  # enemy cue words that are verbs, not what someone is


def _role_edges() -> dict[str, tuple[str, str]]:
    """Each role noun, and the edge from a candidate that says it: (when the candidate is one, when it has one)."""
    out: dict[str, tuple[str, str]] = {w: ("mentor_of", "student_of") for w in _MENTOR_NOUNS}
    out |= {w: ("student_of", "mentor_of") for w in C.STUDENTS}
    for edge, cue in C.PEER_EDGES.items():
        out |= {w: (edge, edge) for w in cue - _FIGHTS}
    return out | {w: ("family", "family") for w in C.FAMILY - {"married", "related"}}


ROLE_EDGES = _role_edges()


def _peer(keys: list[str], target_first: bool) -> Hop | None:
    """The edge between two characters the words name ("a student of X", "X's teacher", "trained by X")."""
    for i, k in enumerate(keys):
        if k in ROLE_EDGES:
            return Hop((ROLE_EDGES[k][1 if _HAS & set(keys[:i]) else 0],))
        if k in C.MENTOR_VERBS:  # "trained by X", "X trained": the candidate is the student
            return Hop(("student_of" if keys[i + 1:i + 2] == ["by"] or target_first else "mentor_of",))
    return None


_HopRule = Callable[[list[str], _Words, bool], Hop | None]


def _credit(edge: str, kind: EntityType) -> _HopRule:
    """A credit between a work of ``kind`` and a person, in the role the words name: none where no credit of that
    kind of work has that role ("drawn by" is a manga's credit)."""
    def rule(keys: list[str], w: _Words, target_first: bool) -> Hop | None:
        staff = _staff(w)
        roles = staff.roles if staff else ()
        if roles and not set(roles) & set(get_args(AnimeStaffRole if kind == "anime" else MangaAuthorRole)):
            return None
        return Hop((edge,), roles)
    return rule


# The predicate between a candidate and the question's other name, by their types: the edge followed from each
# candidate that must reach that name. (character, character) is read from a role word, or is no predicate.
TO_TARGET: dict[tuple[EntityType, EntityType], _HopRule] = {
    ("character", "anime"): lambda k, w, f: Hop(("appears_in",), node_types=("anime",)),
    ("character", "manga"): lambda k, w, f: Hop(("appears_in",), node_types=("manga",)),
    ("anime", "studio"): lambda k, w, f: Hop(("animated_by",)),
    ("studio", "anime"): lambda k, w, f: Hop(("animated",)),
    ("anime", "person"): _credit("staff", "anime"),
    ("manga", "person"): _credit("staff", "manga"),
    ("person", "anime"): _credit("worked_on", "anime"),
    ("person", "manga"): _credit("worked_on", "manga"),
    ("anime", "franchise"): lambda k, w, f: Hop(("part_of",)),
    ("manga", "franchise"): lambda k, w, f: Hop(("part_of",)),
    ("anime", "manga"): lambda k, w, f: Hop(("adapted_from",)),
    ("manga", "anime"): lambda k, w, f: Hop(("adapted_into",)),
    ("character", "character"): lambda k, w, f: _peer(k, f),
}


@dataclass(frozen=True, slots=True)
class _Item:
    """One item of a list: a linked name, or words that name something the catalog lacks."""

    start: int
    end: int
    text: str
    mention: LinkedMention | None = None


def _among(question: str, links: EntityLinks | None) -> Analysis | None:
    """The reading of a question that picks among names it lists by a predicate, or None."""
    if links is None or not _CHOOSING.search(question):
        return None
    # a negation cue outside the names ("Attack on Titan: No Regrets" negates nothing)
    words = _blank(_NOT_NEGATION.sub(lambda x: " " * len(x.group()), question), links.mentions)
    negation = _NEGATION.search(words)
    if negation is None and not _OF_THESE.search(question):
        return None
    if _COMPARING.search(question):
        return None  # "which of the two has more episodes": a comparison (pairs.py), not a choice by a predicate
    listed = _listed(question, links)
    named = [i.mention for i in listed if i.mention is not None]
    if len(listed) < 2 or (not named and not links.unknown):
        return None
    if _LEFT_OUT.search(question[:listed[0].start]):
        return None  # "who else is in X besides A and B": names left out of a list asked for (asides.py)
    among = Among(candidates=[], negated=negation is not None, unlisted=[i.text for i in listed if i.mention is None])
    a = Analysis(intent="among", mentions=[], among=among)
    if not named:
        return a  # every name listed is one the catalog lacks: that is the answer
    tokens = tokenize(question)
    others = [m for m in links.mentions if not listed[0].start <= m.start < listed[-1].end]
    read = _to_target(tokens, named, others, _rest(question, tokens, list(links.mentions)))
    if read is not None:
        target, target_type, kind, among.hop = read
        _add(a, tokens, target, target_type, fixed=True)
        among.target, among.said = a.mentions[-1], target.text
    else:
        kind = _kind(named)
        spans = _predicates(question, listed, negation)
        anyone = next((h for s in spans if (h := _to_anyone([t.key for t in tokenize(s)]))), None)
        among.hop = anyone if kind == "character" else None
        # a group said of the names, not negated, only where the question says it picks among them ("which of
        # these are straw hats"): "naruto or shippuden, which one ..., im gonna be stuck watching" names none
        group = next((g for s in spans if (g := _group(s)) is not None), None) \
            if negation is not None or _AMONG_THESE.search(question) else None
        work = _work_kind(question[:listed[0].start] + " " + question[listed[-1].end:], named, " ".join(spans))
        value = next((v for span in spans if (v := _value(span, work)) is not None), None) \
            if among.hop is None and work is not None else None
        if among.hop is None and value is not None:
            among.value, among.said = value
            kind = work or kind
        elif among.hop is None and group is None:
            return None
        elif among.hop is None and group is not None:
            among.said, among.group = group
    for m in named:
        _add(a, tokens, m, kind, fixed=True)
        among.candidates.append(a.mentions[-1])
        strong = _strong(m, kind)
        if len(strong) > 1:
            among.readings[a.mentions[-1]] = strong
    a.mentions = [*among.candidates, *([among.target] if among.target else [])]
    return a


def _blank(text: str, mentions: list[LinkedMention]) -> str:
    for m in mentions:
        text = text[:m.start] + " " * (m.end - m.start) + text[m.end:]
    return text


def _items(question: str, links: EntityLinks) -> list[_Item]:
    """The linked names and the unknown ones (where linking found them), left to right."""
    items = [_Item(m.start, m.end, m.text, m) for m in links.mentions]
    for name in links.unknown or []:
        at = question.find(name)
        if at >= 0 and not any(i.start <= at < i.end for i in items):
            items.append(_Item(at, at + len(name), name))
    return sorted(items, key=lambda i: i.start)


def _listed(question: str, links: EntityLinks) -> list[_Item]:
    """The items of the question's list: those after a colon or a dash, one per comma or "or", where every item is
    a name (an unlinked one is kept, as typed); else the longest run of names joined by commas, "or", "and"."""
    items = _items(question, links)
    for intro in _INTRO.finditer(question):
        end = _LIST_END.search(question, intro.end())
        listed = _chunks(question, intro.end(), end.start() if end else len(question), items)
        if listed is not None:
            return listed
    best: list[_Item] = []
    run: list[_Item] = []
    for item in items:
        # (the form an item is said with is the item's: "the Cowboy Bebop TV series, ...")
        between = _FORM_SAID.sub("", question[run[-1].end:item.start].lstrip(")"), count=1) if run else ""
        if run and _SEPARATOR.fullmatch(between) and re.search(r"[,/&]|\b(?:and|or|nor)\b", between):
            run.append(item)
        else:
            run = [item]
        best = run if len(run) > len(best) else best
    return best if len(best) >= 2 else []


def _chunks(question: str, lo: int, hi: int, items: list[_Item]) -> list[_Item] | None:
    """The items between ``lo`` and ``hi`` split at commas and "or", when every piece is one name: a linked or
    unknown one that fills it but for an article, or a few words no name matched (what the catalog lacks)."""
    out: list[_Item] = []
    at = lo
    cuts = [m for m in _SPLIT.finditer(question, lo, hi)
            if not any(i.start < m.start() < i.end for i in items)]  # never inside a name ("Brothers and Sisters")
    for end, nxt in [(m.start(), m.end()) for m in cuts] + [(hi, hi)]:
        piece = question[at:end].strip(" \t\"'()")
        start = question.find(piece, at) if piece else at
        at = nxt
        if not piece:
            continue
        inside = [i for i in items if start <= i.start and i.end <= start + len(piece) + 1]
        rest = [t.key for t in tokenize(piece) if t.key not in C.ARTICLES]
        if len(inside) == 1:
            extra = len(rest) - len(tokenize(inside[0].text))
            if extra > 1:
                return None  # "who directed X": words that ask, not a list
            out.append(inside[0])
        elif not inside and 0 < len(piece.split()) <= MAX_ITEM_WORDS and not set(rest) & C.CUES:
            out.append(_Item(start, start + len(piece), piece))
        else:
            return None
    return out if len(out) >= 2 and any(i.mention is not None for i in out) else None


def _strong(m: LinkedMention, kind: EntityType) -> tuple[str, ...]:
    """The entities of ``kind`` the name is typed as exactly (its name or an alias), best linked first."""
    return tuple(dict.fromkeys(c.entity.id for c in m.candidates
                               if c.entity.entity_type == kind and c.match in ("exact", "alias")))


def _kind(named: list[LinkedMention]) -> EntityType:
    """The type most of the listed names have (their best reading first)."""
    counts = Counter(t for m in named for t in dict.fromkeys(c.entity.entity_type for c in m.candidates))
    first = Counter(m.candidates[0].entity.entity_type for m in named if m.candidates)
    return max(counts, key=lambda t: (counts[t], first[t]))


def _to_target(tokens: list[Token], named: list[LinkedMention], others: list[LinkedMention],
               w: _Words) -> tuple[LinkedMention, EntityType, EntityType, Hop] | None:
    """The other name the predicate relates each candidate to, its type, the candidates' type and the edge: the
    nearest name (before the list first) whose type and the candidates' are in :data:`TO_TARGET`."""
    counts = Counter(t for m in named for t in dict.fromkeys(c.entity.entity_type for c in m.candidates))
    kinds = sorted((t for t, n in counts.items() if 2 * n >= len(named)),
                   key=lambda t: (-counts[t], t not in PREFERRED_RANGE.values()))  # the show first, on a tie
    keys = [t.key for t in tokens]
    for target in reversed(others):
        said, _ = _type_word(tokens, target)
        # the type a word beside it says, else the anime before its other readings (people mostly mean the show)
        readings = sorted(dict.fromkeys(c.entity.entity_type for c in target.candidates),
                          key=lambda t: t not in PREFERRED_RANGE.values())
        types = list(dict.fromkeys([*([said] if said else []), *readings]))
        first = next((i for i, t in enumerate(tokens) if t.start >= target.start), len(tokens))
        for target_type in types:
            for kind in kinds:
                rule = TO_TARGET.get((kind, target_type))
                hop = rule(keys, w, _said_first(keys, first)) if rule else None
                if hop is not None:
                    return target, target_type, kind, hop
    return None


def _said_first(keys: list[str], at: int) -> bool:
    """Whether the name at ``at`` is the subject of the verb after it ("which of these did Jiraiya train")."""
    return any(k in C.MENTOR_VERBS for k in keys[at + 1:at + 3])


def _predicates(question: str, listed: list[_Item], negation: re.Match[str] | None) -> list[str]:
    """Where the words that say what is tested may be: before the list (from its sentence's start), after it
    ("out of A, B and C, who isn't ..."), and after the negation cue when the list's sentence says nothing."""
    lo, hi = listed[0].start, listed[-1].end
    before = question[:lo]
    cut = max((m.end() for m in re.finditer(r"[.?!;](?=\s)", before)), default=0)
    spans = [re.sub(r"[\s:\-–—]+$", "", before[cut:])]
    end = _LIST_END.search(question, hi)
    spans.append(question[hi:end.start() if end else len(question)])
    if negation is not None:
        stop = _LIST_END.search(question, negation.end())
        spans.append(question[negation.start():stop.start() if stop else len(question)])
    return spans


# a record value a predicate may test: how a work is published or aired, when it came out, where it ran
_FORMAT_SAID = re.compile(r"\b(?:an?\s+)?(?P<f>movie|film|ova|special|tv (?:series|show|anime))s?\b", re.IGNORECASE)
_RAN_IN = re.compile(r"\b(?:serialized|serialised|published|ran|running|run|printed|came out)\s+in\b(?P<rest>.*)",
                     re.IGNORECASE)
# a run said to be over at the end of its clause ("still not done?", "isn't over yet"), not "done by a studio"
_OVER = re.compile(r"\b(?:done|over|complete)\b(?=\s*(?:yet|airing|running|publishing)?\s*(?:$|[?.!,;:]))",
                   re.IGNORECASE)
_STATUS_SAID = {"finished": "finished", "ongoing": "still running", "airing": "still airing"}


_WORK_WORD = re.compile(r"\b(?P<t>manga|mangas|comics?|anime|animes|shows?|series|movies?|films?)\b", re.IGNORECASE)


def _work_kind(head: str, named: list[LinkedMention], span: str) -> EntityType | None:
    """The kind of work the listed names are read as for a value of their records: the one the words before the
    list say ("which of these manga"), else the manga where the value is a magazine, else the reading most of
    them have (the anime on a tie); None when they are not works."""
    said = _WORK_WORD.search(head)
    kinds: list[EntityType] = []
    if said is not None:
        kinds.append("manga" if said.group("t").lower().startswith(("manga", "comic")) else "anime")
    if _RAN_IN.search(span):
        kinds.append("manga")
    counts: Counter[EntityType] = Counter(c.entity.entity_type for m in named for c in m.candidates
                                          if c.entity.entity_type in ("anime", "manga"))
    kinds += sorted(counts, key=lambda t: (-counts[t], t != "anime"))
    return next((k for k in kinds if counts[k] * 2 >= len(named)), None)


def _value(span: str, kind: EntityType) -> tuple[tuple[str, str, str | int], str] | None:
    """A value of a work's own record the predicate says, and how it is said: its run's status ("isn't finished",
    "still ongoing"), its format ("a movie"), where it ran ("serialized in Jump"), when it came out ("before
    2010"). None for what is no work."""
    if kind not in ("anime", "manga"):
        return None
    # (a negation is the question's, tested apart: "isn't finished" and "not yet finished" test "finished")
    plain = _OVER.sub("finished", re.sub(r"\bnot\b|n['’]t\b", " ", span, flags=re.IGNORECASE))
    if (status := status_of(plain)) is not None:
        return ("status", "eq", status), _STATUS_SAID[status]
    if kind == "manga" and (ran := _RAN_IN.search(span)) is not None:
        stop = re.search(r"[:?!;,]|\s[-–—]\s", ran.group("rest"))
        where = ran.group("rest")[:stop.start() if stop else None].strip(" .")
        if where:
            return ("magazine", "names", where), f"serialized in {where}"
    if (year := YEAR_SAID.search(span)) is not None:  # the catalog-wide filter's words and operators
        op = YEAR_OPS[year.group("op").lower()]
        word = year.group("op").lower()
        return ("year", op, int(year.group("y"))), f"from {'' if op == 'eq' else word + ' '}{year.group('y')}"
    if kind == "anime" and (f := _FORMAT_SAID.search(span)) is not None:
        fmt = f.group("f").lower()
        value = "tv" if fmt.startswith("tv") else "movie" if fmt == "film" else fmt
        return ("format", "eq", value), {"tv": "a TV series", "movie": "a film"}.get(value, f"an {value.upper()}"
                                                                                    if value == "ova" else "a special")
    return None


def _to_anyone(keys: list[str]) -> Hop | None:
    """A relation to anyone: "anyone's teacher", "has a rival", "never trained anybody", "a mentor"."""
    for i, k in enumerate(keys):
        role = ROLE_EDGES.get(k)
        near = set(keys[max(i - 2, 0):i + 3])
        if role is not None and (near & _ANYONE or (k in _MENTOR_NOUNS | C.STUDENTS and near & {"a", "an"})):
            return Hop((role[1 if _HAS & set(keys[:i]) else 0],))
        if k in C.MENTOR_VERBS and set(keys[i + 1:i + 3]) & _ANYONE:
            return Hop(("mentor_of",))
        if k in C.MENTOR_VERBS and keys[i + 1:i + 2] == ["by"] and set(keys[i + 2:i + 4]) & _ANYONE:
            return Hop(("student_of",))
    return None


def _group(span: str) -> tuple[str, tuple[str, ...]] | None:
    """A group the predicate names and the catalog has no entry for, as typed and as the words a record must say:
    the words after a copula or a negation ("is NOT a hashira", "are straw hats"), less a leading "in the", up to a
    name or a preposition before one ("wasnt in the 104th with eren" -> "in the 104th", ("104th",))."""
    tokens = tokenize(span)
    # (after the last copula or negation: "is not one of the Legendary Sannin" names the group after "one of the")
    after = max((i + 1 for i, t in enumerate(tokens) if t.key in _COPULAS), default=0) or max(
        (i + 1 for i, t in enumerate(tokens) if t.key in _PREDICATE_START), default=0)
    if not after or tokens[after - 1].key not in _COPULAS:
        return None  # "which of these came out first": no group is named
    words = tokens[after:]
    while words and words[0].key in _ADVERBS:
        words = words[1:]
    shown = words
    while words and words[0].key in _LEADING:
        words = words[1:]  # "in the", "a", "one of the", "member of"
    stop = next((i for i, t in enumerate(words) if t.key in _TRAILING - _JOINING), len(words))
    words = words[:stop]
    while words and words[-1].key in _TRAILING:
        words = words[:-1]
    group = tuple(fold(t.key) for t in words if t.key not in _JOINING)
    # (a cue word alone names a relation, "not a director"; beside other words it is a group's: "an s-class hero")
    if not group or len(words) > MAX_GROUP_WORDS or any(_ranking(g) for g in group) or all(g in C.CUES for g in group) \
            or \
            any(t.key in _PREDICATE_START | _ANYONE for t in words):
        return None
    return span[shown[0].start:words[-1].end], group


def _ranking(word: str) -> bool:
    """"older", "the longest", "most": a comparison, which is no group."""
    return word in C.COMPARATIVE or word in _RANKING or (len(word) > 4 and word.endswith("est"))
