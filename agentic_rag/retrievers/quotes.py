"""Quotes: the sentences of a record's description nearest in meaning to a question, under the sentence encoder.

An explanation ("why is Al's soul in a suit of armour?") is answered by quoting what the catalog says, and the
sentence that carries the why is the one closest to the question: the question and every sentence of the fetched
records' descriptions (the stored text from ``about_at``: a character's description, a work's synopsis) are
embedded in one call and ranked by cosine similarity. Bounded: at most :data:`MAX_SENTENCES` sentences a call.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

EmbedFn = Callable[[Sequence[str]], Awaitable[npt.NDArray[np.float32]]]

MAX_SENTENCES = 48  # sentences embedded for one step (every record's together)
QUOTES = 3  # sentences a record keeps, nearest first
MIN_WORDS = 3  # a shorter piece ("Yes.") is not a sentence worth quoting
# a sentence ends at . ! or ? followed by a space and a capital word, not after an initial ("Monkey D. Luffy")
_END = re.compile(r"(?<=[.!?])(?<!\b[A-Z]\.)\s+(?=[\"“(]?[A-Z][a-z])")


def sentences(text: str) -> list[str]:
    """The sentences of a description, as written."""
    return [s.strip() for s in _END.split(text) if len(s.split()) >= MIN_WORDS]


def about(row: dict[str, Any], text: str) -> str:
    """What a record says of itself: its stored text from ``about_at`` (its name and links come before)."""
    at = row.get("about_at")
    return text[at:].strip() if isinstance(at, int) else ""


async def quote(embed: EmbedFn, query: str, texts: Sequence[str]) -> list[list[tuple[str, float]]]:
    """Per text, its sentences nearest in meaning to ``query`` with their cosine similarity, nearest first (at
    most :data:`QUOTES`); one embedding call for the query and every sentence."""
    split = [sentences(t) for t in texts]
    flat = [s for ss in split for s in ss][:MAX_SENTENCES]
    if not flat:
        return [[] for _ in texts]
    vectors = _unit(await embed([query, *flat]))
    sims = (vectors[1:] @ vectors[0]).tolist()
    out: list[list[tuple[str, float]]] = []
    at = 0
    for ss in split:
        kept = ss[:max(0, len(flat) - at)]
        scored = sorted(zip(kept, sims[at:at + len(kept)], strict=True), key=lambda x: -x[1])
        out.append([(s, round(float(v), 4)) for s, v in scored[:QUOTES]])
        at += len(kept)
    return out


def _unit(v: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    v = np.asarray(v, dtype=np.float32)
    out: npt.NDArray[np.float32] = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)
    return out
