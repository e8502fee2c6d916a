"""Parts: a message split into clauses that each ask something, read as one chain or as two readings."""

from __future__ import annotations

import re
from collections.abc import Callable

from agentic_rag.protocol import EntityLinks, LinkedMention
from agentic_rag.protocol.reading import Analysis, Hop
from agentic_rag.protocol.vocabulary import EntityType, hop_range
from agentic_rag.understanding.cues import TYPE_WORD
from agentic_rag.understanding.reading.ask import _ask
from agentic_rag.understanding.reading.catalog import _period
from agentic_rag.understanding.reading.coerce import _coerce, _fits_type
from agentic_rag.understanding.reading.words import _rest
from agentic_rag.understanding.text import (
    focus,
    tokenize,
)

MAX_PARTS = 4  # clauses of one message read as questions of their own (the first, and three more at most)


def _read_parts(question: str, links: EntityLinks | None,
                _read: Callable[[str, EntityLinks | None], Analysis]) -> Analysis:
    """A message in parts read as a chain or as several readings; ``_read`` reads one part. Parts that each name
    their own entities are each read with their own names; a part that names nothing asks about what the first
    part is about ("how many episodes does X have, which studio made it, and who composed its music?"); a part that
    asks the total of what another lists ("list them and tell me how many") counts that list. Only the first
    MAX_PARTS parts are read: the reading says how many the message asked, and a part no pass reads is kept as
    typed, so the answer says it was not answered."""
    whole = _read(question, links)
    linked = list(links.mentions) if links else []
    if whole.intent == "compare" and len(linked) == 1:
        return whole  # one title's two forms side by side ("X: which came first, the manga or the anime?"): one reading
    text = focus(question, [(m.start, m.end) for m in linked])
    asked = _clauses(text)
    a = _read_clauses(text, asked[:MAX_PARTS], whole, linked, _read)
    if len(asked) > MAX_PARTS:
        a.parts = (MAX_PARTS, len(asked))
    return a


def _read_clauses(text: str, parts: list[tuple[int, int]], whole: Analysis, linked: list[LinkedMention],
                  _read: Callable[[str, EntityLinks | None], Analysis]) -> Analysis:
    """The reading of a message's first parts (see :func:`_read_parts`)."""
    def names(part: tuple[int, int]) -> list[LinkedMention]:
        return [m for m in linked if part[0] <= m.start < part[1]]

    topic = _topic(text, linked)
    if topic is not None and whole.filter is None:
        read = _read_topic(text, topic, whole, linked, names, _read)
        if read is not None:
            return read

    totals = [p for p in parts[1:] if not names(p) and _TOTAL.search(text[p[0]:p[1]])]
    parts = [p for p in parts if p not in totals]
    a = _read_named(text, parts, whole, linked, names, _read)
    if totals and a.hops and a.attr is None and not a.more and a.among is None:
        a.attr = "count"  # "who did X teach? list them and tell me how many in total": the list, then its size
    return a


_TYPED_AFTER = re.compile(r"\s+(?:manga|anime)\b", re.IGNORECASE)


