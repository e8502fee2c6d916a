"""Model deployments: the planner and validator models, and the sentence embedder.

The options here fit one CPU machine with the heuristic models; ``configs/gpu.yaml`` overrides them
for vLLM on GPUs (``num_gpus: 1`` per model replica, more concurrent requests per replica).
"""

from __future__ import annotations

import time

# ruff: noqa: E402 (the clock is read before this module's imports: a replica's start is accounted from there)
_IMPORTING_AT = time.time()

import asyncio
import logging
import os
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, ClassVar, cast

import numpy as np
import ray
from PIL import Image
from pydantic import BaseModel, ConfigDict, Field
from ray import serve
from ray.serve.deployment import Deployment

from agentic_rag.api.openai import MAX_COMPLETION_TOKENS
from agentic_rag.errors import InvalidInput, Timeout
from agentic_rag.logs import QUOTED_INPUT_MAX
from agentic_rag.models.base import EngineBacked, Message, ModelRole
from agentic_rag.models.embeddings import Embedder as SentenceEmbedder
from agentic_rag.models.embeddings import Vectors
from agentic_rag.models.image_embeddings import ImageEmbedder
from agentic_rag.models.images import IMAGE_SEARCH_OFF, ImageSearchOff
from agentic_rag.planners.factory import build_model, holds_weights
from agentic_rag.planners.llm.chat import text_backend_of
from agentic_rag.planners.warmup import warm_up
from agentic_rag.protocol.limits import clip
from agentic_rag.protocol.roles import ROLE_TYPES, Role, RoleInput
from agentic_rag.serve.args import replica_settings
from agentic_rag.serve.wire import (
    CompletionOutput,
    ModelOutput,
    accounted,
    invalid,
    ok,
    parse,
)

IMAGE_BATCH = 16  # images per forward pass of the image model (a CLIP vision tower costs far more than a query)
_IMPORTED_AT = time.time()
log = logging.getLogger(__name__)
EMBED_BATCH = 64  # texts per forward pass, gathered from concurrent runs (short queries: one pass costs little more)


class Budget(BaseModel):
    """A generation's limits, as a caller may ask for them."""

    model_config = ConfigDict(extra="forbid")

    max_tokens: int = Field(ge=1, le=8192)
    temperature: float = Field(ge=0.0, le=2.0)


class CompleteRequest(BaseModel):
    """A chat completion as a model deployment takes it (the route validated it already; the wire is not trusted)."""

    model_config = ConfigDict(extra="forbid")

    messages: list[Message] = Field(min_length=1, max_length=512)
    schema_: dict[str, Any] | None = Field(None, alias="schema")
    max_tokens: int = Field(ge=1, le=MAX_COMPLETION_TOKENS)
    temperature: float = Field(ge=0.0, le=2.0)


class Texts(BaseModel):
    """What one embed call may carry: a search's texts, bounded."""

    model_config = ConfigDict(extra="forbid")

    texts: list[str] = Field(max_length=EMBED_BATCH)


class Images(BaseModel):
    """What one image embed call may carry: a search's images, bounded in number (each is bounded in size
    by :func:`~agentic_rag.models.images.decode_image`)."""

    model_config = ConfigDict(extra="forbid")

    images: list[bytes] = Field(max_length=IMAGE_BATCH)


def gpu_request_problem(backend: str, gpu_ids: Sequence[Any]) -> str | None:
    """Why a model replica must not start: a vLLM engine on a replica Ray gave no GPU. Ray (2.60) no longer
    hides GPUs from an actor that asks for none, so such an engine would take every GPU of its node, the other
    replicas' included. None when the replica may start."""
    if backend == "vllm" and not gpu_ids:
        return ("a vLLM model replica needs a GPU of its own: give its deployment ray_actor_options "
                "{num_gpus: 1} (configs/gpu.yaml does), or use another backend")
    return None


