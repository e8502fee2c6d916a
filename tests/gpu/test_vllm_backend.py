"""vLLM on a GPU, on the tiny test model: the backend conformance suite (tests/support/conformance.py), and
a timeout aborts the request in the engine."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentic_rag.models.vllm_backend import VLLMBackend
from agentic_rag.settings import Settings

pytest.importorskip("vllm", reason="needs vLLM (install the vllm extra on a GPU machine)")

from tests.support.conformance import BackendConformance  # after the skip: nothing of the suite loads without vLLM


@pytest.fixture(scope="module")
def max_model_len(tiny_dir: Path) -> int:
    config = json.loads((tiny_dir / "config.json").read_text())
    return min(int(config.get("max_position_embeddings", 2048)), 4096)


@pytest.fixture(scope="module")
def tiny_dir(build_tiny_model: Callable[[Path], Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny-vllm"))


@pytest.fixture(scope="module")
def backend(tiny_dir: Path, max_model_len: int) -> Iterator[VLLMBackend]:
    settings = Settings(vllm_gpu_memory_utilization=0.3, vllm_max_model_len=max_model_len,
                        generation_timeout_ms=300_000)
    engine = VLLMBackend(settings, tiny_dir, name="tiny", engine_overrides={"enforce_eager": True})
    yield engine
    engine.shutdown()


@pytest.fixture(scope="module")
def model_dir(tiny_dir: Path) -> Path:
    return tiny_dir


class TestVLLMConformance(BackendConformance):
    """Every check of the suite, on vLLM."""


async def test_a_timeout_aborts_the_request(backend: VLLMBackend, max_model_len: int,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    engine: Any = backend._engine
    aborted: list[str] = []
    real_abort = engine.abort

    async def spy(request_id: Any, *args: Any, **kwargs: Any) -> None:
        if isinstance(request_id, str) and request_id.startswith("tiny-"):
            aborted.append(request_id)
        await real_abort(request_id, *args, **kwargs)

    monkeypatch.setattr(engine, "abort", spy)
    # a long forced output, so the request is certainly still running when the limit hits
    long_string = {"type": "object", "properties": {"a": {"type": "string", "minLength": max_model_len,
                                                          "maxLength": max_model_len}}, "required": ["a"]}
    monkeypatch.setattr(backend, "timeout_s", 0.2)
    with pytest.raises(TimeoutError, match="request aborted"):
        await backend.complete([{"role": "user", "content": "go"}], long_string, max_tokens=max_model_len - 64,
                               temperature=1.0)
    assert aborted, "the engine was not asked to abort"
    # abort drops the request from the output processor before it returns
    assert not engine.output_processor.has_unfinished_requests()
    # the engine still serves after an abort
    monkeypatch.setattr(backend, "timeout_s", 60.0)
    done = await backend.complete([{"role": "user", "content": "again"}], None, max_tokens=8, temperature=0.0)
    assert done.completion_tokens > 0
