"""The backend conformance suite (tests/support/conformance.py) on the backends that run without a GPU, on the
tiny model: the transformers backend, and the OpenAI-compatible backend in front of our chat-completions server
(in process, over httpx's ASGI transport) with that same transformers backend behind it."""

from __future__ import annotations

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
from tests.support.conformance import BackendConformance, N

# Loads and runs a real (tiny) model for minutes on 2 CPU cores: not a unit test.
pytestmark = pytest.mark.integration

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


# The OpenAI-compatible backend sends the schema over the wire and the transformers backend behind the server decodes
# under it: that constraint is checked in full on the transformers backend, so this one needs only enough samples
# to show the schema, the retries and the usage crossing the wire (and saves two minutes of CI a run).
WIRE_SAMPLES = 8


class TestConformance(BackendConformance):
    """Every check, on each backend above."""

    @pytest.fixture
    def samples(self, request: pytest.FixtureRequest) -> int:
        return WIRE_SAMPLES if request.node.callspec.params["backend"] == "openai" else N
