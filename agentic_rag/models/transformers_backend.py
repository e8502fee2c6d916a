"""A local Hugging Face causal LM as a :class:`~agentic_rag.models.base.TextBackend`, JSON-schema constrained.

The model and tokenizer load from a directory only (``local_files_only``: no hub): a Hugging Face model
directory, or a GGUF file in one (``gguf_file``; transformers dequantizes it, which needs the ``gguf``
package), such as the SmolLM2 that ``agentic-rag models fetch smollm2`` puts under ``data_dir/models``.
Messages are rendered with the tokenizer's chat template when it has one.

With a schema, decoding is masked by one of two constraint engines (``RAG_TRANSFORMERS_CONSTRAINT``):

- **outlines** (the default; ``outlines_core``): a regular-expression index, built per schema (minutes on a
  real vocabulary); it ignores bounds, so schemas go through :func:`~agentic_rag.models.schemas.outlines_schema`.
- **xgrammar** (vLLM's default engine): a pushdown automaton compiled from the schema against the
  tokenizer's vocabulary, about a second for our largest schema on a 49k vocabulary; it enforces string
  lengths and integer bounds itself. Schemas go through :func:`~agentic_rag.models.schemas.xgrammar_schema`,
  the same rewrite vLLM needs. Use it for real models (``smollm2``).

Either way every completion that ends is schema-valid. We call ``model.generate`` ourselves with the
engine's logits processor because outlines re-applies the chat template to a plain string prompt and
returns text without token counts; here the prompt is rendered once and both counts are exact.

**Greedy constrained calls** (xgrammar, temperature 0) go to a batch decoder of our own instead of ``generate``:
concurrent calls are decoded together (``batch_size`` rows at most; 1 decodes them one at a time), the way vLLM batches
on a GPU, and continuously: a call that arrives while a batch decodes is prefilled and joins it at the next step, and
a row that ends leaves it and answers its caller at once. Only when the model is idle does a call wait ``batch_wait_s``
for company. Every prompt's messages before its last (a role's instructions and worked examples, the same for every
call of the role) are prefilled once and their key-values kept (vLLM's prefix caching); the calls that begin alike
are prefilled together over a copy, computing the logits of their last position only. The rows' key-values live in one
cache with room ahead (a step writes its token in place rather than copying the cache), each row decoded a token a
step under its own grammar matcher, with its own budget and cancellation. Each row decodes what ``generate`` would for
the call alone (tests/integration/models/test_transformers_backend.py). Sampling, unconstrained calls, a repetition
penalty and closed choices scored by likelihood keep the single path through ``generate``.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import inspect
import json
import logging
import math
import random
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import torch
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    LogitsProcessor,
    LogitsProcessorList,
    StoppingCriteria,
    StoppingCriteriaList,
)
from transformers.cache_utils import Cache, DynamicLayer

from agentic_rag.models.base import Completion, Message
from agentic_rag.models.schemas import closed_options, outlines_schema, xgrammar_schema

log = logging.getLogger(__name__)
ConstraintEngine = Literal["xgrammar", "outlines"]
ClosedChoice = Literal["likelihood", "decode"]
Dtype = Literal["auto", "float32", "bfloat16", "float16"]
SCORE_BATCH = 16  # options scored in one forward pass over the shared prompt
BATCH_HISTORY = 1000  # decoding steps' row counts a backend remembers (TransformersBackend.batches)
ROOM = 64  # key-value positions a running batch's cache keeps free ahead of its rows (more are made by a copy)
PREFIX_CACHE = 8  # prompt beginnings whose key-values are kept (one a role's template; a few MB to tens each)
MISSING_XGRAMMAR = ("the xgrammar constraint engine is not installed: pip install 'agentic-rag[local]' "
                    "(or set RAG_TRANSFORMERS_CONSTRAINT=outlines)")


class _Engine(Protocol):
    """Makes the logits processor that keeps one generation inside a schema."""

    def prepare(self, schema: dict[str, Any]) -> None: ...

    def processor(self, schema: dict[str, Any]) -> LogitsProcessor: ...


@contextlib.contextmanager
def _uncompilable(schema: dict[str, Any]) -> Iterator[None]:
    """A schema the engine fails to compile is a request this backend cannot serve: ``ValueError``, as
    :class:`~agentic_rag.models.base.TextBackend` documents (the engines raise their own types: jsonschema's
    ``SchemaError``, xgrammar's ``RuntimeError``); only the schema goes into compiling, so it is the cause."""
    try:
        yield
    except Exception as exc:
        title = schema.get("title") or "the schema"
        raise ValueError(f"cannot decode under {title}: {str(exc).strip()[:500]}") from exc


class _Outlines:
    """outlines_core's regex index per schema; its processor is reused after a ``reset``."""

    def __init__(self, model: Any, tokenizer: Any) -> None:
        import outlines

        # outlines also sets a missing pad token to eos and pads on the left. Its annotation names the
        # transformers 4 tokenizer classes; at run time it accepts the transformers 5 ones.
        self._model = outlines.from_transformers(model, tokenizer)
        self._cache: dict[str, Any] = {}

    def prepare(self, schema: dict[str, Any]) -> None:
        self._processor(schema)

    def _processor(self, schema: dict[str, Any]) -> Any:
        import outlines
        from outlines.types import JsonSchema

        key = json.dumps(schema, sort_keys=True)
        if key not in self._cache:  # building the index is the slow part: once per schema
            with _uncompilable(schema):
                generator = outlines.Generator(self._model, JsonSchema(outlines_schema(schema)))
            self._cache[key] = generator.logits_processor  # type: ignore[union-attr]
        return self._cache[key]

    def processor(self, schema: dict[str, Any]) -> LogitsProcessor:
        processor = self._processor(schema)
        processor.reset()  # processors keep per-sequence state
        return processor  # type: ignore[no-any-return]


class _XGrammar:
    """xgrammar grammars compiled once per schema; a fresh matcher per generation."""

    def __init__(self, tokenizer: Any, vocab_size: int, stop_ids: list[int]) -> None:
        try:
            import xgrammar as xgr
        except ImportError as exc:
            raise RuntimeError(MISSING_XGRAMMAR) from exc
        self._xgr = xgr
        info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size, stop_token_ids=stop_ids)
        self._compiler = xgr.GrammarCompiler(info)
        # xgrammar's JSON strings admit raw control characters, which JSON forbids (a parser rejects the
        # output); compact JSON never needs one (escapes are printable), so no token holding one is sampled
        specials = set(info.special_token_ids) | set(stop_ids)
        self.control_tokens = [i for i, piece in enumerate(info.decoded_vocab)
                               if i not in specials and any(b < 0x20 or b == 0x7F for b in piece)]
        self._vocab_size = vocab_size
        self._cache: dict[str, Any] = {}

    def prepare(self, schema: dict[str, Any]) -> None:
        self._compiled(schema)

    def _compiled(self, schema: dict[str, Any]) -> Any:
        key = json.dumps(schema, sort_keys=True)
        if key not in self._cache:
            # compact JSON: whitespace between tokens is never needed, and a small model wanders in it
            with _uncompilable(schema):
                self._cache[key] = self._compiler.compile_json_schema(
                    json.dumps(xgrammar_schema(schema)), any_whitespace=False, strict_mode=True)
        return self._cache[key]

    def processor(self, schema: dict[str, Any]) -> LogitsProcessor:
        return _GrammarMask(self._xgr, self._compiled(schema), self._vocab_size)


