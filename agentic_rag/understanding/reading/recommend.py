"""Recommendations: "anime like Frieren", "something dark after AoT", "any good movies from the studio of X".

A question asks for recommendations when it says so ("recommend", "recs", "suggest"), asks for what is similar
("similar", "like X", "like it", "same vibe", "in the same vein", "just as dark"), or asks for more of a kind
("anything else", "other shows", "any good movies"). What it reads:

- the **examples**: the works it names, or where a chain leads ("the studio that animated X" is an example of
  its own: its works are meant); a name after a negation ("not Demon Slayer", "no more AoT stuff", "Boruto
  doesn't count") is left out instead, its franchise with it;
- **what to recommend**: anime or manga, by the type word said ("manga", "shows", "a movie") or the verb ("read",
  "watch"), else the examples' own type;
- the **facts the picks must have**, read by the catalog filter parser (:mod:`~agentic_rag.understanding.filters`)
  from the words around the names ("90s", "before 2010", "a movie", "not a movie", "finished", "still airing",
  "short"); "finished X" or "just finished the ..." is what the asker did, not a wish;
- the **wish in words**: the words left once names, cue words and chatter are gone ("dark psychological",
  "journey bittersweet fantasy"), searched by meaning beside the examples;
- **how many**: "2 or 3 shows" (the larger), "a few", else five.

A type the catalog does not hold ("a light novel like X", "games like Persona") is said, and the picks are of the
nearest type it holds.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal

from agentic_rag.protocol import EntityLinks, LinkedMention
from agentic_rag.protocol.reading import Analysis, Recommend
from agentic_rag.protocol.vocabulary import EntityType, hop_range
from agentic_rag.understanding.cues import words
from agentic_rag.understanding.filters import parse_filter
from agentic_rag.understanding.linker import STOP
from agentic_rag.understanding.numbers import with_digits
from agentic_rag.understanding.reading.names import _add
from agentic_rag.understanding.text import asking, sentences, tokenize

_SOMETHING = r"(?:something|smth|sth|somethin|anything|anythin)"  # as typed in a hurry ("need smth funny")
# Words that ask for recommendations ("other anime", "anything else" do not: "what other anime did X direct" asks
# for facts, the works of a person or a studio)
ASKED = re.compile(
    r"\b(?:re(?:c|cc)om+e?nd\w*|recs?|suggest\w*|any (?:ideas|picks|tips|pointers)|"
    r"(?:with|w/|has|having|got) (?:a|an|that|the same) .{0,40}?"
    r"\b(?:feel|vibes?|energy|atmosphere)\b|similar (?:to|ones?|anime|animes|shows?|series|movies?|films?|manga|mangas|"
    r"titles|stuff|vibes?)|(?:anything|something|any) similar|same (?:vibe|vibes|feel|energy|kind of|style)|"
    r"similar (?:feel|feeling|tone|mood|premise|story|themes?)|with a similar|"
    # "in the same lighthearted action-comedy lane as X"
    r"same\b(?:[\s/-]+[\w'-]+){0,3}?[\s/-]+(?:lane|genre|kind|type|style|vibes?|feel|energy|tone|mood|flavou?r)\s+"
    r"(?:as|of)\b|(?:same|that|this|my) (?:\w+ ){0,2}itch|"
    r"in (?:the same|that|this|a similar) vein|in the vein of|along (?:the same|those|these) lines|more like|"
    r"in the (?:spirit|style|mold|mould|tradition) of|reminiscent of|akin to|comparable to|along the lines of|"
    r"(?:a|an|something|anything) (?:\w+ )?similarly \w+|(?:something|anything) (?:just|equally) as \w+|"
    r"(?:something|anything) as \w+ (?:and \w+ )?(?:as|next|after)\b|"
    # "I want something with Frieren's vibe": a liked work's feel wanted
    r"(?:something|anything|want|wanna|looking for|need|craving)\b.{0,30}\b\w+(?:'s|’s) (?:vibes?|feel|energy|"
    r"atmosphere)|"
    r"if (?:i|you) (?:liked?|loved?|enjoyed?)|"
    # "... thats the vibe im after": the wish said as a vibe sought
    r"(?:vibes?|feel|energy|mood) (?:i'?m|im|i am|we'?re) (?:after|looking for|going for|chasing|craving)|"
    # "got anything else that's action + comedy?": more works, described
    rf"{_SOMETHING} else (?:that'?s|thats|that is|that has|that have|with|where|like|along|in the)\b|"
    r"(?:any|some|something) good (?:anime|animes|shows?|series|movies?|films?|manga|mangas|to watch|to read)|"
    r"(?:watch|read)\b.{0,40}\b(?:just|equally) as \w+)\b", re.IGNORECASE)
# what to watch or read next: a recommendation when some sentence also says what it should be like
WHAT_NEXT = re.compile(r"\b(?:what|anything|something) (?:should|could|can|do|would) (?:i|we|you)\b.{0,20}\b"
                       r"(?:watch|read|check out|try|pick up|start)\b|\b(?:watch|read|pick up)\s+"
                       rf"(?:{_SOMETHING}\s+)?next\b|\bmove on to\b",
                       re.IGNORECASE)
# "was there another movie that follows it": what continues the work, a fact
FOLLOWS = re.compile(r"\b(?:follows?|followed|continues?|continued|continuation|sequels?|comes? after|came after)\b",
                     re.IGNORECASE)
# the asker's own watching or reading to come ("films i could check out", "something to binge"): works wanted, not
# a fact about who made what
CONSUME = re.compile(r"\b(?:i|we|he|she|they)(?: (?:could|can|should|might|would|will)|['\u2019]d|['\u2019]ll) "
                     r"(?:\w+ )?(?:watch|read|"
                     r"check out|try|pick up|binge|start|get into)\b|\bto (?:watch|binge|check out|pick up|get into)\b|"
                     # ... asked ("what could we watch together")
                     r"\b(?:could|can|should|might|would) (?:i|we|he|she|they) (?:\w+ )?(?:watch|read|check out|try|"
                     r"pick up|binge|start|get into)\b", re.IGNORECASE)
_NEXT = re.compile(r"\b(?:watch|read|try|check out|binge|start)\s+next\b", re.IGNORECASE)
# works of a kind asked for ("any psychological manga that's finished?", "another comedy manga", "anything else
# from that studio"): a recommendation when the message also says whose works are meant or what the asker liked
_WORKS_NOUN = (r"(?:anime|animes|manga|mangas|shows?|series|movies?|films?|titles|productions?|projects|works|stuff|"
               # works named by their kind ("what other action comedies could we watch")
               r"comedies|comedys|thrillers|dramas|romances|mysteries|westerns|isekais|shonens|shounens|seinens|"
               r"mechas|rom-?coms)")
WANTED = re.compile(r"\b(?:any|another|some|something|anything|other|others|more|(?:is|are) there an?)\b"
                    r"(?:[\s,/-]+(?!(?:did|does|do|has|"
                    rf"have|had|is|are|was|were)\b)[\w'-]+){{0,5}}?[\s/-]+(?:{_WORKS_NOUN}|else)\b", re.IGNORECASE)
ANOTHER = re.compile(r"\b(?:wants?|wanna|needs?|looking for|look for|give me|gimme|get me|show me|find me|craving|"
                     r"would like|"
                     r"i'?d like|"
                     r"point me (?:to|towards?)|in the mood for|hook me up with)\s+"
                     # ("want to READ a superhero manga": the act wanted, then the work)
                     r"(?:(?:\w+\s+){0,2}?(?:another|more)|"
                     r"(?:to\s+(?:watch|read|binge|try|start|check out|get into|pick up)\s+)?"
                     r"an?(?!\s+(?:list|number|count|name|summary|rundown|synopsis|recap|breakdown|overview)\b))"
                     rf"\b(?:[\s/,\u2014\u2013-]+[\w'-]+){{0,5}}?[\s/-]+{_WORKS_NOUN}\b", re.IGNORECASE)
# "need something dark to binge after X", "want anything like X": something wanted to watch or read
SOMETHING_TO = re.compile(r"\b(?:needs?|wants?|wanna|looking for|craving|in the mood for)\s+(?:" + _SOMETHING + r"\b"
                          r"(?:[\s,-]+[\w'-]+){0,3}?\s+(?:to (?:watch|binge|read|try|check out|start)|after)\b|"
                          # "i want to READ something next": the act wanted, then the something
                          r"(?:to\s+)?(?:watch|binge|read|try|check out|start)\s+(?:\w+\s+)?" + _SOMETHING + r"\b)",
                          re.IGNORECASE)
# works sought by what they must be, not by a type word, beside a work named as an example or left out ("frieren made
# me want some old school fantasy adventure. smth that started before 2005", "need a massive shonen to binge, 200+
# episodes ... dont say one piece"): seeking words before an indefinite, in a message whose words also set conditions
# the catalog's fields hold (:data:`WISH_FIELDS`, read by the filter parser)
SEEKING = re.compile(r"\b(?:wants?|wanted|wanna|needs?|looking for|look for|craving|in the mood for|hoping for)\s+"
                     rf"(?:\w+\s+){{0,2}}?(?:{_SOMETHING}|some|another|an?)\b(?!\s+(?:list|number|count|name|summary|"
                     r"rundown|synopsis|recap|breakdown|overview|answer|explanation|reminder)\b)", re.IGNORECASE)
_SOMETHING_WANTED = re.compile(r"\W*(?:something|smth|sth|somethin)\b(?!\s+(?:about|on|like)\b)", re.IGNORECASE)
_ASKS_FACT = re.compile(r"\b(?:who|whom|whose|what|which|when|where|why|how)\b|\b(?:else|wrong)\b", re.IGNORECASE)
ASKED_SOMETHING = re.compile(rf"\W*{_SOMETHING}\b(?!\s+(?:about|on|like)\b)", re.IGNORECASE)
WISH_FIELDS = frozenset(("status", "year", "end_year", "episode_count", "volumes", "format"))
SAME_SOURCE = re.compile(r"\b(?:from|by) (?:the same|that|this|their|his|her) (?:studio|director|author|creator|"
                         r"writer|mangaka|artist|team|people|staff|guy|person)\b|\bsame (?:studio|director|author|"
                         r"creator|writer|mangaka|staff|people)\b", re.IGNORECASE)
# ... but "which other anime did that director direct?", "did the composer score any other anime?" ask a fact
CREDITED = re.compile(r"\b(?:did|does|do|has|have|had)\b.{0,40}\b(?:direct|score|compose|make|animate|write|draw|"
                      r"produce|voice|work|create|illustrate)\w*", re.IGNORECASE)
LIKED = re.compile(r"\b(?:lov(?:e|ed|ing)|adored?|enjoyed|(?:big |huge )?fan\b|fav\w*|favou?rite|scratched|"
                   r"caught up|binged|obsessed|hooked|comfort (?:read|watch|show|anime|manga|series)|"
                   r"grew up (?:on|with|watching|reading)|"
                   # "X was great", "X is so good": a work praised
                   r"(?:was|is|were|are) (?:(?:so|really|pretty|\w+ly) )?(?:great|amazing|awesome|incredible|"
                   r"fantastic|excellent|gorgeous|beautiful|peak|good|fire)|"
                   # what the asker has seen: "I've only watched the original series", "already seen it"
                   r"(?:i'?ve|i have|i) (?:\w+ ){0,2}?(?:watched|seen|read|finished)|"
                   # "just finished X and i want more psychological stuff"
                   r"(?:just|recently) (?:finished|watched|read|binged|completed))\b", re.IGNORECASE)
# "like X" / "anime like it": a work compared to, not "what is X like" or "I'd like to know"
LIKE = re.compile(r"\b(?:like|liek|lik|as good as|similar to|same as|(?:lines|vein|spirit|style|mold|mould|vibes?|feel|"
                  r"energy|atmosphere|tone|mood) of)\s*$", re.IGNORECASE)
LIKE_IT = re.compile(r"\b(?:anime|animes|shows?|series|movies?|films?|manga|mangas|something|anything|ones?|stuff|"
                     r"more|others?|is|are|that's|thats|feels?)\s+(?:like|similar to) (?:it|them|those)\b",
                     re.IGNORECASE)
# "something with FMAB vibes", "Frieren-type stuff", "Death Note energy": a work's feel, named before the word
VIBES = re.compile(r"\W{0,3}(?:'s\s+|s\s+)?(?:vibes?|energy|feel|atmosphere|esque|type (?:of )?(?:stuff|shows?|anime|"
                   r"manga|series))\b", re.IGNORECASE)
NOT_A_LIKE = re.compile(r"\b(?:what|how) (?:is|was|are|were) \S.{0,60}\blike\b|\b(?:i'?d|would|i) like to\b",
                        re.IGNORECASE)
# a name after these is not wanted; "X doesn't count" / "X is out" after it
NEGATED_BEFORE = re.compile(r"\b(?:not|no|no more|nothing|none of|anything but|without|never|except|besides|"
                            r"(?:don'?t|do not) (?:say|suggest|recommend|mention|give me|tell me|show me)|"
                            r"other than|apart from|outside(?: of)?|excluding|exclude|leave out|skip|minus|"
                            r"unrelated to|(?:nothing|not|none) to do with|"
                            r"(?:is|are|was|were)\s*n'?o?t|"
                            r"isnt|arent|wasnt|werent)\s+(?:(?:the|a|an|more|any|main|original|actual|real)\s+)*$",
                            re.IGNORECASE)
ELSE = re.compile(r"\b(?:else|other|another|different)\b", re.IGNORECASE)
NEGATED_AFTER = re.compile(r"^\W*(?:stuff|related|things?|series|franchise|anime|manga)?\s*"
                           r"(?:(?:does|do|did)\s*n'?o?t|dont|doesnt|doesn't|don't)\s+count|^\W*(?:is|are)\s+out\b",
                           re.IGNORECASE)
# the asker's own act: "finished X", "just finished the ...", "rewatching X" (not a wish that the pick be finished)
DONE = re.compile(r"\b(?:just |already |recently )?(?:finished|completed|watched|read|binged|rewatching|rewatched|"
                  r"watching|reading)\s+(?P<object>(?:(?:the|all|all of|it|watching|reading)\b\s*)*)", re.IGNORECASE)
AFTER = re.compile(r"\b(?:(?:watch|read|try|check out|start)\s+(?:next\s+)?)?after\b", re.IGNORECASE)
NOT_MOVIE = re.compile(r"\b(?:not|no|non|nothing)[- ](?:a |an |the |any )?(?:movies?|films?)\b", re.IGNORECASE)
BOTH_FORMATS = re.compile(r"\b(?:tv|series|shows?)\s*(?:or|and|/|&|,)\s*(?:\w+\s+)?(?:movies?|films?)\b|"
                          r"\b(?:movies?|films?)\s*(?:or|and|/|&|,)\s*(?:\w+\s+)?(?:tv|series|shows?)\b", re.IGNORECASE)
MOVIE = re.compile(r"\b(?:movies?|films?)\b", re.IGNORECASE)
TV = re.compile(r"\b(?:tv|series)\b", re.IGNORECASE)
FINISHED = re.compile(r"\b(?:finished|completed|complete|ended|already over|(?:done|finished|over|stopped) airing|"
                      r"done(?! with))\b", re.IGNORECASE)
RUNNING = re.compile(r"\b(?:ongoing|still (?:airing|running|going)|currently airing|airing now)\b", re.IGNORECASE)
# a wish refused in its own clause ("I don't want something that's still going", "nothing still airing")
_UNWANTED = re.compile(r"\b(?:not|no|nothing|never|without|(?:do|does|did)\s*n'?o?t|dont|doesnt|isn'?t|isnt|"
                       r"aren'?t|arent)\b[^.,;:!?\u2014\u2013]*$", re.IGNORECASE)
SHORT = re.compile(r"\b(?:short|quick|not too long|not long|few episodes)\b", re.IGNORECASE)
# "a really long fighting show", "hundreds of episodes", "a long-running manga" (not "how long", "not too long")
LONG = re.compile(r"(?<!not )(?<!not too )(?<!how )\b(?:long(?:[- ]running)?|lengthy)\b(?=(?:[\s/-]+[\w'-]+){0,3}?"
                  r"[\s/-]+(?:anime|animes|shows?|series|manga|mangas|ones?)\b)|"
                  r"\b(?:hundreds|lots|a lot|tons|loads) of (?:episodes|eps|chapters|volumes)\b|"
                  r"\b(?:over|more than|at least)\s+[1-9]\d{1,3}\s*(?:episodes|eps)\b|"
                  r"\b[1-9]\d{1,3}\s*\+\s*(?:episodes|eps)\b", re.IGNORECASE)
# types the catalog does not hold, as a person names them (singular and plural)
LACKING = re.compile(r"\b(?P<t>light novels?|novels?|books?|video games?|games?|dramas|k-?dramas?|webtoons?|"
                     r"manhwas?|manhuas?|live[- ]action (?:shows?|movies?|films?|series)|tv dramas?)\b",
                     re.IGNORECASE)
MANGA_WORDS = frozenset(("manga", "mangas", "read", "reading", "comic", "comics", "volumes", "chapters"))
ANIME_WORDS = frozenset(("anime", "animes", "watch", "watching", "show", "shows", "series", "movie", "movies",
                         "film", "films", "tv", "episodes"))
# what a wish's words are not: the cue words above, type words, chatter
CHATTER = words("""
recommend recommendation recommendations recommended recs rec suggest suggestion suggestions similar same vibe vibes
vein feel energy kind sort style like liked loved enjoyed enjoy love watch watched watching read reading next else
other another anything something stuff thing things good great anime animes show shows series manga mangas movie
movies film films tv title titles work works check out ones one give me some few couple pls please plz lol tbh
rather prefer preferably already finished over sad empty kinda feel felt ruined night want wanted looking look after
more got gf bf friend friends rn idk imo tho maybe really actually time times doesnt count dont related classic
classics just equally gonna wanna need short quick thats shes hes seen im ive id its ve ll re spirit style tradition
mold mould reminiscent akin comparable lines basically comfort point move only original grew up back mood
""")
_EMPHASIS = re.compile(r"[*_~`]")
DEFAULT_PICKS = 5
# which reading of a name is the example, after the type asked for: a work, else whose works are meant
EXAMPLE_ORDER: tuple[EntityType, ...] = ("anime", "manga", "franchise", "studio", "person", "character")
MAX_PICKS = 10
MAX_LENGTH = 1000  # the largest length bound a recommendation carries (SimilarFilters' own)
WISH_WORDS = 12  # words of a wish searched by meaning


def _asks_recommendation(question: str, linked: list[LinkedMention], excluded: bool = False) -> bool:
    """A cue in an asking sentence, or an asking sentence that asks what to watch next and a cue anywhere
    ("... want the same vibe. what should i watch next?"); a cue in an aside ("my friend keeps recommending X.
    who directed it?") asks for nothing."""
    asked = [question[a:b] for a, b in asking(question)] or [question]
    if any(_cue(part, question, linked) for part in asked):
        return True
    # "need another adventure manga from weekly shonen jump": wanting more of a kind, said in any sentence ("... and
    # i want another ONGOING manga. what's out there")
    told = [question[a:b] for a, b in sentences(question)] if any(_works(m) for m in linked) else asked
    if any((ANOTHER.search(part) or SOMETHING_TO.search(part)) and not CREDITED.search(part) for part in told):
        return True
    # (with no work named, conditions wanted are a question over the catalog: every match listed); "something
    # supernatural that's finished and under 15 volumes?" asks by the words it wants alone
    if any(_works(m) for m in linked) and _conditions(question) and any(
            (SEEKING.search(part) or ASKED_SOMETHING.match(part)) and not CREDITED.search(part)
            for part in (question[a:b] for a, b in sentences(question))):
        return True
    # "something cozy and wholesome, slice of life with comedy?": an asking sentence that is only the something
    # wanted, with no question word and no work named, asks for works like that ("anything with romance in it?"
    # asks whether the catalog has any: a list)
    if not any(_works(m) for m in linked) and any(
            _SOMETHING_WANTED.match(part) and not CREDITED.search(part) and not _ASKS_FACT.search(part)
            and len(part.split()) >= 2 for part in asked):
        return True
    left_out = excluded or any(_negated(question, m) for m in linked)
    # "looking for another fantasy adventure ... not frieren obviously": seeking another of a kind, beside a work
    # liked or left out
    # (with a work named, ``told`` is every sentence)
    if any(_works(m) for m in linked) and (left_out or LIKED.search(question)) and any(
            SEEKING.search(part) and not CREDITED.search(part) for part in told):
        return True
    # "does the studio that animated it have any other shows i could check out?": works of a kind, to watch
    if any(WANTED.search(part) and (CONSUME.search(part) or not CREDITED.search(part)) and not FOLLOWS.search(part)
           for part in asked) and (
            SAME_SOURCE.search(question) or LIKED.search(question) or left_out or
            any(CONSUME.search(part) for part in asked)):
        return True
    # "shonen action like dragon ball but not dragon ball... something that started before 2000?": the like said in
    # one sentence, something asked for in another
    if _cue(question, question, linked) and any(re.search(rf"\b{_SOMETHING}\b", part, re.IGNORECASE)
                                                for part in asked):
        return True
    # "is there a movie from the same studio i could watch next?", "what should i pick up next? not opm itself":
    # what to watch next, whose works said, or what it is not
    return any(WHAT_NEXT.search(part) for part in asked) and (_cue(question, question, linked) or left_out or
                                                              SAME_SOURCE.search(question) is not None)


def _conditions(question: str) -> bool:
    """Whether the message sets a condition a work's fields hold ("finished", "before 2005", "200+ episodes")."""
    found = parse_filter(f"anime {' '.join(question.split())}")
    return found is not None and any(c["field"] in WISH_FIELDS for c in found.where)


def _cue(text: str, question: str, linked: list[LinkedMention]) -> bool:
    if ASKED.search(text) or LIKE_IT.search(text):
        return True
    if NOT_A_LIKE.search(text):
        return False
    at = question.find(text)
    return any(LIKE.search(question[:m.start]) or VIBES.match(question[m.end:])
               for m in linked if _works(m) and at <= m.start < at + len(text))


def _compared(question: str, m: LinkedMention) -> bool:
    """Whether the picks are to be like ``m`` ("along the lines of Frieren", "FMAB vibes"), so not ``m`` itself."""
    return bool(LIKE.search(question[:m.start]) or VIBES.match(question[m.end:]))


def _works(m: LinkedMention) -> bool:
    return any(c.entity.entity_type in ("anime", "manga", "franchise") for c in m.candidates)


def _negated(question: str, m: LinkedMention) -> bool:
    return bool(NEGATED_BEFORE.search(question[:m.start]) or NEGATED_AFTER.match(question[m.end:]))


def _asked_type(words: list[str], examples: list[LinkedMention]) -> Literal["anime", "manga"]:
    """anime or manga: the type noun said, else the verb, else the examples' type (anime when in doubt)."""
    for nouns in (("manga", "mangas"), ("anime", "animes", "show", "shows", "series", "movie", "movies", "film",
                                        "films", "tv")):
        if any(w in nouns for w in words):
            return "manga" if nouns[0] == "manga" else "anime"
    if any(w in MANGA_WORDS for w in words) and not any(w in ANIME_WORDS for w in words):
        return "manga"
    if any(w in ANIME_WORDS for w in words):
        return "anime"
    types = [c.entity.entity_type for m in examples for c in m.candidates[:1]]
    return "manga" if types and all(t == "manga" for t in types) else "anime"


def _done(question: str, verb: re.Match[str], linked: list[LinkedMention]) -> bool:
    """Whether "finished" (or "rewatching") says what the asker did: its object is a name or "it" ("finished
    frieren", "just finished the aot final chapters"), not a wish ("something finished", "already finished")."""
    return bool(verb.group("object").strip()) or any(m.start == verb.end() for m in linked)


def _without(question: str, spans: list[tuple[int, int]]) -> str:
    for lo, hi in spans:
        question = question[:lo] + " " * (hi - lo) + question[hi:]
    return question


def _picks(question: str) -> int:
    """"give me 2 or 3 shows": the larger number said before the type word; "a few": three; else five."""
    text = with_digits(question.lower())
    said = [int(n) for n in re.findall(r"\b(\d{1,2})\b(?= (?:or \d+ )?(?:\w+ )?(?:shows?|anime|animes|manga|"
                                        r"series|movies?|films?|titles|recs|recommendations|picks|more))", text)]
    said += [int(b) for _, b in re.findall(r"\b(\d{1,2}) or (\d{1,2})\b", text)]
    if said:
        return max(1, min(max(said), MAX_PICKS))
    return 3 if re.search(r"\b(?:a few|a couple|couple of)\b", text) else DEFAULT_PICKS


def _facts(text: str, asked: str, r: Recommend) -> str:
    """The facts the picks must have, read from ``text`` by the catalog filter parser; the words it leaves."""
    found = parse_filter(f"{asked} {' '.join(text.split())}")
    for c in found.where if found else []:
        field, op, value = c["field"], c["op"], c["value"]
        if field in ("year", "end_year"):  # "finished before 2010": it ended, so began, before then
            if op in ("gt", "gte", "eq"):
                r.year_min = max(r.year_min or 0, int(value) + (op == "gt")) or None
            if op in ("lt", "lte", "eq"):
                r.year_max = min(r.year_max or 9999, int(value) - (op == "lt"))
        elif field == "format" and asked == "anime" and isinstance(value, str):
            r.formats = (value,)
        elif field == "status":
            r.finished = value == "finished"
        elif field in ("episode_count", "volumes") and isinstance(value, int) and 0 < value <= MAX_LENGTH:
            # "under 30 episodes", "over 100 episodes": the length said, as a bound
            if op in ("lt", "lte"):
                r.most = value - (op == "lt") or None
            elif op in ("gt", "gte"):
                r.least = value + (op == "gt")
    if asked == "anime":
        r.formats = _formats(text) or r.formats
    r.short = bool(SHORT.search(text))
    r.long = bool(LONG.search(text))
    running = [m for m in RUNNING.finditer(text) if not _UNWANTED.search(text[:m.start()])]
    if running or FINISHED.search(text) or RUNNING.search(text):  # "done airing": finished, whatever "airing" read as
        r.finished = not running  # "I don't want something that's still going": finished
    return found.words if found else text


def _formats(text: str) -> tuple[str, ...]:
    """The anime formats a wish says: "a movie" (movies), "not a movie" (the others), "a tv series" (tv)."""
    if NOT_MOVIE.search(text):
        return ("tv",) if TV.search(text) else ("tv", "ova", "ona", "special")
    if MOVIE.search(text):  # "shows or films": both
        return ("tv", "movie") if BOTH_FORMATS.search(text) else ("movie",)
    return ("tv",) if TV.search(text) else ()


def _wish(words: str) -> str:
    keys = [t.key for t in tokenize(words)]
    kept = [k for k in keys if k not in STOP and k not in CHATTER and not any(ch.isdigit() for ch in k) and len(k) > 1]
    kept = kept[:WISH_WORDS]
    # each word once, unless said again before a new word ("something dark ... dark fantasy": "dark fantasy" is a
    # genre of its own)
    return " ".join(k for i, k in enumerate(kept) if k not in kept[:i] or (
        i + 1 < len(kept) and kept[i + 1] not in kept[:i + 1]))


def read_recommendation(question: str, links: EntityLinks | None,
                        read: Callable[[str, EntityLinks | None], Analysis], *,
                        excluded: bool = False, studio_out: bool = False) -> Analysis | None:
    """The recommendation ``question`` asks for, or None when it asks for none; ``read`` reads the rest of it
    (the chain to a studio or person whose works are meant); ``excluded``: an aside left a name out ("besides opm
    itself, any other superhero shows?"), which says what the picks are not, as a negated name does; ``studio_out``:
    the name it left out is a studio."""
    linked = sorted(links.mentions if links else [], key=lambda m: m.start)
    question = _EMPHASIS.sub(" ", question)  # "another *completed* manga": the words, not their markup (offsets kept)
    if not _asks_recommendation(question, linked, excluded):
        return None
    left_out = [m for m in linked if _negated(question, m)]
    kept = [m for m in linked if m not in left_out]
    r = Recommend()
    lacking = LACKING.search(question)
    if lacking is not None:  # "light novels": the words of a type, not the name they happen to spell
        kept = [m for m in kept if not (lacking.start() <= m.start < lacking.end())]
    text = _without(question, [(m.start, m.end) for m in linked])
    text = _without(text, [x.span() for x in DONE.finditer(question) if _done(question, x, linked)])
    words = [t.key for t in tokenize(text)]
    r.entity_type = _asked_type(words, [m for m in kept if _works(m)])
    if lacking is not None:
        r.lacking = lacking.group("t").lower()
    r.wish = _wish(_facts(text, r.entity_type, r))
    r.limit = _picks(question)
    # "what should I watch after X": X is what was watched, not one whose sequel is meant
    # (nor "what i could watch next": no sequel is asked)
    asked = _without(question, [x.span() for rx in (AFTER, _NEXT) for x in rx.finditer(question)])
    rest = read(asked, EntityLinks(mentions=kept)) if kept else None
    a = Analysis(intent="recommend", mentions=[])
    # ("made by some studio other than Madhouse": the studio said is left out, a condition on the picks, not a
    # chain to the works of the examples' studio)
    left_studio = studio_out or any(c.entity.entity_type == "studio" for m in left_out for c in m.candidates[:1])
    if rest is not None and rest.hops and hop_range(rest.hops[-1].edges) in ("studio", "person") and not (
            left_studio and hop_range(rest.hops[-1].edges) == "studio"):
        a = rest  # "the studio that animated X": its works are the examples
        a.intent = "recommend"
        a.attr, a.also, a.filter, a.more = None, [], None, []
        # "anything else from the studio of X": X (and its franchise) is not a pick; "any good films from the studio
        # behind X" may well be X's own film
        if ELSE.search(question) or any(_compared(question, m) for m in kept):  # "... like X from X's studio"
            a.exclude |= {c.entity.id for m in kept if _works(m) for c in m.candidates}
    elif rest is not None:
        # every name kept is an example ("like X and Y"), not only the one a question would be about
        tokens = tokenize(question)
        for m in kept:
            _add(a, tokens, m, _example_type(m, r.entity_type), fixed=True)
        a.together = True
        a.picked |= set(a.mentions)  # any reading of an example is as good an example: no question which
    a.recommend = r
    a.exclude |= {c.entity.id for m in left_out for c in m.candidates}
    return a


def _example_type(m: LinkedMention, asked: str) -> EntityType | None:
    """Which reading of a name is the example: the asked type when the name has it ("manga like Chainsaw Man"),
    else the best work reading; a studio or a person stands for its works."""
    types = [c.entity.entity_type for c in m.candidates]
    return next((t for t in types if t == asked), None) or next(
        (t for order in EXAMPLE_ORDER for t in types if t == order), None)
