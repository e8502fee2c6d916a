"""Anchor and ask: the name a one-entity question is about, what is asked of it, and the plan they make."""

from __future__ import annotations

import dataclasses
import itertools
import re

from agentic_rag.protocol import LinkedMention
from agentic_rag.protocol.reading import Analysis, Attr, Filter, Hop
from agentic_rag.protocol.vocabulary import EntityType, hop_range
from agentic_rag.understanding import cues as C
from agentic_rag.understanding.asks import confident
from agentic_rag.understanding.reading.ask import _ask
from agentic_rag.understanding.reading.catalog import (
    _period,
)
from agentic_rag.understanding.reading.coerce import _coerce, _fits, _pick_type
from agentic_rag.understanding.reading.focus import _Question
from agentic_rag.understanding.reading.hops import FAMILY, _Ask
from agentic_rag.understanding.reading.names import (
    _add,
    _kin_of,
    _qualifier,
    _readings,
    _same_start,
    _singular,
    _type_word,
    kin_role,
)
from agentic_rag.understanding.reading.relations import _staff_roles_asked
from agentic_rag.understanding.text import (
    Token,
)

MAX_MORE = 3  # readings one question adds (credits asked together)

# family words that name a group of kin, not one relation a detail says ("parents": a father and a mother)
# The cue words an exemplar label stands for ("describe" asks for no relation: a lookup).
HINT_CUES: dict[str, tuple[str, ...]] = {
    "studio": ("studio",), "director": ("directed",), "music": ("music",), "author": ("wrote",),
    "cast": ("characters",), "appears": ("anime", "appears"), "sequel": ("sequel",), "prequel": ("prequel",),
    "source": ("manga", "based"), "adaptation": ("anime", "adaptation"), "year": ("year",),
    "episodes": ("episodes",), "volumes": ("volumes",), "founded": ("founded",), "family": ("family",),
    "mentor": ("mentor",), "rival": ("rival",),
}






def _anchored(q: _Question) -> Analysis | None:
    """What is asked of the one name the question is about, tried from the likeliest anchor on."""
    question, whole, w, tokens, mentions = q.text, q.whole, q.w, q.tokens, q.mentions
    links, linked, dropped = q.links, q.linked, q.dropped
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
                then = [Hop(("family",), kin_role(_singular(kin2))), *then[1:]] if kin2 else []
            if then:
                ask = dataclasses.replace(rest, hops=[Hop(("family",), kin_role(kin)), *then])
        elif kin is not None and ask is not None and ask.hops == [FAMILY]:
            ask = dataclasses.replace(ask, hops=[dataclasses.replace(FAMILY, roles=kin_role(kin))])  # that kin
        who_is = w.has(*C.WHO_IS_PHRASES) and types <= {"character", "person"}
        if ask is None and not who_is:
            q.by_meaning = True  # the reading turns to what is asked by meaning (links.asks), if it has them
        if ask is None and hinted is not None and not who_is:
            # no cue word: what the question means, by its exemplars ("who is X" describes X)
            ask = _ask(w.plus(HINT_CUES[hinted]), types, after, every)
        if ask is None or not _fits(candidate, ask.domain):
            continue  # "ONE's webcomic ... who illustrates its source": the question is about the work
        anchor = candidate
        if ask is not None:
            start = _pick_type(anchor, ask.domain, None if counting else said)
            if ask.attr == "episode_count" and start == "manga" and "manga" in ask.domain:
                ask = dataclasses.replace(ask, attr="volumes")  # "how long is the X manga": its volumes
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
            if set(ask.domain) >= {"anime", "manga"} and a.attr in ("episode_count", "volumes") and not hops and \
                    said is None and {"anime", "manga"} <= _readings(anchor):
                a.open[anchor.text] = ("anime", "manga")  # "how long is X": the anime's episodes or the manga's volumes
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
            if at is not None and a.attr is None and not a.more and (facts or w.has(*C.RAN_WHERE_PHRASES)):
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
            _coordinated(a, q, anchor, start)
            return a
    return None


# what joins names asked the same thing ("who directed A and B", "A, B or C: when did they start")
_JOINED = re.compile(r"\s*(?:,\s*(?:and\s+|or\s+)?|\s(?:and|or|&|n)\s+|\s*&\s*|\s*/\s*)(?:the\s+)?", re.IGNORECASE)
_EACH_ATTRS = frozenset(("year", "episode_count", "volumes", "magazine", "status", "format", "genres", "founded"))


def _coordinated(a: Analysis, q: _Question, anchor: LinkedMention, start: EntityType | None) -> None:
    """The names joined to the anchor by "and", "or", a comma ("who directed Cowboy Bebop and Evangelion"): each
    is asked the same, when it can be read as the anchor's type. Not for a count or a sum over them, and not when
    the chain starts elsewhere."""
    if start is None or a.together or a.more or a.open or not (a.hops or a.attr in _EACH_ATTRS) or \
            (a.attr is not None and a.attr not in _EACH_ATTRS) or len(a.mentions) != 1:
        return
    names = sorted(q.mentions, key=lambda m: m.start)
    at = next((i for i, m in enumerate(names) if m is anchor), None)
    if at is None:
        return
    run = [anchor]
    for step in (-1, 1):  # the run of joined names on each side of the anchor
        i = at
        while 0 <= i + step < len(names):
            lo, hi = (names[i + step], names[i]) if step < 0 else (names[i], names[i + step])
            if not _JOINED.fullmatch(q.text[lo.end:hi.start]) or \
                    not any(c.entity.entity_type == start for c in names[i + step].candidates):
                break
            i += step
            run.append(names[i])
    if len(run) < 2:
        return
    for m in sorted(run[1:], key=lambda m: m.start):
        _add(a, q.tokens, m, start, fixed=True)
    where = {m.text: m.start for m in run}
    a.mentions.sort(key=lambda t: where.get(t, 0))  # said in the question's order
    a.together = True


def _lookup(q: _Question, f: Filter | None) -> Analysis:
    """Nothing asked of a name: the catalog filter, else the name itself."""
    w, tokens, mentions = q.w, q.tokens, q.mentions
    anchor = _anchor(tokens, mentions)
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
        if said is None and w.has(*C.WHO_IS_PHRASES):  # "who is frieren": the character, not the works of its name
            said = next((c.entity.entity_type for c in anchor.candidates
                         if c.entity.entity_type in ("character", "person") and c.match in ("exact", "alias")), None)
        _add(a, tokens, anchor, said, fixed=said is not None)
    return a


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


_COPULA_SEQUEL = re.compile(r"(?:is|was|s) (?:a |the |an )?(?:sequel|prequel|continuation) (?:to|of)\b")


_COUNTING = re.compile(r"\s*(?:counting|including|incl|plus)\b", re.IGNORECASE)


_INCLUDED = re.compile(r"\b(?:included|inclusive)\s*$", re.IGNORECASE)