def _read_named(text: str, parts: list[tuple[int, int]], whole: Analysis, linked: list[LinkedMention],
                names: Callable[[tuple[int, int]], list[LinkedMention]],
                _read: Callable[[str, EntityLinks | None], Analysis]) -> Analysis:
    """Parts that name their own entities each read with them, else the parts after a first that names something."""
    if len(parts) < 2 or whole.filter is not None:
        return whole
    # a later part that points back only to qualify its own name ("... how many episodes does their Frieren
    # adaptation have?") is read on its own too when the whole's reading leaves a part's every name out (it answers
    # one part, not both); "the same person", "did he" point back for what they ask
    pointers = [(p, m) for p in parts[1:] for m in _POINTS_BACK.finditer(text[p[0]:p[1]].lower())]
    points_back = bool(pointers) or any(re.search(r"\bsame\b", text[p[0]:p[1]].lower()) for p in parts[1:])
    qualifying = bool(pointers) and not any(re.search(r"\bsame\b", text[p[0]:p[1]].lower()) for p in parts[1:]) and all(
        m.group() in _POSSESSIVES and any(n.start == p[0] + m.end() + 1 for n in names(p)) for p, m in pointers)
    left_out = any(not any(m.text in whole.mentions for m in names(p)) for p in parts)
    if all(names(p) for p in parts) and (not points_back or (qualifying and left_out)):
        # "how many episodes did X run for, and is Y finished yet?": each part is a question of its own; one with no
        # verb of its own asks as the part before did ("how many episodes did X have, how many did Y have")
        reads = []
        for i, p in enumerate(parts):
            r = _read(_only(text, [p]), EntityLinks(mentions=names(p)))
            if not _asks_of(r) and i and _parallel(text, parts[i - 1], p):
                r = _read(_only(text, [parts[i - 1], p]), EntityLinks(mentions=names(p)))
            reads.append(r)
        if all((_asks_of(r) or _described(r)) and r.filter is None and r.mentions and r.intent != "relation"
               and not r.more for r in reads):
            head, *rest = reads
            head.more = rest
            return head
    grouped = _by_topic(text, parts, whole, names, _read)
    if grouped is not None:
        return grouped
    if whole.intent in ("relation", "compare"):
        return whole
    first, second = parts[0], parts[1]
    own = names(first)
    if not own or names(second):
        return whole  # the first part names none, or the second names its own next to a first: read as one
    a1 = _read(_only(text, [first]), EntityLinks(mentions=own))
    # the second part is about what the first is about ("... and who illustrates its source?")
    anchor = next((m for m in own if a1.mentions[:1] == [m.text]), own[-1])
    # (its type word with it: "who created the one piece manga and what year did it start" asks of the manga twice)
    typed = _TYPED_AFTER.match(text, anchor.end)
    a2 = _read(_only(text, [second, (anchor.start, typed.end() if typed else anchor.end)]),
               EntityLinks(mentions=[anchor]))
    a = _two_parts(text, whole, a1, a2, second, more=len(parts) > 2)
    if a is whole and not (a2.hops or a2.attr) and a2.filter is None and (a1.hops or a1.attr) and _says(text, second) \
            and (whole.hops, whole.attr, whole.also) == (a1.hops, a1.attr, a1.also):
        a.unread.append(_words(text, second))  # "... and which hashira are in it?": no pass reads it
    for later in parts[2:]:
        if names(later):
            break  # a part that names its own entities is read with the whole
        more = _read(_only(text, [later, (anchor.start, anchor.end)]), EntityLinks(mentions=[anchor]))
        if not (more.hops or more.attr) or more.filter is not None:
            if _says(text, later):
                a.unread.append(_words(text, later))
        elif more.mentions and not _asked_in(more, a):
            a.more.append(more)  # (a part the readings before already ask, "... who did the art", is no more)
    return a


def _by_topic(text: str, parts: list[tuple[int, int]], whole: Analysis,
              names: Callable[[tuple[int, int]], list[LinkedMention]],
              _read: Callable[[str, EntityLinks | None], Analysis]) -> Analysis | None:
    """Parts grouped by the names they are about: a part that names nothing goes with the part before it ("When did
    the X manga end and how many volumes is it? Also how many episodes does Y have?": X's two parts, then Y's). Each
    group is read whole with its names, when there are two groups or more and the whole's reading leaves one group's
    every name out (or reads the names as a pair to relate or compare, which the message does not ask); None
    otherwise. "the same ..." points across groups: no grouping."""
    if not names(parts[0]) or any(re.search(r"\bsame\b", text[a:b].lower()) for a, b in parts):
        return None
    groups: list[list[tuple[int, int]]] = []
    for p in parts:
        if names(p) or not groups:
            groups.append([p])
        else:
            groups[-1].append(p)
    if len(groups) < 2:
        return None
    own = [[m for p in g for m in names(p)] for g in groups]
    if whole.intent not in ("relation", "compare") and all(any(m.text in whole.mentions for m in o) for o in own):
        return None
    reads = []
    for g, o in zip(groups, own, strict=True):
        r = _read(_only(text, g), EntityLinks(mentions=o))
        # a group in parts of its own ("how many episodes does X have and who directed it?"): each part read
        reads.append(_read_named(text, g, r, o, names, _read) if len(g) > 1 else r)
    if not all(_asks_of(r) and r.filter is None and r.mentions and r.intent != "relation" for r in reads):
        return None
    head, *rest = reads
    head.more = [*head.more, *(x for r in rest for x in (r, *r.more))]
    for r in rest:
        r.more = []
    return head


