"""Questions over the whole catalog: attribute filters and rankings through the query DSL.

"Which Madhouse anime were released before 2010?" is a filter on anime: year < 2010, studio =
Madhouse. Numbers, years, formats and statuses are read from the wording; names of studios,
magazines and genres are not known in advance, so the planner first lists those values (a
group-by query per facet) and keeps the ones the question spells out (see :func:`facet_matches`).
"""

from __future__ import annotations

import re
import unicodedata

from agentic_rag.protocol.query import FIELDS
from agentic_rag.protocol.reading import Filter
from agentic_rag.understanding.numbers import with_digits
from agentic_rag.understanding.text import english_words

# Facets whose values are names the question may contain, per entity type.
FACETS: dict[str, tuple[str, ...]] = {"anime": ("studio", "genres"), "manga": ("magazine", "genres", "author")}

_HEAD = re.compile(
    r"^(?:(?:which|what|list|name|show me|give me|find)(?: all| every)?(?: of)?(?: the)? )?(?P<pre>[\w .&'\-]*?)\b"
    r"(?P<noun>anime studios|animation studios|anime|manga|movies|films|ovas|onas|specials|tv series|tv seasons|shows|"
    r"series|titles|studios|ova|ona|special|movie|film)\b(?P<post>.*)$",
    re.IGNORECASE)
_TOP = re.compile(r"^(?:which|what) (?P<what>studio|magazine|genre)s? (?:has|have|had) (?:animated|made|produced|"
                  r"serialized|published|the most)?\s*(?:the )?most (?P<noun>anime|manga|titles|shows|series)?",
                  re.IGNORECASE)
_SOMETHING_WITH = re.compile(r"^\s*(?:(?:ok(?:ay)?|so|and|then|hm+|well)\W+)*(?:(?:is|are) there\s+)?"
                             r"(?:anything|something|any)\s+(?:with|that has|having|tagged(?: as)?|tagged with|in the "
                             r"genre(?: of)?)\s+", re.IGNORECASE)
_PRINT = re.compile(r"\b(?:weekly|monthly|jump|magazines?|serialized|serialised|volumes?|mangaka|tankobon|"
                    r"tankōbon|published)\b", re.IGNORECASE)
_NON_WORD = re.compile(r"[^\w&.\-]+")
_FORMAT_NOUN = {"movies": "movie", "films": "movie", "ovas": "ova", "onas": "ona", "specials": "special",
                "movie": "movie", "film": "movie", "ova": "ova", "ona": "ona", "special": "special"}
# a format said after the head noun ("which anime are OVAs", "anime whose format is special")
_FORMAT_AFTER = re.compile(r"\b(?:are|is|as|were|was|format is|format|being)\s+(?:an? |the )?['\"]?"
                           r"(?P<f>movies?|films?|ovas?|onas?|specials?)\b", re.IGNORECASE)
_NUM_WORDS = {"more than": "gt", "over": "gt", "at least": "gte", "fewer than": "lt", "less than": "lt",
              "under": "lt", "at most": "lte", "exactly": "eq", "past": "gt", "above": "gt", "beyond": "gt",
              "exceeding": "gt", "below": "lt", "up to": "lte", "no more than": "lte", "no fewer than": "gte"}
_SYMBOLS = {">": "gt", ">=": "gte", "≥": "gte", "<": "lt", "<=": "lte", "≤": "lte", "=": "eq"}
_COUNT = re.compile(r"(?:\b(?P<op>no more than|no fewer than|more than|over|at least|fewer than|less than|under|"
                    r"at most|exactly|past|above|beyond|exceeding|below|up to)|"
                    r"(?P<sym>>=|<=|[<>≥≤=]))?\s*\b(?P<n>\d+)(?P<plus>\+)?"
                    r"(?: or (?P<more>more|fewer|less|over|under))? (?:\w+ )?(?P<what>episodes|eps|volumes|vols)\b"
                    r"(?: or (?P<after>more|fewer|less|over|under|above|below)|"
                    r"\s+(?P<cap>max|maximum|tops|min|minimum)\b)?|"
                    r"(?P<what2>episodes|eps|volumes|vols)\s*(?P<sym2>>=|<=|[<>≥≤=])\s*(?P<n2>\d+)\b", re.IGNORECASE)