class _GrammarMask(LogitsProcessor):
    """Masks every token the grammar does not allow next (one generation, batch of one)."""

    def __init__(self, xgr: Any, compiled: Any, vocab_size: int) -> None:
        self._xgr = xgr
        self._matcher = xgr.GrammarMatcher(compiled)
        self._bitmask = xgr.allocate_token_bitmask(1, vocab_size)
        self._started = False

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if self._started and not self._matcher.is_terminated():
            token = int(input_ids[0, -1])
            if not self._matcher.accept_token(token):  # cannot happen: the token was sampled under the mask
                raise RuntimeError(f"token {token} violates the grammar")
        self._started = True
        if not self._matcher.is_terminated():
            self._matcher.fill_next_token_bitmask(self._bitmask)
            self._xgr.apply_token_bitmask_inplace(scores, self._bitmask.to(scores.device))
        return scores


@dataclass
class _Prefilled:
    """Prompts prefilled together: their key-values, which positions of them are real (1) or padding (0), and each
    prompt's next-token logits."""

    cache: Any
    mask: torch.Tensor
    last: torch.Tensor


@dataclass
class _Row:
    """A call decoding in the running batch: its grammar matcher, its prompt's tokens and the tokens made so far."""

    call: _Waiting
    matcher: Any
    prompt: list[int]
    made: list[int] = field(default_factory=list)