def _read_topic(text: str, topic: tuple[tuple[int, int], list[tuple[int, int]]], whole: Analysis,
                linked: list[LinkedMention], names: Callable[[tuple[int, int]], list[LinkedMention]],
                _read: Callable[[str, EntityLinks | None], Analysis]) -> Analysis | None:
    """Each part after a topic read with its own names, or else with the topic's and the topic's words ("the
    anime" of "Bleach: ..."); a part no reading answers is said to be unanswered. None when no part reads."""
    head, parts = topic
    own = names(head)
    reads: list[Analysis] = []
    unread: list[str] = []
    before: tuple[int, int] | None = None  # the last part read
    said: EntityType | None = None  # the form of the topic the last part said ("the manga")
    for part in parts[:MAX_PARTS]:
        named = names(part)
        r = _read(_only(text, [part] if named else [part, head]), EntityLinks(mentions=named or own))
        if named and not (r.hops or r.attr):  # "Bleach: ... what year did Kubo's manga finish": his Bleach
            r = _read(_only(text, [part, head]), EntityLinks(mentions=[*named, *own]))
        if not _asks_of(r) and before is not None and _parallel(text, before, part):
            # "who directed s1, who took over for s2": asked as the part before was, of its own name
            r = _read(_only(text, [before, part] if named else [before, part, head]),
                      EntityLinks(mentions=named or own))
        if _asks_of(r):
            before = part
        if not named:
            # "JJK: how many volumes did the main manga end up with, what year did it finish": "it" is that manga
            said = _typed_by_part(r, text[part[0]:part[1]], said if _IT.search(text[part[0]:part[1]]) else None)
        if _asks_of(r) and r.filter is None and r.mentions:
            if not any(x.mentions == r.mentions and _asked_in(r, x) and _read_as(x) == _read_as(r) for x in reads):
                reads.append(r)  # ("... who wrote it and who did the art": the first part read both)
        elif _says(text, part) and not _asks_of(r):
            unread.append(_words(text, part))
    if len(reads) < 2 and not (reads and unread):
        return None
    head_read, *rest = reads
    head_read.more = [*head_read.more, *rest]
    head_read.unread = [*head_read.unread, *unread]
    if len(parts) > MAX_PARTS:
        head_read.parts = (MAX_PARTS, len(parts))
    return head_read


_FORM_WORDS = "|".join(w for w, t in TYPE_WORD.items() if t in ("anime", "manga"))  # "the manga", "the show"
_THE_TYPE = re.compile(rf"\bthe (?:original |tv |first |main |source |actual )?({_FORM_WORDS})\b", re.IGNORECASE)


def _read_as(r: Analysis) -> list[tuple[str, ...]]:
    """The reading each name of ``r`` is taken in first ("what year did the manga start, and the anime": two)."""
    return [r.types.get(m, ())[:1] for m in r.mentions]


def _asks_of(r: Analysis) -> bool:
    """Whether a part's reading asks something of its names: a hop, a value, or one value of each side by side
    ("opm s1 and s2 - which studio made each one and how many eps does each have")."""
    return bool(r.hops or r.attr or (r.intent == "compare" and r.compare_field))


def _described(r: Analysis) -> bool:
    """Whether a part asks what its one name's record tells ("what's megumi's technique called, what's nobara's":
    a fact the catalog keeps only in words, answered by the record described)."""
    return r.intent == "lookup" and len(r.mentions) == 1 and not r.described and r.filter is None


_QUESTION_WORD = re.compile(r"\W*(who|whom|what|which|when|where|how many|how)\b", re.IGNORECASE)


def _parallel(text: str, before: tuple[int, int], part: tuple[int, int]) -> bool:
    """Whether ``part`` asks what ``before`` asks, in other words: both open with the same question word ("who
    directed s1, who took over for s2?"), so the verb of the one reads the other."""
    a, b = _QUESTION_WORD.match(text, *before), _QUESTION_WORD.match(text, *part)
    return a is not None and b is not None and a.group(1).lower() == b.group(1).lower()


_IT = re.compile(r"\b(?:it|its|it's|itself)\b", re.IGNORECASE)


