"""Entity linking: every name a question mentions, found against the catalog's own name index.

Two bounded round trips, whatever the catalog size:

1. The question's words and their one-letter deletions are probed in ``name_word`` (migration
   0008): a word the catalog's names use is known; an unknown word of four letters or more is
   corrected to the catalog words one edit away (SymSpell), most frequent first.
2. Every span of up to :data:`MAX_SPAN` words is probed, as typed, with one corrected word, and
   (two or three words) in another order, against ``link_key(norm)`` of every name and alias.

Spans are then chosen left to right without overlaps, longer spans first ("Naruto Shippuden" over
"Naruto"), then by match quality and popularity; every entity a chosen span names is kept as a
candidate, so readers can pick by type, year or format, and clarification can ask. A span made only
of question words ("who", "the", "anime") is never a mention, unless typed in capitals ("ONE").
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from agentic_rag.protocol import EntityLinks, EntityRef, LinkCandidate, LinkedMention, LinkMatch
from agentic_rag.protocol.limits import max_len
from agentic_rag.protocol.links import MAX_CANDIDATES, MAX_MENTIONS
from agentic_rag.storage.sql import Conn, Query
from agentic_rag.understanding.cues import CUES
from agentic_rag.understanding.numbers import ORDINALS, UNITS, spelled
from agentic_rag.understanding.text import (
    Token,
    by_relevance,
    deletions,
    english_words,
    fold,
    link_key,
    one_edit,
    tokenize,
)
from agentic_rag.understanding.unknown import titled_runs, unknown_names

MAX_TOKENS = 64  # words of a question considered: its asking sentences first, then those nearest to them
MAX_RANGE = 12  # seasons one range names ("seasons 1-3")
MAX_SPAN = 10  # words in one name ("Evangelion: 3.0+1.0 Thrice Upon a Time" is nine)
MIN_TYPO_WORD = 4  # shorter words are never corrected: too many catalog words are one edit away
MIN_TYPO_ALONE = 5  # shorter words alone are corrected only for a dropped letter ("jojo" is not Gojo)
CORRECTIONS = 3  # catalog words tried per unknown word alone, most frequent first
CORRECTIONS_IN_NAME = 12  # ... and inside a longer span, where the rest of the name must match too
_SPAN = max_len(LinkedMention, "text")
_NAME = max_len(LinkCandidate, "name")
_MATCHED = max_len(LinkCandidate, "matched")
_FRANCHISES = max_len(LinkCandidate, "franchises")
ORDER_FREE: frozenset[str] = frozenset({"person", "character"})

# Words that alone never name an entity here: question scaffolding and the type words around names.
STOP: frozenset[str] = frozenset("""
a an the of in on at to for from by with and or but not no is are was were be been being am do does did done
have has had having i me my we our you your he she it its they them their this that these those there here
who whom whose what which when where why how whats whos wheres hows many much more most less fewer least
tell show list name give find get know want need like please pls plz thanks thank thx ty lol so um uh hey hi hello
ok okay yeah yes quick question q can could would should will shall may might must just also about any some
all every each other another one two three first last next new old same both either
anime manga series show shows tv movie movies film films season seasons episode episodes volume volumes vol
character characters studio studios franchise person people author director composer year years
s t
""".split())  # noqa: SIM905 (a word list reads better as text)


class Fix(NamedTuple):
    """A catalog word an unknown question word may have meant."""

    word: str
    inside_only: bool = False  # the typed word is an English word: a typo only inside a longer name
    names: int = 0  # how many catalog names hold the word


@dataclass(slots=True)
class _Span:
    start: int  # token index
    length: int
    candidates: dict[str, tuple[int, LinkCandidate]] = field(default_factory=dict)  # entity id -> (rank, cand)

    def best(self) -> tuple[int, int]:
        return min((r, -c.popularity) for r, c in self.candidates.values())


NO_JIT_SQL = "SELECT set_config('jit', 'off', true)"
WORDS_SQL = Query("SELECT del, word, freq FROM name_word WHERE del = ANY(:keys::text[])")
# Names whose key is one of the probed spans, with what a reader needs to choose among them.
# What a reader needs of each name found, read per row through primary keys (scalar subqueries, so
# the plan stays index lookups per hit whatever the planner estimates of the hits).
_ENRICHED = """
SELECT h.key, h.by_subtitle, h.entity_id::text, h.entity_type, h.name, h.kind, h.popularity,
       coalesce((SELECT p.name FROM entity_name p WHERE p.entity_id = h.entity_id AND p.kind = 'primary'
                 LIMIT 1), h.name),
       CASE h.entity_type WHEN 'anime' THEN (SELECT a.year FROM anime a WHERE a.id = h.entity_id)
                          WHEN 'manga' THEN (SELECT m.year FROM manga m WHERE m.id = h.entity_id)
                          WHEN 'studio' THEN (SELECT s.founded FROM studio s WHERE s.id = h.entity_id) END,
       CASE h.entity_type WHEN 'anime' THEN (SELECT a.format FROM anime a WHERE a.id = h.entity_id) END,
       CASE h.entity_type WHEN 'character' THEN (
                               SELECT array_agg(DISTINCT a.franchise_id::text) FROM anime_character ac
                                 JOIN anime a ON a.id = ac.anime_id
                                WHERE ac.character_id = h.entity_id AND a.franchise_id IS NOT NULL)
                          WHEN 'anime' THEN (SELECT ARRAY[a.franchise_id::text] FROM anime a WHERE a.id = h.entity_id)
                          WHEN 'manga' THEN (SELECT ARRAY[m.franchise_id::text] FROM manga m WHERE m.id = h.entity_id)
                          WHEN 'franchise' THEN ARRAY[h.entity_id::text] END
  FROM hit h"""
_HIT = "n.entity_id, n.entity_type, n.name, n.kind, n.popularity FROM entity_name n"
_SUBTITLE = "link_key(substr(n.norm, strpos(n.norm, ':') + 1))"
_DASHED = "link_key(substr(n.norm, strpos(n.norm, ' - ') + 3))"  # migration 0022's index: "... - The Final Chapters"
_JOINED = "replace(link_key(n.norm), ' ', '')"  # migration 0009's index
MIN_JOINED = 7  # letters in one word that may be a whole name typed without spaces ("deathnote")
NAMES_SQL = Query(f"""
WITH hit AS (
  SELECT link_key(n.norm) AS key, false AS by_subtitle, {_HIT}
   WHERE link_key(n.norm) = ANY(:keys::text[]) AND n.entity_type <> 'episode'
  UNION ALL
  SELECT {_SUBTITLE}, true, {_HIT}
   WHERE strpos(n.norm, ':') > 0 AND {_SUBTITLE} = ANY(:subtitles::text[]) AND n.entity_type <> 'episode'
  UNION ALL
  SELECT {_DASHED}, true, {_HIT}
   WHERE strpos(n.norm, ' - ') > 0 AND {_DASHED} = ANY(:subtitles::text[]) AND n.entity_type <> 'episode'
  UNION ALL
  SELECT {_JOINED}, false, {_HIT}
   WHERE {_JOINED} = ANY(:joined::text[]) AND n.entity_type <> 'episode'
){_ENRICHED}""")


def _blocked(tokens: Sequence[Token]) -> bool:
    # "Boruto's father" asks for a relation; it does not name the character Father. Two words or more may
    # still be a title made of cue words ("Two Heroes"); every one a stop word, see _stop_only.
    if len(tokens) > 1:
        return False
    t = tokens[0]
    # one letter names nothing, unless typed as a capital of its own: "how is he connected to L?" (not "I", "A")
    return (t.key in STOP | CUES and not t.upper) or (
        (len(t.key) < 2 and not (t.raw.isupper() and t.raw not in ("I", "A"))) or t.key.isdigit())


def _stop_only(tokens: Sequence[Token]) -> bool:
    """Words that are all stop words ("all might", "the last", "all for one"): a name only of a person or a
    character (people type names in lower case), or of anything when every word is typed capitalized
    ("All Might", "The Last"); never when one word alone."""
    return all(t.key in STOP and not t.upper for t in tokens) and not all(t.raw[:1].isupper() for t in tokens)


async def _corrections(conn: Conn, words: list[str]
                       ) -> tuple[dict[str, list[Fix]], dict[str, int]]:
    """Catalog words one edit from each unknown question word, most frequent first; and how many names hold
    each question word the catalog has."""
    english = english_words()
    long_words = [w for w in dict.fromkeys(words) if len(w) >= MIN_TYPO_WORD and not w.isdigit() and w not in STOP]
    keys = set(words) | {d for w in long_words for d in deletions(w)}
    rows = await WORDS_SQL.fetch(conn, {"keys": sorted(keys)})
    known = {str(word): int(freq) for d, word, freq in rows if d == word}
    found: dict[str, dict[str, int]] = {}
    for _, word, freq in rows:
        for w in long_words:
            if w not in known and freq and one_edit(w, str(word)):  # (freq 0: a magazine's word, no name's)
                found.setdefault(w, {})[str(word)] = int(freq)
    # An English word is a typo only inside a longer name: "fame hero" may be "Flame Hero", "journeys end"
    # "Journey's End", but "powers" alone is not the character Power, nor "main" Mai.
    return {w: [Fix(x, inside_only=w in english, names=c[x])
                for x in sorted(c, key=lambda x: (-c[x], x))[:CORRECTIONS_IN_NAME]]
            for w, c in found.items()}, known


def _variants(span: Sequence[Token], fixes: dict[str, list[Fix]]) -> Iterable[tuple[str, LinkMatch | None]]:
    """(key, forced match kind) of a span: as typed, with one word corrected, reordered."""
    words = [t.key for t in span]
    yield " ".join(words), None
    if (digits := spelled(words)) is not None:  # "evangelion one point oh", "jujutsu kaisen zero"
        yield " ".join(digits), None
    if any(len(_split_digits(w)) > 1 for w in words):  # "jjk0" is "jjk 0"
        yield " ".join(p for w in words for p in _split_digits(w)), None
    if "and" in words[1:-1]:  # "rock lee and his ninja pals" is "Rock Lee & His Ninja Pals" (a key drops "&")
        yield " ".join(w for w in words if w != "and"), None
    for i, w in enumerate(words):
        for fix in fixes.get(w, [])[: CORRECTIONS if len(words) == 1 else CORRECTIONS_IN_NAME]:
            if w == f"{fix.word}s" and fix.word in _KIND_WORDS:
                continue  # "the hunter x hunter ovas" are several works, not the one titled "... (OVA)"
            # a short name alone is corrected only for a dropped letter ("lufy"), never a changed one ("jojo")
            if not (fix.inside_only and len(words) == 1) and (
                    len(words) > 1 or len(w) >= MIN_TYPO_ALONE or len(fix.word) == len(w) + 1):
                yield " ".join([*words[:i], fix.word, *words[i + 1:]]), "typo"
    if 2 <= len(words) <= 3:
        for perm in itertools.permutations(words):
            if list(perm) != words:
                yield " ".join(perm), "reordered"


_KIND_WORDS = frozenset(("ova", "ona", "movie", "film", "special", "season", "part", "arc"))


def _candidate(eid: Any, etype: Any, primary: Any, matched: Any, match: LinkMatch, popularity: Any, year: Any,
               fmt: Any, franchises: Any = None) -> LinkCandidate:
    """A candidate from the columns of a name probe's row (``_ENRICHED``)."""
    return LinkCandidate(entity=EntityRef(entity_type=etype, id=eid), name=str(primary)[:_NAME],
                         matched=str(matched)[:_MATCHED], match=match, popularity=max(int(popularity), 0), year=year,
                         format=fmt, franchises=[str(f) for f in franchises or [] if f][:_FRANCHISES])


