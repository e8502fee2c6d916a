"""A :class:`TextBackend` on vLLM's v1 ``AsyncLLM`` engine, for GPU machines.

vLLM pins its own torch and needs CUDA, so it is an optional extra (``pip install
'agentic-rag[vllm]'``) imported only when a :class:`VLLMBackend` is built: this module imports
anywhere. Schemas constrain decoding through ``SamplingParams(structured_outputs=
StructuredOutputsParams(json=schema))`` (vLLM 0.33, the version this module is written against; the removed
``guided_*`` arguments raise ``TypeError`` there), on xgrammar with ``disable_any_whitespace`` so compact JSON
costs the fewest tokens. xgrammar is the only structured-outputs backend the settings accept: outlines ignores
integer bounds, and "auto" may fall back to it (``agentic_rag.settings._UNSUPPORTED_CONSTRAINTS``).

Every failure of vLLM's leaves this module as one of the model layer's typed errors (:func:`engine_error`), so the
loop falls back to the heuristic and a route that calls the model answers 503, never a raw engine exception.
"""

from __future__ import annotations

import asyncio
import importlib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from agentic_rag.errors import InvalidInput, Timeout
from agentic_rag.models.base import Completion, Message, ModelOverloaded, ModelUnavailable
from agentic_rag.models.schemas import xgrammar_schema
from agentic_rag.settings import Settings

MISSING_VLLM = (
    "vLLM is not installed: install the vllm extra on a GPU machine (pip install 'agentic-rag[vllm]'), "
    "or use the transformers or openai backend"
)


def _import_vllm() -> SimpleNamespace:
    """vLLM's names this backend uses, or an ImportError that says what to install."""
    try:
        from vllm import SamplingParams  # type: ignore[import-not-found]
        from vllm.config import StructuredOutputsConfig  # type: ignore[import-not-found]
        from vllm.engine.arg_utils import AsyncEngineArgs  # type: ignore[import-not-found]
        from vllm.sampling_params import (  # type: ignore[import-not-found]
            RequestOutputKind,
            StructuredOutputsParams,
        )
        from vllm.v1.engine.async_llm import AsyncLLM  # type: ignore[import-not-found]
    except ImportError as exc:
        raise ImportError(MISSING_VLLM) from exc
    try:  # newer vLLM: an already-rendered token input, which skips the deprecated raw-prompt path
        from vllm.inputs import tokens_input as make_input  # type: ignore[import-not-found]
    except ImportError:
        from vllm.inputs import TokensPrompt

        make_input = TokensPrompt
    errors = EngineErrors(
        # a request vLLM will not take (older vLLM raised ValueError for it)
        client=_classes("vllm.exceptions", "VLLMClientError") or (ValueError,),
        # admission control: the waiting queue or the prefill-token backlog is full (vLLM's server answers 503)
        overloaded=_classes("vllm.exceptions", "QueueOverflowError", "MaxQueuedTokensError"),
        # the engine-core process is gone: nothing more runs here until the replica is replaced
        dead=_classes("vllm.v1.engine.exceptions", "EngineDeadError"),
        # one request failed and the engine lives on ("Recoverable", vLLM says)
        retryable=_classes("vllm.v1.engine.exceptions", "EngineGenerateError")
        + _classes("vllm.exceptions", "RetryableRequestError"),
        # anything else of vLLM's own (an internal error on one request, an engine paused or asleep)
        other=_classes("vllm.exceptions", "VLLMError"),
    )
    return SimpleNamespace(
        SamplingParams=SamplingParams, StructuredOutputsConfig=StructuredOutputsConfig,
        AsyncEngineArgs=AsyncEngineArgs, RequestOutputKind=RequestOutputKind,
        StructuredOutputsParams=StructuredOutputsParams, AsyncLLM=AsyncLLM, make_input=make_input, errors=errors,
    )


def _classes(module: str, *names: str) -> tuple[type[BaseException], ...]:
    """The exception classes of ``module`` among ``names``; those a vLLM version lacks are left out."""
    try:
        found = importlib.import_module(module)
    except ImportError:
        return ()
    return tuple(c for n in names if isinstance(c := getattr(found, n, None), type) and issubclass(c, BaseException))


@dataclass(frozen=True, slots=True)
class EngineErrors:
    """vLLM's exception classes, by what a failure means for the caller."""

    client: tuple[type[BaseException], ...]
    overloaded: tuple[type[BaseException], ...]
    dead: tuple[type[BaseException], ...]
    retryable: tuple[type[BaseException], ...]
    other: tuple[type[BaseException], ...]


def engine_error(name: str, exc: BaseException, errors: EngineErrors) -> Exception | None:
    """The model layer's typed error for a failure of vLLM's (None: not vLLM's, a bug to raise as it is).

    Bad request: :class:`InvalidInput` (a ``ValueError``, the backend contract's word for it). Queue full:
    :class:`ModelOverloaded`. A dead engine: :class:`ModelUnavailable`, not retryable (the replica's health check
    fails too, and Serve replaces it). A failed request: retryable. vLLM's text stays in the replica's log and in
    the exception's cause; the message says what happened in our words."""
    if isinstance(exc, errors.client):
        return InvalidInput(f"{name} rejected the request: {exc}")
    if isinstance(exc, errors.overloaded):
        return ModelOverloaded(f"{name} is over its queue ({type(exc).__name__}); retry, best on another replica")
    if isinstance(exc, errors.dead):
        return ModelUnavailable(f"{name}: the vLLM engine died ({type(exc).__name__}); this replica serves nothing "
                                "more until it is replaced", retryable=False)
    if isinstance(exc, errors.retryable):
        return ModelUnavailable(f"{name}: the engine failed on this request ({type(exc).__name__})", retryable=True)
    if isinstance(exc, errors.other):
        return ModelUnavailable(f"{name}: the engine could not serve the request ({type(exc).__name__}: {exc})",
                                retryable=False)
    return None