def _typed_by_part(r: Analysis, part: str, before: EntityType | None = None) -> EntityType | None:
    """"One Piece questions: what year did the manga start, what studio does the anime": a part that says which form
    of the topic it asks of ("the manga") settles the topic's reading for that part, as a type word beside the name
    would."""
    said = {TYPE_WORD[m.group(1).lower()] for m in _THE_TYPE.finditer(part)} or ({before} if before else set())
    if len(said) != 1:
        return None
    (kind,) = said
    for m in [m for m in r.mentions if kind in r.open.get(m, ())]:
        r.types[m] = (kind, *(t for t in r.types.get(m, ()) if t != kind))
        r.open.pop(m)
    return kind


def _asked_in(more: Analysis, a: Analysis) -> bool:
    """Whether the readings of ``a`` already ask what ``more`` asks (a hop that finds it, or the value read)."""
    if more.intent == "compare" and more.compare_field:  # one value of each, side by side
        return any(x.intent == "compare" and x.compare_field == more.compare_field for x in (a, *a.more))
    read = {x.attr for x in (a, *a.more)} | {v for x in (a, *a.more) for v in x.also}
    asked = [h for x in (a, *a.more) for h in x.hops]
    if more.hops:
        return all(any(_covers(h, m) for h in asked) for m in more.hops)
    return more.attr in read


def _words(text: str, part: tuple[int, int]) -> str:
    """A part's words as typed, one space apart, less the punctuation that ends it."""
    return " ".join(text[part[0]:part[1]].split()).strip(" ,;:?.!")


# kin asked of in the plural: a singular pronoun after them points back at whose kin they are
_KIN_SEVERAL = re.compile(r"\b(?:sons|daughters|brothers|sisters|siblings|parents|kids|children|wives|husbands|"
                          r"cousins|uncles|aunts|grandsons|granddaughters|grandchildren)\b", re.IGNORECASE)


def _covers(h: Hop, m: Hop) -> bool:
    """Whether following ``h`` finds what ``m`` asks: the same edges, and every credit ``m`` keeps (none: all)."""
    return h.edges == m.edges and h.node_types == m.node_types and (not h.roles or set(m.roles) <= set(h.roles)) \
        and bool(m.roles or not h.roles)


def _two_parts(text: str, whole: Analysis, a1: Analysis, a2: Analysis, second: tuple[int, int], *,
               more: bool = False) -> Analysis:
    """The first two parts: one chain, two readings, or the whole read as one; ``more``: parts follow them."""
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
    if reached in ("person", "character") and _KIN_SEVERAL.search(text[:second[0]]):
        pronoun = ""  # "what are goku's sons called and who's his dad": several were reached, "his" is goku
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
        if reached in ("person", "character") and ask is None and back.group() in _SOMEONE_SAID:
            # "who is luffy's dad and what does he do": what the part asks of him is in his description
            a1.describe = " ".join(text[second[0]:second[1]].split())
            return a1
    if not (a2.hops or a2.attr) or a2.filter or not a2.mentions:
        return whole
    if not (a1.hops or a2.hops) and not (more and whole.hops and not {a1.attr, a2.attr} & {whole.attr, *whole.also}) \
            and not _other_forms(a1, a2):
        # two attributes of one entity: the whole reading reads both off one row (unless it follows a hop for a
        # third part and reads neither: "how long is X, when did it finish, and who composed its score?")
        return whole
    if a2.attr == "episode_count" and not a2.hops and a1.hops and a1.hops[-1].kind == "k_hop" and \
            a1.hops[-1].include_start:
        return whole  # "all three seasons of X ..., how many episodes would that come to": one sum
    a1.also = [x for x in a1.also if x != a1.attr]  # ("how long is X in episodes": the episodes once)
    a1.more = [a2]
    return a1


def _other_forms(a1: Analysis, a2: Analysis) -> bool:
    """Whether two parts ask of one title's two forms ("when did the X manga end, and how many episodes did the anime
    get"): each part's own type word reads the name as another entity, so each is read off its own row."""
    m = a1.mentions[0] if a1.mentions else None
    if m is None or a2.mentions[:1] != [m] or m in a1.open or m in a2.open:
        return False
    t1, t2 = a1.types.get(m, ())[:1], a2.types.get(m, ())[:1]
    return bool(t1 and t2) and t1 != t2 and {*t1, *t2} <= {"anime", "manga"}


