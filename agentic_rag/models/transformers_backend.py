"""A local Hugging Face causal LM as a :class:`~agentic_rag.models.base.TextBackend`, constrained with outlines.

The model and tokenizer load from a directory only (``local_files_only``: no hub). Messages are
rendered with the tokenizer's chat template when it has one. With a schema, decoding is masked by
outlines' JSON-schema logits processor (``outlines.Generator(outlines.from_transformers(...),
JsonSchema(...))``; the ``outlines_core`` engine), so every completion that ends is schema-valid.

We call ``model.generate`` ourselves with that processor instead of the outlines model's
``__call__`` because outlines re-applies the chat template to a plain string prompt, and returns
text without token counts; here the prompt is rendered once and both counts are exact.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from pathlib import Path
from typing import Any, Literal

import outlines
import torch
from outlines.types import JsonSchema
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    LogitsProcessorList,
    StoppingCriteria,
    StoppingCriteriaList,
)

from agentic_rag.models.base import Completion, Message
from agentic_rag.settings import Settings

# One JSON string character as outlines_core writes it, and one that is not whitespace (see below).
_CHAR = r'(?:[^"\\\x00-\x1F\x7F-\x9F]|\\["\\/bfnrt])'
_NONSPACE_CHAR = r'(?:[^\s"\\\x00-\x1F\x7F-\x9F]|\\["\\/])'
_UNBOUNDED = re.compile(r"[*+]|\{\d+,\}")
_DATA_KEYS = frozenset({"enum", "const", "default", "examples"})  # values, not schemas
_SCHEMA_MAPS = frozenset({"properties", "$defs", "definitions", "patternProperties"})  # name -> schema
# A bounded number becomes this many evenly spaced values (0.00, 0.01, ... 1.00 for a confidence).
_NUMBER_STEPS = 100
_MAX_ENUM = 1001


def outlines_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The same JSON schema, rewritten where outlines_core would otherwise accept values it forbids.

    outlines_core (0.2.x) ignores ``minimum``/``maximum`` (a ``limit`` of 0 or a confidence of 7
    would pass) and ignores ``pattern`` when a length is also given (a UUID field would accept any
    36 characters). So: a bounded integer becomes the ``enum`` of its values, a bounded number the
    ``enum`` of ``_NUMBER_STEPS + 1`` evenly spaced values, a fixed-length pattern drops the
    redundant lengths, and a required string (``minLength >= 1``) must start with a non-space
    character, since the protocol strips whitespace before checking ``min_length``. Each rewrite
    accepts a subset of what the original accepts, so output stays valid against the original.

    One more subset: outlines_core compiles the whole schema into one regular expression, and a list
    whose items are a union of large objects (``NextStep.also``, up to three more search, graph or
    query intents) multiplies it past what its DFA can hold. Regex-based decoding therefore gets
    ``also`` as an empty list: such a model plans one intent a turn, which the loop handles the
    same way. Grammar-based backends (xgrammar in vLLM) keep the batch.
    """
    return _single_steps(_lower(schema))  # type: ignore[no-any-return]


