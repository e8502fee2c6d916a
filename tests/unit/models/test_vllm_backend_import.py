"""The vLLM backend without vLLM: the module imports, and building a backend says what to install.

The second half drives ``VLLMBackend.complete`` against a stand-in engine with AsyncLLM's call
shape (``generate`` as an async iterator, ``abort``), to check what the backend asks of vLLM and
that a timeout or a cancel aborts the request. tests/gpu/test_vllm_backend.py runs the real one.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import AsyncIterator
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from pydantic import ValidationError

from agentic_rag.errors import InvalidInput, Timeout
from agentic_rag.models.base import CallShape, ModelOverloaded, ModelUnavailable, StructuredGenerator, schema_for
from agentic_rag.protocol import QueryRewrite
from agentic_rag.settings import Settings

MODULE = "agentic_rag.models.vllm_backend"

# one plain call (no role prompt), under the contract's whole schema
HI = CallShape(messages=[{"role": "user", "content": "hi"}], schema=schema_for(QueryRewrite))


def _hide_vllm(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in sys.modules if n == "vllm" or n.startswith("vllm.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "vllm", None)


def test_module_imports_without_vllm_and_the_backend_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    _hide_vllm(monkeypatch)
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    module = importlib.import_module(MODULE)
    with pytest.raises(ImportError, match="install the vllm extra on a GPU machine"):
        module.VLLMBackend(Settings(), "/models/planner")


class _Tokenizer:
    def apply_chat_template(self, messages: list[dict[str, str]], **kwargs: Any) -> str:
        assert kwargs == {"add_generation_prompt": True, "tokenize": False}
        return "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"

    def __call__(self, text: str, add_special_tokens: bool) -> dict[str, list[int]]:
        assert not add_special_tokens
        return {"input_ids": [ord(c) for c in text]}


class _Engine:
    """AsyncLLM's surface as the backend uses it: generate() yields RequestOutputs, abort() by id."""

    def __init__(self, args: Any) -> None:
        self.args = args
        self.requests: list[tuple[Any, Any, str]] = []
        self.aborted: list[str] = []
        self.hang = False
        self.fail: BaseException | None = None  # what generate() raises, as AsyncLLM's would
        self.dead: BaseException | None = None  # what check_health() raises once the engine core is gone
        self.started = asyncio.Event()

    async def generate(self, prompt: Any, params: Any, request_id: str) -> AsyncIterator[Any]:
        self.requests.append((prompt, params, request_id))
        self.started.set()
        if self.hang:
            await asyncio.sleep(3600)
        if self.fail is not None:
            raise self.fail
        text = '{"rewritten_query":"q","needs_external_context":true,"retrieval_mode":"none","rationale":"r"}'
        yield SimpleNamespace(prompt_token_ids=prompt["prompt_token_ids"], finished=True, outputs=[
            SimpleNamespace(text=text, token_ids=list(range(7)), finish_reason="stop")])

    async def abort(self, request_id: str) -> None:
        self.aborted.append(request_id)

    async def check_health(self) -> None:
        if self.dead is not None:
            raise self.dead


def vllm_errors() -> dict[str, type[Exception]]:
    """vLLM 0.33's exception classes, by the same names and bases (vllm/exceptions.py and
    vllm/v1/engine/exceptions.py in its wheel); the backend finds them by name, as it does in vLLM."""
    base = type("VLLMError", (Exception,), {})
    client = type("VLLMClientError", (base,), {})
    server = type("VLLMServerError", (base,), {})
    generation = type("GenerationError", (server,), {})
    graceful = type("GracefulHTTPError", (base,), {})
    return {
        "VLLMError": base, "VLLMClientError": client, "VLLMServerError": server,
        "VLLMValidationError": type("VLLMValidationError", (client,), {}),
        "GenerationError": generation,
        "RetryableRequestError": type("RetryableRequestError", (generation,), {}),
        "GracefulHTTPError": graceful,
        "QueueOverflowError": type("QueueOverflowError", (graceful,), {}),
        "MaxQueuedTokensError": type("MaxQueuedTokensError", (graceful,), {}),
        "ProfilerAlreadyActiveError": type("ProfilerAlreadyActiveError", (graceful,), {}),
        # vllm.v1.engine.exceptions
        "EngineGenerateError": type("EngineGenerateError", (server,), {}),
        "EngineDeadError": type("EngineDeadError", (server,), {}),
    }


