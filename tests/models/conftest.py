"""The tiny Hugging Face model the model-layer tests load, built once and cached under ``.data/``."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from agentic_rag.models.transformers_backend import TransformersBackend

REPO = Path(__file__).resolve().parents[2]
# .data/ is gitignored; the model is keyed by tiny.VERSION, so later sessions reuse it
CACHE = REPO / ".data" / "test-models"


def _load_tiny() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tests_models_tiny", Path(__file__).with_name("tiny.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def tiny_model_dir() -> Path:
    """Directory of the tiny randomly initialised Qwen2 model and its locally trained tokenizer."""
    return Path(_load_tiny().build_tiny_model(CACHE))


@pytest.fixture(scope="session")
def tiny_backend(tiny_model_dir: Path) -> TransformersBackend:
    """One transformers backend over the tiny model for the session: outlines builds each schema's index once."""
    return TransformersBackend(tiny_model_dir, device="cpu")