def _single_steps(node: Any) -> Any:
    if isinstance(node, list):
        return [_single_steps(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: (v if k in _DATA_KEYS else _single_steps(v)) for k, v in node.items()}
    props = out.get("properties")
    if isinstance(props, dict) and isinstance(props.get("also"), dict) and props["also"].get("type") == "array":
        out["properties"] = {**props, "also": {"type": "array", "maxItems": 0}}
    return out


def _lower(node: Any) -> Any:
    if isinstance(node, list):
        return [_lower(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _lower(sub) for name, sub in value.items()}
        else:
            out[key] = value if key in _DATA_KEYS else _lower(value)
    kind = out.get("type")
    if kind == "integer" and "minimum" in out and "maximum" in out:
        lo, hi = int(out.pop("minimum")), int(out.pop("maximum"))
        if hi - lo < _MAX_ENUM:
            out["enum"] = list(range(lo, hi + 1))
        else:
            out.update(minimum=lo, maximum=hi)
            # too many values for an enum: cap the digits instead (outlines_core honours maxDigits),
            # so that every number it can write lies inside [lo, hi]; the regex allows a sign, so
            # this needs lo < 0 (as for the query DSL's values, which are within +-10^9)
            digits = len(str(min(hi, -lo))) - (0 if str(min(hi, -lo)).strip("9") == "" else 1)
            if lo < 0 and digits >= 1:
                out["maxDigits"] = digits
    elif kind == "number" and "minimum" in out and "maximum" in out:
        lo_f, hi_f = float(out.pop("minimum")), float(out.pop("maximum"))
        step = (hi_f - lo_f) / _NUMBER_STEPS
        out["enum"] = sorted({round(lo_f + i * step, 6) for i in range(_NUMBER_STEPS + 1)})
    elif kind == "string" and "pattern" in out:
        if not _UNBOUNDED.search(out["pattern"]):  # the pattern bounds the length by itself
            out.pop("minLength", None)
            out.pop("maxLength", None)
    elif kind == "string" and out.get("minLength", 0) >= 1 and "maxLength" in out:
        lo, hi = int(out.pop("minLength")), int(out.pop("maxLength"))
        out["pattern"] = f"^{_NONSPACE_CHAR}{_CHAR}{{{lo - 1},{hi - 1}}}$"
    return out


class TransformersBackend:
    """A local causal LM completing chat messages, JSON-schema constrained when a schema is given.

    One generation runs at a time per model (torch modules and outlines processors are stateful):
    callers queue on an asyncio lock, and the blocking ``generate`` runs in a worker thread.
    """

    def __init__(self, model_dir: str | Path, *, device: str = "cpu", name: str | None = None) -> None:
        path = Path(model_dir)
        if not path.is_dir():
            raise FileNotFoundError(f"model directory not found: {path}")
        self.name = name or f"transformers:{path.name}"
        self.device = device
        self.tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        # Any: transformers 5 declares ``to``/``generate`` with self-types mypy cannot apply to the Auto class
        model: Any = AutoModelForCausalLM.from_pretrained(
            str(path), local_files_only=True, dtype=torch.float32 if device == "cpu" else "auto",
        )
        self.model: Any = model.to(device).eval()
        # outlines also sets a missing pad token to eos and pads on the left. Its annotation names the
        # transformers 4 tokenizer classes; at run time it accepts the transformers 5 ones.
        self._outlines = outlines.from_transformers(self.model, self.tokenizer)  # type: ignore[arg-type]
        self._has_template = bool(getattr(self.tokenizer, "chat_template", None))
        eos = self.model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        # outlines ends a finished JSON value with the tokenizer's eos; generate must stop on it
        eos_ids.add(self.tokenizer.eos_token_id)
        self._eos_ids = sorted(eos_ids)
        # outlines_core's vocabulary keeps special tokens as plain text ("<|im_start|>" would be a
        # legal piece of a JSON string); a completion never needs any but eos, so none can be sampled
        special = {i for i, token in self.tokenizer.added_tokens_decoder.items() if token.special}
        self._suppressed = sorted((special | set(self.tokenizer.all_special_ids)) - eos_ids)
        self._processors: dict[str, Any] = {}
        self._queue = asyncio.Lock()  # waiters wait on the loop, not in worker threads
        self._running = threading.Lock()  # a cancelled call's thread may still be finishing its step

    @classmethod
    def from_settings(cls, settings: Settings, role: Literal["planner", "validator"]) -> TransformersBackend:
        """The planner's or the validator's model, from ``RAG_PLANNER_MODEL`` / ``RAG_VALIDATOR_MODEL``."""
        model_dir = settings.planner_model if role == "planner" else settings.validator_model
        if not model_dir:
            raise ValueError(f"RAG_{role.upper()}_MODEL must name a local model directory for the "
                             f"transformers backend")
        return cls(model_dir, device=settings.model_device)

    def render(self, messages: list[Message]) -> str:
        """The prompt text: the chat template when the tokenizer has one, else ``role: content`` lines."""
        if self._has_template:
            text = self.tokenizer.apply_chat_template(
                [{"role": m["role"], "content": m["content"]} for m in messages], tokenize=False,
                add_generation_prompt=True,
            )
            return str(text)
        return "".join(f"{m['role']}: {m['content']}\n\n" for m in messages) + "assistant: "

    async def complete(self, messages: list[Message], schema: dict[str, Any] | None, *, max_tokens: int,
                       temperature: float) -> Completion:
        """Complete the messages (greedy at temperature 0), within ``schema`` when one is given."""
        cancelled = threading.Event()
        async with self._queue:
            try:
                return await asyncio.to_thread(self._generate, messages, schema, max_tokens, temperature,
                                               cancelled)
            except asyncio.CancelledError:
                cancelled.set()  # the worker stops after its current token
                raise

    async def prepare(self, schemas: list[dict[str, Any]]) -> None:
        """Build the constraint indexes of these schemas now (seconds to minutes each), not in the first call."""
        for schema in schemas:
            await asyncio.to_thread(self._processor, schema)

    def _processor(self, schema: dict[str, Any]) -> Any:
        """The outlines logits processor for a schema, built once (building its index is the slow part)."""
        key = json.dumps(schema, sort_keys=True)
        if key not in self._processors:
            generator = outlines.Generator(self._outlines, JsonSchema(outlines_schema(schema)))
            self._processors[key] = generator.logits_processor  # type: ignore[union-attr]
        return self._processors[key]

    def _generate(self, messages: list[Message], schema: dict[str, Any] | None, max_tokens: int,
                  temperature: float, cancelled: threading.Event) -> Completion:
        with self._running:
            if cancelled.is_set():  # the caller left while this call waited for the model
                return Completion(text="", finish_reason="cancelled")
            inputs = self.tokenizer(self.render(messages), return_tensors="pt",
                                    add_special_tokens=not self._has_template).to(self.device)
            processors = LogitsProcessorList()
            if schema is not None:
                processor = self._processor(schema)
                processor.reset()  # processors keep per-sequence state
                processors.append(processor)
            sampling: dict[str, Any] = (
                {"do_sample": True, "temperature": temperature} if temperature > 0 else {"do_sample": False}
            )
            with torch.inference_mode():
                output = self.model.generate(
                    **inputs, max_new_tokens=max_tokens, logits_processor=processors,
                    stopping_criteria=StoppingCriteriaList([_StopWhenSet(cancelled)]),
                    eos_token_id=self._eos_ids, pad_token_id=self.tokenizer.pad_token_id,
                    suppress_tokens=self._suppressed or None, **sampling,
                )
        prompt_tokens = int(inputs["input_ids"].shape[1])
        new: list[int] = output[0, prompt_tokens:].tolist()
        stopped = bool(new) and new[-1] in self._eos_ids
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        assert isinstance(text, str)
        return Completion(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=len(new),
            finish_reason="stop" if stopped else "length",
        )


class _StopWhenSet(StoppingCriteria):
    """Ends generation once the caller has gone (its event is set)."""

    def __init__(self, event: threading.Event) -> None:
        self.event = event

    def __call__(self, input_ids: torch.LongTensor, scores: Any, **kwargs: Any) -> torch.BoolTensor:
        return torch.full((input_ids.shape[0],), self.event.is_set(), dtype=torch.bool,  # type: ignore[return-value]
                          device=input_ids.device)