_MORE = {"more": "gte", "over": "gte", "above": "gte", "fewer": "lte", "less": "lte", "under": "lte", "below": "lte",
         "max": "lte", "maximum": "lte", "tops": "lte", "min": "gte", "minimum": "gte"}
# "between 10 and 20 volumes", "12-13 eps" (and "12-13 eps max": at most the larger)
_COUNT_RANGE = re.compile(r"(?:\b(?:between|from) (?P<a>\d+) (?:and|to) (?P<b>\d+)|"
                          r"\b(?P<a2>\d+)\s*[-\u2013]\s*(?P<b2>\d+)) "
                          r"(?P<what>episodes|eps|volumes|vols)\b(?P<cap>\s+(?:max|maximum|tops|at most)\b)?",
                          re.IGNORECASE)
_Y = r"(?:19|20)\d\d"
_YEAR_RANGE = re.compile(rf"\b(?:between|from) (?P<a>{_Y}) (?:and|to|-) (?P<b>{_Y})\b", re.IGNORECASE)
# "came out between 96 and 98": two-digit years of the last century (never counts: no unit follows)
_SHORT_YEARS = re.compile(r"\b(?P<w>between|from) (?P<a>[5-9]\d) (?P<j>and|to|-) (?P<b>[5-9]\d)\b"
                          r"(?! (?:episodes|eps|volumes|vols|chapters))", re.IGNORECASE)
_YEAR_OPEN = re.compile(rf"\b(?:in |from )?(?P<y>{_Y})(?: (?:or|and) (?P<dir>later|after|newer|earlier|before|older)"
                        rf"|(?P<on> onwards?|\+))", re.IGNORECASE)
_THAN = re.compile(rf"\b(?P<cmp>older|earlier|newer|later|more recent) than (?P<y>{_Y})\b", re.IGNORECASE)
_DECADE = re.compile(r"\b(?:(?:in|during|from|of) )?(?:the )?(?:(?:(?P<c>19|20)(?P<d>\d)0|(?P<s>[5-9])0)'?s|"
                     r"(?P<w>fifties|sixties|seventies|eighties|nineties))\b", re.IGNORECASE)
_DECADE_WORDS = ("fifties", "sixties", "seventies", "eighties", "nineties")  # "the nineties": 1990-1999
_NOT_DECADE = re.compile(r"\b(?:nothing|not|no|none|anything but|except|excluding|outside(?: of)?)\s*$", re.IGNORECASE)
# a year said of a run's end ("ended between 2020 and 2022", "finished before 2010")
_ENDED = re.compile(r"\b(?:end|ends|ended|ending|finish|finished|finishing|conclude[ds]?|wrapp?ed(?: up)?)\W+"
                    r"(?:\w+\W+){0,3}$", re.IGNORECASE)  # "finished their run in"
# (a story "set in 2071" or that "takes place in 1914" says nothing of when it came out)
YEAR_SAID = re.compile(r"(?<!\bset\s)(?<!\bplace\s)\b(?P<op>in|after|since|before|from|until|pre|post|prior to)"
                   r"(?:\s+|-)(?:the year\s+)?(?P<y>(?:19|20)\d\d)\b", re.IGNORECASE)
YEAR_OPS = {"in": "eq", "from": "eq", "after": "gt", "since": "gte", "before": "lt", "until": "lte", "pre": "lt",
             "post": "gt", "prior to": "lt"}
# "started airing in the 90s" says when a run began, not that it still airs
_STATUS = ((re.compile(r"(?<!start )(?<!started )(?<!began )(?<!begin )(?<!first )\b(?:still |currently )?airing\b|"
                       r"\b(?:still |currently )?on air\b", re.I), "airing"),
           (re.compile(r"\b(?:still )?ongoing\b|\bstill (?:running|going|being (?:published|serialized|released)|"
                       r"serialized|publishing|coming out|out)\b|"
                       r"\b(?:unfinished|not (?:yet )?(?:finished|over|done|complete|completed))\b",
                       re.I), "ongoing"),
           (re.compile(r"\b(?:finished|completed|ended|concluded)\b", re.I), "finished"))