@dataclass
class _Running:
    """The batch decoding now: its rows, their key-values (one cache, rows left-padded to one width), which cache
    positions are real for each row (1) or padding (0), and each row's next-token logits."""

    rows: list[_Row] = field(default_factory=list)
    cache: Any = None
    mask: torch.Tensor | None = None
    logits: torch.Tensor | None = None

    def clear(self) -> None:
        self.rows, self.cache, self.mask, self.logits = [], None, None, None


class _RoomyLayer(DynamicLayer):  # type: ignore[no-untyped-call]  # transformers' __init_subclass__
    """One layer's key-values for the running batch, kept in a store with room ahead so that a decoding step writes
    its token in place: a ``DynamicLayer`` concatenates, which copies the whole cache every step (half of a step's
    time at 16 rows of 900 positions). Rows of different lengths are left-padded to one width (their padding zeroed:
    masked, but a NaN there would still reach the attention's output). The live positions are
    ``store[:, :, start:end]``; joining rows, and dropping rows with the padding no row needs, copy the store once."""

    def __init__(self, parts: list[tuple[torch.Tensor, torch.Tensor]], width: int) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.is_initialized = True
        self.device = parts[0][0].device
        self._fill(parts, width)

    def _fill(self, parts: list[tuple[torch.Tensor, torch.Tensor]], width: int) -> None:
        first = parts[0][0]
        rows = sum(int(keys.shape[0]) for keys, _ in parts)
        self._keys = first.new_empty((rows, int(first.shape[1]), width + ROOM, int(first.shape[-1])))
        self._values = parts[0][1].new_empty((rows, int(first.shape[1]), width + ROOM, int(parts[0][1].shape[-1])))
        at = 0
        for keys, values in parts:
            n, length = int(keys.shape[0]), int(keys.shape[-2])
            self._keys[at: at + n, :, width - length: width] = keys
            self._values[at: at + n, :, width - length: width] = values
            self._keys[at: at + n, :, : width - length] = 0
            self._values[at: at + n, :, : width - length] = 0
            at += n
        self._start, self._end = 0, width
        self._view()

    def _view(self) -> None:
        self._live = (self._keys[:, :, self._start: self._end], self._values[:, :, self._start: self._end])
        self.keys, self.values = self._live

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any,
               **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        new = int(key_states.shape[-2])
        if self._end + new > int(self._keys.shape[-2]):  # out of room: a store with more
            self._fill([self._live], self._end - self._start)
        self._keys[:, :, self._end: self._end + new] = key_states
        self._values[:, :, self._end: self._end + new] = value_states
        self._end += new
        self._view()
        return self._live

    def get_seq_length(self) -> int:
        return self._end - self._start

    def select(self, rows: torch.Tensor, start: int) -> None:
        """Keep these rows, from live position ``start`` on (the store's room kept)."""
        self._keys = self._keys[rows, :, self._start + start:]
        self._values = self._values[rows, :, self._start + start:]
        self._end -= self._start + start
        self._start = 0
        self._view()


@dataclass
class _Waiting:
    """A call waiting for its batch."""

    messages: list[Message]
    schema: dict[str, Any]
    max_tokens: int
    done: asyncio.Future[Completion]
    cancelled: threading.Event = field(default_factory=threading.Event)


