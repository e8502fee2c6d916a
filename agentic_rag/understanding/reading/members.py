"""Members of a group the catalog has no entry for, asked among one work's characters ("who are the hashira in demon
slayer", "who was on team 7 in naruto", "which straw hats show up in film red"): the group is the run of words of
the question's own (no name, no cue) that a plural or a membership word says is a group; each member's own record
says those words (planners/heuristic/progress.py)."""

from __future__ import annotations

import re

from agentic_rag.protocol import EntityLinks
from agentic_rag.protocol.reading import Analysis
from agentic_rag.understanding import cues as C
from agentic_rag.understanding.linker import STOP
from agentic_rag.understanding.reading.catalog import FILLER
from agentic_rag.understanding.text import Token, tokenize

MAX_GROUP = 3  # words of a group's name ("straw hat pirates")
# how a question asks for a group's members: several asked ("who are", "which ... are"), the members named
# ("members", "list"), or a membership said right before the group ("who was on team 7", "who's in the akatsuki")
_SEVERAL = re.compile(r"\b(?:who|which)(?:\s+\w+)?\s+(?:are|were)\b|\bmembers?\b|\b(?:list|name)\b|\ball\s+the\b",
                      re.IGNORECASE)
_MEMBERSHIP = frozenset(("on", "in", "of", "from", "among", "join", "joined", "joins"))
_ASKED = re.compile(r"\b(?:who|whom|which|list|name)\b", re.IGNORECASE)
_FILLER = FILLER | {"show", "shows"}  # ("which straw hats show up": no group "show")
_WORKS = frozenset(("anime", "manga", "franchise"))
_SUPERLATIVE = re.compile(r"[a-z]{3,}est")


def _own(t: Token) -> bool:
    return (t.key.isalpha() and len(t.key) > 2 and t.key not in STOP and t.key not in C.CUES
            and t.key not in _FILLER)


def members_asked(question: str, a: Analysis, links: EntityLinks | None) -> str:
    """The group whose members ``question`` asks among the characters of the one work it names ("hashira"), as typed;
    "" when it asks no such thing: a plain lookup of that work read, a group of one to three words of the question's
    own beside it (no more of its own besides, one at most), and several asked or a membership said before it."""
    # (a work's lookup, or its characters: "list the members of the phantom troupe in hxh", "who is in the akatsuki")
    cast = len(a.hops) == 1 and a.hops[0].edges == ("features",) and a.hops[0].node_types == ("character",) and \
        not a.hops[0].roles  # (the main cast is asked by a cue: "main" names no group)
    if links is None or a.intent not in ("lookup", "chain") or (a.hops and not cast) or a.attr is not None or \
            a.filter is not None or a.recommend is not None or a.explain or a.among is not None or a.more or \
            a.described:
        return ""
    if len(a.mentions) != 1 or not _ASKED.search(question):
        return ""
    if not {c.entity.entity_type for c in a.linked.get(a.mentions[0], {}).values()} <= _WORKS:
        return ""
    named = [(m.start, m.end) for m in links.mentions]
    tokens = [t for t in tokenize(question) if not any(s <= t.start < e for s, e in named)]
    runs: list[list[int]] = []
    for i, t in enumerate(tokens):
        if _own(t) or (t.key.isdigit() and runs and runs[-1] and runs[-1][-1] == i - 1):  # "team 7"
            if runs and runs[-1] and runs[-1][-1] == i - 1:
                runs[-1].append(i)
            else:
                runs.append([i])
    if not runs:
        return ""
    run = max(runs, key=len)
    others = sum(len(r) for r in runs) - len(run)
    if len(run) > MAX_GROUP or others > 1 or _SUPERLATIVE.fullmatch(tokens[run[0]].key):
        return ""  # (a superlative ranks, it names no group: "who are the strongest fighters")
    before = tokens[run[0] - 1].key if run[0] > 0 else ""
    before = tokens[run[0] - 2].key if before == "the" and run[0] > 1 else before
    plural = tokens[run[-1]].key.endswith("s") and not tokens[run[-1]].key.endswith("ss")
    if not (_SEVERAL.search(question) or before in _MEMBERSHIP or plural):
        return ""
    return question[tokens[run[0]].start:tokens[run[-1]].end].strip(" '’")