def _record(**fields: Any) -> Any:
    return SimpleNamespace(**fields)


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """Stand-in vllm modules exposing exactly the names the backend imports."""
    engines: list[_Engine] = []
    errors = vllm_errors()

    def from_engine_args(args: Any) -> _Engine:
        engines.append(_Engine(args))
        return engines[-1]

    names: dict[str, dict[str, Any]] = {
        "vllm": {"SamplingParams": _record},
        "vllm.config": {"StructuredOutputsConfig": _record},
        "vllm.engine": {},
        "vllm.engine.arg_utils": {"AsyncEngineArgs": _record},
        "vllm.sampling_params": {"RequestOutputKind": SimpleNamespace(FINAL_ONLY="FINAL_ONLY"),
                                 "StructuredOutputsParams": _record},
        "vllm.inputs": {"tokens_input": lambda prompt_token_ids, *, prompt: {
            "type": "token", "prompt_token_ids": prompt_token_ids, "prompt": prompt}},
        "vllm.exceptions": {k: v for k, v in errors.items() if not k.startswith("Engine")},
        "vllm.v1": {},
        "vllm.v1.engine": {},
        "vllm.v1.engine.exceptions": {k: v for k, v in errors.items() if k.startswith("Engine")},
        "vllm.v1.engine.async_llm": {"AsyncLLM": SimpleNamespace(from_engine_args=from_engine_args)},
    }
    for name, attrs in names.items():
        module = ModuleType(name)
        module.__dict__.update(attrs)
        monkeypatch.setitem(sys.modules, name, module)
    import transformers

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda *a, **k: _Tokenizer())
    return SimpleNamespace(engines=engines, errors=errors)


async def test_settings_become_engine_args_and_a_schema_becomes_structured_outputs(fake_vllm: Any) -> None:
    from agentic_rag.models.vllm_backend import VLLMBackend

    settings = Settings(vllm_gpu_memory_utilization=0.5, vllm_max_model_len=4096)
    backend = VLLMBackend(settings, "/models/planner", engine_overrides={"enforce_eager": True})
    args = fake_vllm.engines[0].args
    assert (args.model, args.served_model_name, args.gpu_memory_utilization, args.max_model_len) == (
        "/models/planner", "planner", 0.5, 4096)
    assert args.enforce_eager is True
    assert vars(args.structured_outputs_config) == {"backend": "xgrammar", "disable_any_whitespace": True}

    gen = await StructuredGenerator(backend).generate_shaped(HI, QueryRewrite, max_tokens=64)
    assert gen.output.retrieval_mode == "none"
    assert (gen.usage.prompt_tokens, gen.usage.completion_tokens) == (len("<user>hi<assistant>"), 7)
    prompt, params, _ = fake_vllm.engines[0].requests[0]
    assert prompt["prompt"] == "<user>hi<assistant>"
    assert params.structured_outputs.json == QueryRewrite.model_json_schema()
    assert (params.max_tokens, params.temperature, params.output_kind) == (64, 0.0, "FINAL_ONLY")

    await backend.complete([{"role": "user", "content": "hi"}], None, max_tokens=8, temperature=0.7)
    assert fake_vllm.engines[0].requests[1][1].structured_outputs is None


@pytest.mark.parametrize(("backend", "why"), [
    ("outlines", "ignores integer minimum/maximum"), ("auto", "falls back from xgrammar"),
    ("guidance", "not verified"), ("lm-format-enforcer", "deprecated"), ("regex", "not a vLLM")])
def test_only_xgrammar_is_accepted_as_the_constraint_backend(backend: str, why: str) -> None:
    with pytest.raises(ValidationError, match=f"{backend!r} is not supported \\(.*{why}.*use 'xgrammar'"):
        Settings(vllm_structured_backend=backend)


async def test_a_timeout_aborts_the_request_in_the_engine(fake_vllm: Any) -> None:
    from agentic_rag.models.vllm_backend import VLLMBackend

    backend = VLLMBackend(Settings(generation_timeout_ms=100), "/m")
    engine = fake_vllm.engines[0]
    engine.hang = True
    with pytest.raises(TimeoutError, match="request aborted"):
        await backend.complete([{"role": "user", "content": "hi"}], None, max_tokens=8, temperature=0.0)
    assert engine.aborted == [engine.requests[0][2]]


