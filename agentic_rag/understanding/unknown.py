"""Names the catalog does not have: the words of a question that look like a name and match none.

"was Vinland Saga made by the AoT studio?": "AoT" links, "Vinland Saga" does not, and an answer about the studio
of Attack on Titan alone would be a confident answer to a question nobody asked. Linking reports such a span
(``EntityLinks.unknown``) so the answer can say plainly that the catalog lacks it.

A word looks like a name when it is no word of any catalog name (linking's word index), no English word (the MiniLM
tokenizer's 30k whole words, with their inflections, contractions typed without the apostrophe and compounds), no
cue word nor one of the fandom's own words (``cues.JARGON``: "isekai", "crunchyroll"), and has letters enough. How
it was typed says how sure to be:

- typed with a capital inside a sentence, it is a name unless it is English as spelled: being one letter off an
  English word or a catalog word is no excuse ("Pieck" is not "piece"), unless it stands right after a name or
  beside a catalog word typed with a capital, where it is more of that name typed wrong ("Yagami Ligght");
- typed in lower case beside a name that links, it is a name only when no dictionary has it, Webster's Second
  included ("kisame", "katakuri"; not "corgi", "spooky", "recap"), and it is not a thing described or owned
  ("a corgi", "Ichigo's zanpakuto");
- elsewhere (a sentence's first word, a question that links nothing) it must also be no typo of an English word
  or of a catalog word.

A word in capitals is an acronym, not a name. A run of such words is one name ("Hashirama Senju"), and takes in a
neighbour typed with a capital that is no English word ("Yuki Tsukumo", where "Yuki" is a word of another name),
or, typed in lower case, a lower-case neighbour that is no English word ("mushoku tensei"). Two such capitalised
words no mention covers are a name even when each alone is a catalog word or a typo of one ("Shinji Hirako"), as
is a capitalised type word the catalog's studio names use followed by capitalised words ("Studio Trigger"); a
numbering after a name is its own ("Kaiju No. 8").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cache

from agentic_rag.protocol.links import LinkedMention
from agentic_rag.understanding.cues import CUES, JARGON, TYPE_WORD
from agentic_rag.understanding.text import Token, deletions, dictionary_words, english_words

MIN_LETTERS = 4  # a name typed with a capital ("Reze"); shorter ones are initials
MIN_LOWER = 5  # ... typed in lower case: shorter ones are mostly chat and abbreviations ("incl", "comp")
MAX_UNKNOWN = 3  # unknown names one question reports
MAX_WORDS = 4  # words one unknown name may run to
_SUFFIXES = ("ings", "ing", "ers", "er", "est", "ed", "es", "s", "ly", "ness", "ful", "less", "ish", "y")
_PREFIXES = ("re", "un", "co", "over", "under", "super", "mis", "pre", "non")
_CONTRACTIONS = ("nt", "ve", "re", "ll", "d", "s", "m")  # "isnt", "theyve", "youre", typed without the apostrophe
_JOINERS = frozenset(" -")  # what may stand between the words of one name
# the type words a name begins with ("Studio Deen"); a work's ("Show", "Movie") begins a Title Cased sentence's words
_LEADING = frozenset(w for w, t in TYPE_WORD.items() if t == "studio")
_DETERMINERS = frozenset(("a", "an", "the", "some", "any", "that", "this", "my", "his", "her", "their", "its"))


@cache
def _english_deletions() -> frozenset[str]:
    """Every English word of five letters or more with one letter dropped (a typo's SymSpell keys)."""
    return frozenset(d for w in english_words() if len(w) >= 5 for d in deletions(w))


def _stem_is_english(word: str) -> bool:
    english = english_words()
    for suffix in _SUFFIXES:
        stem = word[:-len(suffix)]
        if word.endswith(suffix) and len(stem) >= 3 and (
                stem in english or f"{stem}e" in english or (stem[-1] == stem[-2] and stem[:-1] in english)
                or (stem.endswith("i") and f"{stem[:-1]}y" in english)):
            return True  # "rewatching" (with a prefix below), "slickest", "redrawn" is a compound below
    return False


@cache
def englishlike(word: str) -> bool:
    """Whether ``word`` is English as people type it: a word, an inflection ("insanely"), a prefixed word
    ("rewatching"), a compound ("bookshop", "keyring") or one letter off one ("recomend")."""
    if english_form(word):
        return True
    if len(word) >= 5:
        drops = _english_deletions()
        return word in drops or any(d in english_words() or d in drops for d in deletions(word))
    return False


@cache
def english_form(word: str) -> bool:
    """Whether ``word`` is English as spelled: a word, an inflection, a prefixed word or a compound (no typo)."""
    english = english_words()
    if word in english or _stem_is_english(word):
        return True
    if any(word.endswith(c) and word[:-len(c)] in english for c in _CONTRACTIONS):
        return True
    if any(word.startswith(p) and len(word) - len(p) >= 4 and (word[len(p):] in english or _stem_is_english(
            word[len(p):])) for p in _PREFIXES):
        return True
    # parts of three letters or more, one of four or more ("keyring", "lockdown"; "shisui" is no "shi" + "sui")
    return any(word[:i] in english and (word[i:] in english or _stem_is_english(word[i:]))
               for i in range(3, len(word) - 2) if max(i, len(word) - i) >= 4)


# words whose "'s" is "is" or "has" ("what's", "who's"), not an owner's
_CONTRACTED = frozenset(("what", "who", "where", "when", "why", "how", "that", "it", "there", "here", "he", "she",
                         "which", "this"))


def _foreign(question: str, t: Token, before: Token | None, known: Mapping[str, int], corrected: frozenset[str], *,
             beside_names: bool, after_name: bool, beside_known: bool) -> bool:
    k, capital = t.key, t.raw[:1].isupper() and not t.upper
    if t.upper or len(k) < (MIN_LETTERS if capital or beside_names else MIN_LOWER):
        return False
    if not capital and before is not None and (before.key in _DETERMINERS or (
            before.possessive and before.key not in _CONTRACTED)):
        return False  # "a corgi", "a telepathic girl", "Ichigo's zanpakuto": a thing described or owned, not a name
        # ("what's kokushibo's ...": a contraction, no owner)
    if not (k.isalpha() and k not in known and k not in CUES and k not in JARGON):
        return False
    if capital and before is not None and not _sentence_start(question, before, t) and not after_name:
        # a capital inside a sentence says name: a typo of an English word is no excuse, nor one of the catalog's
        # unless it stands beside another word of the catalog's names ("Yagami Ligght"; "Pieck" is no "piece")
        return not _as_spelled(k) and not (k in corrected and beside_known)
    if k in corrected:
        return False
    if not capital and (beside_names or (before is not None and not _sentence_start(question, before, t))):
        # typed in lower case beside a name or inside a sentence: a word no dictionary has, Webster's included
        # ("kisame", "dandadan"; not "spooky", "taught the brothers alchemy"); a sentence's first word may be its
        # topic ("berserk how many episodes")
        return not englishlike(k) and k not in dictionary_words()
    return not englishlike(k)


def _as_spelled(word: str) -> bool:
    """English as a dictionary spells it: a word or an inflection of one; not a compound ("Tanktop") nor a prefixed
    word, which a name typed with a capital may happen to spell."""
    return word in english_words() or _stem_is_english(word) or any(
        word.endswith(c) and word[:-len(c)] in english_words() for c in _CONTRACTIONS)


def _sentence_start(question: str, before: Token, t: Token) -> bool:
    return any(c in ".!?:\n" for c in question[before.end:t.start])


def _numbering(question: str, tokens: Sequence[Token], b: int) -> int:
    """The last word of a name that ends in a numbering ("Kaiju No. 8", "Vol. 2"): a short capitalised word, a dot
    and a number, after the name or as its last word; else ``b``."""
    for k in (b, b + 1):
        if k + 1 < len(tokens) and (k == b or set(question[tokens[b].end:tokens[k].start]) <= _JOINERS):
            abbreviation, number = tokens[k], tokens[k + 1]
            if (abbreviation.raw[:1].isupper() and abbreviation.key.isalpha() and len(abbreviation.key) <= 3
                    and question[abbreviation.end:number.start].strip() == "." and number.key.isdigit()):
                return k + 1
    return b


def _joined(question: str, left: Token, right: Token) -> bool:
    return set(question[left.end:right.start]) <= _JOINERS


# Where a question puts a name whatever its words: after a credit ("animated by kyoto animation"), on a side of a
# comparison ("how does tokyo revengers compare to bleach", "X vs Y", "between X and Y"). A phrase there that no
# mention covers is a name the catalog lacks, even when every word of it is English.
_STOP = (r"or|and|in|for|from|to|with|on|at|as|than|before|after|during|since|because|but|so|then|who|which|that|"
         r"when|where|how|is|was|are|were|did|does|do|has|have|had|episodes?|seasons?|anime|manga|of|the")
_STOP_WORDS = frozenset(_STOP.split("|"))
_PHRASE = rf"(?P<np>(?!(?:{_STOP})\b)[A-Za-z][\w'-]*(?:\s+(?!(?:{_STOP})\b)[A-Za-z][\w'-]*){{0,3}})"
_LAZY = _PHRASE.replace("{0,3})", "{0,3}?)")  # the fewest words that fit ("Kyoto Animation", not "... an")
_SLOTS = tuple(re.compile(p, re.IGNORECASE) for p in (
    rf"\b(?:animated|directed|made|produced|written|drawn|created|composed|scored|voiced|illustrated|done)\s+by\s+"
    rf"{_PHRASE}",
    rf"\bhow (?:does|do|did|would|will)\s+{_PHRASE}\s+(?:compare|stack up|measure up)\b",
    rf"\bcompare\s+{_PHRASE}\s+(?:to|with|and)\b",
    rf"\bbetween\s+{_PHRASE}\s+and\b",
    rf"(?:^|[^\w\s]\s*|\b(?:is|was|who|which)\s+){_PHRASE}\s+(?:vs\.?|versus)\s",
    rf"\s(?:vs\.?|versus)\s+{_PHRASE}",
    # the work whose maker a question asks, said before the credit ("is blue lock made by the same studio as jjk")
    rf"\b(?:is|was|are|were)\s+{_LAZY}\s+(?:also\s+|even\s+|really\s+|actually\s+)?(?:made|animated|produced|"
    rf"directed|written|drawn|created|done)\s+by\b",
    rf"\b(?:is|was|are|were)\s+{_LAZY}\s+(?:(?:any|a lot|much|way|an?)\s+)?(?:\w{{3,}}er|more \w+|less \w+)"
    rf"(?:\s+(?:studio|show|series|anime|manga|work|title|one))?\s+than\b",
    # "kaneki from tokyo ghoul vs denji": the work a side of the comparison is from
    rf"\b(?:from|in)\s+{_PHRASE}\s+(?:vs\.?|versus)\s",
))
# ... and where a question puts a name it asks about, when a word of the phrase is no English word: asking whether
# the catalog has it ("is vinland saga in here", "do you have vinland saga"), one side of "X <more> than Y" ("is
# tokyo ghoul darker than chainsaw man"), who someone is in a work ("who's yachiru in bleach")
# a work named by its title between "the" and what it is ("who directed the tokyo ghoul anime", "is the berserk manga
# finished"): a word there that English does not spell is a title ("the dark manga" describes one)
_TITLE_SLOT = re.compile(rf"\bthe\s+{_LAZY}\s+(?:anime|manga|series|show|movie|film|ova|webcomic|light novel)s?\b",
                         re.IGNORECASE)
_FOREIGN_SLOTS = (_TITLE_SLOT, *(re.compile(p, re.IGNORECASE) for p in (
    rf"\b(?:is|are|was|were)\s+{_PHRASE}\s+(?:in here|on here|in there|(?:in|on|part of|covered (?:by|in)|"
    rf"included in|listed in) (?:your|the|this|ur) (?:catalog|catalogue|database|db|data|list|index|collection)|"
    rf"available|included|listed)\b",
    rf"\b(?:do|does) (?:you|u|the catalog|your catalog|the database|this) (?:have|has|got|know|cover|include|list)\s+"
    rf"(?:(?:anything|info|data|entries) (?:on|about|for)\s+)?{_PHRASE}",
    rf"\bwho(?:'s|s| is| was)\s+{_PHRASE}\s+(?:in|from|on|and)\b",
    rf"\bthan\s+{_PHRASE}",
    # what a studio or person made ("did mappa also make vinland saga"), whose a work is ("is jojo's bizarre adventure
    # by the same araki")
    rf"\b(?:make|made|animate|animated|produce|produced|direct|directed|write|wrote|draw|drew|create|created|"
    rf"(?:also|even|ever) do)\s+{_PHRASE}\s*(?:[?!.,;:\u2014\u2013]|\s-\s|$|\band\b|\btoo\b)",
    rf"\b(?:is|was)\s+{_PHRASE}\s+(?:by|from)\s",
    rf"\b(?:is|was|are|were)\s+{_LAZY}\s+(?:just\s+|really\s+|about\s+)?as\s+\w+\s+as\b",  # "as brutal as"
    # a member asked of a group ("Was Beyond Birthday one of L's successors")
    rf"\b(?:is|was|are|were)\s+{_LAZY}\s+(?:(?:really|actually|ever|also)\s+)?(?:one of|part of|a member of|"
    rf"among|in)\s+(?:\w+(?:'s|’s)|the|his|her|their|my)\s",
    # who made something ("did kyoto animation work on any demon slayer season"), one side of "X has more ... than"
    rf"\b(?:did|does|do|has|have|had)\s+{_LAZY}\s+(?:(?:ever|also|even|just|really|actually|not|never)\s+)?"
    rf"(?:work(?:ed)?\s+on|animated?|make|made|"
    rf"produced?|directed|direct|write|written|draw|drawn|created?|compose|score|voice)\b",
    rf"\b(?:does|do|did|is|was)\s+{_LAZY}\s+(?:have|has|got|run|last|get)\s+(?:(?:a lot|way|many|much|any)\s+)?"
    rf"(?:more|less|fewer|longer|shorter)\b",
    # what a count is asked of ("how many volumes does berserk have")
    rf"\bhow many\s+\w+\s+(?:does|do|did)\s+{_LAZY}\s+(?:have|has|get|got|run|last)\b",
)))
# ... and the whole of what a question only asks the catalog to hold or tell about, however it is typed ("is sailor
# moon in the catalog?", "do you have anything on sword art online", "tell me about kyoto animation"): the frame says
# it is a name, English words or not
_LEAD = r"^\W*(?:(?:ok(?:ay)?|so|hey|hi|also|and|then)\W+)*"
_ASKED_SLOTS = tuple(re.compile(p, re.IGNORECASE) for p in (
    rf"{_LEAD}(?:is|are)\s+{_PHRASE}\s+(?:(?:in|on)\s+(?:your|the|this|ur)\s+(?:catalog|catalogue|database|db|list|"
    rf"library|collection)\b|(?:also\s+|even\s+)?(?:in|on) here\b)",
    rf"{_LEAD}(?:do|does)\s+(?:you|u|the catalog|your catalog|the database)\s+(?:have|has|got|cover|include)\s+"
    rf"(?:(?:anything|info|data|entries)\s+(?:on|about|for)\s+)?{_PHRASE}\s*[?.!]*\s*$",
    rf"{_LEAD}tell me about\s+{_PHRASE}\s*[?.!]*\s*$",
))
# ... and where two or more words make a name: the side of "X or Y" a question asks to pick between, beside a side
# that links ("which has more episodes, solo leveling or jjk?"); "studio" and the one word after it, typed in lower
# case too ("did studio trigger animate it")
_PAIRED_SLOTS = tuple(re.compile(p, re.IGNORECASE) for p in (
    rf"\b(?:which|what)\b[^?!.]{{0,60}}?[,:]\s*{_PHRASE}\s+or\s",
    rf"\b(?:which|what|who|who's|whos)\b[^?!.]{{0,60}}?[,:]\s*[^?!.,]{{2,40}}?\s+or\s+{_PHRASE}\s*[?!.]?\s*$",
    # a name said first beside another with "and" ("Black Clover and Naruto were both done by Studio Pierrot")
    rf"(?:^|[.!?]\s+)(?!(?:{_STOP}|have|has|had|can|could|would|will|should|why|what|whats|who|whos|how|hows|is|are)\b)"
    rf"(?-i:(?P<np>[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*){{1,3}}))\s+(?:and|&)\s",
    # the pair said first: "solo leveling or one punch man, which has more episodes"
    rf"^\W*{_PHRASE}\s+or\s+[^?!.,]{{2,40}}?\s*(?:[,:?\u2014\u2013]|\s-\s)\s*(?:which|what|who)\b",
    rf"^\W*[^?!.,]{{2,40}}?\s+or\s+{_PHRASE}\s*(?:[,:?\u2014\u2013]|\s-\s)\s*(?:which|what|who)\b",
))
_STUDIO_SLOT = re.compile(r"(?<!\bwhich )(?<!\bwhat )(?<!\bthe )(?<!\bsame )(?<!\bthat )(?<!\bthis )(?<!\ba )"
                          r"(?<!\btheir )(?<!\bits )\bstudio\s+(?P<np>[A-Za-z][\w'-]*)", re.IGNORECASE)
_AFTER_STUDIO = frozenset("""
behind that which who whose whom is was are were did does do has have had made makes make animated animates animate
animating produced produces produce of for at from to with on in by and or but also itself name names called
""".split())  # noqa: SIM905  (a word list reads better as text)
# a name written with a sign inside it: "Steins;Gate", "Re:Zero"
_SIGNED = re.compile(r"(?<![\w;:])[A-Za-z]{2,}[;:][A-Za-z]{2,}(?![\w;:])")
_NOT_NAMES = frozenset("""
him her them it its his their whom who what me you us one ones someone anyone somebody nobody everyone same other
another different whoever whatever this that these those two three four five six seven eight nine ten eleven twelve
twenty thirty forty fifty sixty seventy eighty ninety hundred several many multiple few both all most there he she
which how every each much anything something nothing everything
""".split())  # noqa: SIM905  (a word list reads better as text)


def _in_slots(question: str, tokens: Sequence[Token], free: Sequence[bool],
              known: Mapping[str, int]) -> list[tuple[int, int]]:
    """The token ranges of phrases in a name's place (:data:`_SLOTS`) that no mention covers and that could be
    names: no pointing word, no cue word first, a word of four letters or more."""
    out: list[tuple[int, int]] = []
    for slot in (*_SLOTS, *_FOREIGN_SLOTS, *_ASKED_SLOTS, *_PAIRED_SLOTS, _STUDIO_SLOT):
        for m in slot.finditer(question):
            lo, hi = m.span("np")
            if slot is _STUDIO_SLOT:
                if m.group("np").lower() in _AFTER_STUDIO or m.group("np").lower() in _STOP_WORDS:
                    continue
                lo = m.start()  # "studio trigger": the name with its type word
            at = [j for j, t in enumerate(tokens) if lo <= t.start < hi]
            if not at or not all(free[j] for j in at) or len(at) > MAX_WORDS or (
                    slot in _PAIRED_SLOTS and len(at) < 2):
                continue
            words = [tokens[j].key for j in at]
            if slot is _STUDIO_SLOT:
                words = words[1:]  # the word after "studio" is the one checked
            if words[0] in _NOT_NAMES or words[0] in _DETERMINERS or words[0] in CUES or any(
                    w in _NOT_NAMES or w.isdigit() for w in words) or all(w in CUES or w in JARGON for w in words) \
                    or max(len(w) for w in words) < MIN_LETTERS:
                continue
            if slot in _FOREIGN_SLOTS and all(_as_spelled(w) or w in CUES or w in JARGON or len(w) < MIN_LETTERS
                                              for w in words) and not all(tokens[j].raw[:1].isupper() for j in at):
                continue  # "is it any darker than X", "who is strongest in X": English, no name ("Gate Keepers" is)
            typed = [tokens[j] for j in at]
            if slot is _TITLE_SLOT and all(t.key in known or len(t.key) < 2 for t in typed):
                continue  # "the Weekly Shōnen Jump series", "the V Jump manga": the catalog's own words
            if slot in _FOREIGN_SLOTS and all(t.key in known and t.raw.islower() for t in typed):
                continue  # "did toei make it up": words of the catalog's own names ("Toei Animation"), said short
            if any(a <= at[0] <= b or a <= at[-1] <= b for a, b in out):
                continue
            out.append((at[0], at[-1]))
    return out


def _title_cased(question: str, tokens: Sequence[Token]) -> bool:
    """Whether most words inside the question's sentences are typed with a capital ("Does Zorblax Show Up"): then
    its capitals say nothing."""
    words = [t for k, t in enumerate(tokens) if t.key.isalpha() and not t.upper and k > 0
             and not _sentence_start(question, tokens[k - 1], t)]
    return sum(t.raw[:1].isupper() for t in words) > len(words) / 2


def titled_runs(question: str, tokens: Sequence[Token], mentions: Sequence[LinkedMention],
                known: Mapping[str, int]) -> list[tuple[int, int]]:
    """Runs of two to :data:`MAX_WORDS` words typed with a capital inside a sentence, that no mention covers and
    that hold a word no catalog name uses ("Was Sailor Moon made by ...", "Naruto or Fairy Tail?", "What has
    Kyoto Animation made"): proper names, English words or not. Whether the catalog says them anyway, as a thing
    its prose tells of ("the Demon King", "the Survey Corps"), is the linker's to ask; those it does not say are
    names it lacks. A question typed in Title Case has none."""
    if _title_cased(question, tokens):
        return []
    covered = [(m.start, m.end) for m in mentions]
    def word(k: int) -> bool:
        t = tokens[k]
        return (t.raw[:1].isupper() and not t.upper and t.key.isalpha() and len(t.key) >= 2
                and t.key not in _DETERMINERS and t.key not in _STOP_WORDS and t.key not in _NOT_NAMES
                and not any(a <= t.start < b for a, b in covered))
    out: list[tuple[int, int]] = []
    k = 1
    while k < len(tokens):
        if not word(k) or _sentence_start(question, tokens[k - 1], tokens[k]):
            k += 1
            continue
        b = k
        while b + 1 < len(tokens) and word(b + 1) and _joined(question, tokens[b], tokens[b + 1]):
            b += 1
        run = [tokens[j].key for j in range(k, b + 1)]
        if 2 <= len(run) <= MAX_WORDS and max(map(len, run)) >= MIN_LETTERS and any(
                w not in known and w not in CUES and w not in TYPE_WORD and w not in JARGON for w in run):
            out.append((k, _numbering(question, tokens, b)))  # with a numbering after it: "Kaiju No. 8"
        k = b + 1
    return out


def unknown_names(question: str, tokens: Sequence[Token], mentions: Sequence[LinkedMention],
                  known: Mapping[str, int], corrected: Iterable[str],
                  proper: Sequence[tuple[int, int]] = ()) -> list[str]:
    """The spans of ``question`` that look like names and that no mention covers, as typed, at most
    :data:`MAX_UNKNOWN`. ``known``: the question's words that some catalog name has; ``corrected``: those linking
    read as a typo of a catalog word; ``proper``: the :func:`titled_runs` the catalog's prose does not say, names
    as they stand.

    A name is a run of words typed with a capital that holds a foreign word; or two or more such words, one of them
    no English word and one no catalog word, that no mention covers ("Shinji Hirako": "Shinji" is a word of another
    catalog name and "Hirako" one letter from one, but the whole matched nothing); or such words led by a type word
    the catalog's names use ("Studio Trigger"). A numbering after it is its own ("Kaiju No. 8")."""
    fixes = frozenset(corrected)
    covered = [(m.start, m.end) for m in mentions]
    asked = _in_a_work(question, covered)  # "Is X in <a work>": X whole, its words not again apart
    asked += [(question[tokens[a].start:tokens[b].start + len(tokens[b].raw)], tokens[a].start, tokens[b].end)
              for a, b in proper if not any(lo < tokens[b].end and tokens[a].start < hi for _, lo, hi in asked)]
    asked.sort(key=lambda n: n[1])
    asked += [(m.group(), *m.span()) for m in _SIGNED.finditer(question)
              if not any(a < m.end() and m.start() < b for a, b in [*covered, *((lo, hi) for _, lo, hi in asked)])]
    covered += [(lo, hi) for _, lo, hi in asked]
    free = [not any(a <= t.start < b for a, b in covered) for t in tokens]
    # a capitalised word right after a name may be more of its title, typed wrong ("Frieren Beyond Jourmeys")
    after_name = [False] * len(tokens)
    for i in range(1, len(tokens)):
        after_name[i] = _joined(question, tokens[i - 1], tokens[i]) and (not free[i - 1] or (
            after_name[i - 1] and tokens[i - 1].raw[:1].isupper()))
    def titled(j: int) -> bool:  # a catalog word typed with a capital
        return 0 <= j < len(tokens) and tokens[j].raw[:1].isupper() and tokens[j].key in known

    beside_known = [(titled(i - 1) and _joined(question, tokens[i - 1], t))
                    or (titled(i + 1) and _joined(question, t, tokens[i + 1])) for i, t in enumerate(tokens)]
    foreign = [free[i] and _foreign(question, t, tokens[i - 1] if i else None, known, fixes,
                                    beside_names=bool(mentions), after_name=after_name[i],
                                    beside_known=beside_known[i])
               for i, t in enumerate(tokens)]
    capital = [free[i] and t.raw[:1].isupper() and not t.upper and t.key.isalpha() and t.key not in CUES
               for i, t in enumerate(tokens)]
    # a capitalised neighbour of a foreign word belongs to the same name when it is no English word, or a word
    # of another catalog name ("Yuki Tsukumo") other than a short English one ("Is Kaiju No. 8 good")
    named = [foreign[i] or (capital[i] and (not englishlike(t.key) or (t.key in known and (
        len(t.key) >= MIN_LETTERS or t.key not in english_words())))) for i, t in enumerate(tokens)]
    # a name typed in lower case takes in a lower-case neighbour that is no English word ("yuki tsukumo")
    lower = [free[i] and t.key.isalpha() and t.raw.islower() and len(t.key) >= 3 and t.key not in CUES
             and t.key not in JARGON and not englishlike(t.key) for i, t in enumerate(tokens)]
    # ... and a name may be two such words neither of which is foreign alone; typed in lower case, two words no
    # dictionary has, one of them no catalog word as typed ("hayao miyazaki": "miyazaki" is one, "hayao" a typo of one)
    strange = [(named[i] and len(t.key) >= MIN_LETTERS and not englishlike(t.key))
               or (lower[i] and t.key not in known and t.key not in dictionary_words() and (
                   (i > 0 and lower[i - 1] and _joined(question, tokens[i - 1], t))
                   or (i + 1 < len(tokens) and lower[i + 1] and _joined(question, t, tokens[i + 1]))))
               for i, t in enumerate(tokens)]
    # two short capitalised words inside a sentence that no vocabulary has ("Soi Fon"): a name of short words
    for i in range(1, len(tokens) - 1):
        pair = (tokens[i], tokens[i + 1])
        if all(free[j] and capital[j] and len(tokens[j].key) == MIN_LETTERS - 1 and tokens[j].key not in known
               and not tokens[j].key.isdigit() for j in (i, i + 1)) and _joined(question, *pair) and not \
                _sentence_start(question, tokens[i - 1], tokens[i]) and pair[0].key not in english_words():
            foreign[i] = named[i] = named[i + 1] = True
    # "Studio Trigger": a type word typed with a capital that the catalog's names use ("Studio Ghibli") leads a name
    led = [free[i] and t.raw[:1].isupper() and not t.upper and t.key in _LEADING and t.key in known
           for i, t in enumerate(tokens)]
    title_case = _title_cased(question, tokens)  # a question typed in Title Case says nothing by its capitals
    # two capitalised words inside a sentence, one of them no English word ("Was Petra Ral in Levi's squad": "Petra"
    # is a word of the vocabulary, "Ral" too short to be foreign alone), in a question not typed in Title Case
    for i in range(1, len(tokens) - 1):
        pair = (tokens[i], tokens[i + 1])
        if not title_case and all(free[j] and capital[j] and len(tokens[j].key) >= MIN_LETTERS - 1
                                  and tokens[j].key not in _DETERMINERS and tokens[j].key not in _LEADING
                                  for j in (i, i + 1)) and _joined(question, *pair) and not _sentence_start(
                question, tokens[i - 1], tokens[i]) and any(
                not englishlike(t.key) and t.key not in known and t.key not in dictionary_words() for t in pair):
            foreign[i] = named[i] = named[i + 1] = True
    out: list[str] = []
    for name, _, _ in asked:
        if len(out) < MAX_UNKNOWN and name.lower() not in (s.lower() for s in out):
            out.append(name)
    for a, b in _in_slots(question, tokens, free, known):
        if len(out) < MAX_UNKNOWN:
            _say(out, question, tokens, a, b)
            for j in range(a, b + 1):
                free[j] = False
    # a capitalised word no mention nor slot covers, which may join a name beside it
    titled_free = [free[j] and t.raw[:1].isupper() and not t.upper and t.key.isalpha() and t.key not in _DETERMINERS
                   for j, t in enumerate(tokens)]
    i = 0
    while i < len(tokens) and len(out) < MAX_UNKNOWN:
        if not free[i]:  # a name a slot took already ("studio ghibli": not "ghibli" again)
            i += 1
            continue
        a = b = i
        if foreign[i] or strange[i]:
            joins = lower if tokens[i].raw.islower() else named
            while a > 0 and joins[a - 1] and _joined(question, tokens[a - 1], tokens[a]):
                a -= 1
            while b + 1 < len(tokens) and joins[b + 1] and _joined(question, tokens[b], tokens[b + 1]):
                b += 1
        elif led[i]:
            while b + 1 < len(tokens) and capital[b + 1] and _joined(question, tokens[b], tokens[b + 1]):
                b += 1
        # (words that are all the catalog's may be one of its names typed short: "Mari Makinami")
        if not (foreign[i] or (b > a and (led[i] or (strange[i] and any(
                tokens[j].key not in known for j in range(a, b + 1)))))):
            i += 1
            continue
        if foreign[i] and not title_case and not tokens[i].raw.islower():
            # a capitalised word inside a sentence before a name typed with capitals is more of it ("Violet
            # Evergarden"), and one after it ("Tanktop Master", "Vinland Saga")
            while (a > 1 and b - a + 1 < MAX_WORDS and titled_free[a - 1] and tokens[a - 1].key not in CUES
                   and _joined(question, tokens[a - 1], tokens[a])
                   and not _sentence_start(question, tokens[a - 2], tokens[a - 1])):
                a -= 1
            while (b + 1 < len(tokens) and b - a + 1 < MAX_WORDS and titled_free[b + 1]
                   and _joined(question, tokens[b], tokens[b + 1])):
                b += 1
        b = _numbering(question, tokens, b)
        if b - a < MAX_WORDS:
            _say(out, question, tokens, a, b)
        i = b + 1
    return out


# "Is Jean Havoc in FMA Brotherhood?": whether someone is in a work the question names
# (a name typed with capitals, each word: "Is Jean Havoc in ...", not "is NOT in", "was X captain of in")
_IN_WORK = re.compile(r"\b(?:[Ii]s|[Aa]re|[Ww]as|[Ww]ere)\s+(?P<c>(?:[A-Z][a-z][\w'-]*\s+){0,3}[A-Z][a-z][\w'-]*)\s+"
                      r"(?:in|part of|from)\s+(?:the\s+)?")


def _in_a_work(question: str, covered: Sequence[tuple[int, int]]) -> list[tuple[str, int, int]]:
    """Names typed with capitals that the question asks to be in a work it names ("Is Jean Havoc in FMA
    Brotherhood?"), that no mention covers: as typed, and where."""
    starts = {a for a, _ in covered}
    out = []
    for m in _IN_WORK.finditer(question):
        lo, hi = m.span("c")
        if m.end() in starts and m.group("c").split()[0].lower() not in _NOT_NAMES and not any(
                a < hi and lo < b for a, b in covered):
            out.append((m.group("c"), lo, hi))
    return out


def _say(out: list[str], question: str, tokens: Sequence[Token], a: int, b: int) -> None:
    """Add the words ``a`` to ``b`` as typed (without a possessive 's) to ``out``, unless it has them already."""
    span = question[tokens[a].start:tokens[b].start + len(tokens[b].raw)]
    if span.lower() not in (s.lower() for s in out):
        out.append(span)


# a work said as where the question is set: "in Jujutsu Kaisen", "from the Demon Slayer manga", or opening the
# question as its topic ("In JJK, ...", "Jujutsu Kaisen: ...", "jjk question -")
SCOPE_BEFORE = re.compile(r"\b(?:in|from|within|inside)\s+(?:the\s+)?$", re.IGNORECASE)
_TOPIC_AFTER = re.compile(r"^\s*(?:(?:anime|manga|series|question|q)\s*)?(?:[:,]|\s[-–—])", re.IGNORECASE)
_WORK_TYPES = frozenset(("anime", "manga", "franchise"))
# the work is what the unknown name is asked to be in or part of, not only where the question is set
_PRESENCE_BEFORE = re.compile(r"\b(?:appears?|appeared|show(?:s|ed)? up|involved|work(?:s|ed)?(?: on)?|star(?:s|red)?|"
                              r"featured?|credited|capacity|(?:is|was|are|were)\s+\w+)\s+(?:in|on|from)\s+"
                              r"(?:the\s+)?$", re.IGNORECASE)
_COMPARING = re.compile(r"\b(?:than|vs\.?|versus|stronger|weaker|compared?)\b", re.IGNORECASE)
_POINTS_AT_WORK = re.compile(r"\b(?:that|this|the same)\s+(?:season|show|anime|series|movie|film|manga|arc)\b|"
                             r"\b(?:it|its)\b", re.IGNORECASE)


def only_scope(question: str, mentions: Sequence[LinkedMention], unknown: Sequence[str]) -> bool:
    """Whether every name the catalog has is only where a question about a name it lacks is set ("In Jujutsu
    Kaisen, what is Hiromi Higuruma's domain expansion?", "which breathing style does Yoriichi use in Demon
    Slayer?"): then nothing the catalog holds answers any of it. A known name asked about beside the unknown one
    ("is hakari from jjk stronger than gojo", "did Kyoto Animation work on Frieren") is no scope."""
    if not unknown or not mentions or _COMPARING.search(question) or _POINTS_AT_WORK.search(question):
        return False  # (set against a known name, or a part that points back at the work: it is asked about)
    for m in mentions:
        if not m.candidates or any(c.entity.entity_type not in _WORK_TYPES for c in m.candidates):
            return False
        before = question[:m.start]
        opening = not before.strip(" \t\"'") or bool(re.fullmatch(r"\s*(?:in|for)\s+(?:the\s+)?", before, re.I))
        if not SCOPE_BEFORE.search(before) and not (opening and _TOPIC_AFTER.match(question[m.end:])):
            return False
        if _PRESENCE_BEFORE.search(before):
            return False  # whether it is in the work ("does Kokushibo show up in X", "was Miyazaki involved in X")
    return True