# Words that never name a facet value: question scaffolding.
_STOP = frozenset((
    "which", "what", "list", "name", "show", "me", "give", "all", "every", "of", "the", "a", "an", "in", "on", "by",
    "from", "to", "are", "were", "was", "is", "be", "been", "have", "has", "had", "do", "does", "did", "you", "we",
    "catalog", "your", "there", "that", "came", "come", "out", "released", "release", "started", "start", "ran",
    "run", "made", "make", "animated", "animate", "produced", "still", "currently", "aired", "air", "with", "and",
    "or", "tv", "serialized", "serialised", "published", "founded", "established", "them", "please", "pls", "thanks",
    "thank", "thx", "hey", "hi", "quick", "question", "so", "um", "any", "later", "earlier", "onwards", "older",
    "newer", "than", "between", "episodes", "eps", "volumes", "vols", "began", "begin", "begun", "beginning",
    "serialization", "serialisation", "running", "airing", "during", "ended", "finished", "each", "one", "ones",
    "uh", "like", "know", "they", "it", "year", "want", "i", "need", "tell",
))


# the extreme a list is asked for: (pattern, field per entity type, direction)
_SUPERLATIVES: tuple[tuple[re.Pattern[str], dict[str, str], str], ...] = (
    (re.compile(r"\b(?:most|highest|largest|biggest|greatest) (?:number of |count of )?(?:episodes?|eps)\b|"
                r"\b(?:highest|largest|biggest) episode counts?\b|\blongest\b", re.I),
     {"anime": "episode_count", "manga": "volumes"}, "desc"),
    (re.compile(r"\b(?:fewest|least|lowest|smallest) (?:number of )?(?:episodes?|eps)\b|\bshortest\b", re.I),
     {"anime": "episode_count", "manga": "volumes"}, "asc"),
    (re.compile(r"\b(?:most|highest|largest) (?:number of )?(?:volumes?|vols)\b", re.I), {"manga": "volumes"}, "desc"),
    (re.compile(r"\b(?:fewest|least|lowest|smallest) (?:number of )?(?:volumes?|vols)\b", re.I),
     {"manga": "volumes"}, "asc"),
    (re.compile(r"\b(?:oldest|earliest|first (?:one|to be founded)|founded (?:the )?first|first founded)\b", re.I),
     {"anime": "year", "manga": "year", "studio": "founded"}, "asc"),
    (re.compile(r"\b(?:newest|youngest|latest|most recent)\b", re.I),
     {"anime": "year", "manga": "year", "studio": "founded"}, "desc"),
)


def superlative(q: str, et: str) -> tuple[str, str] | None:
    """The field and direction of the extreme ``q`` asks for over entity type ``et``, if any."""
    for rx, fields, direction in _SUPERLATIVES:
        if rx.search(q) and et in fields:
            return fields[et], direction
    return None


def fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return " ".join("".join(c for c in decomposed if not unicodedata.combining(c)).split())


_ONE_STUDIO = re.compile(r"\bstudio\b", re.IGNORECASE)
_WORK_NOUNS = re.compile(r"\b(?:anime|manga|movies?|films?|shows?|series|seasons?|ovas?|titles?)\b", re.IGNORECASE)


