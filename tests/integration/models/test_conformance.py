"""The backend conformance suite (conformance.py) on the backends that run without a GPU, on the tiny model:
the transformers backend, and the OpenAI-compatible backend in front of our chat-completions server (in
process, over httpx's ASGI transport) with that same transformers backend behind it."""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import openai
import pytest

from agentic_rag.api.openai import create_app
from agentic_rag.models.base import TextBackend
from agentic_rag.models.openai_backend import OpenAIBackend
from agentic_rag.models.transformers_backend import TransformersBackend
from agentic_rag.settings import Settings

# Loads and runs a real (tiny) model for minutes on 2 CPU cores: not a unit test.
pytestmark = pytest.mark.integration

_spec = importlib.util.spec_from_file_location("tests_models_conformance", Path(__file__).with_name("conformance.py"))
assert _spec is not None and _spec.loader is not None
conformance = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(conformance)


@pytest.fixture(scope="module")
def model_dir(tiny_model_dir: Path) -> Path:
    return tiny_model_dir


@pytest.fixture(scope="module", params=["transformers", "openai"])
async def backend(request: pytest.FixtureRequest, tiny_backend: TransformersBackend) -> AsyncIterator[TextBackend]:
    if request.param == "transformers":
        yield tiny_backend
        return
    app = create_app({"tiny": tiny_backend})
    client = openai.AsyncOpenAI(base_url="http://models.test/v1", api_key="test", max_retries=0,
                                http_client=httpx.AsyncClient(transport=httpx.ASGITransport(app)))
    remote = OpenAIBackend(Settings(generation_timeout_ms=300_000), "tiny", client=client)
    yield remote
    await remote.aclose()


class TestConformance(conformance.BackendConformance):  # type: ignore[misc]
    """Every check, on each backend above."""
