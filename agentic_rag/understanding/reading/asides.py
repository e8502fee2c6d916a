"""Asides: what a question leaves out ("besides Goku", "not counting the movies") or only describes (a name in
brackets, an apposition, a relative clause, the work a character is from), and words that ask for nothing."""

from __future__ import annotations

import itertools
import re

from agentic_rag.protocol import EntityLinks, LinkedMention
from agentic_rag.understanding import cues as C
from agentic_rag.understanding.reading.names import _readings
from agentic_rag.understanding.text import (
    referent,
    tokenize,
)

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


# the words just before a magazine's name: a name there is part of the magazine's
_MAGAZINE_NAMED = re.compile(r"\b(?:ran|run|runs|running|serialized|serialised|published|printed) in(?: the)?"
                             r"(?: \w+){0,3}\s*$", re.IGNORECASE)


def _settings(question: str, mentions: list[LinkedMention]) -> tuple[list[LinkedMention], list[tuple[int, int]]]:
    """The mentions the question is about, less asides: a work that only says where the character before it
    is from ("who is Ryuk death note", "Rem in Death Note"), a name in brackets or after "not", "counting"
    ("..., not ONE's webcomic"), one word of longer names said of a kind ("isnt an uchiha"). Also the spans left
    out, to be read as no part of the question."""
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
        right_before = [t for t in tokens if t.end <= m.start][-1:]
        if right_before and right_before[0].key in ("a", "an") and len(mentions) > 1 and m.candidates and all(
                c.match == "partial" for c in m.candidates):
            # "kakashi isnt an uchiha": one word of longer names after "a" or "an" names a kind (a clan, a race)
            # that the names holding it share, not one of them
            dropped.append((right_before[0].start, m.end))
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


_FORMAT_WORD = r"(?:specials?|ovas?|movies?|films?|onas?)\b"


_LEFT_OUT = rf"{_FORMAT_WORD}(?:\s+(?:or|and|nor)\s+(?:the\s+)?{_FORMAT_WORD})*"


_WHO_IS_HE = re.compile(r"\bwho(?:\s+is|\s+was|\s*'s|s)\s+(?:he|she)\b(?!\s+(?:to|for|in|of|with)\b)", re.IGNORECASE)


_UNASKED = re.compile(r"(?<!can )(?<!should )(?<!could )"  # "where can I read X" asks, in the present
                      r"\b(?:i|we|he|she|they|just|already)\s+(?:just\s+|already\s+)?(?:finished|completed|watched|"
                      r"binged|saw|read)\b|"  # what the asker did ("just finished HxH 1999, what next"), not a status
                      r"\b(?:i|we)\s+(?:just\s+|finally\s+|recently\s+)?(?:started|began)\b|"  # ... not a date
                      r"\b(?:(?:rather|other) than|instead of|(?:and |but )?not)(?: the| an?)? (?:anime|manga|movies?|"
                      r"films?|shows?|(?:tv )?series|tv show)\b|"
                      r"\bbefore (?:it |they |the (?:manga|series|anime) )?(?:ended|finished|wrapped(?: up)?|concluded|"
                      r"ending|finishing)\b|"
                      # formats left out of a sum: "without the specials or the ova", "no movie" ("not counting
                      # ...", "excluding ..." are left out before, by _except)
                      rf"\bwithout\b[^,;()?]{{0,40}}?\b{_LEFT_OUT}|\bno (?:the )?{_LEFT_OUT}", re.IGNORECASE)