# words that point back at what the first part of a question found ("that studio", "the same director")
_BACK: dict[EntityType, str] = {"studio": "studio|company|animation studio", "person": "director|composer|person|"
                                "guy|author|mangaka|artist|writer|creator|man|woman", "anime": "show|series|anime|"
                                "season|movie|film", "manga": "manga|comic", "character": "character|guy|girl"}


_CLAUSE = re.compile(r"(?:,\s*(?:and|but|also)\s+|[,:]\s*(?=(?:who|whom|what|which|when|where|how)\b)|;\s*|\?+\s+|"
                     r"\s+(?:and|\+|&|plus)\s+(?=(?:who|whom|what|which|when|where|how|is|are|was|were|did|does|do)\b))",
                     re.IGNORECASE)

# a part that asks only the size of what another part lists ("list them and tell me how many in total")
_TOTAL = re.compile(r"\b(?:in total|the total|altogether|all together|how many (?:of them|are there|there are|is that)|"
                    r"count (?:them|those|these))\b", re.IGNORECASE)

# words that ask or point and say nothing of their own: a part of only these ("which one?", "who was it?") is read
# with the whole, never said to be unanswered
_BARE = frozenset("""
who whom whose what which when where how is are was were did does do it its he she him her his they them their
one ones that this those these the a an in of to and so if too also then
by many much more less fewer than exactly
""".split())  # noqa: SIM905  (a word list reads better as text)

# a part may also start by telling what to do ("... in hxh? list them and tell me how many"): after a "?", a ";"
# or a ", and", never inside a clause ("the director and name of ...")
_TELLS = re.compile(r"(?:list|name|tell|give|say|count)\b")


_SOMEONE_SAID = frozenset(("he", "him", "his", "she", "her"))
_POINTS_BACK = re.compile(r"\b(?:he|she|him|his|her|it|its|they|them|their|those|these|that)\b")
_POSSESSIVES = frozenset(("his", "her", "its", "their"))


# words that join one question to the next after a "?" ("... yet? and which studio", "...? also who directed it")
_CONNECTIVE = re.compile(r"^(?:(?:and|also|plus|btw|oh|then|so|but|&)\b[\s,]*)+", re.IGNORECASE)

# a part that asks nothing: no question word, no verb that asks, no word that tells what to do ("evangelion tv
# series:", "three things about FMAB:", "cowboy bebop question:")
_ASKING = re.compile(r"\b(?:who|whom|whose|what|which|when|where|why|how|is|are|was|were|did|does|do|can|could|"
                     r"has|have|had|list|name|tell|give|show|count|any)\b", re.IGNORECASE)
# words that point at what a part before found, not at the topic: the parts are one chain
_CHAINED = re.compile(r"\b(?:they|them|their|that|those|these|he|she|his|her|him|whom)\b", re.IGNORECASE)
# the parts after a topic: every comma, ";" or question mark ends one ("episode count, director, and the year")
_TOPIC_PARTS = re.compile(r"\s*(?:,(?!\s*or\b)|;|\?+)\s*(?:(?:and|also|plus|&)\s+)?|"
                          r"\s+and\s+(?=(?:who|whom|what|which|when|where|how|is|are|was|were|did|does|do)\b)",
                          re.IGNORECASE)


_ASKS_IN_WORDS = re.compile(r"\b(?:who|whom|whose|what|which|when|where|why|how|is|are|was|were|did|does|do)\b",
                            re.IGNORECASE)
_NOUN_PARTS = re.compile(rf"{_TOPIC_PARTS.pattern}|\s*(?:\+|&)\s*|\s+(?:and|plus)\s+", re.IGNORECASE)


# a topic said first and set apart by a comma: "For X, ...", "About X, ...", "Regarding X, ..."
_INTRO = re.compile(r"^\s*(?:for|about|regarding|re|as for|on|concerning)\b[^,?!.]*,", re.IGNORECASE)


