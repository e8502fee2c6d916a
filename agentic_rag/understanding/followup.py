"""Follow-ups: a question that leans on earlier turns, restated as one that stands alone (seed 002's first rewrite
strategy: resolve what it points at, add the names it leaves out).

"who directed Death Note?" then "and what else did he make?": "he" is the answer's director. What a follow-up can
lean on is the conversation's context card (:class:`~agentic_rag.protocol.conversation.ConversationContext`): the
last turns' questions as read, the names they asked about (subjects), the names their answers gave (answers, in
order), and a clarification's choices. Read by method, in this order:

1. **A clarification answered in words.** When the last turn asked which reading was meant, a reply that picks one
   ("the anime", "the 2011 one", "the second", a name that links to one of them) answers it: the last question is
   run again with that reading.
2. **Pointing words** are replaced by the names they point at, most recent first:
   - a pronoun (he, she, it, they, his, her, its, their, them) by the latest name of a kind it can stand for:
     a person or a character for he and she, a work (or a studio) for it, and for they every name of the latest
     answer that listed several (else one name of any kind);
   - "that one", "this show", "the same studio" by the latest name of the noun's kind;
   - "the second one", "#2" by that place of the latest answer that listed several.
   A pointing word nothing in the conversation can stand for is asked about, never guessed.
3. **A fragment** (a reply that asks nothing on its own: "and the manga?", "what about Bleach?", "and in season 2?",
   "no, I meant the 2011 one") is the last question with its subject changed: for the name given, for the type said,
   for the season said, or for the year said.
4. **A question with no subject** ("how many episodes?", "which studio?"; the reading finds no name, and no
   condition over the whole catalog) asks about the latest name it can: the last turn's answer when that is one
   work, else what the last turn asked about.
5. **Anything else** is a question of its own, and a new topic: it inherits nothing.

Everything here is words and the card; no model and no database. The trajectory records the follow-up, the
standalone question and what was resolved (``Followup.how``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from agentic_rag.protocol import EntityLinks, EntityRef, LinkCandidate, LinkedMention
from agentic_rag.protocol.conversation import ConversationContext, Named, PastTurn
from agentic_rag.protocol.links import MAX_MENTIONS
from agentic_rag.protocol.reading import Analysis
from agentic_rag.protocol.vocabulary import EntityType
from agentic_rag.understanding import cues as C
from agentic_rag.understanding.cues import words
from agentic_rag.understanding.linker import STOP
from agentic_rag.understanding.text import dictionary_words, link_key, tokenize
from agentic_rag.understanding.unknown import SCOPE_BEFORE

MAX_PLURAL = 5  # names "they" may stand for
MAX_CHOSEN = MAX_MENTIONS  # names "which one" chooses among (no more than linking reads back)

PERSON: tuple[EntityType, ...] = ("person", "character")
WORK: tuple[EntityType, ...] = ("anime", "manga", "franchise")
THING: tuple[EntityType, ...] = ("anime", "manga", "franchise", "studio")
ANY: tuple[EntityType, ...] = ("anime", "manga", "franchise", "character", "person", "studio")

# pronoun -> (the kinds it stands for, possessive, plural)
PRONOUNS: dict[str, tuple[tuple[EntityType, ...], bool, bool]] = {
    "he": (PERSON, False, False), "him": (PERSON, False, False), "his": (PERSON, True, False),
    "she": (PERSON, False, False), "hers": (PERSON, False, False), "her": (PERSON, True, False),
    "it": (THING, False, False), "its": (THING, True, False),
    "they": (ANY, False, True), "them": (ANY, False, True), "their": (ANY, True, True),
    "theirs": (ANY, False, True),
}
# "her" is possessive before a word that is no function word ("her debut"), else an object ("about her")
_AFTER_OBJECT = words("""a an the in on at and or but to from with for of by as than then now still again too
also first last back up out over is was be been are were do does did has have had so if when while because
""")
# what "that X", "this X", "the same X" point at, by the noun
_NOUN_KINDS: dict[str, tuple[EntityType, ...]] = {
    "one": ANY, "show": ("anime",), "anime": ("anime",), "series": ("anime", "manga"), "manga": ("manga",),
    "movie": ("anime",), "film": ("anime",), "title": WORK, "work": WORK, "guy": PERSON, "girl": PERSON,
    "dude": PERSON, "man": PERSON, "woman": PERSON, "character": ("character",), "person": ("person",),
    "studio": ("studio",), "franchise": ("franchise",),
}
_NOUNS = "|".join(_NOUN_KINDS)
DEMONSTRATIVE = re.compile(rf"\b(?:that|this|the same|said)\s+(?P<noun>{_NOUNS})s?\b", re.IGNORECASE)
_ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4, "fifth": 5,
             "5th": 5, "sixth": 6, "6th": 6, "seventh": 7, "7th": 7, "eighth": 8, "8th": 8, "ninth": 9, "9th": 9,
             "tenth": 10, "10th": 10, "last": -1}
# "the second one", "the second", "the 2nd of them", "#2", "number 2"; not "his first anime" nor "the first anime he
# directed" (a fact asked, not a place in a list)
ORDINAL = re.compile(
    rf"\bthe\s+(?P<nth>{'|'.join(_ORDINALS)})(?:\s+(?P<noun>ones?)\b|(?=\s*(?:$|[?.!,;]|of\s+(?:them|those)\b)))"
    r"|#\s?(?P<num>\d{1,2})\b|\bnumber\s+(?P<number>\d{1,2})\b", re.IGNORECASE)
# "the first two", "the last three": several places at once
FIRST_FEW = re.compile(r"\bthe\s+(?P<end>first|last)\s+(?P<n>two|three|four|five|2|3|4|5)\b(?:\s+ones?\b)?",
                       re.IGNORECASE)
_FEW = {"two": 2, "three": 3, "four": 4, "five": 5}
# "that" or "this" standing alone for a thing: at the end of a clause or after a preposition ("season 2 of that")
BARE = re.compile(r"(?:\b(?:of|in|for|about|from|on|with|to|made|animated|directed|wrote|drew)\s+)(?P<w>that|this)"
                  r"(?=\s*(?:$|[?.!,;]))", re.IGNORECASE)
# "the manga", "the anime", "the movie" with no name: that form of what the conversation is about
THE_FORM = re.compile(r"\bthe\s+(?P<form>anime|manga|show|series|movie|film|tv series|tv show)\b(?!\s+(?:of|about|"
                      r"where|that|which|who|with)\b)", re.IGNORECASE)
PRONOUN = re.compile(rf"\b(?P<p>{'|'.join(PRONOUNS)})\b", re.IGNORECASE)
# "which one" with nothing after to choose from: one of the names before ("and which one started first")
WHICH_ONE = re.compile(r"\bwhich\s+(?P<w>one|ones)\b(?!\s+(?:of|is|was|are|were|s)\b|['’]s\b)", re.IGNORECASE)
# "those", "these" (and "those movies") standing for the names an answer gave: not "these days", nor "which of these:
# A, B or C" (the names follow)
THOSE = re.compile(rf"\b(?:those|these)\b(?!\s+days\b)(?:\s+(?P<noun>{_NOUNS})s?\b)?", re.IGNORECASE)
# "the girl, who trained her?", "is the guy still alive": the person named before whose description says "she" ("he");
# not one described ("the girl travelling with goku", "the guy who ..."), and nobody when no description says it
THE_PERSON = re.compile(r"\bthe\s+(?P<noun>girl|guy|boy|woman|man|dude|lady)\b(?=\s*(?:[,?.!;:]|$|\s+(?:is|was|has|"
                        r"have|had|does|did|do|can|could|will|would|get|gets|got|ever|also|still|end)\b))",
                        re.IGNORECASE)
# "each", "both" standing for the names before, at the end of a clause ("who directed each", "music for both?")
EACH = re.compile(r"\b(?:each|both)(?:\s+(?:of\s+)?(?:them|those|these|ones?))?(?=\s*(?:$|[?.!,;]))", re.IGNORECASE)

# how a fragment begins: "and ...", "what about ...", "how about ...", "or ..."
LEAD = re.compile(r"^\s*(?:(?:and|also|ok(?:ay)?|so|then|but|or)\b[\s,]*)*(?:(?:what|how)\s+about\b\s*)?",
                  re.IGNORECASE)
ABOUT = re.compile(r"^\s*(?:(?:and|also|ok(?:ay)?|so|then|but|or)\b[\s,]*)*(?:what|how)\s+about\b", re.IGNORECASE)
# a correction: "no, I meant ...", "sorry, I meant ...", "not that one, ..."
CORRECTION = re.compile(r"^\s*(?:(?:oh+|ah+|uh+|hm+|no+|nope|nah|sorry|wait|oops|actually)\b[\s,.!]*)*(?:i\s+meant?|"
                        r"i\s+mean|not\s+(?:that|this)(?:\s+one)?)\b[\s,:]*|"
                        r"^\s*(?:(?:oh+|ah+|uh+|hm+)\b[\s,.!]*)?(?:no+|nope|nah|sorry|oops|wait|actually)\b[\s,.!]+",
                        re.IGNORECASE)
SEASON = re.compile(r"\b(?:season|s)\s*(?P<n>\d{1,2})\b|\b(?P<nth>first|second|third|fourth|fifth|final)\s+season\b",
                    re.IGNORECASE)
_SEASON_NTH = {"first": "1", "second": "2", "third": "3", "fourth": "4", "fifth": "5"}
YEAR = re.compile(r"\b(?P<y>19[5-9]\d|20[0-4]\d)\b")
TYPE_SAID = re.compile(r"\b(?P<t>anime|manga|show|series|movie|film|character|studio|comic)s?\b", re.IGNORECASE)
_FORMS = "anime|manga|show|series|tv series|movie|film|comic"
_TYPE_OF = {"anime": "anime", "show": "anime", "series": "anime", "movie": "anime", "film": "anime",
            "manga": "manga", "comic": "manga", "character": "character", "studio": "studio"}
# a name's season or part, dropped to name another season of it
_SEASONED = re.compile(r"\s*(?::.*|\bseason\s*\d+.*|\bpart\s*\d+.*|\(\d{4}\))$", re.IGNORECASE)
# words that make a reply a question of its own
_ASKING = words("""who whom whose what which when where why how is are was were do does did has have had can
could will would should list name tell give show find compare""")
FRAGMENT_WORDS = 6  # a reply this short that asks nothing on its own is a fragment
# whose, said alone ("and hers?"): the last question, of the one pointed at
OWN = re.compile(r"\s*(?:hers|his|theirs)\s*[?.!]*\s*", re.IGNORECASE)


@dataclass(slots=True)
class Followup:
    """A follow-up read in its conversation: the standalone question, and how it was reached."""

    text: str  # the question to run
    how: list[str] = field(default_factory=list)  # what was resolved, for the trajectory
    choice: int | None = None  # the last turn's clarification choice the reply picked
    mention: str | None = None  # ... and the ambiguous name it was asked about
    ask: str | None = None  # nothing in the conversation fits what the reply points at: ask this instead
    # the names the restatement spelled out, each the one entity the conversation meant by it ("is it finished?"
    # after the Bleach manga was talked about is the manga's question, not a new choice between its readings)
    pinned: dict[str, EntityRef] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.how)


def resolve(question: str, links: EntityLinks | None, context: ConversationContext | None,
            read: Callable[[str, EntityLinks | None], Analysis]) -> Followup:
    """``question`` restated to stand alone, given the conversation's last turns; ``links``: the names linked in
    it; ``read``: the question reader (a reply with no name is read to tell "how many episodes?" from a question
    over the whole catalog). A name the reply says that has several readings, one of which the conversation
    already talked about ("did nishio direct anything else" after Daisuke Nishio was named), is that one."""
    f = _resolve(question, links, context, read)
    if context is None or links is None:
        return f
    talked = {n.ref.id: n.ref for t in context.turns for n in (*t.subjects, *t.answers)}
    for m in links.mentions:
        ids = {c.entity.id for c in m.candidates}
        known = [talked[i] for i in ids if i in talked]
        # (readings of one kind, two people called Nishio: a title's forms are told apart by the reply's own words)
        if len(ids) >= 2 and len(known) == 1 and m.text not in f.pinned and m.text in f.text and \
                len({c.entity.entity_type for c in m.candidates}) == 1:
            f.pinned[m.text] = known[0]
    return f


def _resolve(question: str, links: EntityLinks | None, context: ConversationContext | None,
             read: Callable[[str, EntityLinks | None], Analysis]) -> Followup:
    last = context.last() if context is not None else None
    if context is None or last is None:
        return Followup(question)
    mentions = [m for m in (links.mentions if links else []) if not _numbering(m.text)]
    if last.status == "needs_clarification" and last.choices:
        picked = _choice(question, mentions, last.choices)
        if picked is not None:
            chosen = last.choices[picked]
            if (asked := _then_asked(question, chosen, last)) is not None:
                return asked  # "sorry, the 2011 one - who animated it?": the choice, then a question of it
            return Followup(last.standalone, [f"answers the clarification: {chosen.name}"],
                            choice=picked, mention=chosen.text)
    correction = CORRECTION.match(question)
    body = question[correction.end():] if correction else question
    if last.status == "needs_clarification" and not last.choices and mentions and _fragment(body, mentions) and \
            (named := _named_back(body, last)) is not None:
        return named  # "when did it end?" "which?" "the fullmetal alchemist manga"
    if (short := _short_named(body, mentions, context) or _word_one(body, mentions, context)) is not None:
        return short
    pointed = _pointing(body, mentions, context)
    if pointed is not None:
        return _pointed_fragment(body, mentions, last, pointed) or pointed
    if (correction or _fragment(body, mentions)) and not _asks_own(question, links, mentions, read) and \
            (refit := _refit(body, mentions, last)) is not None:
        return refit
    if not mentions and not (links is not None and links.unknown) and _needs_subject(read(question, links)):
        # (a name the catalog lacks is a subject: "is black clover in here too?" asks of it, not of the last one)
        return _completed(question, context)
    return Followup(question)


# -- 1. a clarification answered in words -------------------------------------------------------------------------

def _choice(reply: str, mentions: list[LinkedMention], choices: list[Named]) -> int | None:
    ids = {c.entity.id for m in mentions for c in m.candidates[:1]}
    hits = [i for i, c in enumerate(choices) if c.ref.id in ids]
    if len(hits) == 1:
        return hits[0]
    if (nth := ORDINAL.search(reply)) is not None:
        place = _place(nth)
        if place is not None and -len(choices) <= place < len(choices):
            return place % len(choices)
    words = [t.key for t in tokenize(reply)]
    for test in (lambda c, w: w in (YEAR.findall(c.name) or ()),
                 lambda c, w: _TYPE_OF.get(w) == c.ref.entity_type):
        hits = sorted({i for i, c in enumerate(choices) for w in words if test(c, w)})
        if len(hits) == 1:
            return hits[0]
    return None


# a reply's next clause: "the 2011 one - who animated it?", "the manga, how many volumes does it have"
_NEXT_CLAUSE = re.compile(r"\s*(?:[-–—,:;.?!]+|\band\b)\s*(?=\w)")
_LABEL_KIND = re.compile(r"\s*\((?:anime|manga|character|person|studio|franchise)\b[^)]*\)\s*$")


def _named_back(body: str, last: PastTurn) -> Followup | None:
    """The last question, which asked back what its pointing word meant, with the name the reply gives in its place
    ("when did it end?", then "the fullmetal alchemist manga"; "how many episodes did the second one have?", then
    "sorry, i meant mob psycho 100 season 2")."""
    points = _points(last.standalone, [])
    name = LEAD.sub("", body).strip(" ?.!,")
    if not points and name and (season := SEASON.search(last.standalone)) is not None:
        # "who directed season 2?" "which show's season 2?" "spy x family": that title's season
        n = season.group("n") or _SEASON_NTH.get((season.group("nth") or "").lower())
        if n is not None:
            at = season.start() - (4 if last.standalone[:season.start()].lower().endswith("the ") else 0)
            text = f"{last.standalone[:at]}{name} season {n}{last.standalone[season.end():]}"
            return Followup(_tidy(text), [f"{season.group()!r} -> {name} season {n} (the reply to the question back)"])
    if not points or not name:
        return None
    p = points[0]
    said = f"{name}'s" if p.possessive else name
    return Followup(_tidy(last.standalone[:p.start] + said + last.standalone[p.end:]),
                    [f"{p.said!r} -> {name} (the reply to what was asked back)"])


def _then_asked(reply: str, chosen: Named, last: PastTurn) -> Followup | None:
    """A clarification answered, and a question of its own asked after the choice ("sorry, the 2011 one - who
    animated it?"): that question, its pointing words standing for the reading chosen; None when the reply only
    chooses."""
    for cut in _NEXT_CLAUSE.finditer(reply):
        rest = reply[cut.end():]
        keys = [t.key for t in tokenize(rest)]
        if not keys or keys[0] not in _ASKING:
            continue
        name = _LABEL_KIND.sub("", chosen.name)
        named = Named(ref=chosen.ref, name=name, text=chosen.text)
        turn = PastTurn(question=last.question, standalone=last.standalone, status="answered", subjects=[named])
        pointed = _pointing(rest, [], ConversationContext(turns=[turn]))
        if pointed is None or pointed.ask is not None:
            return None
        pointed.how.insert(0, f"answers the clarification: {name}")
        pointed.pinned[name] = chosen.ref
        return pointed
    return None


# -- 2. pointing words --------------------------------------------------------------------------------------------

@dataclass(slots=True)
class _Point:
    start: int
    end: int
    said: str
    kinds: tuple[EntityType, ...]
    possessive: bool = False
    plural: bool = False
    place: int | None = None  # a place in a listed answer
    few: int = 0  # ... and how many places from it ("the first two"); 0: one
    form: str | None = None  # "the manga": that form of the latest work
    choosing: bool = False  # "which one": one of the names before, said "which of A and B"
    whole: bool = False  # "which of those": one of the whole list the answer said
    gender: str | None = None  # "he" or "she": a character whose description says the other is not meant
    said_gender: bool = False  # "the girl": only a name whose description says the gender is meant

    def fits(self, n: Named) -> bool:
        return self.gender is None or n.pronoun is None or n.pronoun == self.gender


def _points(text: str, mentions: list[LinkedMention]) -> list[_Point]:
    named = [(m.start, m.end) for m in mentions]

    def free(a: int, b: int) -> bool:
        return not any(s < b and a < e for s, e in named)

    out: list[_Point] = []
    for m in FIRST_FEW.finditer(text):
        n = _FEW.get(m.group("n").lower()) or int(m.group("n"))
        if free(m.start(), m.end()):
            out.append(_Point(m.start(), m.end(), m.group(0), ANY, plural=True,
                              place=0 if m.group("end").lower() == "first" else -n, few=n))
    for m in ORDINAL.finditer(text):
        place = _place(m)
        if place is not None and free(m.start(), m.end()) and not any(
                p.start <= m.start() < p.end for p in out):
            out.append(_Point(m.start(), m.end(), m.group(0), ANY, place=place))
    for m in BARE.finditer(text):
        if free(m.start("w"), m.end("w")):
            out.append(_Point(m.start("w"), m.end("w"), m.group("w"), THING))
    if not mentions and not _fragment(text, mentions) and not CORRECTION.match(text):
        for m in THE_FORM.finditer(text):
            if not any(p.start <= m.start() < p.end for p in out):
                form = m.group("form").lower()
                out.append(_Point(m.start(), m.end(), m.group(0), WORK, form=form))
    for m in DEMONSTRATIVE.finditer(text):
        if m.group().lower().startswith("the same") and re.match(r"\s+as\b", text[m.end():], re.IGNORECASE):
            continue  # "made by the same studio as the show": a comparison, the two sides said
        if free(m.start(), m.end()) and not any(p.start <= m.start() < p.end for p in out):
            noun = m.group("noun").lower()
            kinds = _NOUN_KINDS[noun]
            if noun == "one" and SCOPE_BEFORE.search(text[:m.start()]):
                kinds = WORK  # "who's the inventor girl in that one": a work, not the director just named
            out.append(_Point(m.start(), m.end(), m.group(0), kinds, gender=_GENDER.get(noun)))
    for m in WHICH_ONE.finditer(text):
        if free(m.start("w"), m.end("w")):
            out.append(_Point(m.start("w"), m.end("w"), m.group(0), ANY, plural=True, choosing=True))
    for m in EACH.finditer(text):
        if free(m.start(), m.end()) and not any(p.start <= m.start() < p.end for p in out):
            out.append(_Point(m.start(), m.end(), m.group(0), ANY, plural=True))
    for m in THE_PERSON.finditer(text):
        if free(m.start(), m.end()) and not any(p.start <= m.start() < p.end for p in out):
            out.append(_Point(m.start(), m.end(), m.group(0), PERSON,
                              gender=_GENDER.get(m.group("noun").lower()), said_gender=True))
    for m in THOSE.finditer(text):
        if free(m.start(), m.end()) and not any(p.start <= m.start() < p.end for p in out) and sum(
                x.start >= m.end() for x in mentions) < 2:
            kinds = _NOUN_KINDS[m.group("noun").lower()] if m.group("noun") else ANY
            whole = re.search(r"\b(?:which|what|who)(?:\s+one)?\s+of\s+$|\b(?:out of|among(?:st)?)\s+$",
                              text[:m.start()], re.IGNORECASE) is not None
            out.append(_Point(m.start(), m.end(), m.group(0), kinds, plural=True, whole=whole))
    for m in PRONOUN.finditer(text):
        word = m.group("p").lower()
        if not free(m.start(), m.end()) or any(p.start <= m.start() < p.end for p in out):
            continue
        kinds, possessive, plural = PRONOUNS[word]
        if word == "her":
            after = re.match(r"\s+([a-z']+)", text[m.end():], re.IGNORECASE)
            possessive = after is not None and after.group(1).lower() not in _AFTER_OBJECT
        if word == "it" and _dummy_it(text, m.start()):
            continue
        out.append(_Point(m.start(), m.end(), m.group(0), kinds, possessive, plural, gender=_GENDER.get(word)))
    return sorted(out, key=lambda p: p.start)


# the words that say which a person is: a character described as "she" is not "he" ("who's his dad?" after Shinji
# and Asuka were named is Shinji's)
_GENDER = {"he": "he", "him": "he", "his": "he", "guy": "he", "dude": "he", "man": "he", "boy": "he",
           "she": "she", "her": "she", "hers": "she", "girl": "she", "woman": "she", "lady": "she"}


def _dummy_it(text: str, at: int) -> bool:
    """"it" that points at nothing: "is it true that ...", "it seems", "make it to"."""
    return re.match(r"it\s+(?:true|seems?|looks like|turns out|depends)\b|it\s+to\b", text[at:], re.IGNORECASE) \
        is not None or re.search(r"\bmake\s+$", text[max(0, at - 10):at], re.IGNORECASE) is not None


# a studio or a director asked of what a pointing word after it points at ("which studio made that one")
_MADE_OF = re.compile(r"\b(?:studios?\s+(?:made|animated|produced|did|behind|for|of)|(?:who|which \w+)\s+(?:directed|"
                      r"animated)|(?:directors?|composers?|studios?)\s+(?:for|of|on|behind))\s+$", re.IGNORECASE)
# a noun the asked words are said of, before the pronoun it is of ("the studio behind it", "the director of that")
_OWNER = re.compile(r"\b(?:the|that|this)\s+[a-z]+\s+(?:behind|of|for|on|that (?:made|animated|directed|wrote)|who "
                    r"(?:made|animated|directed|wrote))\s+$", re.IGNORECASE)
_ASKED_BEFORE = re.compile(r"\b(?:what|which|who|whom|when|where|how)\b", re.IGNORECASE)
_AND_THEN = re.compile(r",\s*(?:and|then|also)\b|\band then\b|;", re.IGNORECASE)
# a part that asks for someone: "who ...", "X's son", "her adoptive brother", "its director"
_WHO = re.compile(r"\bwho(?:m|se)?\b|\bwho['\u2019]?s\b", re.IGNORECASE)
_OWNED = re.compile(r"(?:\w['\u2019]s|\b(?:his|her|their|its))\s+(?:(?P<a>\w+)\s+)?(?P<b>\w+)", re.IGNORECASE)
_SOMEONE = C.FAMILY | C.MENTOR | C.STUDENTS | C.RIVAL | C.ENEMY | C.ALLY | C.TEAMMATE | C.STAFF_NOUNS


def _asks_person(text: str) -> bool:
    return _WHO.search(text) is not None or any(
        (m.group("a") or "").lower() in _SOMEONE or m.group("b").lower() in _SOMEONE for m in _OWNED.finditer(text))


def _last_cut(body: str, before: int) -> int | None:
    """Where the part that holds ``before`` begins (None: it is the first part)."""
    cuts = [m.start() for m in _NEXT_PART.finditer(body, 0, before)]
    return cuts[-1] if cuts else None


# where a message's next part begins ("... son called and who's his ...", "...? and which division does he lead")
_NEXT_PART = re.compile(r"(?:,|\band\b|\bthen\b|;|\?)\s*(?:and\s+)?"
                        r"(?:who|whom|what|which|when|where|how|is|was|did|does)\b", re.IGNORECASE)


def _pointing(body: str, mentions: list[LinkedMention], context: ConversationContext) -> Followup | None:
    points = _points(body, mentions)
    if not points:
        return None
    asked = _asked_kinds(body)
    text, how, shift = body, [], 0
    pinned: dict[str, EntityRef] = {}
    before: list[Named] = []
    subjects = [n for t in context.turns for n in t.subjects]
    prior_end = -1
    for p in points:
        if prior_end >= 0 and p.said.lower() in ("that", "this") and _ASKED_BEFORE.search(body[:prior_end]) and \
                _AND_THEN.search(body[prior_end:p.start]):
            continue  # "what came after it, and which studio made that": what the first part finds, read on by it
        prior_end = p.end
        # (what is asked does not narrow "the anime": its form word says which reading of the work is meant, and any
        # work the conversation had points there: "how many episodes did the anime get" after the manga)
        narrowed = tuple(k for k in p.kinds if k in asked) if asked and p.form is None else p.kinds
        if not asked and not before and "person" in p.kinds and _MADE_OF.search(body[:p.start]):
            # "which studio made that one" after a show's director was named: a show is made, not its director
            narrowed = tuple(k for k in p.kinds if k in ("anime", "franchise"))
        wide = p.kinds
        if narrowed:
            p.kinds = narrowed
        # a pronoun after a name of its kind in the same reply points at that name ("i mean misa amane, who is
        # she", "no i meant the movie, jjk 0. who directed it?")
        # ("what about naruto, who's his wife": the name's reading of that kind, the character, not the anime)
        inside = None if p.place is not None or p.form is not None else next(
            (m for m in reversed(mentions) if m.end <= p.start and _reading(m, p.kinds) is not None), None)
        if set(p.kinds) <= set(PERSON) and (cut := _last_cut(body, p.start)) is not None and \
                _asks_person(body[:cut]):
            continue  # "whats vegeta's son called and who's his best friend", "whos her brother and which division
            # does he lead": a part after one that asks for someone; the reading chains it to whom that part finds,
            # as in a question asked alone
        if inside is not None:
            said, meant = inside.text, f"{inside.text} (named in the reply)"
            reading = _reading(inside, p.kinds)
            if reading is not None and reading is not inside.candidates[0]:
                pinned[inside.text] = reading.entity
        else:
            # a later pointing word of the same reply points where the first did ("the first one, who directed
            # that?")
            names = before if before and p.place is None and all(n.ref.entity_type in p.kinds for n in before) \
                else _referents(p, context)
            if not names and p.kinds != wide and p.place is None and p.form is None and not p.plural:
                # what is asked is another form's ("what magazine was it serialized in" after the Bleach anime): that
                # form of the work talked about
                work = [n for n in _referents(dataclasses.replace(p, kinds=wide), context)
                        if n.ref.entity_type in ("anime", "manga")]
                form = "manga" if "manga" in p.kinds else "anime" if "anime" in p.kinds else None
                if work and form is not None and work[0].ref.entity_type != form:
                    p.form, names = form, work
            if (p.choosing and len(names) < 2) or (p.said_gender and not names):
                continue  # "which one" with one name before chooses nothing: the question stands as asked (and "the
                # girl" no description calls "she")
            # "the anime" when only characters were talked about: the anime they appear in ("which studio did the
            # anime" after Frieren's teacher: Frieren's anime)
            cast = _referents(dataclasses.replace(p, kinds=("character",)), context) \
                if not names and p.form is not None else []
            if not names and not cast and p.kinds != wide and _OWNER.search(body[:p.start]):
                # "what year was the studio behind it founded": the studio is founded, "it" is what it is behind
                names = _referents(dataclasses.replace(p, kinds=wide), context)
            before = before or names
            if not names and not cast:
                return Followup(body, [f"{p.said!r}: nothing earlier fits"], ask=_ask_about(p, context))
            said = meant = _joined([n.name for n in names or cast])
            if p.choosing:
                said = f"of {said}"
            if cast:
                said, meant = f"{cast[0].name}'s {p.form}", f"the {p.form} {cast[0].name} is in"
            elif p.form is not None:
                # the whole show, or the manga, of a film or season talked about is its title's ("the tv show"
                # after "Cowboy Bebop: The Movie" is Cowboy Bebop's)
                # ("the anime" after the manga's Part 2, a part no anime adapts: the title's anime)
                base = _INSTALMENT.sub("", names[0].name).strip() if p.form in _WHOLE_FORMS or (
                    p.form in ("anime", "manga") and names[0].ref.entity_type in ("anime", "manga")
                    and names[0].ref.entity_type != p.form) else ""
                said = f"the {base or names[0].name} {p.form}"
            elif len(names) == 1 and not p.plural:  # ("all of them" meant one name: which reading is not settled)
                pinned[names[0].name] = names[0].ref
            elif len(names) > 1 and (all(n in subjects for n in names) or p.whole or p.choosing):
                # (or one of a list the answer said: each the entity it listed)
                # "which one started first" after "the bleach manga or naruto's": the names asked about, each as meant
                pinned |= {n.name: n.ref for n in names}
            if p.possessive and said.endswith("s") and len(names) > 1:
                said = f"{said}'"  # "their" after two names ending in s
        if p.possessive and not said.endswith("'"):
            said = f"{said}'s"
        text = text[:p.start + shift] + said + text[p.end + shift:]
        shift += len(said) - (p.end - p.start)
        how.append(f"{p.said!r} -> {meant}")
    return Followup(_tidy(text), how, pinned=pinned)


def _reading(m: LinkedMention, kinds: tuple[EntityType, ...]) -> LinkCandidate | None:
    """The reading of a name the reply gives that a pointing word of ``kinds`` can mean: its best, else (a person's
    pronoun) a person or character linked by the whole name or an alias ("what about naruto, who's his wife")."""
    if not m.candidates:
        return None
    if m.candidates[0].entity.entity_type in kinds:
        return m.candidates[0]
    if not set(kinds) <= set(PERSON):
        return None  # ("who voices frieren in it": "it" is no other reading of the character just named)
    return next((c for c in m.candidates if c.entity.entity_type in kinds and c.match in ("exact", "alias")), None)


def _referents(p: _Point, context: ConversationContext) -> list[Named]:
    turns = list(reversed(context.turns))
    told = {n.ref.id for t in context.turns for n in t.subjects}
    if p.said_gender:
        return next(([n] for t in turns for n in (*t.answers, *t.subjects)
                     if n.pronoun == p.gender and n.ref.entity_type in p.kinds), [])
    if p.place is not None:
        # the list the answer gave: its names but those asked about by then and the franchise it belongs to ("Dragon
        # Ball Super belongs to the Dragon Ball franchise, which has 4 films: ..."); a name a later turn asked about
        # keeps its place ("the first one" asked, "and the second?" is still the list's second)
        asked: set[str] = set()
        lists: list[list[Named]] = []
        for t in context.turns:
            asked |= {n.ref.id for n in t.subjects}
            said = [n for n in t.answers if n.listed]  # the list the answer said, in its order, whatever was asked
            lists.insert(0, said if len(said) >= 2 else [
                n for n in t.answers if n.ref.id not in asked and n.ref.entity_type != "franchise"])
        # the latest list the place is in ("the fourth one" of the seasons listed before "the first two combined")
        reach = p.place + max(p.few, 1) if p.place >= 0 else -p.place
        listed = next((x for x in lists if len(x) >= max(2, reach)), []) or \
            next((x for x in lists if len(x) >= 2), []) or next((x for x in lists if x), [])
        fitting = [n for n in listed if n.ref.entity_type in p.kinds] or listed
        if not p.few and not -len(fitting) <= p.place < len(fitting):
            # a list whose one member the question named ("what death note relight specials are there": the first
            # is the name asked, "the second one" the other): the answer's own order, names asked included
            whole = next((x for x in ([n for n in t.answers if n.ref.entity_type != "franchise"] for t in turns[:1])
                          if len(x) >= 2 and len({n.ref.entity_type for n in x}) == 1), [])  # (a list of one kind)
            fitting = [n for n in whole if n.ref.entity_type in p.kinds] or whole
        if p.few:
            return fitting[p.place:p.place + p.few] if p.place >= 0 else fitting[p.place:]
        if -len(fitting) <= p.place < len(fitting):
            return [fitting[p.place]]
        return []
    if p.plural:
        latest = next((t for t in turns if t.answers or t.subjects), None)
        said = [n for n in latest.answers if n.listed] if latest is not None else []
        if (p.choosing or p.whole) and len(said) >= 2:
            # "which one has the fewest episodes": one of the list the answer said, every one of it, the name asked
            # included when the list says it
            return [n for n in said if n.ref.entity_type in p.kinds][:MAX_CHOSEN] or said[:MAX_CHOSEN]
        news = _new(latest.answers, told) if latest is not None else []
        if latest is not None and len(news) >= 2:
            fitting = [n for n in news if n.ref.entity_type in p.kinds]
            if not fitting and len(latest.subjects) >= 2 and all(s.ref.entity_type in p.kinds for s in latest.subjects):
                return latest.subjects[:MAX_PLURAL]  # "directors for each?" after two works' studios: the works
            return fitting[:MAX_PLURAL] or news[:MAX_PLURAL]
        if latest is not None and len(latest.subjects) >= 2 and len(news) < 2:
            # ("episode count for each?" after two works compared, whose answer named one studio besides them)
            return latest.subjects[:MAX_PLURAL]
    # "it" is a work before it is a studio ("who animated X?" "when did it start?": X)
    groups = [tuple(k for k in p.kinds if k in WORK), tuple(k for k in p.kinds if k not in WORK)] \
        if p.kinds == THING else [p.kinds]
    # first the one name an answer brought in ("goku's older brother?" "which series is he in": the brother), or
    # what a question was about, latest turn first; a singular word points into a list only when nothing else fits
    # ("what else did he direct?" "how many eps is it": the work talked about, not the first of his others)
    def first(t: PastTurn) -> tuple[list[Named], ...]:
        return _one(_new(t.answers, told)), t.subjects

    def head(names: list[Named]) -> list[Named]:  # the first; for "his", the first the description calls "he"
        said = [n for n in names if p.gender is not None and n.pronoun == p.gender and n.ref.entity_type in p.kinds]
        return said[:1] or names[:1]

    def then(t: PastTurn) -> tuple[list[Named], ...]:
        return head(_new(t.answers, told)), head(t.answers)

    passes = (first, then)
    # the pronoun's gender is a preference: a name the descriptions say is the other is passed over while another
    # fits, and taken as before when none does (the descriptions do not say every character's)
    for gendered in (True, False) if p.gender is not None else (False,):
        for where in passes:
            for t in turns:
                for kinds in (g for g in groups if g):
                    for names in where(t):
                        fit = next((n for n in names if n.ref.entity_type in kinds and (
                            p.fits(n) or not gendered)), None)
                        if fit is not None:
                            return [fit]
    return []


def _one(names: list[Named]) -> list[Named]:
    return names if len(names) == 1 else []


def _new(answers: list[Named], told: set[str]) -> list[Named]:
    """The names an answer brought into the conversation: not ones a question had asked about."""
    return [n for n in answers if n.ref.id not in told]


def _asked_kinds(text: str) -> tuple[EntityType, ...]:
    """The kinds of entity what a reply asks can be said of: a studio is founded, a show airs and has episodes, a
    manga has volumes; () when the words say nothing."""
    words = {t.key for t in tokenize(text)}
    said: tuple[tuple[frozenset[str], tuple[EntityType, ...]], ...] = (
        (C.FOUNDED, ("studio",)), (C.EPISODES | C.AIRED, ("anime", "franchise")),
        (C.VOLUMES | C.PUBLISHED, ("manga", "franchise")))
    for cue, kinds in said:
        if words & cue:
            return kinds
    return ()


def _ask_about(p: _Point, context: ConversationContext) -> str:
    kinds = "a person or a character" if p.kinds == PERSON else "that"
    names = [n.name for t in reversed(context.turns) for n in (*t.subjects, *t.answers)][:4]
    so_far = f" So far we talked about {_joined(list(dict.fromkeys(names)))}." if names else ""
    return f"Who or what do you mean by \"{p.said}\"? Nothing earlier in this conversation is {kinds}.{so_far}"


# -- 3. fragments -------------------------------------------------------------------------------------------------

def _fragment(body: str, mentions: list[LinkedMention]) -> bool:
    """A reply that asks nothing on its own: it begins "what about" / "and", or is a few words with no asking word
    once its names are set aside."""
    if ABOUT.match(body):
        return True
    rest = body
    for m in sorted(mentions, key=lambda m: -m.start):
        rest = rest[:m.start] + " " + rest[m.end:]
    words = [t.key for t in tokenize(rest)]
    lead = LEAD.match(body)
    led = lead is not None and lead.end() > 0 and bool(body[:lead.end()].strip())
    return len(words) <= FRAGMENT_WORDS and not any(w in _ASKING for w in words) and (led or len(words) <= 3)


def _asks_own(question: str, links: EntityLinks | None, mentions: list[LinkedMention],
              read: Callable[[str, EntityLinks | None], Analysis]) -> bool:
    """A short reply that names something and asks its own thing of it ("and killua's dad?": a relation; "and
    bleach's episodes?": a value), or asks over the whole catalog ("and the newest studio?"): it stands alone, it is
    no new subject for the last question."""
    a = read(question, links)
    if not mentions:
        # "and the newest studio?": a question over the whole catalog, whole as it stands
        # ("and the tv series?" names a form of the work talked about: a format alone asks nothing of the catalog)
        return a.filter is not None and (a.filter.rank is not None or any(c.get("field") != "format"
                                                                           for c in a.filter.where))
    return bool(a.hops) or a.attr is not None


def _refit(body: str, mentions: list[LinkedMention], last: PastTurn) -> Followup | None:
    """The last question with its subject changed as the fragment says."""
    in_last = [s for s in last.subjects if s.text and s.text.lower() in last.standalone.lower()]
    subject = in_last[0] if in_last else None
    if subject is None or subject.text is None:
        return None
    asked_of = sorted(in_last, key=lambda s: last.standalone.lower().index((s.text or "").lower()))
    if len(mentions) >= 2 and len(asked_of) >= 2:
        # "shippuden vs boruto?" after "which is longer, the naruto anime or the bleach anime": each name the last
        # question asked of, in its order, is the fragment's name in its order
        text, how = last.standalone, list[str]()
        for old_one, m in reversed(list(zip(asked_of, sorted(mentions, key=lambda m: m.start), strict=False))):
            at = text.lower().index((old_one.text or "").lower())
            text = text[:at] + m.text + text[at + len(old_one.text or ""):]
            how.insert(0, f"{old_one.name} -> {m.text}")
        return Followup(_tidy(text), how)
    if mentions:
        new = mentions[0].text
        return _swap(last, subject.text, new, f"{subject.name} -> {new}")
    if (season := SEASON.search(body)) is not None:
        n = season.group("n") or _SEASON_NTH.get((season.group("nth") or "").lower())
        if n is not None:
            base = _SEASONED.sub("", subject.name).strip() or subject.name
            return _swap(last, subject.text, f"{base} season {n}", f"{subject.name} -> season {n}")
    if (year := YEAR.search(body)) is not None:
        base = _SEASONED.sub("", subject.name).strip() or subject.name
        return _swap(last, subject.text, f"{base} {year.group('y')}", f"{subject.name} -> the {year.group('y')} one")
    if (sibling := _sibling(body, subject.name)) is not None:  # "what about gt?" after "dbz": Dragon Ball GT
        return _swap(last, subject.text, sibling, f"{subject.name} -> {sibling}")
    if (said := TYPE_SAID.search(body)) is not None:
        kind = _TYPE_OF[said.group("t").lower()]
        # "the one piece anime" -> "the one piece manga": the form the last question said goes
        at = last.standalone.lower().index(subject.text.lower())
        before, after = last.standalone[:at], last.standalone[at + len(subject.text):]
        before = re.sub(rf"\b(?:{_FORMS})\s+(?:of\s+|for\s+)?$", "", before, flags=re.IGNORECASE)
        after = re.sub(rf"^\s+(?:{_FORMS})\b", "", after, flags=re.IGNORECASE)
        text = f"{before}{subject.text} {kind}{after}"
        # a length is counted in the form's own unit: "how many episodes ..." then "and the manga?" asks its volumes
        text = _UNIT[kind][0].sub(_UNIT[kind][1], text) if kind in _UNIT else text
        return Followup(_tidy(text), [f"{subject.name} -> the {kind}"])
    return None


_WHOLE_FORMS = frozenset(("show", "series", "tv series", "tv show"))
# what names one film or season of a show: the show is the title before it
_INSTALMENT = re.compile(r"\s*(?::\s*)?\b(?:the movie|season\s*\d+|part\s*\d+)\b.*$|\s*\(\d{4}\)$", re.IGNORECASE)
_UNIT: dict[str, tuple[re.Pattern[str], str]] = {
    "manga": (re.compile(r"\b(?:episodes?|eps)\b", re.IGNORECASE), "volumes"),
    "anime": (re.compile(r"\b(?:volumes?|vols?|tankobon)\b", re.IGNORECASE), "episodes"),
}


def _sibling(body: str, name: str) -> str | None:
    """The sibling title a fragment's one word makes with a title's words less its last ("what about gt?" after
    "Dragon Ball Z": "Dragon Ball gt", which linking then finds, or not); None when a dictionary has the word
    (Webster's: "gt" is no word of it), it is a question's own word, or the title is one word."""
    rest = [t for t in tokenize(LEAD.sub("", body)) if t.key not in _FILLER]
    words = name.split()
    if len(rest) != 1 or len(words) < 2 or not 2 <= len(rest[0].key) <= 6 or not rest[0].key.isalpha() or \
            rest[0].key in dictionary_words() or rest[0].key in _ASKING:
        return None
    return f"{' '.join(words[:-1])} {rest[0].raw}"


_FILLER = words("the a an one then lol pls please ok okay")
SHORT_TAIL = 4  # letters of a title's last word a reply may name it by ("gt" for Dragon Ball GT)


def _short_named(body: str, mentions: list[LinkedMention], context: ConversationContext) -> Followup | None:
    """A word no name covers that is the distinctive word of a name the conversation had ("is gt based on the manga"
    after Dragon Ball GT: "gt" is no English word, and the last word of that title), spelled out to that name."""
    names = [n for t in reversed(context.turns) for n in (*t.subjects, *t.answers)]
    covered = [(m.start, m.end) for m in mentions]
    for t in tokenize(body):
        if any(a <= t.start < b for a, b in covered) or len(t.key) < 2 or not t.key.isalpha() or \
                t.key in dictionary_words() or t.key in _ASKING or t.key in _FILLER:
            continue
        # (the name's last word, short: the tail that tells it from its siblings, "GT", "Kai"; not "hashira")
        named = next((n for n in names if len(t.key) <= SHORT_TAIL and link_key(n.name).split()[1:][-1:] == [t.key]),
                     None)
        if named is not None:
            text = body[:t.start] + named.name + body[t.end:]
            return Followup(_tidy(text), [f"{t.raw!r} -> {named.name}"], pinned={named.name: named.ref})
    return None


# "the punch one", "the mob one": the one of the names before whose name has that word
WORD_ONE = re.compile(r"\bthe\s+(?P<w>[a-z][a-z0-9-]{2,})\s+one\b", re.IGNORECASE)
_NOT_NAME_WORD = words("""same other new newer newest old older oldest original latest earlier later next previous
main whole right wrong only last final first second third fourth fifth longer shorter longest shortest
bigger biggest best worst good bad""")


def _word_one(body: str, mentions: list[LinkedMention], context: ConversationContext) -> Followup | None:
    """"the punch one, who draws its manga?" after a list of Madhouse's works: the one name before, in the latest
    turn that has one, with that word in it (One-Punch Man), spelled out; a word no name before has ("the dog one")
    is left to the other readings."""
    for m in WORD_ONE.finditer(body):
        word = m.group("w").lower()
        if word in _NOT_NAME_WORD or word in _ORDINALS or any(x.start < m.end() and m.start() < x.end
                                                                for x in mentions):
            continue
        for t in reversed(context.turns):
            hits = list({n.ref.id: n for n in (*t.answers, *t.subjects)
                         if word in link_key(n.name).replace("-", " ").split()}.values())
            if len(hits) == 1:
                text = body[:m.start()] + hits[0].name + body[m.end():]
                return Followup(_tidy(text), [f"{m.group(0)!r} -> {hits[0].name}"], pinned={hits[0].name: hits[0].ref})
            if hits:
                break
    return None


def _pointed_fragment(body: str, mentions: list[LinkedMention], last: PastTurn, pointed: Followup) -> Followup | None:
    """A fragment whose one name is a pointing word ("who directed the first one" then "and the second?"; "who was
    frieren's teacher" then "and hers?"): the last question asked of the name pointed at, not a bare lookup of it."""
    if pointed.ask is not None or len(pointed.pinned) != 1 or not _fragment(body, mentions) or (
            ORDINAL.search(body) is None and OWN.fullmatch(LEAD.sub("", body)) is None):
        return None  # (only a place, or whose, said as the whole reply: "whats it about" asks its own thing of "it")
    ((name, ref),) = pointed.pinned.items()
    subject = next((s for s in last.subjects if s.text and s.text.lower() in last.standalone.lower()), None)
    if subject is None or subject.text is None or subject.ref.id == ref.id:
        return None
    f = _swap(last, subject.text, name, f"{subject.name} -> {name}")
    f.how, f.pinned = [*pointed.how, *f.how], dict(pointed.pinned)
    return f


def _swap(last: PastTurn, old: str, new: str, how: str) -> Followup:
    at = last.standalone.lower().index(old.lower())
    text = last.standalone[:at] + new + last.standalone[at + len(old):]
    return Followup(_tidy(text), [how])


# -- 4. a question with no subject --------------------------------------------------------------------------------

def unanchored(question: str, links: EntityLinks | None, a: Analysis) -> str | None:
    """What to ask back when a conversation's first question has no subject but a pointing word ("when did it
    end?", "how many episodes did the second one have?"): nothing was said before that it can point at; None when it
    names something or says what it means."""
    mentions = [m for m in (links.mentions if links else []) if not _numbering(m.text)]
    if mentions or (links is not None and links.unknown) or not _needs_subject(a):
        return None
    if not mentions and not (links is not None and links.unknown) and a.filter is None and a.recommend is None and \
            (season := SEASON.search(question)) is not None and _untitled(question[:season.start()]):
        # "who directed season 2?" as a conversation's first question: a season of no title named
        return f"Which show's {season.group().lower()} do you mean? Name the title."
    points = [p for p in _points(question, mentions) if p.form is None]
    # only asking words before it: any other word may be what it points at, a name the catalog lacks included
    # ("kyoto animation - when was it founded?", "my little brother ... he's obsessed with martial arts")
    if not points or any(t.key not in _ASKING and t.key not in STOP and t.key not in C.CUES
                         for t in tokenize(question[:points[0].start])):
        return None
    return (f"Who or what do you mean by \"{points[0].said}\"? Nothing was said before it that it could point at: "
            "name the title or the person.")


def _untitled(before: str) -> bool:
    """Whether the words before a season say no title ("who directed season 2", "does the second season"; not
    "vinland saga season 2", a title the catalog lacks)."""
    words = [t.key for t in tokenize(before)]
    return not words or words[-1] in STOP or words[-1] in C.CUES


def _needs_subject(a: Analysis) -> bool:
    return (not a.mentions and a.recommend is None and not a.description and a.among is None
            and ((bool(a.described) and a.filter is None) or _asks_of_nothing(a)))


def _asks_of_nothing(a: Analysis) -> bool:
    """A catalog question that sets no condition and whose words are only cue words ("whats the sequel series"): a
    relation asked of no name, not a list of the whole catalog."""
    f = a.filter
    return f is not None and not (f.where or f.rank or f.group_by or f.total or f.count or f.shown) and all(
        t.key in STOP or t.key in C.CUES or t.key in _ASKING for t in tokenize(f.words)) and any(
        t.key in C.CUES for t in tokenize(f.words))


def _completed(question: str, context: ConversationContext) -> Followup:
    target = _latest_work(context, _asked_kinds(question))
    if target is None:
        return Followup(question, ["no subject, and nothing earlier to ask about"],
                        ask="What would you like to know that about? Name the title or the person.")
    q = question.rstrip(" ?.!")
    body = LEAD.sub("", q).strip() or q
    numbering = list(_NUMBERED.finditer(body))
    if len(numbering) == 1 and not re.match(r"\s+of\b", body[(numbered := numbering[0]).end():], re.IGNORECASE):
        # "is part 2 finished?": that part of the title talked about ("is Chainsaw Man part 2 finished?"); not
        # "part 1 and part 2 of the final season", which says whose parts
        base = _NUMBER_SUFFIX.sub("", target.name).strip() or target.name  # (its subtitle kept: "The Final Season")
        text = f"{body[:numbered.start()]}{base} {numbered.group()}{body[numbered.end():]}?"
        return Followup(_tidy(text), [f"no subject -> {base} {numbered.group()}"])
    return Followup(_tidy(f"{body} of {target.name}?"), [f"no subject -> {target.name}"])


# a season or part said with no title ("is part 2 finished?", "who directed season 3")
_NUMBERED = re.compile(r"\b(?:season|part|pt|s)\s*\d{1,2}\b", re.IGNORECASE)
_NUMBER_SUFFIX = re.compile(r"\s+(?:season|part)\s*\d{1,2}$|\s*\(\d{4}\)$", re.IGNORECASE)


def _latest_work(context: ConversationContext, kinds: tuple[EntityType, ...] = ()) -> Named | None:
    """The latest name a question with no subject can be about: a work an answer gave alone or a question asked
    about, of the kinds what is asked can be said of; else the latest name at all."""
    fits = kinds or WORK
    for t in reversed(context.turns):
        if len(t.answers) == 1 and t.answers[0].ref.entity_type in fits:
            return t.answers[0]
        subject = next((s for s in t.subjects if s.ref.entity_type in fits), None)
        if subject is not None:
            return subject
    return next((n for t in reversed(context.turns) for n in (*t.subjects, *t.answers[:1])), None)


# -- words --------------------------------------------------------------------------------------------------------

def _place(m: re.Match[str]) -> int | None:
    if m.group("nth"):
        n = _ORDINALS[m.group("nth").lower()]
        return n if n < 0 else n - 1
    digits = m.group("num") or m.group("number")
    return int(digits) - 1 if digits and int(digits) >= 1 else None


def _numbering(text: str) -> bool:
    """A linked span that is only a numbering ("season 2", "s2", "part 2"): no name of its own."""
    return re.fullmatch(r"(?:season|s|part|vol(?:ume)?|episode|ep)\s*\d{1,3}", text.strip(), re.IGNORECASE) is not None


def _joined(names: Sequence[str]) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _tidy(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()