async def test_a_cancelled_call_aborts_the_request_in_the_engine(fake_vllm: Any) -> None:
    from agentic_rag.models.vllm_backend import VLLMBackend

    backend = VLLMBackend(Settings(), "/m")
    engine = fake_vllm.engines[0]
    engine.hang = True
    task = asyncio.create_task(backend.complete([{"role": "user", "content": "hi"}], None, max_tokens=8,
                                                temperature=0.0))
    await engine.started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert engine.aborted == [engine.requests[0][2]]


def test_the_factory_builds_the_role_model_on_vllm(fake_vllm: Any) -> None:
    from agentic_rag.models.vllm_backend import VLLMBackend
    from agentic_rag.planners.factory import text_backend

    settings = Settings(planner_backend="vllm", planner_model="/models/planner", validator_backend="vllm")
    backend = text_backend(settings, "planner")
    assert isinstance(backend, VLLMBackend) and backend.name == "planner"
    assert fake_vllm.engines[0].args.model == "/models/planner"
    with pytest.raises(ValueError, match="RAG_VALIDATOR_MODEL must name a local model directory for the vllm backend"):
        text_backend(settings, "validator")
    with pytest.raises(ValueError, match="the heuristic backend is not a text backend"):
        text_backend(Settings(), "planner")


# what each of vLLM's failures becomes: (its class, our class, retryable)
ENGINE_FAILURES = [
    ("QueueOverflowError", ModelOverloaded, True),
    ("MaxQueuedTokensError", ModelOverloaded, True),
    ("EngineDeadError", ModelUnavailable, False),
    ("EngineGenerateError", ModelUnavailable, True),
    ("RetryableRequestError", ModelUnavailable, True),
    ("GenerationError", ModelUnavailable, False),  # vLLM's: a request that finished with an internal error
    ("ProfilerAlreadyActiveError", ModelUnavailable, False),
    ("VLLMServerError", ModelUnavailable, False),
]


@pytest.mark.parametrize(("name", "ours", "retryable"), ENGINE_FAILURES)
async def test_each_engine_failure_is_a_typed_model_error(fake_vllm: Any, name: str, ours: type[ModelUnavailable],
                                                          retryable: bool) -> None:
    from agentic_rag.models.vllm_backend import VLLMBackend

    backend = VLLMBackend(Settings(), "/models/planner")
    fake_vllm.engines[0].fail = fake_vllm.errors[name]("engine internals")
    with pytest.raises(ModelUnavailable) as raised:
        await backend.complete([{"role": "user", "content": "hi"}], None, max_tokens=8, temperature=0.0)
    assert type(raised.value) is ours and raised.value.retryable is retryable
    assert name in str(raised.value) and "planner" in str(raised.value)
    assert isinstance(raised.value.__cause__, fake_vllm.errors[name])  # vLLM's own error stays its cause
    # the structured layer does not retry it as a bad output: it reaches the loop, which uses the heuristic
    with pytest.raises(ours):
        await StructuredGenerator(backend).generate_shaped(HI, QueryRewrite)
    assert len(fake_vllm.engines[0].requests) == 2


async def test_a_request_vllm_rejects_is_bad_input_and_a_bug_stays_itself(fake_vllm: Any) -> None:
    from agentic_rag.models.vllm_backend import VLLMBackend

    backend = VLLMBackend(Settings(), "/m")
    engine = fake_vllm.engines[0]
    engine.fail = fake_vllm.errors["VLLMValidationError"]("prompt longer than max_model_len")
    with pytest.raises(InvalidInput, match="m rejected the request: prompt longer than max_model_len"):
        await backend.complete([{"role": "user", "content": "hi"}], None, max_tokens=8, temperature=0.0)
    engine.fail = KeyError("a bug of ours, not the engine's")
    with pytest.raises(KeyError):
        await backend.complete([{"role": "user", "content": "hi"}], None, max_tokens=8, temperature=0.0)


async def test_a_timeout_is_our_timeout_and_a_dead_engine_fails_the_health_check(fake_vllm: Any) -> None:
    from agentic_rag.models.vllm_backend import VLLMBackend

    backend = VLLMBackend(Settings(generation_timeout_ms=100), "/m")
    engine = fake_vllm.engines[0]
    await backend.check_health()
    engine.dead = fake_vllm.errors["EngineDeadError"]()
    with pytest.raises(ModelUnavailable, match="engine died") as raised:
        await backend.check_health()
    assert not raised.value.retryable
    engine.hang = True
    with pytest.raises(Timeout, match="request aborted"):
        await backend.complete([{"role": "user", "content": "hi"}], None, max_tokens=8, temperature=0.0)