class VLLMBackend:
    """Schema-constrained chat completions from a local model directory on vLLM.

    Building one loads the model onto the GPU (blocking, seconds to minutes): do it where blocking
    is fine, e.g. a deployment's constructor. Prompts are rendered with the tokenizer's own chat
    template. A call that outlives ``settings.generation_timeout_ms`` is aborted in the engine and
    raises :class:`~agentic_rag.errors.Timeout` (a ``TimeoutError``); a cancelled call is aborted too. A request
    vLLM rejects (a schema it cannot compile, a prompt longer than the context) raises ``ValueError``; an engine
    that cannot serve it raises :class:`ModelUnavailable` or :class:`ModelOverloaded` (:func:`engine_error`).

    ``engine_overrides`` are extra ``AsyncEngineArgs`` fields (e.g. ``enforce_eager=True`` for a
    fast start in tests).
    """

    def __init__(self, settings: Settings, model: str | Path, *, name: str | None = None,
                 engine_overrides: Mapping[str, Any] | None = None) -> None:
        self._vllm = vllm = _import_vllm()
        from transformers import AutoTokenizer

        model_dir = str(model)
        self.name = name or Path(model_dir).name
        self.timeout_s = settings.generation_timeout_ms / 1000  # per call; may be changed on the instance
        # xgrammar, the one backend the settings accept (they say why): compact JSON, the fewest tokens
        structured = vllm.StructuredOutputsConfig(backend=settings.vllm_structured_backend,
                                                  disable_any_whitespace=True)
        args = vllm.AsyncEngineArgs(**{
            "model": model_dir,
            "served_model_name": self.name,
            "gpu_memory_utilization": settings.vllm_gpu_memory_utilization,
            "max_model_len": settings.vllm_max_model_len,
            "structured_outputs_config": structured,
            "disable_log_stats": True,
            **(engine_overrides or {}),
        })
        self._tokenizer: Any = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
        self._engine: Any = vllm.AsyncLLM.from_engine_args(args)

    def render(self, messages: list[Message]) -> tuple[str, list[int]]:
        """The prompt text (chat template, generation prompt added) and its token ids."""
        text = self._tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=False)
        # the template already wrote any BOS; adding special tokens again would double it
        ids = self._tokenizer(text, add_special_tokens=False)["input_ids"]
        return str(text), [int(i) for i in ids]

    def sampling_params(self, schema: dict[str, Any] | None, *, max_tokens: int, temperature: float) -> Any:
        """One request's ``SamplingParams``: final output only, constrained to ``schema`` if given."""
        vllm = self._vllm
        return vllm.SamplingParams(
            max_tokens=max_tokens,
            temperature=temperature,
            output_kind=vllm.RequestOutputKind.FINAL_ONLY,
            structured_outputs=None if schema is None else vllm.StructuredOutputsParams(json=xgrammar_schema(schema)),
        )

    async def complete(self, messages: list[Message], schema: dict[str, Any] | None, *, max_tokens: int,
                       temperature: float, calibration: list[Message] | None = None) -> Completion:
        # the chat template and the tokenizer cost milliseconds on a long prompt: off the event loop
        text, ids = await asyncio.to_thread(self.render, messages)
        params = self.sampling_params(schema, max_tokens=max_tokens, temperature=temperature)
        prompt = self._vllm.make_input(prompt_token_ids=ids, prompt=text)
        request_id = f"{self.name}-{uuid.uuid4().hex}"
        final: Any = None
        try:
            async with asyncio.timeout(self.timeout_s):
                async for out in self._engine.generate(prompt, params, request_id):
                    final = out
        except TimeoutError:
            await self._engine.abort(request_id)
            raise Timeout(f"{self.name}: no completion within {self.timeout_s:g}s; request aborted") from None
        except asyncio.CancelledError:
            # generate() aborts what it registered; this also covers a cancel in the middle of adding it
            await asyncio.shield(self._engine.abort(request_id))
            raise
        except Exception as exc:
            if (typed := engine_error(self.name, exc, self._vllm.errors)) is None:
                raise
            raise typed from exc
        if final is None or not final.outputs:
            raise ModelUnavailable(f"{self.name}: the engine finished request {request_id} without output",
                                   retryable=True)
        out = final.outputs[0]
        return Completion(
            text=out.text,
            prompt_tokens=len(final.prompt_token_ids or ids),
            completion_tokens=len(out.token_ids),
            finish_reason=out.finish_reason,
        )

    async def check_health(self) -> None:
        """vLLM's own check (``AsyncLLM.check_health``): raises once the engine process has died, so the
        serving replica fails Serve's health check and is replaced instead of being routed to."""
        try:
            await self._engine.check_health()
        except Exception as exc:
            if (typed := engine_error(self.name, exc, self._vllm.errors)) is None:
                raise
            raise typed from exc

    def shutdown(self) -> None:
        """Stop the engine and free the GPU."""
        self._engine.shutdown()
