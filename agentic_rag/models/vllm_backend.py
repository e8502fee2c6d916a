"""A :class:`TextBackend` on vLLM's v1 ``AsyncLLM`` engine, for GPU machines.

vLLM pins its own torch and needs CUDA, so it is an optional extra (``pip install
'agentic-rag[vllm]'``) imported only when a :class:`VLLMBackend` is built: this module imports
anywhere. Schemas constrain decoding through ``SamplingParams(structured_outputs=
StructuredOutputsParams(json=schema))`` (vLLM >= 0.12; the removed ``guided_*`` arguments raise
``TypeError`` in 0.33), with the engine's structured-outputs backend from settings (xgrammar by
default, with ``disable_any_whitespace`` so compact JSON costs the fewest tokens).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from agentic_rag.models.base import Completion, Message
from agentic_rag.models.schemas import xgrammar_schema
from agentic_rag.settings import Settings

MISSING_VLLM = (
    "vLLM is not installed: install the vllm extra on a GPU machine (pip install 'agentic-rag[vllm]'), "
    "or use the transformers or openai backend"
)
# disable_any_whitespace is an engine-level option that vLLM accepts only for these backends
_WHITESPACE_BACKENDS = ("xgrammar", "guidance")


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
    try:  # newer vLLM reports bad requests with its own exception family, not ValueError
        from vllm.exceptions import VLLMClientError as client_error  # type: ignore[import-not-found]
    except ImportError:
        client_error = ValueError
    return SimpleNamespace(
        SamplingParams=SamplingParams, StructuredOutputsConfig=StructuredOutputsConfig,
        AsyncEngineArgs=AsyncEngineArgs, RequestOutputKind=RequestOutputKind,
        StructuredOutputsParams=StructuredOutputsParams, AsyncLLM=AsyncLLM, make_input=make_input,
        ClientError=client_error,
    )


class VLLMBackend:
    """Schema-constrained chat completions from a local model directory on vLLM.

    Building one loads the model onto the GPU (blocking, seconds to minutes): do it where blocking
    is fine, e.g. a deployment's constructor. Prompts are rendered with the tokenizer's own chat
    template. A call that outlives ``settings.generation_timeout_ms`` is aborted in the engine and
    raises ``TimeoutError``; a cancelled call is aborted too. A request vLLM rejects (a schema it
    cannot compile, a prompt longer than the context) raises ``ValueError``.

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
        backend = settings.vllm_structured_backend
        structured = vllm.StructuredOutputsConfig(
            backend=backend, disable_any_whitespace=backend in _WHITESPACE_BACKENDS,
        )
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
            raise TimeoutError(f"{self.name}: no completion within {self.timeout_s:g}s; request aborted") from None
        except asyncio.CancelledError:
            # generate() aborts what it registered; this also covers a cancel in the middle of adding it
            await asyncio.shield(self._engine.abort(request_id))
            raise
        except self._vllm.ClientError as exc:
            raise ValueError(f"{self.name} rejected the request: {exc}") from exc
        if final is None or not final.outputs:
            raise RuntimeError(f"{self.name}: the engine finished request {request_id} without output")
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
        await self._engine.check_health()

    def shutdown(self) -> None:
        """Stop the engine and free the GPU."""
        self._engine.shutdown()