def _rank(match: LinkMatch) -> int:
    return ("exact", "alias", "reordered", "typo", "partial").index(match)


async def link(conn: Conn, question: str, *, timeout_s: float = 2.0) -> EntityLinks:
    """The mentions of ``question``, each with its candidate entities (two bounded round trips)."""
    async with asyncio.timeout(timeout_s), conn.transaction():
        # index lookups whose row estimates can be large (many probed keys): JIT compiling them would
        # cost hundreds of milliseconds for a few index probes
        await conn.execute(NO_JIT_SQL)
        return await _link(conn, question)


def _words(question: str) -> tuple[list[Token], set[int]]:
    """At most MAX_TOKENS words, whole sentences by relevance, in question order; and the positions in
    that list right after a left-out stretch."""
    tokens = tokenize(question)
    if len(tokens) <= MAX_TOKENS:
        return tokens, set()
    kept: list[int] = []
    for a, b in by_relevance(question):
        kept += [i for i, t in enumerate(tokens) if a <= t.start < b]
        if len(kept) >= MAX_TOKENS:
            break
    kept = sorted(kept[:MAX_TOKENS])
    return [tokens[i] for i in kept], {j for j in range(1, len(kept)) if kept[j] != kept[j - 1] + 1}


async def _link(conn: Conn, question: str) -> EntityLinks:
    tokens, cut = _words(question)
    if not tokens:
        return EntityLinks()
    fixes, known = await _corrections(conn, [t.key for t in tokens])
    probes: dict[str, list[tuple[int, int, LinkMatch | None]]] = {}
    stop_only: set[tuple[int, int]] = set()  # spans that name only a person or a character (_stop_only)
    for i in range(len(tokens)):
        for n in range(1, min(MAX_SPAN, len(tokens) - i) + 1):
            span = tokens[i:i + n]
            if n > 1 and i + n - 1 in cut:
                break  # a name never spans words that were left out between two sentences
            if _blocked(span):
                continue
            if n > 1 and _stop_only(span):
                stop_only.add((i, n))
            for key, forced in _variants(span, fixes):
                probes.setdefault(key, []).append((i, n, forced))
    if not probes:
        return EntityLinks()
    # a subtitle alone ("greed island", "death & rebirth") when it is two words or more
    subtitles = [k for k in probes if " " in k]
    # one long word the catalog does not have may be a name typed without its spaces ("chainsawman")
    # (a single word is always probed as typed: a hit on its joined key lands on that probe)
    joined = [t.key for t in tokens if len(t.key) >= MIN_JOINED and t.key not in known and t.key not in english_words()]
    # ... and a few words may be a name typed with its spaces elsewhere ("full metal alchemist", "dragonball gt")
    for key, at in _spaced(tokens, cut, known).items():
        probes.setdefault(key, []).extend(at)
        joined.append(key)
    rows = await NAMES_SQL.fetch(conn, {"keys": list(probes), "subtitles": subtitles, "joined": joined})
    spans: dict[tuple[int, int], _Span] = {}
    # the separators typed between words: a name never spans one it does not have ("naruto + shippuden")
    gaps = [set(question[a.end:b.start]) & SEPARATORS for a, b in itertools.pairwise(tokens)]
    said = f" {' '.join(t.key for t in tokens)} "
    for key, by_subtitle, eid, etype, name, kind, popularity, primary, year, fmt, kin in rows:
        if by_subtitle and _GENERIC_SUBTITLE.match(str(key)) and f" {link_key(str(name).split(':')[0])} " not in said:
            continue  # "the final season" is Attack on Titan's only where Attack on Titan is said
        for i, n, forced in probes.get(str(key), ()):
            if (forced == "reordered" or (i, n) in stop_only) and etype not in ORDER_FREE:
                continue
            if n > 1 and set().union(*gaps[i:i + n - 1]) - set(str(name)):
                continue
            if n > 2 and "and" not in str(key).split() and "&" not in str(name) and any(
                    t.key == "and" for t in tokens[i + 1:i + n - 1]):
                continue  # "and" stands for a name's "&" only: "naruto and shippuden" are two names
            match: LinkMatch = forced or ("exact" if kind == "primary" and not by_subtitle else "alias")
            cand = _candidate(eid, etype, primary, name, match, popularity, year, fmt, kin)
            s = spans.setdefault((i, n), _Span(i, n))
            old = s.candidates.get(eid)
            if old is None or _rank(match) < old[0]:
                s.candidates[eid] = (_rank(match), cand)
    mentions = _head_nouns(question, tokens, _subtitled(question, _choose(question, tokens, list(spans.values()))))
    mentions = await _partial(conn, question, tokens, mentions, known, fixes)
    mentions = await _seasons(conn, question, tokens, mentions)
    mentions = await _siblings(conn, question, tokens, mentions)
    mentions = await _named_after(conn, question, tokens, mentions)
    mentions = await _renamed(conn, question, tokens, mentions)
    mentions = _one_work(question, tokens, await _films(conn, question, tokens, mentions))
    mentions, misread = _out_of_place(question, tokens, mentions)
    mentions = _families(question, mentions)
    mentions = _shared_name(question, mentions)
    # (a word read as a typo of a catalog word only where a name came of it: "pieck" is no "piece" when no name did)
    used = {t.key for t in tokens for m in mentions if m.start <= t.start < m.end}
    fixed = [k for k in fixes if k not in misread and k in used]
    titled = await _unsaid(conn, question, tokens, titled_runs(question, tokens, mentions, known))
    return EntityLinks(mentions=mentions,
                       unknown=unknown_names(question, tokens, mentions, known, fixed, titled) or None)