def parse_filter(q: str) -> Filter | None:
    """The filter ``q`` asks for, or None when it is not a catalog-wide question."""
    if top := _TOP.match(q):
        what = top.group("what").lower()
        et = "manga" if what == "magazine" or (top.group("noun") or "").lower() == "manga" else "anime"
        return Filter(entity_type=et, kind="top", group_by="genres" if what == "genre" else what)
    q = _SHORT_YEARS.sub(lambda y: f"{y['w']} 19{y['a']} {y['j']} 19{y['b']}", with_digits(q))
    if _ONE_STUDIO.search(q) and superlative(q, "studio") is not None and not _WORK_NOUNS.search(q):
        q = _ONE_STUDIO.sub("studios", q)  # "which studio is the oldest": the one first of the studios ranked
    m = _HEAD.match(q)
    if m is None and (some := _SOMETHING_WITH.match(q)) is not None:
        # "anything with romance in it?": works of that kind, anime when no type is said
        return parse_filter(f"anime with {q[some.end():]}")
    if m is None and (cut := max(q.rfind(","), q.rfind(":"))) > 0:
        m = _HEAD.match(q[cut + 1:].strip())  # "For a paper on 1980s animation, I need every TV anime ..."
    if m is None:
        return None
    noun, pre, post = m.group("noun").lower(), m.group("pre"), m.group("post")
    if noun in ("ova", "ona", "special", "movie", "film") and not re.search(r"\b(?:every|each|all|any)\s*$",
                                                                             q[:m.start("noun")], re.I):
        # "list every ova" is a list; "is there a code geass movie" asks for one film by name ("a movie night
        # with anime films from 2013": the list may be named later)
        return parse_filter(q[m.end("noun"):])
    et = {"manga": "manga", "studios": "studio", "anime studios": "studio", "animation studios": "studio"}.get(
        noun, "anime")
    if noun in ("series", "titles") and _PRINT.search(q):  # "the Weekly Shonen Jump series that ended ..."
        et = "manga"
    year = "founded" if et == "studio" else "year"
    f = Filter(entity_type=et)
    if fm := re.match(r"\s*(movies|films|ovas|onas|specials)\b", post, re.IGNORECASE):  # "anime movies"
        noun, post = fm.group(1).lower(), post[fm.end():]
    elif noun not in _FORMAT_NOUN and (fa := _FORMAT_AFTER.search(post)):  # "which anime are OVAs"
        noun, post = fa.group("f").lower(), post[:fa.start()] + post[fa.end():]
    if noun in _FORMAT_NOUN:
        f.where.append({"field": "format", "op": "eq", "value": _FORMAT_NOUN[noun]})
    if (re.search(r"\btv\b", pre, re.I) and noun not in _FORMAT_NOUN) or noun in ("tv series", "tv seasons"):
        f.where.append({"field": "format", "op": "eq", "value": "tv"})
    rest = f"{pre} {post}"
    for cm in _COUNT_RANGE.finditer(rest):
        fld = "episode_count" if cm.group("what").lower().startswith("ep") else "volumes"
        lo, hi = sorted((int(cm.group("a") or cm.group("a2")), int(cm.group("b") or cm.group("b2"))))
        if not cm.group("cap"):
            f.where.append({"field": fld, "op": "gte", "value": lo})
        f.where.append({"field": fld, "op": "lte", "value": hi})
    rest = _COUNT_RANGE.sub(" ", rest)
    for cm in _COUNT.finditer(rest):
        what, n = cm.group("what") or cm.group("what2"), int(cm.group("n") or cm.group("n2"))
        fld = "episode_count" if what.lower().startswith("ep") else "volumes"
        if sym := cm.group("sym") or cm.group("sym2"):
            op = _SYMBOLS[sym]
        elif cm.group("plus") or cm.group("more") or cm.group("after") or cm.group("cap"):
            op = _MORE.get((cm.group("more") or cm.group("after") or cm.group("cap") or "more").lower(), "gte")
        else:
            op = _NUM_WORDS.get((cm.group("op") or "exactly").lower(), "eq")
        f.where.append({"field": fld, "op": op, "value": n})
    rest = _COUNT.sub(" ", rest)
    for ym in _YEAR_RANGE.finditer(rest):
        lo, hi = sorted((int(ym.group("a")), int(ym.group("b"))))
        fld = _year_field(rest[:ym.start()], year)
        f.where += [{"field": fld, "op": "gte", "value": lo}, {"field": fld, "op": "lte", "value": hi}]
    rest = _YEAR_RANGE.sub(" ", rest)
    for ym in _THAN.finditer(rest):
        older = ym.group("cmp").lower() in ("older", "earlier")
        f.where.append({"field": year, "op": "lt" if older else "gt", "value": int(ym.group("y"))})
    rest = _THAN.sub(" ", rest)
    for ym in _YEAR_OPEN.finditer(rest):
        earlier = (ym.group("dir") or "").lower() in ("earlier", "before", "older")
        f.where.append({"field": _year_field(rest[:ym.start()], year), "op": "lte" if earlier else "gte",
                        "value": int(ym.group("y"))})
    rest = _YEAR_OPEN.sub(" ", rest)
    found = list(_DECADE.finditer(rest))
    if decades := [int(f"{d.group('c')}{d.group('d')}0") if d.group("c") else 1900 + int(d.group("s")) * 10
                   if d.group("s") else 1950 + 10 * _DECADE_WORDS.index(d.group("w").lower()) for d in found]:
        if _NOT_DECADE.search(rest[:found[0].start()]):
            # "nothing from the 90s": after them (a wish for newer works; older ones say "before")
            f.where.append({"field": year, "op": "gt", "value": max(decades) + 9})
        else:
            # "the 80s or 90s", "from the 80s to the 2000s": the years from the first decade's start to the last's end
            f.where += [{"field": year, "op": "gte", "value": min(decades)},
                        {"field": year, "op": "lte", "value": max(decades) + 9}]
        rest = _DECADE.sub(" ", rest)
    for y in YEAR_SAID.finditer(rest):
        f.where.append({"field": _year_field(rest[:y.start()], year), "op": YEAR_OPS[y.group("op").lower()],
                        "value": int(y.group("y"))})
    rest = YEAR_SAID.sub(" ", rest)
    for rx, status in _STATUS:
        if rx.search(rest):
            f.where.append({"field": "status", "op": "eq", "value": status})
            rest = rx.sub(" ", rest)
            break
    # only conditions on fields the entity has ("the madhouse tv adaptation of X's manga" is no manga format)
    f.where = [c for c in f.where if c["field"] in FIELDS[et]]  # type: ignore[index]
    f.rank = superlative(f"{pre} {post}", et)
    if f.rank is not None:
        rest = re.sub(r"\b(?:most|highest|largest|biggest|greatest|fewest|least|lowest|smallest|longest|shortest|"
                      r"oldest|earliest|newest|youngest|latest|recent|count|number)\b", " ", rest, flags=re.I)
    words = [w for w in re.findall(r"[\w.&'\-]+", rest)
             if w.lower() not in _STOP and not w.isdigit() and re.search(r"[^\W\d_]", w)]
    f.words = " ".join(words)
    # a question with no condition and no candidate facet words is not a filter ("Which anime is Luffy in?")
    if not f.where and not words and f.rank is None:
        return None
    if not f.where and re.search(r"\b(?:is|are|does|did)\s+\S+.*\b(?:in|from)$", post, re.I):
        return None
    return f