class _ModelServer:
    """One role's model behind a handle: ``generate`` with the role named from :data:`ROLE_TYPES` and its input."""

    role: ClassVar[ModelRole]

    # Serve awaits an async constructor: the replica is not routed to until it returns
    async def __init__(self, args: dict[str, Any]) -> None:  # type: ignore[misc]
        settings = replica_settings(args)
        backend = settings.planner_backend if self.role == "planner" else settings.validator_backend
        if backend == "vllm":  # (only a replica inside Ray has accelerator ids to ask about)
            problem = gpu_request_problem(backend, ray.get_runtime_context().get_accelerator_ids().get("GPU", []))
            if problem is not None:
                raise RuntimeError(problem)
        # vLLM and transformers load their weights here, before the replica reports healthy
        self._model = build_model(settings, self.role)
        # the same weights behind the OpenAI-compatible route (agentic_rag.api.openai)
        self._text = text_backend_of(self._model)
        # ... and run each kind of call once, so the first question does not pay for kernels and grammars
        self.warm_up = [asdict(c) for c in await warm_up(self._model, self.role)] if holds_weights(
            settings, self.role) else []

    async def warmed(self) -> list[dict[str, Any]]:
        """How the constructor's warm-up calls went (one per kind of call the role makes)."""
        return self.warm_up

    async def check_health(self) -> None:
        """Serve's periodic health check: a model whose engine process died fails it, so Serve replaces this
        replica rather than routing runs to it (a backend with no engine of its own is always healthy)."""
        if isinstance(self._text, EngineBacked):
            await self._text.check_health()

    def __del__(self) -> None:
        text = getattr(self, "_text", None)
        if isinstance(text, EngineBacked):
            text.shutdown()

    @accounted
    async def generate(self, role: Any, role_input: Any, max_tokens: Any, temperature: Any) -> dict[str, Any]:
        """One validated generation of ``role`` (a name from :data:`ROLE_TYPES`) over ``role_input`` (the role's
        input as JSON): ``{"value": {"model", "output", "usage"}}``; a model that gives no valid output raises its
        GenerationError, which the caller's loop answers with the heuristic."""
        types = ROLE_TYPES.get(cast(Role, role)) if isinstance(role, str) else None
        if types is None:
            raise InvalidInput(f"{str(role)[:QUOTED_INPUT_MAX]!r} is not a role of this model "
                               f"({', '.join(ROLE_TYPES)})")
        output_type, input_type = types
        inp = cast(RoleInput, parse(input_type, role_input))
        budget = parse(Budget, {"max_tokens": max_tokens, "temperature": temperature})
        gen = await self._model.generate(inp, output_type, max_tokens=budget.max_tokens,
                                         temperature=budget.temperature)
        return ok(ModelOutput(model=clip(self._model.name, ModelOutput, "model"),
                              output=gen.output.model_dump(mode="json"), usage=asdict(gen.usage)))

    @accounted
    async def complete(self, messages: Any, schema: Any, max_tokens: Any, temperature: Any) -> dict[str, Any]:
        """One chat completion, constrained to ``schema`` when given: the OpenAI-compatible route's model call."""
        req = parse(CompleteRequest, {"messages": messages, "schema": schema, "max_tokens": max_tokens,
                                      "temperature": temperature})
        try:
            done = await self._text.complete(req.messages, req.schema_, max_tokens=req.max_tokens,
                                             temperature=req.temperature)
        except TimeoutError as exc:
            raise Timeout(str(exc) or "the model did not finish in time") from None
        except ValueError as exc:  # ValidationError included: a request this model cannot serve
            raise invalid(exc) from None
        finish = clip(done.finish_reason, CompletionOutput, "finish_reason") if done.finish_reason else None
        return ok(CompletionOutput(model=clip(self._text.name, CompletionOutput, "model"), text=done.text,
                                   prompt_tokens=done.prompt_tokens, completion_tokens=done.completion_tokens,
                                   finish_reason=finish))


# A heuristic call costs a millisecond of CPU or less on the replica's event loop, so one replica serves many runs; the
# options leave room for a real model: with vLLM (configs/gpu.yaml) a replica holds a GPU and its
# engine batches continuously, so it wants many requests in flight, not more replicas.
_MODEL_OPTIONS: dict[str, Any] = {
    "ray_actor_options": {"num_cpus": 0.1},
    "max_ongoing_requests": 64,
    # beyond this the caller gets BackPressureError at once, which the loop turns into a heuristic fallback
    "max_queued_requests": 256,
    "autoscaling_config": {"min_replicas": 1, "max_replicas": 2, "target_ongoing_requests": 32,
                           "upscale_delay_s": 10, "downscale_delay_s": 300},
    # a model replica is slow to start (weights), so do not retry a broken one for minutes
    "max_constructor_retry_count": 3,
}


class PlannerReplica(_ModelServer):
    """The planner's model (rewrite, select, draft)."""

    role = "planner"


class ValidatorReplica(_ModelServer):
    """The validator's model (grade, validate)."""

    role = "validator"


