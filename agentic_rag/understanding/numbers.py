"""Numbers people spell out: "season two", "forty volumes", "nineteen eighty", "evangelion one point oh".

Names and filters are matched on digits; these turn the words people type (or a voice assistant
transcribes) into them. :func:`spelled` rewrites single words inside a name's words ("jujutsu kaisen
zero" is "Jujutsu Kaisen 0"); :func:`with_digits` rewrites whole numbers and years in a sentence
("founded before nineteen eighty" is "founded before 1980").
"""

from __future__ import annotations

import re

UNITS = {w: i for i, w in enumerate(("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                                     "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
                                     "seventeen", "eighteen", "nineteen"))}
TENS = {w: 10 * (i + 2) for i, w in enumerate(("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty",
                                               "ninety"))}
ORDINALS = {w: i + 1 for i, w in enumerate(("first", "second", "third", "fourth", "fifth", "sixth", "seventh",
                                            "eighth", "ninth", "tenth"))}
# inside a name: "one point oh" is "1.0", whose key is "1 0"
_IN_NAME = {**{w: str(n) for w, n in UNITS.items()}, "oh": "0", "point": ""}


def spelled(words: list[str]) -> list[str] | None:
    """The words with each spelled digit as the digit ("one point oh" -> "1 0"); None when none is spelled."""
    if not any(w in _IN_NAME for w in words) or all(w in ("oh", "point") or w not in _IN_NAME for w in words):
        return None
    return [x for x in (_IN_NAME.get(w, w) for w in words) if x]


_WORD = r"(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|" \
        r"sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|" \
        r"thousand)"
_RUN = re.compile(rf"\b{_WORD}(?:[\s-]+{_WORD})*\b", re.IGNORECASE)


def _value(words: list[str]) -> int | None:
    """A run of number words as one number: "forty two" 42, "nineteen eighty" 1980, "two thousand and
    ten" 2010, "twenty eleven" 2011."""
    if not words:
        return None
    if "thousand" in words:
        i = words.index("thousand")
        head, rest = _value(words[:i]) or 1, _value(words[i + 1:]) or 0
        return head * 1000 + rest
    if "hundred" in words:
        i = words.index("hundred")
        return (_value(words[:i]) or 1) * 100 + (_value(words[i + 1:]) or 0)
    # a year said in two halves: "nineteen eighty", "twenty eleven" (but "twenty one" is 21)
    if len(words) >= 2 and words[0] in ("nineteen", "twenty"):
        tail = _value(words[1:])
        if tail is not None and 10 <= tail < 100:
            return (19 if words[0] == "nineteen" else 20) * 100 + tail
    total = 0
    for w in words:
        if w in TENS and total % 100 == 0:
            total += TENS[w]
        elif w in UNITS and (total % 10 == 0 and (total % 100 == 0 or UNITS[w] < 10)):
            total += UNITS[w]
        else:
            return None
    return total


def with_digits(text: str) -> str:
    """``text`` with every run of number words written in digits ("forty volumes" -> "40 volumes")."""
    def one(m: re.Match[str]) -> str:
        words = [w.lower() for w in re.split(r"[\s-]+", m.group())]
        if words == ["one"]:
            return m.group()  # "one" is too often no number ("which one", "the first one")
        value = _value(words)
        return m.group() if value is None else str(value)
    return _RUN.sub(one, re.sub(r"\b(hundred|thousand) and\b", r"\1", text, flags=re.IGNORECASE))