# The phrases of a question the catalog's prose never says (migration 0010's full-text index: synopses,
# franchise and character descriptions), as typed; one index probe each.
UNSAID_SQL = Query("""
SELECT p FROM unnest(:phrases::text[]) AS p
WHERE NOT EXISTS (SELECT 1 FROM entity_prose WHERE doc @@ phraseto_tsquery('english', p))""")


async def _unsaid(conn: Conn, question: str, tokens: list[Token],
                  runs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The runs of capitalised words (``unknown.titled_runs``) the catalog's prose does not say: a name the
    catalog lacks ("Sailor Moon"), not a thing its works tell of ("the Demon King")."""
    if not runs:
        return []
    said = [question[tokens[a].start:tokens[b].start + len(tokens[b].raw)] for a, b in runs]
    unsaid = {str(r[0]) for r in await UNSAID_SQL.fetch(conn, {"phrases": said})}
    return [r for r, text in zip(runs, said, strict=True) if text in unsaid]


_FROM_WORK = re.compile(r"^\s*(?:from|in|of|off)\s+(?:the\s+)?$", re.IGNORECASE)


def _out_of_place(question: str, tokens: list[Token],
                  mentions: list[LinkedMention]) -> tuple[list[LinkedMention], set[str]]:
    """A person read from a typo ("hakari" as Hikari Horaki) that the question places in a work of another franchise
    ("is hakari from jjk stronger than gojo", "which breathing style does Yoriichi use in Demon Slayer"): a name the
    catalog lacks, not that one. The mentions less those, and the words they were read from (no longer typos of a
    catalog word: the name is reported as typed)."""
    out: list[LinkedMention] = []
    misread: set[str] = set()
    for i, m in enumerate(mentions):
        nxt = mentions[i + 1] if i + 1 < len(mentions) else None
        typo = bool(m.candidates) and all(c.match == "typo" and c.entity.entity_type in ORDER_FREE
                                          for c in m.candidates)
        # the work it is placed in: right after it ("from jjk"), or the question's works, where every one is a work
        # of other franchises than its readings' (no name of its own franchise said anywhere)
        works = [nxt] if nxt is not None and _FROM_WORK.match(question[m.end:nxt.start]) else [
            x for x in mentions if x is not m and x.candidates
            and all(c.entity.entity_type in ("anime", "manga", "franchise") for c in x.candidates)]
        if typo and works:
            theirs = {f for c in m.candidates for f in c.franchises}
            work = {f for x in works for c in x.candidates if c.entity.entity_type in ("anime", "manga", "franchise")
                    for f in c.franchises}
            named = {f for x in mentions if x is not m for c in x.candidates for f in c.franchises}
            if theirs and work and not theirs & work and not theirs & named:
                misread |= {t.key for t in tokens if m.start <= t.start < m.end}
                continue
        out.append(m)
    return out, misread


_FAMILY_AFTER = re.compile(r"^\s*(?:family|clan|household|siblings|brothers|sisters|kids|house)\b", re.IGNORECASE)


# several asked at once: "who are the upper rank six demons", "which characters are called X"
_SEVERAL = re.compile(r"\b(?:who|which)\b.*\b(?:are|were)\b|\b(?:both|all of them|each of them)\b", re.IGNORECASE)
MAX_SHARED = 4  # people one shared name is read as, asked together


def _shared_name(question: str, mentions: list[LinkedMention]) -> list[LinkedMention]:
    """A name several people or characters share as typed ("Upper Rank Six": Daki and Gyutaro), asked of several at
    once ("who are the upper rank six demons"): every one of them, each its own mention over the same words, not a
    choice to ask about."""
    if not _SEVERAL.search(question):
        return mentions
    out: list[LinkedMention] = []
    for m in mentions:
        people = [c for c in m.candidates if c.entity.entity_type in ORDER_FREE and c.match in ("exact", "alias")]
        if len(people) >= 2 and len(people) == len(m.candidates) and len({link_key(c.matched) for c in people}) == 1:
            out += [m.model_copy(update={"candidates": [c]}) for c in people[:MAX_SHARED]]
        else:
            out.append(m)
    return out[:MAX_MENTIONS]


def _families(question: str, mentions: list[LinkedMention]) -> list[LinkedMention]:
    """A surname several characters share, said as their family ("why does Mikasa live with the Yeager family?"),
    beside characters the question is about: the family is where they are, no one of its members to ask which
    of; the mention is dropped. Asked about alone ("who is in the Zoldyck family?") it stays."""
    people = [m for m in mentions if m.candidates and m.candidates[0].entity.entity_type == "character"]

    def family(m: LinkedMention) -> bool:
        return len({c.entity.id for c in m.candidates}) > 1 and all(
            c.entity.entity_type == "character" for c in m.candidates) and bool(_FAMILY_AFTER.match(question[m.end:]))

    if not any(not family(m) for m in people):
        return mentions
    return [m for m in mentions if not family(m)]


def _head_nouns(question: str, tokens: list[Token], mentions: list[LinkedMention]) -> list[LinkedMention]:
    """"the flame hashira guy", "that tall spooky guy": an English word typed in lower case that ends a noun
    phrase (right after a name, or after a determiner and words that describe) is a noun, not a name of its own
    (the character Guy); "a student of guy" still names him."""
    english = english_words()
    out: list[LinkedMention] = []
    for m in mentions:
        at = next((i for i, t in enumerate(tokens) if t.start == m.start), None)
        word = tokens[at] if at is not None and tokens[at].end >= m.end else None
        if word is not None and at and word.raw.islower() and word.key in english:
            prev = out[-1] if out else None
            before = tokens[max(at - NOUN_PHRASE, 0):at]
            det = next((i for i in range(len(before) - 1, -1, -1) if before[i].key in DETERMINERS), None)
            if (prev is not None and not question[prev.end:m.start].strip()) or (
                    det is not None and det < len(before) - 1 and not any(t.key in STOP for t in before[det + 1:])
                    and _PHRASE.fullmatch(question[before[det].end:m.start])):  # (one phrase: "the bebop, ein")
                continue
        out.append(m)
    return out


_PHRASE = re.compile(r"[\w\s'’-]*")
NOUN_PHRASE = 4  # words a determiner may stand before the noun it goes with ("that tall spooky guy")


MAX_SPACED = 4  # words a name typed with other spaces may run to ("full metal alchemist brotherhood")


def _spaced(tokens: list[Token], cut: set[int], known: dict[str, int]) -> dict[str, list[tuple[int, int, LinkMatch]]]:
    """The spans of two to :data:`MAX_SPACED` words that may be a name typed with its spaces elsewhere, by their
    joined key ("full metal alchemist": "fullmetalalchemist", the joined key of "Fullmetal Alchemist"; "dragonball
    gt"). Only a span with a word the catalog's names do not have as typed ("full metal", "dragonball"), so
    names typed right are not probed twice; a hit is a spelling variant (matched as a typo)."""
    out: dict[str, list[tuple[int, int, LinkMatch]]] = {}
    for i in range(len(tokens)):
        for n in range(2, min(MAX_SPACED, len(tokens) - i) + 1):
            span = tokens[i:i + n]
            if i + n - 1 in cut:
                break
            if _blocked(span) or span[0].key in STOP or span[-1].key in STOP:
                continue
            key = "".join(t.key for t in span)
            if len(key) >= MIN_JOINED and any(t.key not in known for t in span):
                out.setdefault(key, []).append((i, n, "typo"))
    return out


def _subtitled(question: str, mentions: list[LinkedMention]) -> list[LinkedMention]:
    """"AoT: No Regrets": a title, a colon or dash, and a subtitle whose full title starts with that title's
    name are one mention, of the subtitled work ("Attack on Titan: No Regrets"), not two."""
    out: list[LinkedMention] = []
    for m in mentions:
        prev = out[-1] if out else None
        if prev is not None and _TITLE_JOIN.fullmatch(question[prev.end:m.start]):
            heads = {link_key(c.name) for c in prev.candidates}
            kept = [c for c in m.candidates if any(link_key(c.name).startswith(f"{h} ") for h in heads)]
            if kept:
                out[-1] = LinkedMention(text=question[prev.start:m.end][:_SPAN], start=prev.start, end=m.end,
                                        candidates=kept)
                continue
        out.append(m)
    return out


_TITLE_JOIN = re.compile(r"\s*[:\-–—]\s*")
SEPARATORS = frozenset("+&,/<>=|")
DETERMINERS = frozenset(("the", "a", "an", "that", "this", "some", "my", "your", "his", "her", "their", "our"))
_BRACKETS = re.compile(r"\([^)]*\)")
MIN_PARTIAL = 5  # letters in a word that may stand for the longer name holding it
RARE = 8  # ... and names at most that hold it: "shippuden", "bebop", "sawano", never "dragon" or "hunter"
# the names holding each rare word, most popular first (a plain constant: no value is ever interpolated)
_RARE_HITS = """
  SELECT w.word AS key, false AS by_subtitle, p.entity_id, p.entity_type, p.name, p.kind, p.popularity
    FROM unnest(:words::text[]) AS w(word)
   CROSS JOIN LATERAL (
    SELECT n.entity_id, n.entity_type, n.name, n.kind, n.popularity
      FROM entity_name n
     WHERE n.norm LIKE '%' || w.word || '%' AND n.entity_type <> 'episode'
     ORDER BY n.popularity DESC LIMIT :per_word) p"""
PARTIAL_SQL = Query(f"WITH hit AS ({_RARE_HITS}){_ENRICHED}")


async def _partial(conn: Conn, question: str, tokens: list[Token], mentions: list[LinkedMention],
                   known: dict[str, int], fixes: dict[str, list[Fix]]) -> list[LinkedMention]:
    """A rare catalog word left unlinked names the few names that hold it ("finished shippuden, what next",
    "sawano's other anime"), typed right or one edit off ("shipuden"): one more probe, through the trigram
    index, only when such a word is there."""
    english = english_words()

    def linked(t: Token) -> bool:
        return any(m.start <= t.start < m.end for m in mentions)

    def unknown(j: int) -> bool:  # a word of some name the catalog lacks ("makoto shinkai", "mushoku tensei")
        if not 0 <= j < len(tokens):
            return False
        t = tokens[j]
        named = t.raw[:1].isupper() and not t.upper  # "Ishida Sui": capitalised like a name, whatever the word
        return not linked(t) and (t.key not in english or named) and t.key not in STOP and t.key not in CUES \
            and not t.key.isdigit() and len(t.key) >= 3

    def meant(t: Token) -> str | None:  # the rare catalog word a word is, as typed or with its one likeliest fix
        if 0 < known.get(t.key, 0) <= RARE:
            return t.key
        fix = next(iter(fixes.get(t.key, ())), None)
        if fix is None or fix.inside_only or not 0 < fix.names <= RARE:
            return None
        # a dropped or swapped letter only ("shipuden"; "sakamoto" is not "Sadamoto"), and not a word that asks
        # ("senseis" is "sensei", said of many)
        dropped = len(fix.word) == len(t.key) + 1 or sorted(fix.word) == sorted(t.key)
        return fix.word if dropped and fix.word not in english and fix.word not in CUES and fix.word not in STOP \
            else None

    # (a word after "which" or "what" names the kind asked, not a title: "which hokage was minato" asks his rank,
    # though "Hokage" is a word of "The Seventh Hokage and the Scarlet Spring")
    rare = {t: word for j, t in enumerate(tokens) if len(t.key) >= MIN_PARTIAL and (word := meant(t)) is not None
            and t.key not in english and t.key not in STOP and t.key not in CUES and not linked(t)
            and not unknown(j - 1) and not unknown(j + 1) and not (j > 0 and tokens[j - 1].key in ASKED_KIND)}
    if not rare:
        return mentions
    words = sorted(set(rare.values()))
    rows = await PARTIAL_SQL.fetch(conn, {"words": words, "per_word": RARE * 2})
    out = list(mentions)
    for t, word in rare.items():
        cands: dict[str, LinkCandidate] = {}
        for key, _, eid, etype, name, _kind, popularity, primary, year, fmt, kin in rows:
            # a word of the name itself, not of a qualifier in brackets ("One-Punch Man (webcomic)")
            if key == word and word in link_key(_BRACKETS.sub(" ", str(name))).split() and str(eid) not in cands:
                cands[str(eid)] = _candidate(eid, etype, primary, name, "partial", popularity, year, fmt, kin)
        if cands:
            ranked = sorted(cands.values(), key=lambda c: -c.popularity)[:MAX_CANDIDATES]
            out.append(LinkedMention(text=t.raw, start=t.start, end=t.end, candidates=ranked))
    return sorted(out, key=lambda m: m.start)[:MAX_MENTIONS]


# a subtitle that any series may have ("the final season", "season 2", "the movie") names no title alone
_GENERIC_SUBTITLE = re.compile(r"^(?:the )?(?:final |first |last )?(?:season|part|movie|film|series|arc)"
                               r"(?: \d+| part \d+)*$")
_SIBLING = frozenset(("vs", "versus", "or", "and", "to", "through", "thru"))
_RANGE = re.compile(r"^\s*[-–—]\s*$")  # "seasons 1-3", "s1 to s3": every season between
# A season already in a title's key: what a sibling season ("II vs III") is read against.
SEASON_SUFFIX = re.compile(r" (?:season \d+|part \d+|(?:the )?final season(?: part \d+)?|[ivx]+|\d)$")
_ROMAN = ("", "i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x")
_ORDINAL = re.compile(r"^(\d{1,2})(?:st|nd|rd|th)$")
_SHORT = re.compile(r"^(?:s|season|szn|part|pt)(\d{1,2})$")
_YEAR_KEY = re.compile(r"^(?:19|20)\d\d$")
_TITLE_YEAR = re.compile(r" (?:19|20)\d\d$")


def _season_of(tokens: list[Token]) -> tuple[str, int, int] | None:
    """The season or part the words right after a name pick ("season 4", "s4", "4th season", "II", "final
    season part 2"), as (kind, number, tokens used); kind is "season", "part" or "final"."""
    # spelled numbers read as digits: "season two", "second season", "mob psycho 100 two"
    keys = [str(UNITS[k]) if k in UNITS and 2 <= UNITS[k] <= 12 else k for k in (t.key for t in tokens[:5])]
    keys = [f"{ORDINALS[k]}th" if k in ORDINALS else k for k in keys]
    i = 1 if keys[:1] == ["the"] else 0
    if keys[i:i + 2] in (["final", "season"], ["final", "szn"]):
        if keys[i + 2:i + 3] in (["part"], ["pt"]) and keys[i + 3:i + 4] and keys[i + 3].isdigit():
            return "final", int(keys[i + 3]), i + 4
        return "final", 0, i + 2
    if not keys:
        return None
    if keys[0] in ("season", "seasons", "szn", "part", "parts", "pt", "cour") and keys[1:2] and keys[1].isdigit():
        return ("part" if keys[0].startswith("p") else "season"), int(keys[1]), 2
    if keys[0] in ("season", "szn") and keys[1:2] and keys[1] in _ROMAN[2:]:
        return "season", _ROMAN.index(keys[1]), 2  # "season II"
    if (m := _SHORT.match(keys[0])) is not None:
        return ("part" if keys[0].startswith("p") else "season"), int(m.group(1)), 1
    if (m := _ORDINAL.match(keys[0])) is not None and keys[1:2] == ["season"]:
        return "season", int(m.group(1)), 2
    if keys[0] in _ROMAN[2:]:
        return "season", _ROMAN.index(keys[0]), 1
    if keys[0].isdigit() and tokens[0].raw.isalpha() and 2 <= int(keys[0]) <= 12:
        return "season", int(keys[0]), 1  # "mob psycho 100 two" (a spelled number, as a roman one)
    return None


_BESIDE_YEAR = frozenset(("earlier", "older", "original", "first", "later", "newer", "previous", "other", "old", "new"))


def _seasons_later(tokens: list[Token]) -> list[tuple[str, int, Token, Token]]:
    """The numbered seasons said later in the question ("... before season 5", "... of s2", "how many eps did
    season II have, and who directed III?", "who animated the 1999 one?"), each as (kind, number, its first and
    last tokens): "season" and its short forms, a roman numeral typed in capitals, a year said as "the 1999 one";
    never a bare number, and not season 1."""
    out: list[tuple[str, int, Token, Token]] = []
    j = 0
    while j < len(tokens):
        t = tokens[j]
        season: tuple[str, int, int] | None = None
        if t.key in ("season", "szn") or _SHORT.match(t.key) or _ORDINAL.match(t.key) or t.key in ORDINALS or (
                t.raw.isupper() and t.key in _ROMAN[2:]) or (t.key == "part" and t.raw[:1].isupper()):
            # ("Part 2" typed as a title's: "... where is Part 2 being serialized"; "part 2 of the story" is no title)
            season = _season_of(tokens[j:])
        elif _YEAR_KEY.match(t.key) and j and (tokens[j - 1].key == "the" or tokens[j - 1].possessive or (
                # "the earlier 2003 series", "the original 1999 one"
                j > 1 and tokens[j - 1].key in _BESIDE_YEAR and tokens[j - 2].key == "the")) and \
                tokens[j + 1:j + 2] and \
                tokens[j + 1].key in ("one", "version", "series", "anime", "show", "adaptation", "tv"):
            # (the noun with it: "the 2011 tv series" is one item of a list)
            tv = tokens[j + 1].key == "tv" and tokens[j + 2:j + 3] and tokens[j + 2].key in ("series", "show", "anime")
            season = ("year", int(t.key), 3 if tv else 2)
        # (season 1 is the name itself, and "from season 1 through ..." a run along the chain; a part is named by its
        # number, "part 1" too; season 1 set against another season is that season: "season 1 vs season 2")
        if season is not None and season[0] in ("season", "year", "part") and (
                season[1] > 1 or season[0] != "season" or _paired(tokens[j + season[2]:]) or (
                    j > 0 and tokens[j - 1].key in _COMPARED_WITH)):
            out.append((season[0], season[1], t, tokens[j + season[2] - 1]))
            j += season[2]
            continue
        j += 1
    return out


_PAIRING = frozenset(("vs", "versus", "or", "and", "&"))
# season 1 said as the other side of a comparison ("a different studio than s1")
_COMPARED_WITH = frozenset(("than", "vs", "versus"))  # (not "from season 1 through ...": a run)


def _paired(after: list[Token]) -> bool:
    """Whether a season said is set beside another right after it ("season 1 vs season 2", "s1 or s2")."""
    return len(after) > 1 and after[0].key in _PAIRING and (_season_of(after[1:]) is not None or after[1].key.isdigit())


def _season_before(tokens: list[Token]) -> tuple[str, int, Token] | None:
    """The season named before "of" and a name ("the second season of X", "season 2 of X", "the final season
    of X"), as (kind, number, its first token), from the last words before the name."""
    keys = [t.key for t in tokens[-3:]]
    if len(keys) >= 2 and keys[-2] == "the" and _YEAR_KEY.match(keys[-1]):
        return "year", int(keys[-1]), tokens[-1]  # "the 1999 Hunter x Hunter": the title of that year
    if keys[-1:] != ["of"] or len(keys) < 3:
        return None
    a, b = keys[-3], keys[-2]
    if b == "season" and a == "final":
        return "final", 0, tokens[-3]
    if b in ("season", "part") and (n := ORDINALS.get(a) or (int(m.group(1)) if (m := _ORDINAL.match(a)) else 0)):
        return ("part" if b == "part" else "season"), n, tokens[-3]
    if a in ("season", "part") and (n := int(b) if b.isdigit() else UNITS.get(b, 0)) and n <= MAX_RANGE:
        return ("part" if a == "part" else "season"), n, tokens[-3]
    return None


def _season_keys(base: str, kind: str, n: int) -> list[str]:
    if kind == "final":
        return [f"{base} the final season" + (f" part {n}" if n else ""), f"{base} final season"
                + (f" part {n}" if n else "")]
    if kind == "part":
        return [f"{base} part {n}"]
    if kind == "year":
        return [f"{base} {n}"]
    keys = [f"{base} season {n}", f"{base} {n}"]
    if n < len(_ROMAN):
        keys.append(f"{base} {_ROMAN[n]}")
    return [base, *keys] if n == 1 else keys


# names of these types with exactly these keys: a season of a title ("mha season 4"), a title's sibling
# ("dragon ball gt")
TITLE_KEYS_SQL = Query(f"""
WITH hit AS (
  SELECT link_key(n.norm) AS key, false AS by_subtitle, {_HIT}
   WHERE link_key(n.norm) = ANY(:keys::text[]) AND n.entity_type = ANY(:types::text[])
){_ENRICHED}""")


# the anime of a franchise that began in a year ("the earlier 2003 series" beside Brotherhood), a TV series first
YEAR_TITLES_SQL = Query(f"""
WITH hit AS (
  SELECT DISTINCT ON (k.fid, k.y) k.fid::text || ' ' || k.y AS key, false AS by_subtitle, a.id AS entity_id,
         'anime'::text AS entity_type, a.title AS name, 'primary'::text AS kind, a.popularity
    FROM unnest(:fids::uuid[], :years::int[]) AS k(fid, y)
    JOIN anime a ON a.franchise_id = k.fid AND a.year = k.y
   ORDER BY k.fid, k.y, a.format = 'tv' DESC, a.popularity DESC, a.id
){_ENRICHED}""")  # noqa: S608 (only constants are interpolated; every value is bound)
_FRANCHISE_YEAR = re.compile(r"^[0-9a-f-]{36} \d{4}$")


async def _seasons(conn: Conn, question: str, tokens: list[Token],
                   mentions: list[LinkedMention]) -> list[LinkedMention]:
    """A mention followed by a season or part ("MHA s4", "Mob Psycho 100 II") names that season, when the
    catalog has it: one more probe, of the anime's and manga's own names with the season or part spelled the
    catalog's ways ("Chainsaw Man Part 2" is a manga)."""
    asks: set[str] = set()
    # (mention index, start, end, keys): a season right after a name, or after "vs", "or", "and" next to it
    found: list[tuple[int, int, int, list[str], str]] = []

    def add(i: int, start: int, end: int, kind: str, n: int, bases: list[str]) -> None:
        keys = [key for b in bases for key in _season_keys(b, kind, n)]
        if kind == "year":  # "<franchise id> <year>": its title of that year ("the 2003 series" beside Brotherhood)
            keys += sorted({f"{f} {n}" for c in mentions[i].candidates for f in c.franchises})
        found.append((i, start, end, keys, kind))
        asks.update(keys)

    for i, m in enumerate(mentions):
        # (a manga's parts too: "part 1 of the chainsaw man manga", "... and where is Part 2 serialized")
        names = {link_key(x) for c in m.candidates if c.entity.entity_type in ("anime", "manga")
                 for x in (c.name, c.matched)}
        # "hunter x hunter 1999 vs 2011": a title's year is a qualifier too
        bases = sorted(names | {SEASON_SUFFIX.sub("", n) for n in names} | {_TITLE_YEAR.sub("", n) for n in names})
        if not bases:
            continue
        after = [t for t in tokens if t.start >= m.end]
        if (before := _season_before([t for t in tokens if t.end <= m.start])) is not None:
            kind, n, first = before  # "the second season of one punch man", "the 1999 hunter x hunter"
            add(i, first.start, m.end, kind, n, bases)
        else:
            after = _right_after(question, m, tokens, after, functools.partial(add, i, bases=bases))
        for kind, n, first, last in _seasons_later(after):
            # "which mha season comes right before season 5", "attack on titan - who directed season 2", "the
            # 1999 X ... the 2011 one": a season said later, with no other name between, is the name's season
            # (a studio, a person or a work of the same franchise between them is no other title: "HxH ... not made
            # by Madhouse: the 2011 series, Phantom Rouge, ..., or the 1999 series")
            if not any(m.end <= x.start < first.start and _other_title(x, m) for x in mentions):
                add(i, first.start, last.end, kind, n, bases)
    if not asks:
        return mentions
    rows = await TITLE_KEYS_SQL.fetch(conn, {"keys": sorted(asks), "types": ["anime", "manga"]})
    if years := {k for k in asks if _FRANCHISE_YEAR.match(k)}:
        pairs = [k.split() for k in sorted(years)]
        rows += await YEAR_TITLES_SQL.fetch(conn, {"fids": [f for f, _ in pairs], "years": [int(y) for _, y in pairs]})
    out: list[LinkedMention] = []
    for i, m in enumerate(mentions):
        seasons = []
        for _, start, end, keys, kind in (f for f in found if f[0] == i):
            own = {c.entity.id for c in m.candidates}  # a franchise's title of a year that is this name's own
            hits = sorted((r for r in rows if str(r[0]) in keys and not (                    # other form is no
                _FRANCHISE_YEAR.match(str(r[0])) and str(r[2]) in own)
                and (kind == "part" or r[3] == "anime")),  # a season is an anime's; a part may be a manga's
                key=lambda r: keys.index(str(r[0])))
            if not hits or any(x.start < end and start < x.end for x in mentions if x is not m):
                continue  # not in the catalog, or the words of the season are another name: leave them
            _, _, eid, etype, name, kind, popularity, primary, year, fmt, kin = hits[0]
            cand = _candidate(eid, etype, primary, name, "exact" if kind == "primary" else "alias", popularity, year,
                              fmt, kin)
            start = m.start if start == m.start else start
            seasons.append(LinkedMention(text=question[start:end][:_SPAN], start=start, end=end, candidates=[cand]))
        out += seasons if seasons and seasons[0].start <= m.start else [m, *seasons]
    return sorted(out, key=lambda x: x.start)[:MAX_MENTIONS]


def _other_title(x: LinkedMention, m: LinkedMention) -> bool:
    """Whether ``x`` may be a work of a franchise none of ``m``'s readings is in (whose season a later "season 2"
    could be)."""
    theirs = {f for c in m.candidates for f in c.franchises}
    return any(c.entity.entity_type in ("anime", "franchise") and not set(c.franchises) & theirs for c in x.candidates)


def _right_after(question: str, m: LinkedMention, tokens: list[Token], after: list[Token],
                 add: Callable[..., None]) -> list[Token]:
    """The seasons said right after name ``m`` ("MHA s4", "II vs III", "seasons 1-3"), each given to ``add`` as
    (start, end, kind, number); the words after them."""
    start, end = m.start, m.end
    listed = bool(after) and after[0].key in ("seasons", "parts")  # "seasons 1, 2 and 3": bare numbers follow
    # a name that already says its season ("attack on titan season one", an alias) may start a range
    own = [t for t in tokens if m.start <= t.start < m.end]
    tail = [t.key for t in own[-2:]]
    previous = 0
    if len(own) > 2 and tail[0] in ("season", "szn") and (tail[1].isdigit() or tail[1] in UNITS):
        previous = int(tail[1]) if tail[1].isdigit() else UNITS[tail[1]]
    elif len(own) > 1 and (short := _SHORT.match(tail[-1])) is not None:
        previous = int(short.group(1))
    while after:
        # right after the name it names the name's season; after "vs", "or", "+" another season of it
        between = question[end:after[0].start]
        ranged = bool(_RANGE.match(between)) or after[0].key in ("to", "through", "thru")
        sibling = after[0].key in _SIBLING
        rest = after[1:] if sibling else after
        if not sibling and end != m.end:
            if not between.strip() and not listed:
                break  # "s1 s2" is no pair; "s1 + s2", "II vs III" are
            sibling = True
        season = _season_of(rest) if rest else None
        if season is None and sibling and listed and rest and rest[0].key.isdigit() and len(rest[0].key) <= 2:
            season = ("season", int(rest[0].key), 1)
        if season is None and sibling and rest and _YEAR_KEY.match(rest[0].key):
            season = ("year", int(rest[0].key), 1)  # "hunter x hunter 1999 vs 2011": the 2011 one
        if season is None:
            break
        start = rest[0].start if sibling else m.start
        kind, n, used = season
        last = rest[used - 1]
        end = last.start + len(last.raw)
        # a range names the seasons between its ends too (each found under the range's last number)
        numbers = range(previous + 1, n + 1) if sibling and ranged and 0 < previous < n <= \
            previous + MAX_RANGE else (n,)
        for k in numbers:
            add(start, end, kind, k)
        previous = n
        after = rest[used:]
    return after


_LISTING = frozenset(("and", "or", "vs", "versus", "plus", "then"))  # words that list titles ("DBZ and GT")
MAX_SIBLINGS = 5


async def _siblings(conn: Conn, question: str, tokens: list[Token],
                    mentions: list[LinkedMention]) -> list[LinkedMention]:
    """"Dragon Ball, Z, GT and Super", "DBZ and GT": a short word listed after a title names the sibling
    title that the first title's words (less its last one) and that word make, when the catalog has it. One
    more probe, only for words listed right after a title."""
    asked: list[tuple[Token, list[str]]] = []
    taken = [(m.start, m.end) for m in mentions]
    for m in mentions:
        bases = set()
        for c in m.candidates:
            words = link_key(c.name).split() if c.entity.entity_type in ("anime", "manga") else []
            bases |= {" ".join(words[:-1]), " ".join(words)} if len(words) >= 2 else set()
        if not bases:
            continue
        listed, end = False, m.end
        for t in (t for t in tokens if t.start >= m.end):
            gap = question[end:t.start].strip()
            if t.key in _LISTING and gap in ("", ","):
                listed, end = True, t.end
                continue
            if gap not in ("", ",", "&", "+", "/") or not (listed or gap) or len(asked) >= MAX_SIBLINGS or any(
                    a <= t.start < b for a, b in taken) or t.key in STOP or len(t.key) > 12:
                break
            asked.append((t, sorted(f"{b} {t.key}" for b in bases)))
            listed, end = False, t.end
    if not asked:
        return mentions
    keys = sorted({k for _, ks in asked for k in ks})
    rows = await TITLE_KEYS_SQL.fetch(conn, {"keys": keys, "types": ["anime", "manga"]})
    out = list(mentions)
    for t, keys in asked:
        hits = sorted((r for r in rows if str(r[0]) in keys), key=lambda r: (r[5] != "primary", -int(r[6])))
        if hits:
            _, _, eid, etype, name, _kind, popularity, primary, year, fmt, kin = hits[0]
            cand = _candidate(eid, etype, primary, name, "alias", popularity, year, fmt, kin)
            out.append(LinkedMention(text=t.raw, start=t.start, end=t.end, candidates=[cand]))
    return sorted(out, key=lambda m: m.start)[:MAX_MENTIONS]


NAMED_AFTER_SQL = Query(f"""
WITH hit AS (
  SELECT :key::text AS key, false AS by_subtitle, {_HIT}
   WHERE n.norm LIKE '%' || :key || '%' AND n.entity_type IN ('anime', 'manga')
   ORDER BY n.popularity DESC LIMIT 8
){_ENRICHED}""")
_WORK_WORDS = {"anime": ("anime",), "show": ("anime",), "ova": ("anime",), "movie": ("anime",), "film": ("anime",),
               "manga": ("manga",), "spinoff": ("anime", "manga"), "spin": ("anime", "manga")}
MAX_NAMED_AFTER = 2  # works a character's name may be in the title of, for "the X anime" to name them


async def _named_after(conn: Conn, question: str, tokens: list[Token],
                       mentions: list[LinkedMention]) -> list[LinkedMention]:
    """"The rock lee spin-off anime": a character followed by a work word names the work titled after them
    ("Naruto Spin-Off: Rock Lee & His Ninja Pals"), when one or two works hold the name. One probe through the
    trigram index, only for such a character."""
    out = list(mentions)
    for i, m in enumerate(mentions):
        if {c.entity.entity_type for c in m.candidates} != {"character"}:
            continue
        after = [t for t in tokens if t.start >= m.end][:3]
        kinds = [_WORK_WORDS[t.key] for t in after if t.key in _WORK_WORDS]
        if not kinds or (i + 1 < len(mentions) and after and mentions[i + 1].start <= after[0].start):
            continue
        wanted = set(kinds[-1]) if len(kinds) > 1 else set(kinds[0])  # "spin-off anime": the anime
        key = " ".join(fold(m.candidates[0].name).split())  # as entity_name.norm is folded
        rows = await NAMED_AFTER_SQL.fetch(conn, {"key": key})
        works: dict[str, LinkCandidate] = {}
        for _, _, eid, etype, name, _kind, popularity, primary, year, fmt, kin in rows:
            if etype in wanted and str(eid) not in works:
                works[str(eid)] = _candidate(eid, etype, primary, name, "partial", popularity, year, fmt, kin)
        if 0 < len(works) <= MAX_NAMED_AFTER:
            end = next(t for t in after if t.key in _WORK_WORDS)
            out[i] = LinkedMention(text=question[m.start:end.end][:_SPAN], start=m.start, end=end.end,
                                   candidates=list(works.values()))
    return out


FILMS_SQL = Query("""
SELECT m.ord, f.id::text, f.title, f.popularity, f.year
  FROM unnest(:ids::uuid[]) WITH ORDINALITY AS m(id, ord)
  JOIN anime a ON a.id = m.id
  JOIN anime f ON f.franchise_id = a.franchise_id AND f.format = 'movie'
 ORDER BY m.ord, f.year, f.id
 LIMIT 60""")
_FILM_WORDS = frozenset(("movie", "film"))
# "the oldest one piece film": the films are what the extreme is taken over, not one of them to choose
_EXTREMES = frozenset(("oldest", "newest", "latest", "earliest", "first", "last", "longest", "shortest", "best"))


async def _films(conn: Conn, question: str, tokens: list[Token],
                 mentions: list[LinkedMention]) -> list[LinkedMention]:
    """"The X movie" where no film is called X names the films of X's franchise: one when it has one ("the
    cowboy bebop movie"), several to choose from when it has more ("the one piece movie"). One more probe,
    only when a name without a film among its readings is followed by "movie" or "film"."""
    asked: list[tuple[int, str, int, str]] = []  # (mention index, anime id, end of "movie", word of its title)
    for i, m in enumerate(mentions):
        after = [t for t in tokens if t.start >= m.end][:2]
        word = ""
        if len(after) == 2 and after[1].key in _FILM_WORDS and after[0].key not in _FILM_WORDS | STOP:
            word, after = after[0].key, after[1:]  # "the demon slayer train movie": the film with "train" in its title
        after = after[:1]
        if not after or after[0].key not in _FILM_WORDS or any(c.format == "movie" for c in m.candidates) or (
                i + 1 < len(mentions) and mentions[i + 1].start < after[0].start + len(after[0].raw)):
            continue
        before = [t.key for t in tokens if t.end <= m.start][-1:]
        later = [t.key for t in tokens if t.start > after[0].start][:1]
        if before in (["which"], ["what"]) or later in (["names"], ["titles"], ["list"], ["series"]) or (
                before and before[0] in _EXTREMES):
            continue  # "which evangelion movie is she in", "hxh movie names": the films are what is asked
        anime = next((c for c in m.candidates if c.entity.entity_type == "anime"), None)
        if anime is not None:
            asked.append((i, anime.entity.id, after[0].start + len(after[0].raw), word))
    if not asked:
        return mentions
    rows = await FILMS_SQL.fetch(conn, {"ids": [a[1] for a in asked]})
    out = list(mentions)
    for n, (i, _, end, word) in enumerate(asked, start=1):
        m = mentions[i]
        films = [_candidate(fid, "anime", title, title, "alias", pop, year, "movie")
                 for ord_, fid, title, pop, year in rows
                 if ord_ == n and (not word or word in link_key(str(title)).split())]
        if films:
            out[i] = LinkedMention(text=question[m.start:end][:_SPAN], start=m.start, end=end,
                                   candidates=films[:MAX_CANDIDATES])
    return out


# a short name followed by more of a title, under the work's other names: "eva 3.0" is "Evangelion 3.0"
RENAMED_SQL = Query(f"""
WITH alt AS (
  SELECT DISTINCT link_key(n.norm) AS base FROM entity_name n WHERE n.entity_id = ANY(:ids::uuid[])
), probe AS (
  SELECT DISTINCT a.base || ' ' || r.rest AS key FROM alt a CROSS JOIN unnest(:rests::text[]) AS r(rest)
), hit AS (
  SELECT p.key, false AS by_subtitle, {_HIT} JOIN probe p ON link_key(n.norm) = p.key
   WHERE n.entity_type IN ('anime', 'manga')
){_ENRICHED}""")  # noqa: S608 (only constants are interpolated; every value is bound)
MAX_RENAMED = 4  # words after the short name tried as the rest of a longer title


def _split_digits(key: str) -> list[str]:
    """"jjk0" is "jjk 0": a short name with a number typed onto it."""
    m = re.fullmatch(r"([a-z]{2,})(\d{1,2})", key)
    return [m.group(1), m.group(2)] if m else [key]


async def _renamed(conn: Conn, question: str, tokens: list[Token],
                   mentions: list[LinkedMention]) -> list[LinkedMention]:
    """"eva 3.0", "jjk0 movie": a work named by a short name (an alias, or its words run together with a
    number), followed by words nothing linked, may name a longer title under another name of the same work
    ("Evangelion 3.0" is an alias of "Evangelion: 3.0 You Can (Not) Redo"). One more probe, only then."""
    out = list(mentions)
    for i, m in enumerate(mentions):
        works = [c for c in m.candidates if c.entity.entity_type in ("anime", "manga", "franchise")]
        after = [t for t in tokens if t.start >= m.end][:MAX_RENAMED]
        inside = [t for t in tokens if m.start <= t.start < m.end]
        glued = _split_digits(inside[-1].key) if len(inside) == 1 else []
        if i + 1 < len(mentions):
            after = [t for t in after if t.end <= mentions[i + 1].start]
        words = glued[1:] + [t.key for t in after]
        if not works or not words or (not glued[1:] and all(c.match == "exact" for c in works)):
            continue
        if not glued[1:] and (words[0] in STOP or words[0] in CUES):
            continue
        rests = [" ".join(words[:k]) for k in range(1, len(words) + 1)]
        ids = [c.entity.id for c in works[:MAX_CANDIDATES]]
        rows = await RENAMED_SQL.fetch(conn, {"ids": ids, "rests": rests})
        longest = max((len(str(r[0]).split()) for r in rows), default=0)
        best = {str(r[2]): _candidate(r[2], r[3], r[7], r[4], "alias", r[6], r[8], r[9], r[10])
                for r in rows if len(str(r[0]).split()) == longest}
        if not best:
            continue
        # the rest of the words the longest title took, and where they end in the question
        taken = next(len(r.split()) for r in rests if any(str(row[0]).endswith(f" {r}") for row in rows
                                                          if len(str(row[0]).split()) == longest))
        n_after = taken - len(glued[1:])
        end = after[n_after - 1].end if n_after > 0 else m.end
        out[i] = LinkedMention(text=question[m.start:end][:_SPAN], start=m.start, end=end,
                               candidates=sorted(best.values(), key=lambda c: -c.popularity)[:MAX_CANDIDATES])
    return out


_WORK_TYPES = frozenset(("anime", "manga"))


def _one_work(question: str, tokens: list[Token], mentions: list[LinkedMention]) -> list[LinkedMention]:
    """Two mentions side by side that name one work are one mention: "diamonddust rebellion bleach movie"
    (a film both can mean), "relight 2 death note" (a work whose title holds the other's name, the number
    between them choosing among its candidates), "Demon Slayer's Swordsmith Village Arc" (a part of a title said
    with the title's 's)."""
    out: list[LinkedMention] = []
    for m in mentions:
        prev = out[-1] if out else None
        if prev is None:
            out.append(m)
            continue
        gap = [t for t in tokens if prev.end <= t.start < m.start]
        typed = question[prev.end:m.start]
        for t in gap:
            typed = typed.replace(t.raw, " ", 1)
        if all(c.entity.entity_type in _WORK_TYPES for c in m.candidates):
            typed = re.sub(r"^['’]s\b", " ", typed)  # "Demon Slayer's Swordsmith Village Arc": its own part
        if len(gap) > MAX_RENAMED or typed.strip() or any(t.key in _LISTING or t.key in _SIBLING for t in gap):
            out.append(m)
            continue
        if any(all(t.key in STOP or t.key.isdigit() for t in tokens if x.start <= t.start < x.end) for x in (prev, m)):
            out.append(m)  # "aot seasons 1 2 and 3": a bare number is a season of its own
            continue
        both = {c.entity.id for c in prev.candidates} & {c.entity.id for c in m.candidates}
        kept = [c for c in prev.candidates if c.entity.id in both and c.entity.entity_type in _WORK_TYPES]
        if not kept:
            for a, b in ((prev, m), (m, prev)):
                heads = {link_key(c.name) for c in b.candidates if c.entity.entity_type in (*_WORK_TYPES, "franchise")}
                kept = [c for c in a.candidates if c.entity.entity_type in _WORK_TYPES
                        and any(f" {h} " in f" {link_key(c.name)} " for h in heads)]
                if kept:
                    break
        # the words between are stop words or words of the title itself, a number among them ("relight 2",
        # "diamonddust rebellion")
        kept = [c for c in kept if all(t.key in STOP or t.key in link_key(c.name).split() for t in gap)]
        if not kept:
            out.append(m)
            continue
        out[-1] = LinkedMention(text=question[prev.start:m.end][:_SPAN], start=prev.start, end=m.end, candidates=kept)
    return out


def _hyphened(question: str, tokens: list[Token], s: _Span, taken: set[int], loose: dict[int, int]) -> bool:
    """One word matched loosely that a hyphen joins to a word nothing matched ("kaguya-sama love is war"):
    a part of another name, not this one."""
    if s.start not in loose:
        return False
    t = tokens[s.start]
    j = s.start + 1
    return j < len(tokens) and j not in taken and question[t.end:tokens[j].start] == "-"


ASKED_KIND = frozenset(("which", "what"))  # a word after these names the kind of thing asked for


_ALIKE = frozenset(("same", "other", "another"))  # "the same guy", "another king": a noun, as after an article


_INTENSIFIERS = frozenset(("so", "too", "very", "basically", "pretty", "kinda", "literally", "really", "super", "hella",
                           "insanely", "absurdly", "ridiculously", "stupidly", "way", "totally", "lowkey", "highkey"))
_SOMEONE_IS = frozenset(("he", "she", "they", "hes", "shes", "theyre"))


def _said_of_someone(tokens: list[Token], s: _Span) -> bool:
    """A short word typed in lower case that says what someone is ("he's basically op", "she is so op"): slang,
    not the title it abbreviates."""
    t = tokens[s.start]
    if s.length != 1 or not t.raw.islower() or len(t.key) > 3 or s.start == 0:
        return False
    before = [x.key for x in tokens[max(0, s.start - 2):s.start]]
    return before[-1] in _INTENSIFIERS or before[-1] in _SOMEONE_IS or (
        len(before) >= 2 and before[-2] in _SOMEONE_IS and before[-1] in ("is", "s", "was", "are", "were"))


def _common_noun(tokens: list[Token], s: _Span) -> bool:
    """A lowercase English word after an article, or after a name's possessive, is a noun, not a name: "the king
    of the pirates" is not the character King (who is still found as "King" or "who is king"), and "anya's power"
    is what Anya has, not the character Power."""
    t = tokens[s.start]
    return (s.length == 1 and t.raw.islower() and t.key in english_words() and s.start > 0
            and (tokens[s.start - 1].key in DETERMINERS | _ALIKE or (   # ("what's" is "what is": no possessive)
                tokens[s.start - 1].possessive and tokens[s.start - 1].key not in STOP)))


def _in_title_cased_noun(tokens: list[Token], s: _Span, taken: set[int]) -> bool:
    """A one-word name that is an English word, typed after another capitalised English word nothing matched: the
    end of a title-cased common noun ("the Demon King", "the Hidden Leaf"), not the character King or Leaf."""
    if s.length != 1 or s.start == 0 or s.start - 1 in taken:
        return False
    t, before = tokens[s.start], tokens[s.start - 1]
    people = all(c.entity.entity_type in ORDER_FREE for _, c in s.candidates.values())
    # (typed in lower case after any capitalised word nothing matched: "Lelouch's Geass power" is his power)
    return people and t.key in english_words() and (before.key in english_words() or t.raw.islower()) \
        and before.raw[:1].isupper() and not before.upper and before.key not in STOP and before.key not in CUES \
        and before.end + 1 == t.start


def _inside_unknown_name(tokens: list[Token], s: _Span, taken: set[int], loose: dict[int, int]) -> bool:
    """One word matched loosely (an alias, a typo) inside what looks like a longer name the catalog does
    not know: next to a capitalised word nothing matched ("Whit Fox"), or next to another loose match
    when one of the two is a typo ("Shoyo Hinata" is neither Shoto Todoroki nor Hinata Hyuga); a word beside it
    across a comma is another name."""
    if s.start not in loose:
        return False
    typo = _rank("typo")
    for j in (s.start - 1, s.start + 1):
        if not 0 <= j < len(tokens) or (j > s.start and tokens[s.start].possessive):
            continue  # ("Aizawa's Quirk": a name said with its 's ends there)
        if tokens[max(j, s.start)].start - tokens[min(j, s.start)].end > 1:
            continue  # a comma between them ("Kakashi, Zorblax"): two names, not one
        if j in loose and typo in (loose[j], loose[s.start]):
            return True
        t = tokens[j]
        if j not in taken and t.key not in STOP and t.key not in CUES and t.raw[:1].isupper() and not t.upper:
            return True
    return False


def _choose(question: str, tokens: list[Token], spans: list[_Span]) -> list[LinkedMention]:
    """Non-overlapping spans: longest first, then the best match, then the most popular entity."""
    taken: set[int] = set()
    chosen: list[_Span] = []
    for s in sorted(spans, key=lambda s: (-s.length, *s.best(), s.start)):
        cover = set(range(s.start, s.start + s.length))
        if cover & taken:
            continue
        taken |= cover
        chosen.append(s)
    loose = {s.start: s.best()[0] for s in chosen if s.length == 1 and s.best()[0] > _rank("exact")}
    chosen = [s for s in chosen if not _inside_unknown_name(tokens, s, taken, loose)
              and not _common_noun(tokens, s) and not _said_of_someone(tokens, s)
              and not _hyphened(question, tokens, s, taken, loose)
              and not _in_title_cased_noun(tokens, s, taken)]
    out: list[LinkedMention] = []
    for s in sorted(chosen, key=lambda s: s.start)[:MAX_MENTIONS]:
        first, last = tokens[s.start], tokens[s.start + s.length - 1]
        cands = [c for _, c in sorted(s.candidates.values(), key=lambda rc: (rc[0], -rc[1].popularity))]
        end = last.start + len(last.raw)  # a possessive 's is not part of the name
        out.append(LinkedMention(text=question[first.start:end][:_SPAN], start=first.start, end=end,
                                 candidates=cands[:MAX_CANDIDATES]))
    return out