class EmbedderReplica:
    """Sentence embeddings for search queries, and (with ``image_model`` set) image embeddings for searches by
    image, each batched across concurrent callers with ``@serve.batch``."""

    def __init__(self, args: dict[str, Any]) -> None:
        began = time.time()
        settings = replica_settings(args)
        self._embedder = SentenceEmbedder(settings)
        # load the models now: the first query must not pay for them inside its time limit
        self._dimension = int(self._embedder.embed(["warm up"]).shape[1])
        self._images = ImageEmbedder(settings) if settings.image_model is not None else None
        self._image_dimension = self._images.dimension if self._images is not None else 0
        self._startup = replica_startup(began)
        log.info("Embedder replica ready: %s", ", ".join(f"{k} {v:.1f} s" for k, v in self._startup.items()))

    def startup(self) -> dict[str, float]:
        """Where this replica's start went, in seconds (:func:`replica_startup`): what a replacement costs."""
        return self._startup

    # 1 ms: a lone query is barely held back (5 ms was, on every run), and under load the queries that
    # arrive during one forward pass, plus a moment, share the next
    @serve.batch(max_batch_size=EMBED_BATCH, batch_wait_timeout_s=0.001)
    async def _embed_batch(self, texts: list[str]) -> list[Vectors]:
        vectors = await asyncio.to_thread(self._embedder.embed, texts)
        return list(vectors)

    @accounted
    async def embed(self, texts: Any) -> dict[str, Any]:
        """``{"value": float32 array (len(texts), dimension)}``: arrays cross Ray without a JSON detour."""
        batch = parse(Texts, {"texts": texts}).texts
        rows = await asyncio.gather(*(self._embed_batch(t) for t in batch))
        return {"value": np.stack(rows) if rows else np.zeros((0, self._dimension), dtype=np.float32)}

    @serve.batch(max_batch_size=IMAGE_BATCH, batch_wait_timeout_s=0.005)
    async def _embed_image_batch(self, images: list[Image.Image]) -> list[Vectors]:
        assert self._images is not None  # embed_images refused the call otherwise
        vectors = await asyncio.to_thread(self._images.embed_prepared, images)
        return list(vectors)

    @accounted
    async def embed_images(self, images: Any) -> dict[str, Any]:
        """``{"value": float32 array (len(images), image dimension)}`` of encoded images, each bounded and
        verified here before it joins a batch (a bad one fails its own call, not its batch's)."""
        if self._images is None:
            raise ImageSearchOff(IMAGE_SEARCH_OFF)
        batch = parse(Images, {"images": images}).images
        prepared = await asyncio.gather(*(asyncio.to_thread(self._images.prepare, b) for b in batch))
        rows = await asyncio.gather(*(self._embed_image_batch(p) for p in prepared))
        return {"value": np.stack(rows) if rows else np.zeros((0, self._image_dimension), dtype=np.float32)}


def replica_startup(constructor_began: float) -> dict[str, float]:
    """A replica's start, in seconds: its process until this module began importing (Ray's worker start, or an idle
    worker's wait), the module's imports (Ray Serve, torch, the app's modules), until the constructor began, and
    the constructor (the model's own imports, its weights, a first call)."""
    process = _process_started()
    now = time.time()
    return {"process_to_import": max(0.0, _IMPORTING_AT - process), "imports": _IMPORTED_AT - _IMPORTING_AT,
            "to_constructor": max(0.0, constructor_began - _IMPORTED_AT), "constructor": now - constructor_began,
            "total": now - min(process, _IMPORTING_AT)}


def _process_started() -> float:
    """When this process started (Linux's /proc: boot time and the process's start in clock ticks); where that
    cannot be read, when this module began importing."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return _IMPORTING_AT


# Applied as calls, not as class decorators: a type checker keeps a decorated class's own type.
PlannerModel: Deployment = serve.deployment(name="PlannerModel", **_MODEL_OPTIONS)(PlannerReplica)
ValidatorModel: Deployment = serve.deployment(name="ValidatorModel", **_MODEL_OPTIONS)(ValidatorReplica)
Embedder: Deployment = serve.deployment(
    name="Embedder",
    # the heaviest CPU work of the app (a MiniLM forward pass); fractional so the app fits 2 cores
    ray_actor_options={"num_cpus": 0.4},
    # a full batch must be able to form on one replica: as many in flight as one batch holds
    max_ongoing_requests=EMBED_BATCH,
    max_queued_requests=1024,
    # scale out when a replica is more than half a batch behind on average
    autoscaling_config={"min_replicas": 1, "max_replicas": 2, "target_ongoing_requests": EMBED_BATCH // 2,
                        "upscale_delay_s": 10, "downscale_delay_s": 300},
)(EmbedderReplica)
