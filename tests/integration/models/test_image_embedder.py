"""The image embedder loads a CLIP directory through sentence-transformers: the tiny random CLIP of
tests/support/tiny_clip.py (the ``tiny_clip_dir`` fixture, tests/integration/conftest.py)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from agentic_rag.errors import InvalidInput
from agentic_rag.models.embeddings import default_model_path
from agentic_rag.models.image_embeddings import ImageEmbedder
from agentic_rag.models.images import InvalidImage
from agentic_rag.settings import Settings


def encoded(image: Image.Image, fmt: str) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt)
    return out.getvalue()


def test_the_tiny_clip_embeds_pictures_as_unit_vectors_of_their_pixels(tiny_clip_dir: Path) -> None:
    embedder = ImageEmbedder(Settings(image_model=str(tiny_clip_dir)))
    rng = np.random.default_rng(0)
    noise = Image.fromarray(rng.integers(0, 256, (120, 160, 3), dtype=np.uint8))
    other = Image.new("RGB", (160, 120), (20, 200, 90))
    vectors = embedder.embed([encoded(noise, "PNG"), encoded(noise, "BMP"), encoded(other, "PNG")])
    assert vectors.shape == (3, embedder.dimension) and embedder.dimension == 32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vectors[0], vectors[1], atol=1e-6)  # the same pixels, whatever the encoding
    assert not np.allclose(vectors[0], vectors[2], atol=1e-3)
    assert embedder.embed([]).shape == (0, 32)
    with pytest.raises(InvalidImage):
        embedder.embed([b"not a picture"])


def test_a_text_only_model_or_none_is_refused() -> None:
    with pytest.raises(InvalidInput, match="image search is not configured"):
        ImageEmbedder(Settings())
    text_only = ImageEmbedder(Settings(image_model=default_model_path()))  # the MiniLM sentence encoder
    with pytest.raises(InvalidInput, match="not images"):
        _ = text_only.dimension