class TransformersBackend:
    """A local causal LM completing chat messages, JSON-schema constrained when a schema is given.

    One generation runs at a time per model (torch modules and outlines processors are stateful):
    callers queue on an asyncio lock, and the blocking ``generate`` runs in a worker thread. A schema the
    constraint engine cannot compile raises ``ValueError``. The backend sets no time limit of its own: a
    caller that stops waiting (``asyncio.timeout``, a cancel) ends the generation after its current token.
    """

    def __init__(self, model_dir: str | Path, *, device: str = "cpu", name: str | None = None,
                 gguf_file: str | None = None, constraint: ConstraintEngine = "outlines",
                 repetition_penalty: float = 1.0, choice: ClosedChoice = "decode", batch_size: int = 1,
                 batch_wait_s: float = 0.005, dtype: Dtype = "auto") -> None:
        path = Path(model_dir)
        if not path.is_dir():
            raise FileNotFoundError(f"model directory not found: {path}")
        if gguf_file is not None and not (path / gguf_file).is_file():
            raise FileNotFoundError(f"GGUF file not found: {path / gguf_file}")
        self.name = name or f"transformers:{gguf_file or path.name}"
        self.device = device
        self.repetition_penalty = repetition_penalty
        self.choice = choice
        # a GGUF carries its tokenizer (and chat template) too; transformers reads both from it
        located: dict[str, Any] = {"local_files_only": True, **({"gguf_file": gguf_file} if gguf_file else {})}
        self.tokenizer = AutoTokenizer.from_pretrained(str(path), **located)
        # Any: transformers 5 declares ``to``/``generate`` with self-types mypy cannot apply to the Auto class
        if dtype == "auto":
            chosen: Any = torch.float32 if device == "cpu" else "auto"
        else:
            chosen = getattr(torch, dtype)
        model: Any = AutoModelForCausalLM.from_pretrained(str(path), dtype=chosen, **located)
        self.model: Any = model.to(device).eval()
        self._has_template = bool(getattr(self.tokenizer, "chat_template", None))
        eos = self.model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        # the engines end a finished JSON value with the tokenizer's eos; generate must stop on it
        eos_ids.add(self.tokenizer.eos_token_id)
        self._eos_ids = sorted(eos_ids)
        # outlines_core's vocabulary keeps special tokens as plain text ("<|im_start|>" would be a
        # legal piece of a JSON string); a completion never needs any but eos, so none can be sampled
        special = {i for i, token in self.tokenizer.added_tokens_decoder.items() if token.special}
        self._suppressed = sorted((special | set(self.tokenizer.all_special_ids)) - eos_ids)
        self.constraint = constraint
        self._engine: _Engine
        self._constrained_suppressed = self._suppressed
        if constraint == "xgrammar":
            self._engine = _XGrammar(self.tokenizer, int(self.model.config.vocab_size), self._eos_ids)
            self._constrained_suppressed = sorted(set(self._suppressed) | set(self._engine.control_tokens))
        else:
            self._engine = _Outlines(self.model, self.tokenizer)
        self._queue = asyncio.Lock()  # waiters wait on the loop, not in worker threads
        self._running = threading.Lock()  # a cancelled call's thread may still be finishing its step
        # concurrent calls decoded together (xgrammar's matchers are per row; outlines' processors are not)
        self.batch_size = batch_size if constraint == "xgrammar" else 1
        self.batch_wait_s = batch_wait_s
        self._waiting: list[_Waiting] = []
        self._drainer: asyncio.Task[None] | None = None
        self.batches: list[int] = []  # the rows of each decoding step (the last BATCH_HISTORY), for measuring
        # a prefill computes the logits of each prompt's last position only, where the model's forward takes that
        self._keeps_logits = "logits_to_keep" in inspect.signature(self.model.forward).parameters
        # the key-values of recent prompts' shared beginnings (a role's instructions and examples), by their tokens
        self._prefixes: dict[tuple[int, ...], Any] = {}

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
                       temperature: float, calibration: list[Message] | None = None) -> Completion:
        """Complete the messages (greedy at temperature 0), within ``schema`` when one is given. With
        ``choice=likelihood`` a closed schema is a choice among its options: each is scored as the whole reply,
        less its score after ``calibration`` when given, and the best is the completion."""
        if self._batched(schema, temperature):
            assert schema is not None
            return await self._complete_batched(messages, schema, max_tokens)
        cancelled = threading.Event()
        async with self._queue:
            try:
                return await asyncio.to_thread(self._generate, messages, schema, max_tokens, temperature,
                                               cancelled, calibration)
            except asyncio.CancelledError:
                cancelled.set()  # the worker stops after its current token
                raise

    def _batched(self, schema: dict[str, Any] | None, temperature: float) -> bool:
        """Whether a call goes to the batched decoder: xgrammar-constrained, greedy, without a repetition penalty,
        decoded (not a closed choice scored whole). A batch may be of one (``batch_size`` 1)."""
        return (isinstance(self._engine, _XGrammar) and schema is not None and temperature == 0
                and self.repetition_penalty == 1.0
                and not (self.choice == "likelihood" and closed_options(schema)))

    async def _complete_batched(self, messages: list[Message], schema: dict[str, Any],
                                max_tokens: int) -> Completion:
        waiting = _Waiting(messages, schema, max_tokens, asyncio.get_running_loop().create_future())
        self._waiting.append(waiting)
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(self._drain())
        try:
            return await asyncio.shield(waiting.done)
        except asyncio.CancelledError:
            waiting.cancelled.set()  # its row stops after its current token; the rest of its batch goes on
            raise

    async def _drain(self) -> None:
        """Decode the waiting calls a step at a time until none wait and none decode (continuous batching): before
        each step the calls that arrived join the running batch, up to ``batch_size`` rows; a row that ends leaves it
        and its caller hears at once. Only when nothing decodes does a call wait ``batch_wait_s`` for company."""
        running = _Running()
        while self._waiting or running.rows:
            async with self._queue:  # one forward pass at a time, batched or not
                if not running.rows and self.batch_size > 1 and len(self._waiting) < self.batch_size:
                    await asyncio.sleep(self.batch_wait_s)  # a moment for the calls arriving with this one
                room = self.batch_size - len(running.rows)
                admitted = [w for w in self._waiting[:room] if not w.cancelled.is_set()]
                del self._waiting[:room]
                try:
                    finished = await asyncio.to_thread(self._step, running, admitted)
                except Exception as exc:  # the model's forward pass failed: every row of the batch hears it
                    finished = [(w, exc) for w in [*(row.call for row in running.rows), *admitted]]
                    running = _Running()
            for w, outcome in finished:
                if w.done.done():
                    continue
                if isinstance(outcome, Exception):
                    w.done.set_exception(outcome)
                else:
                    w.done.set_result(outcome)

    def _step(self, running: _Running, admitted: list[_Waiting]) -> list[tuple[_Waiting, Completion | Exception]]:
        """One step of the running batch: the admitted calls join it (prefilled), then every row decodes a token.
        Returns the calls that ended: a completion, or the ValueError of a schema that does not compile."""
        finished: list[tuple[_Waiting, Completion | Exception]] = []
        with self._running, torch.inference_mode():
            if admitted:
                finished += self._admit(running, admitted)
            if running.rows:
                finished += self._advance(running)
        return finished

    def _admit(self, running: _Running, calls: list[_Waiting]) -> list[tuple[_Waiting, Completion | Exception]]:
        """Prefill the calls and add them to the running batch: each prompt over a copy of the cached key-values of its
        messages before the last (a role's instructions and worked examples, the same for every call of the role, so
        run once: vLLM's prefix caching), the calls that begin alike together; then the batch's rows and the new ones
        are left-padded into one cache."""
        assert isinstance(self._engine, _XGrammar)
        failed: list[tuple[_Waiting, Completion | Exception]] = []
        rows: list[_Row] = []
        for w in calls:
            try:
                matcher = self._engine._xgr.GrammarMatcher(self._engine._compiled(w.schema))
            except ValueError as exc:  # this call's schema: its own failure, not its batch's
                failed.append((w, exc))
                continue
            rows.append(_Row(w, matcher, self._prompt_ids(w.messages)))
        if not rows:
            return failed
        groups: dict[tuple[int, ...], list[_Row]] = {}
        for row in rows:
            prefix = self._prefix_ids(row.call.messages)
            usable = prefix is not None and 0 < len(prefix) < len(row.prompt) and row.prompt[: len(prefix)] == prefix
            groups.setdefault(tuple(prefix) if usable and prefix else (), []).append(row)
        parts = [self._prefill(list(prefix), [row.prompt for row in members]) for prefix, members in groups.items()]
        if running.rows:
            assert running.mask is not None and running.logits is not None
            parts.insert(0, _Prefilled(running.cache, running.mask, running.logits))
        width = max(int(p.mask.shape[1]) for p in parts)
        layers: list[Any] = [_RoomyLayer([(p.cache.layers[n].keys, p.cache.layers[n].values) for p in parts], width)
                             for n in range(len(parts[0].cache.layers))]
        running.cache = Cache(layers=layers)
        running.mask = torch.cat([torch.nn.functional.pad(p.mask, (width - int(p.mask.shape[1]), 0)) for p in parts])
        running.logits = torch.cat([p.last.float() for p in parts])
        running.rows += [row for members in groups.values() for row in members]
        return failed

    def _advance(self, running: _Running) -> list[tuple[_Waiting, Completion | Exception]]:
        """Every row of the batch takes its next token (greedy, under its own grammar matcher); the rows that end (eos,
        their budget, their caller gone) leave; the others' tokens go through the model together."""
        assert isinstance(self._engine, _XGrammar) and running.logits is not None and running.mask is not None
        xgr = self._engine._xgr
        logits, rows = running.logits, running.rows
        if self._constrained_suppressed:
            logits[:, self._constrained_suppressed] = float("-inf")
        bitmask = xgr.allocate_token_bitmask(len(rows), self._engine._vocab_size)
        masked = [at for at, row in enumerate(rows) if not row.matcher.is_terminated()]
        for at in masked:
            rows[at].matcher.fill_next_token_bitmask(bitmask, at)
        if masked:
            xgr.apply_token_bitmask_inplace(logits, bitmask.to(logits.device), indices=masked)
        chosen = logits.argmax(dim=-1).tolist()
        self.batches = [*self.batches[-BATCH_HISTORY + 1:], len(rows)]
        finished: list[tuple[_Waiting, Completion | Exception]] = []
        keep: list[int] = []
        for at, row in enumerate(rows):
            token = int(chosen[at])
            row.made.append(token)
            if not row.matcher.is_terminated() and not row.matcher.accept_token(token):
                raise RuntimeError(f"token {token} violates the grammar of row {at}")
            if token in self._eos_ids or len(row.made) >= row.call.max_tokens or row.call.cancelled.is_set():
                finished.append((row.call, self._completion(row)))
            else:
                keep.append(at)
        if not keep:
            running.clear()  # the batch is empty: its cache goes
            return finished
        cache = running.cache
        assert cache is not None
        mask = running.mask
        if len(keep) < len(rows):  # finished rows leave the batch, and the padding no row still needs goes with them
            index = torch.tensor(keep, dtype=torch.long, device=self.device)
            mask = mask[index]
            start = int(mask.any(dim=0).int().argmax())
            for layer in cache.layers:
                layer.select(index, start)
            mask = mask[:, start:]
            chosen = [chosen[at] for at in keep]
            running.rows = [rows[at] for at in keep]
        mask = torch.cat([mask, torch.ones((len(keep), 1), dtype=torch.long, device=self.device)], dim=1)
        positions = torch.tensor([[len(row.prompt) + len(row.made) - 1] for row in running.rows], device=self.device)
        out = self.model(input_ids=torch.tensor([[t] for t in chosen], device=self.device), past_key_values=cache,
                         attention_mask=mask, position_ids=positions, use_cache=True)
        running.mask, running.logits = mask, out.logits[:, -1].float()
        return finished

    def _completion(self, row: _Row) -> Completion:
        stopped = bool(row.made) and row.made[-1] in self._eos_ids
        return Completion(text=str(self.tokenizer.decode(row.made, skip_special_tokens=True)),
                          prompt_tokens=len(row.prompt), completion_tokens=len(row.made),
                          finish_reason="stop" if stopped else "length")

    def _prompt_ids(self, messages: list[Message]) -> list[int]:
        ids = self.tokenizer(self.render(messages), add_special_tokens=not self._has_template)["input_ids"]
        return [int(i) for i in ids]

    def _prefix_ids(self, messages: list[Message]) -> list[int] | None:
        """The tokens of every message but the last, as the whole prompt begins with them; None when there are
        none, or when the prompt's tokens do not begin with them (a merge across the boundary)."""
        if len(messages) < 2:
            return None
        head = messages[:-1]
        if self._has_template:
            text = str(self.tokenizer.apply_chat_template([{"role": m["role"], "content": m["content"]} for m in head],
                                                          tokenize=False, add_generation_prompt=False))
        else:
            text = "".join(f"{m['role']}: {m['content']}\n\n" for m in head)
        return [int(i) for i in self.tokenizer(text, add_special_tokens=not self._has_template)["input_ids"]]

    def _prefill(self, prefix: list[int], prompts: list[list[int]]) -> _Prefilled:
        """Prompts that all begin with ``prefix`` (none: ``[]``) in one forward pass over a copy of the prefix's cached
        key-values (computed once, then kept: :data:`PREFIX_CACHE`), their remainders right-padded and masked. Only
        the logits of each prompt's last position are computed (the vocabulary's projection is a fifth of a small
        model's prefill)."""
        cache = None
        if prefix:
            key = tuple(prefix)
            base = self._prefixes.pop(key, None)
            if base is None:
                base = self.model(input_ids=torch.tensor([prefix], device=self.device), use_cache=True,
                                  **self._last_logits([len(prefix) - 1])).past_key_values
            self._prefixes[key] = base  # most recently used last
            while len(self._prefixes) > PREFIX_CACHE:
                self._prefixes.pop(next(iter(self._prefixes)))
            cache = copy.deepcopy(base)
            if len(prompts) > 1:
                cache.batch_repeat_interleave(len(prompts))
        rest = [ids[len(prefix):] for ids in prompts]
        width = max(len(r) for r in rest)
        ids = torch.full((len(rest), width), self._eos_ids[0], dtype=torch.long, device=self.device)
        mask = torch.zeros((len(rest), len(prefix) + width), dtype=torch.long, device=self.device)
        mask[:, : len(prefix)] = 1
        for row, r in enumerate(rest):
            ids[row, : len(r)] = torch.tensor(r, device=self.device)
            mask[row, len(prefix): len(prefix) + len(r)] = 1
        positions = torch.arange(len(prefix), len(prefix) + width, device=self.device).expand(len(rest), -1)
        ends = sorted({len(r) - 1 for r in rest})
        kept = self._last_logits(ends)
        out = self.model(input_ids=ids, past_key_values=cache, attention_mask=mask, position_ids=positions,
                         use_cache=True, **kept)
        column = {end: (n if kept else end) for n, end in enumerate(ends)}
        last = torch.stack([out.logits[row, column[len(r) - 1]] for row, r in enumerate(rest)])
        return _Prefilled(out.past_key_values, mask, last)

    def _last_logits(self, positions: list[int]) -> dict[str, Any]:
        """The forward pass's argument that computes the logits of these positions only, where the model takes one."""
        if not self._keeps_logits:
            return {}
        return {"logits_to_keep": torch.tensor(positions, dtype=torch.long, device=self.device)}

    async def prepare(self, schemas: list[dict[str, Any]]) -> None:
        """Build the constraint indexes of these schemas now (seconds to minutes each), not in the first call."""
        for schema in schemas:
            await asyncio.to_thread(self._engine.prepare, schema)

    def _generate(self, messages: list[Message], schema: dict[str, Any] | None, max_tokens: int,
                  temperature: float, cancelled: threading.Event,
                  calibration: list[Message] | None = None) -> Completion:
        with self._running:
            if cancelled.is_set():  # the caller left while this call waited for the model
                return Completion(text="", finish_reason="cancelled")
            inputs = self.tokenizer(self.render(messages), return_tensors="pt",
                                    add_special_tokens=not self._has_template).to(self.device)
            options = closed_options(schema) if schema is not None and self.choice == "likelihood" else None
            if options:
                base = None if calibration is None else self.tokenizer(
                    self.render(calibration), return_tensors="pt",
                    add_special_tokens=not self._has_template).to(self.device)["input_ids"]
                return self._choose(inputs["input_ids"], options, temperature, base)
            processors = LogitsProcessorList()
            if schema is not None:
                processors.append(self._engine.processor(schema))
            sampling: dict[str, Any] = (
                {"do_sample": True, "temperature": temperature} if temperature > 0 else {"do_sample": False}
            )
            if self.repetition_penalty != 1.0:
                sampling["repetition_penalty"] = self.repetition_penalty
            with torch.inference_mode():
                output = self.model.generate(
                    **inputs, max_new_tokens=max_tokens, logits_processor=processors,
                    stopping_criteria=StoppingCriteriaList([_StopWhenSet(cancelled)]),
                    eos_token_id=self._eos_ids, pad_token_id=self.tokenizer.pad_token_id,
                    suppress_tokens=(self._constrained_suppressed if schema is not None else self._suppressed) or None,
                    **sampling,
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


    def _choose(self, prompt_ids: torch.Tensor, options: list[str], temperature: float,
                base: torch.Tensor | None = None) -> Completion:
        """The option the model finds most likely as its whole reply (greedy at temperature 0, else sampled
        from the options' scores). A closed form is a multiple choice: scoring each whole completion lets
        every token of it count, where decoding commits to the first token that differs."""
        scores, lengths = self._score(prompt_ids, options)
        if base is not None:  # what the question adds: options the model favours whatever is asked lose that edge
            prior, _ = self._score(base, options)
            scores = [s - p for s, p in zip(scores, prior, strict=True)]
        if temperature > 0:
            weights = [math.exp((s - max(scores)) / temperature) for s in scores]
            best = random.choices(range(len(options)), weights=weights)[0]
        else:
            best = max(range(len(options)), key=scores.__getitem__)
        return Completion(text=options[best], prompt_tokens=int(prompt_ids.shape[1]),
                          completion_tokens=lengths[best], finish_reason="stop")

    def _score(self, prompt_ids: torch.Tensor, options: list[str]) -> tuple[list[float], list[int]]:
        """Each option's log-probability as the reply (its tokens, then the end of the turn): the prompt runs
        once, and batches of options run over copies of its cache."""
        end = self._eos_ids[0] if self.tokenizer.eos_token_id is None else int(self.tokenizer.eos_token_id)
        tails = [self.tokenizer(o, add_special_tokens=False)["input_ids"] + [end] for o in options]
        lengths = [len(t) for t in tails]
        # the tokens every option starts with ('{"step":"') add the same to each score: run them with the prompt
        shared = 0
        while all(len(t) > shared + 1 and t[shared] == tails[0][shared] for t in tails):
            shared += 1
        if shared:
            prompt_ids = torch.cat([prompt_ids, torch.tensor([tails[0][:shared]], device=prompt_ids.device)], dim=1)
            tails = [t[shared:] for t in tails]
        scores: list[float] = []
        with torch.inference_mode():
            out = self.model(input_ids=prompt_ids, use_cache=True)
            first = torch.log_softmax(out.logits[0, -1].float(), dim=-1)
            for start in range(0, len(tails), SCORE_BATCH):
                batch = tails[start: start + SCORE_BATCH]
                width = max(len(t) for t in batch)
                ids = torch.full((len(batch), width), end, dtype=torch.long, device=self.device)
                for row, t in enumerate(batch):
                    ids[row, : len(t)] = torch.tensor(t, device=self.device)
                cache = copy.deepcopy(out.past_key_values)
                cache.batch_repeat_interleave(len(batch))
                # right padding: a real token never attends to the pads after it, so no mask is needed
                logits = self.model(input_ids=ids, past_key_values=cache, use_cache=True).logits
                logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
                for row, t in enumerate(batch):
                    total = float(first[t[0]])
                    if len(t) > 1:
                        total += float(logp[row, torch.arange(len(t) - 1), torch.tensor(t[1:])].sum())
                    scores.append(total)
        return scores, lengths


class _StopWhenSet(StoppingCriteria):
    """Ends generation once the caller has gone (its event is set)."""

    def __init__(self, event: threading.Event) -> None:
        self.event = event

    def __call__(self, input_ids: torch.LongTensor, scores: Any, **kwargs: Any) -> torch.BoolTensor:
        return torch.full((input_ids.shape[0],), self.event.is_set(), dtype=torch.bool,  # type: ignore[return-value]
                          device=input_ids.device)
