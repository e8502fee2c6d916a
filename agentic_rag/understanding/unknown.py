"""Names the catalog does not have: the words of a question that look like a name and match none.

"was Vinland Saga made by the AoT studio?": "AoT" links, "Vinland Saga" does not, and an answer about the studio
of Attack on Titan alone would be a confident answer to a question nobody asked. Linking reports such a span
(``EntityLinks.unknown``) so the answer can say plainly that the catalog lacks it.

A word looks like a name when it is no word of any catalog name (linking's word index), no typo of one, no English
word (the MiniLM tokenizer's 30k whole words, with their inflections, contractions typed without the apostrophe,
compounds and one-letter typos), no cue word, and has letters enough. Beside a name that links, only a word typed
with a capital counts ("akainu vs Kizaru": words people type in lower case beside a name are mostly English the
vocabulary lacks, "corgi", "recap"); in a question that links nothing, a lower-case word counts too ("berserk how many
episodes"). A word in capitals is an acronym, not a name. A run of such words is one name ("Hashirama Senju"), and
takes in a neighbour typed with a capital that is no English word ("Yuki Tsukumo", where "Yuki" is a word of
another name). Two such capitalised words no mention covers are a name even when each alone is a catalog word or a
typo of one ("Shinji Hirako"), as is a capitalised type word the catalog's studio names use followed by capitalised
words ("Studio Trigger"); a numbering after a name is its own ("Kaiju No. 8").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import cache

from agentic_rag.protocol.links import LinkedMention
from agentic_rag.understanding.cues import CUES, TYPE_WORD
from agentic_rag.understanding.text import Token, deletions, english_words

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
    english = english_words()
    if word in english or _stem_is_english(word):
        return True
    if any(word.endswith(c) and word[:-len(c)] in english for c in _CONTRACTIONS):
        return True
    if any(word.startswith(p) and len(word) - len(p) >= 4 and (word[len(p):] in english or _stem_is_english(
            word[len(p):])) for p in _PREFIXES):
        return True
    if any(word[:i] in english and (word[i:] in english or _stem_is_english(word[i:]))
           for i in range(3, len(word) - 2)):  # parts of three letters or more ("keyring", "lockdown")
        return True
    if len(word) >= 5:
        drops = _english_deletions()
        return word in drops or any(d in english or d in drops for d in deletions(word))
    return False


def _foreign(t: Token, before: Token | None, known: Mapping[str, int], corrected: frozenset[str], *,
             beside_names: bool) -> bool:
    k, capital = t.key, t.raw[:1].isupper() and not t.upper
    if t.upper or (beside_names and not capital) or len(k) < (MIN_LETTERS if capital else MIN_LOWER):
        return False
    if not capital and before is not None and before.key in _DETERMINERS:
        return False  # "a corgi", "a telepathic girl": a noun phrase describing, not a name
    return k.isalpha() and k not in known and k not in corrected and k not in CUES and not englishlike(k)


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


def unknown_names(question: str, tokens: Sequence[Token], mentions: Sequence[LinkedMention],
                  known: Mapping[str, int], corrected: Iterable[str]) -> list[str]:
    """The spans of ``question`` that look like names and that no mention covers, as typed, at most
    :data:`MAX_UNKNOWN`. ``known``: the question's words that some catalog name has; ``corrected``: those linking
    read as a typo of a catalog word.

    A name is a run of words typed with a capital that holds a foreign word; or two or more such words, one of them
    no English word and one no catalog word, that no mention covers ("Shinji Hirako": "Shinji" is a word of another
    catalog name and "Hirako" one letter from one, but the whole matched nothing); or such words led by a type word
    the catalog's names use ("Studio Trigger"). A numbering after it is its own ("Kaiju No. 8")."""
    fixes = frozenset(corrected)
    covered = [(m.start, m.end) for m in mentions]
    free = [not any(a <= t.start < b for a, b in covered) for t in tokens]
    foreign = [free[i] and _foreign(t, tokens[i - 1] if i else None, known, fixes, beside_names=bool(mentions))
               for i, t in enumerate(tokens)]
    capital = [free[i] and t.raw[:1].isupper() and not t.upper and t.key.isalpha() and t.key not in CUES
               for i, t in enumerate(tokens)]
    # a capitalised neighbour of a foreign word belongs to the same name when it is no English word, or a word
    # of another catalog name ("Yuki Tsukumo") other than a short English one ("Is Kaiju No. 8 good")
    named = [foreign[i] or (capital[i] and (not englishlike(t.key) or (t.key in known and (
        len(t.key) >= MIN_LETTERS or t.key not in english_words())))) for i, t in enumerate(tokens)]
    # ... and a name may be two such words neither of which is foreign alone
    strange = [named[i] and len(t.key) >= MIN_LETTERS and not englishlike(t.key) for i, t in enumerate(tokens)]
    # "Studio Trigger": a type word typed with a capital that the catalog's names use ("Studio Ghibli") leads a name
    led = [free[i] and t.raw[:1].isupper() and not t.upper and t.key in _LEADING and t.key in known
           for i, t in enumerate(tokens)]
    out: list[str] = []
    i = 0
    while i < len(tokens) and len(out) < MAX_UNKNOWN:
        a = b = i
        if foreign[i] or strange[i]:
            while a > 0 and named[a - 1] and _joined(question, tokens[a - 1], tokens[a]):
                a -= 1
            while b + 1 < len(tokens) and named[b + 1] and _joined(question, tokens[b], tokens[b + 1]):
                b += 1
        elif led[i]:
            while b + 1 < len(tokens) and capital[b + 1] and _joined(question, tokens[b], tokens[b + 1]):
                b += 1
        # (words that are all the catalog's may be one of its names typed short: "Mari Makinami")
        if not (foreign[i] or (b > a and (led[i] or (strange[i] and any(
                tokens[j].key not in known for j in range(a, b + 1)))))):
            i += 1
            continue
        b = _numbering(question, tokens, b)
        if b - a < MAX_WORDS:
            span = question[tokens[a].start:tokens[b].start + len(tokens[b].raw)]  # without a possessive 's
            if span.lower() not in (s.lower() for s in out):
                out.append(span)
        i = b + 1
    return out
