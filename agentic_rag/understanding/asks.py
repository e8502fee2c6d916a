"""What a question asks, by meaning: the nearest labelled exemplars under the MiniLM encoder.

Cue words (:mod:`~agentic_rag.understanding.cues`) read most questions. This reads the ones whose
wording shares no cue ("who was at the helm of X", "which company handled the animation of X"):
every exemplar below is a way of asking one thing, with the named entity written as X. The
question is embedded with its linked names replaced by X too, so the names do not pull it toward
an exemplar; a label counts only when its nearest exemplar is close and clearly closer than any
other label's. The exemplars deliberately avoid the cue words, which would be read anyway.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

import numpy as np
import numpy.typing as npt

from agentic_rag.protocol import AskHint, AskLabel, EntityLinks
from agentic_rag.protocol.limits import max_len
from agentic_rag.understanding.text import focus

EmbedFn = Callable[[Sequence[str]], Awaitable[npt.NDArray[np.float32]]]

EXEMPLARS: dict[AskLabel, tuple[str, ...]] = {
    "studio": ("which company handled the animation of X", "who brought X to the screen", "the animation house "
               "behind X", "which production company made the X show", "who was in charge of animating X"),
    "director": ("who was at the helm of X", "who helmed X", "who called the shots on X", "the person who led "
                 "the production of X"),
    "music": ("who wrote the tunes for X", "who is behind the OST of X", "the soundtrack guy for X",
              "whose melodies are in X"),
    "author": ("who is the mangaka of X", "who penned X", "who came up with X", "whose brainchild is X",
               "the original writer of X"),
    "cast": ("who is in X", "who shows up in X", "who are the people in X", "the heroes of X",
             "the protagonist of X"),
    "appears": ("what show is X from", "where does X show up", "which series has X in it", "X is from which show"),
    "sequel": ("what happens after X", "what should I watch after X", "is there more after X",
               "what continues the story of X"),
    "prequel": ("what should I watch before X", "what leads up to X", "what happened before X"),
    "source": ("what is X based on", "the original work behind X", "what was X adapted from",
               "is X from a comic"),
    "adaptation": ("did X get a show", "is there a TV version of X", "was X animated"),
    "year": ("how old is X", "when did X start", "when did X come out", "in which year did X begin"),
    "episodes": ("how long is X", "how many installments does X have", "how many parts does X have",
                 "length of X"),
    "volumes": ("how many books is X", "how many tomes does X have", "how long is the X comic"),
    "founded": ("when was X established", "how old is the company X", "when did X start making anime"),
    "family": ("who are X's relatives", "who is X's dad", "who is related to X by blood", "X's kin"),
    "mentor": ("who taught X", "who trained X", "under whom did X study"),
    "rival": ("who does X compete with", "who is X's nemesis", "X's arch enemy"),
    "describe": ("tell me about X", "what is X", "who is X", "give me an overview of X", "X summary"),
}
MIN_SCORE = 0.55  # cosine similarity of the nearest exemplar
MIN_MARGIN = 0.05  # over the nearest exemplar of any other label
CHUNK = 16  # exemplars embedded per call
EMBEDDED_CHARS = 500  # characters of the masked question embedded
_ASKS = max_len(EntityLinks, "asks")


def masked(question: str, links: EntityLinks | None) -> str:
    """What the question asks (:func:`~agentic_rag.understanding.text.focus`), every linked name written as X."""
    mentions = links.mentions if links else []
    question = focus(question, [(m.start, m.end) for m in mentions])
    out, last = [], 0
    for m in mentions:
        if not question[m.start:m.end].strip():
            continue
        out += [question[last:m.start], "X"]
        last = m.end
    return " ".join("".join([*out, question[last:]]).split())


class AskClassifier:
    """Nearest labelled exemplars; the exemplars are embedded once, on first use."""

    def __init__(self, embed: EmbedFn) -> None:
        self._embed = embed
        self._labels: list[AskLabel] = [label for label, xs in EXEMPLARS.items() for _ in xs]
        self._matrix: npt.NDArray[np.float32] | None = None
        self._lock = asyncio.Lock()

    async def _exemplars(self) -> npt.NDArray[np.float32]:
        async with self._lock:
            if self._matrix is None:
                texts = [x for xs in EXEMPLARS.values() for x in xs]
                # in chunks: an embedding service bounds one call (the Embedder deployment: one batch)
                chunks = [await self._embed(texts[i:i + CHUNK]) for i in range(0, len(texts), CHUNK)]
                self._matrix = _unit(np.concatenate(chunks))
            return self._matrix

    async def __call__(self, question: str, links: EntityLinks | None) -> list[AskHint]:
        """The labels whose exemplars the question is nearest to, best first (at most three)."""
        matrix = await self._exemplars()
        q = _unit(await self._embed([masked(question, links)[:EMBEDDED_CHARS]]))[0]
        sims = matrix @ q
        best: dict[AskLabel, float] = {}
        for label, sim in zip(self._labels, sims.tolist(), strict=True):
            best[label] = max(best.get(label, -1.0), float(sim))
        ranked = sorted(best.items(), key=lambda kv: -kv[1])[:_ASKS]
        return [AskHint(label=label, score=round(score, 3)) for label, score in ranked]


def _unit(v: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    v = np.asarray(v, dtype=np.float32)
    out: npt.NDArray[np.float32] = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)
    return out


def confident(hints: Sequence[AskHint]) -> AskLabel | None:
    """The label to act on: near enough, and clearly nearer than the next label."""
    if not hints or hints[0].score < MIN_SCORE:
        return None
    if len(hints) > 1 and hints[0].score - hints[1].score < MIN_MARGIN:
        return None
    return hints[0].label
