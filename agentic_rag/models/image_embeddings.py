"""The image embedding model: a CLIP model directory (``RAG_IMAGE_MODEL``) through sentence-transformers.

sentence-transformers loads a CLIP directory (a Hugging Face ``CLIPModel`` saved with its processor, or one of
its own ``clip-ViT-*`` models) as a multimodal model and encodes PIL images with the vision tower. Vectors are
L2-normalised, so a dot product is the cosine. Nothing is downloaded: the directory must be there. There is
no default model; without one, image search is off (:data:`~agentic_rag.models.images.IMAGE_SEARCH_OFF`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image

from agentic_rag.errors import InvalidInput
from agentic_rag.models.embeddings import Vectors
from agentic_rag.models.images import IMAGE_SEARCH_OFF, ImageBounds, ImageSearchOff, decode_image
from agentic_rag.settings import Settings

# A decoded image is shrunk to this many pixels a side at most before the model's processor sees it (which
# resizes to its own input, 224 for CLIP ViT-B): memory stays bounded whatever the image declared, and a
# query and an ingested image take the same steps, so the same bytes give the same vector.
PREPARED_SIDE = 1024


class ImageEmbedder:
    """Batched, L2-normalised image embeddings of encoded images (each bounded and verified again before it is
    decoded: :func:`~agentic_rag.models.images.decode_image`). Loads the model on first use."""

    def __init__(self, settings: Settings) -> None:
        if settings.image_model is None:
            raise ImageSearchOff(IMAGE_SEARCH_OFF)
        self._path = settings.image_model
        self._device = settings.image_device
        self._batch_size = settings.image_batch_size
        self._bounds = ImageBounds.of(settings)
        self._model: Any = None
        self._lock = threading.Lock()  # torch modules are not safe to call from several threads at once

    def _load(self) -> Any:
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(self._path, device=self._device, local_files_only=True)
            modalities = getattr(model, "modalities", None)  # sentence-transformers 5.4+ says what it encodes
            if modalities is not None and "image" not in modalities:
                raise InvalidInput(f"RAG_IMAGE_MODEL {self._path} encodes {', '.join(modalities)}, not images: "
                                   "it must be a CLIP (image and text) model directory")
            self._model = model
        return self._model

    @property
    def dimension(self) -> int:
        return int(self._load().get_embedding_dimension())

    @property
    def model_name(self) -> str:
        return self._path

    def prepare(self, data: bytes) -> Image.Image:
        """An encoded image, bounded and verified (``InvalidImage`` otherwise), decoded and shrunk for the model."""
        image = decode_image(data, self._bounds)
        image.thumbnail((PREPARED_SIDE, PREPARED_SIDE))
        return image

    def embed_prepared(self, images: Sequence[Image.Image]) -> Vectors:
        """Embed images from :meth:`prepare` in batches; one unit vector per image, in order."""
        if not images:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock:
            out = self._load().encode(list(images), batch_size=self._batch_size, normalize_embeddings=True,
                                      convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(out, dtype=np.float32)

    def embed(self, images: Sequence[bytes]) -> Vectors:
        """Embed encoded images (PNG, JPEG, ...); one unit vector per image, in order."""
        return self.embed_prepared([self.prepare(data) for data in images])

    async def aembed(self, images: Sequence[bytes]) -> Vectors:
        """:meth:`embed` off the event loop."""
        return await asyncio.to_thread(self.embed, images)
