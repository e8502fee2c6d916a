"""Whether a record says a group the catalog has no entry for ("a hashira", "the straw hats", "team 7"): its own
names and description say the group's words, in order and close together. Read by a choice among listed names
(:mod:`.among`) and by a group's members asked among one work's characters (:mod:`.progress`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from agentic_rag.understanding import cues as C
from agentic_rag.understanding.text import fold

_POSSESSIVE = re.compile(r"['’]s\b")
GROUP_GAP = 2  # words a record may put between two words of a group ("S-Class rank 2 hero")
# "<noun> of the X" where the noun relates to X from outside it: "teacher of the Legendary Sannin" is none of them
_OUTSIDE_OF = frozenset(C.FAMILY | C.MENTOR | C.STUDENTS | C.RIVAL | C.ENEMY | {"creator", "founder", "enemy",
                                                                                  "rival", "teacher", "sister"})

# ... or faces it: "revenge against the Phantom Troupe", "killed by the Akatsuki"
_AGAINST = frozenset(("against", "by", "versus", "vs"))


def singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def says_group(words: list[str], group: list[str]) -> bool:
    """Whether ``words`` say the group: its words in order, a few apart at most, and not as what someone is to the
    group from outside it ("teacher of the Legendary Sannin", "Tatsumaki's younger sister" is no s-class hero, "revenge
    against the Phantom Troupe" no member)."""
    for start, w in enumerate(words):
        if w != group[0]:
            continue
        at, ok = start, True
        for g in group[1:]:
            nxt = next((j for j in range(at + 1, min(at + 2 + GROUP_GAP, len(words))) if words[j] == g), None)
            if nxt is None:
                ok = False
                break
            at = nxt
        before = [x for x in words[max(0, start - 3):start] if x != "the"]
        if ok and not (len(before) >= 2 and before[-1] == "of" and before[-2] in _OUTSIDE_OF) and not (
                before and before[-1] in _AGAINST):
            return True
    return False


def group_words(said: str) -> list[str]:
    """A group's words as a record is matched on them: folded, singular ("Straw Hats" -> straw, hat)."""
    return [singular(w) for w in re.findall(r"\w+", fold(_POSSESSIVE.sub("", said)))]


def record_says(row: dict[str, Any], name: str, group: Sequence[str]) -> bool:
    """Whether a search row's own record (its names and description, not the works it lists) says every word of
    ``group`` (folded words)."""
    snippet = str(row.get("snippet") or "")
    about = row.get("about_at")
    story = snippet[about:] if isinstance(about, int) else ""
    wanted = [singular(g) for g in group]
    return bool(wanted) and any(says_group(group_words(text), wanted)
                                for text in [name, *(str(x) for x in row.get("aliases") or []), story])