def status_of(q: str) -> str | None:
    """The run status ``q`` says ("still airing", "on air", "ongoing", "finished"), if any."""
    return next((status for rx, status in _STATUS if rx.search(q)), None)


def lists(q: str) -> bool:
    """Whether ``q`` asks for a list of entities ("which manga ran there"), conditions said or not."""
    return _HEAD.match(" ".join(q.split())) is not None


def _year_field(before: str, year: str) -> str:
    """end_year when the words before a year say the run ended then, else the entity's year field."""
    return "end_year" if year == "year" and _ENDED.search(before) else year


def _key(text: str) -> str:
    return fold(_NON_WORD.sub(" ", text))


def facet_matches(question_words: str, values: list[str]) -> list[str]:
    """The facet values the question spells out (accents and case ignored), longest first, no overlaps."""
    text = f" {_key(question_words)} "
    hits: list[str] = []
    for v in sorted(values, key=len, reverse=True):
        key = _key(v)
        if key and f" {key} " in text:
            hits.append(v)
            text = text.replace(f" {key} ", " ")
    # a distinctive word of one value alone names it ("Toei" is Toei Animation): a word no other value has
    # and no English word
    words = {w: [v for v in values if w in _key(v).split()] for w in text.split()
             if len(w) >= 4 and w not in english_words() and w not in _STOP}
    hits += [vs[0] for vs in words.values() if len(vs) == 1 and vs[0] not in hits]
    return hits
