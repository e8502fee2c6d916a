"""vLLM on a GPU, on the tiny test model: constrained outputs validate, and a timeout aborts the request."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel, ValidationError

from agentic_rag.models.base import (
    Completion,
    Generation,
    GenerationError,
    Message,
    StructuredGenerator,
    schema_for,
)
from agentic_rag.models.vllm_backend import VLLMBackend
from agentic_rag.protocol import (
    DraftAnswer,
    GradeReport,
    GraphIntent,
    NextStep,
    QueryRewrite,
    SearchIntent,
    SufficiencyReport,
)
from agentic_rag.settings import Settings

pytest.importorskip("vllm", reason="needs vLLM (install the vllm extra on a GPU machine)")

SCHEMAS: list[type[BaseModel]] = [
    QueryRewrite, NextStep, SearchIntent, GraphIntent, DraftAnswer, SufficiencyReport, GradeReport,
]
N = 50
# Contracts whose every rule is in their JSON schema: all N generations must validate.
SCHEMA_COMPLETE = {QueryRewrite, SufficiencyReport, GradeReport}


class Recording:
    """The backend, keeping every completion it returned."""

    def __init__(self, backend: VLLMBackend) -> None:
        self.backend = backend
        self.name = backend.name
        self.seen: list[tuple[dict[str, Any] | None, Completion]] = []

    async def complete(self, messages: list[Message], schema: dict[str, Any] | None, *, max_tokens: int,
                       temperature: float, calibration: list[Message] | None = None) -> Completion:
        done = await self.backend.complete(messages, schema, max_tokens=max_tokens, temperature=temperature,
                                            calibration=calibration)
        self.seen.append((schema, done))
        return done


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


@pytest.mark.parametrize("output_type", SCHEMAS, ids=lambda t: t.__name__)
async def test_constrained_outputs_validate(backend: VLLMBackend, max_model_len: int,
                                            output_type: type[BaseModel]) -> None:
    recording = Recording(backend)
    generator = StructuredGenerator(recording)
    prompts: list[list[Message]] = [
        [{"role": "system", "content": f"Reply with one {output_type.__name__} as JSON."},
         {"role": "user", "content": f"Question {i}: which anime did studio {i} make in {1990 + i}?"}]
        for i in range(N)
    ]
    results = await asyncio.gather(*(
        generator.generate(m, output_type, max_tokens=max_model_len // 2, temperature=1.0) for m in prompts
    ), return_exceptions=True)
    # the engine-side guarantee: every completion that ended (not cut by max_tokens) fits the schema
    validator = jsonschema.Draft202012Validator(schema_for(output_type))
    ended = [done for schema, done in recording.seen if done.finish_reason == "stop"]
    assert len(ended) >= 0.9 * len(recording.seen), "most completions should end within max_tokens"
    for done in ended:
        validator.validate(json.loads(done.text))
        assert done.prompt_tokens > 0 and done.completion_tokens > 0
    # pydantic may reject an output only for a rule the JSON schema cannot carry (a model validator)
    assert not [r for r in results if isinstance(r, BaseException) and not isinstance(r, GenerationError)]
    rejected = [e for done in ended for e in _pydantic_errors(output_type, done.text)]
    assert all(e.startswith("Value error, ") for e in rejected), sorted(set(rejected))[:5]
    valid = [r for r in results if isinstance(r, Generation)]
    assert all(isinstance(r.output, output_type) for r in valid)
    if output_type in SCHEMA_COMPLETE:
        assert len(valid) == N
    else:
        assert valid, f"none of {N} generations validated"


def _pydantic_errors(output_type: type[BaseModel], text: str) -> list[str]:
    try:
        output_type.model_validate_json(text)
    except ValidationError as exc:
        return [str(e["msg"]) for e in exc.errors(include_url=False)]
    return []


async def test_unconstrained_completion_counts_tokens(backend: VLLMBackend) -> None:
    done = await backend.complete([{"role": "user", "content": "hello"}], None, max_tokens=16, temperature=0.0)
    assert done.prompt_tokens > 0 and 0 < done.completion_tokens <= 16
    assert done.finish_reason in ("stop", "length")


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