def _topic(text: str, linked: list[LinkedMention]) -> tuple[tuple[int, int], list[tuple[int, int]]] | None:
    """A message that names its topic first and then asks of it in parts ("evangelion tv series: who did the music,
    and which studios produced it?"): the topic's span and the parts' spans; None when it has no such topic."""
    colon = next((c.span() for c in re.finditer(r"[:\u2014]|\s-\s", text)
                  if not any(m.start <= c.start() < m.end for m in linked)), None)  # (not "Naruto: The Seventh ...")
    if colon is None and (intro := _INTRO.match(text)) is not None and not any(
            m.start <= intro.end() - 1 < m.end for m in linked):
        colon = (intro.end() - 1, intro.end())  # "For Spy x Family Code: White, who directed it and which ..."
    if colon is None or not text[colon[1]:].strip():
        return None
    head = (0, colon[0])
    if _ASKING.search(text[:colon[0]]) or not any(m.start < colon[0] for m in linked):
        return None
    if _CHAINED.search(text[colon[1]:]) and _INTRO.match(text) is None:
        return None  # "jjk 0 movie - what manga is it adapted from and where did that run": one chain, read whole
    parts, start = [], colon[1]
    # a list of what is asked with no asking word ("csm anime: studio + episode count?"): "and", "+", "&" part it too
    cuts = _TOPIC_PARTS if _ASKS_IN_WORDS.search(text[colon[1]:]) else _NOUN_PARTS
    for cut in cuts.finditer(text, colon[1]):
        parts.append((start, cut.start()))
        start = cut.end()
    parts.append((start, len(text)))
    parts = [(a, b) for a, b in parts if re.search(r"\w", text[a:b])]
    return (head, parts) if len(parts) >= 2 else None


def _clauses(text: str) -> list[tuple[int, int]]:
    """The parts of a question that each ask something, split at ", and", ";" or "?" before a question word or a
    word that tells what to do ("list them"), and at a bare "," in a series that ends in ", and" ("A, B, and C")."""
    out, start = [], 0
    cuts = list(_CLAUSE.finditer(text))
    for i, m in enumerate(cuts):
        rest = text[m.end():].lstrip().lower()
        said = " ".join(m.group().split()).lower()
        if said == ":" and not _POINTS_BACK.search(rest):
            continue  # "X's director: what else has he directed" is two parts; "frieren anime: how many episodes" one
        if said == "," and not _POINTS_BACK.search(rest) and not any(
                " ".join(c.group().split()).lower() in (", and", ", also") for c in cuts[i + 1:]):
            continue  # "..., how many episodes" is one part; "how many episodes, which studio, and who ..." three
        if said in ("?", ";", ", and") and _TELLS.match(rest) and _asks(rest[:_next(cuts, i, text)]):
            out.append((start, m.start()))
            start = m.end()
            continue
        if said.startswith("?") or said == ";":
            rest = _CONNECTIVE.sub("", rest)  # "... finished yet? and which studio ...", "...? also who ..."
        # (a question word may follow its preposition: "..., and in which film is he the lead")
        if re.match(r"(?:(?:in|on|for|from|by|with|at)\s+(?=wh))?(?:who|whom|whose|what|which|when|where|how|is|are|"
                    r"was|were|did|does|do|can|could)\b", rest):
            out.append((start, m.start()))
            start = m.end()
    out.append((start, len(text)))
    # a part of only joining words ("...? Also, how many ... their ...": "Also") asks nothing
    return [(a, b) for a, b in out if text[a:b].strip() and _CONNECTIVE.sub("", text[a:b].strip(" ,")).strip()]


def _next(cuts: list[re.Match[str]], i: int, text: str) -> int:
    """How far the part after cut ``i`` runs, counted from where its words start."""
    end = cuts[i + 1].start() if i + 1 < len(cuts) else len(text)
    return end - (len(text) - len(text[cuts[i].end():].lstrip()))


def _asks(part: str) -> bool:
    """Whether a part that tells what to do asks something ("tell me how many in total"; "give me the order" does not:
    it says how to answer the part before)."""
    return bool(_TOTAL.search(part) or re.search(r"\b(?:who|whom|what|which|when|where|how)\b", part))


def _says(text: str, part: tuple[int, int]) -> bool:
    """Whether a part says something of its own, not only question words and words that point back."""
    return any(w not in _BARE for w in re.findall(r"[a-z]+", text[part[0]:part[1]].lower()))


def _only(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with everything outside ``spans`` blanked (offsets kept)."""
    out = list(re.sub(r"\S", " ", text))
    for a, b in spans:
        out[a:b] = text[a:b]
    return "".join(out)
