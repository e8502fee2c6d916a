"""One place that turns settings into the planner and validator models."""

from __future__ import annotations

from agentic_rag.models.base import ModelRole, StructuredGenerator, StructuredModel, TextBackend
from agentic_rag.planners.heuristic import HeuristicModel
from agentic_rag.planners.llm.prompts import shaper
from agentic_rag.settings import Settings

# The backends that hold a model's weights in the process that serves them: a role on one of these gets a model
# deployment of its own when served (agentic_rag.serve.app.model_roles). The heuristic holds none, and the openai
# backend is a client of a server that holds them (and batches) elsewhere: both run inside the Orchestrator.
WEIGHTED_BACKENDS = frozenset({"transformers", "vllm"})
MODEL_ROLES: tuple[ModelRole, ...] = ("planner", "validator")

# What RAG_PLANNER_MODEL / RAG_VALIDATOR_MODEL must name for each text backend.
MODEL_NAMES = {
    "transformers": "a local model directory or a fetched model (agentic-rag models list)",
    "openai": "the served model",
    "vllm": "a local model directory",
}


def role_backend(settings: Settings, role: ModelRole) -> str:
    """The backend ``RAG_PLANNER_BACKEND`` / ``RAG_VALIDATOR_BACKEND`` names for ``role``."""
    return settings.planner_backend if role == "planner" else settings.validator_backend


def holds_weights(settings: Settings, role: ModelRole) -> bool:
    """Whether ``role``'s backend loads a model's weights into the process that runs it (a model deployment's
    reason to exist)."""
    return role_backend(settings, role) in WEIGHTED_BACKENDS


def role_model(settings: Settings, role: ModelRole) -> str:
    """What ``RAG_PLANNER_MODEL`` / ``RAG_VALIDATOR_MODEL`` names for ``role``. Unset, a ``ValueError`` says what
    the role's backend needs it to name."""
    backend = role_backend(settings, role)
    value = settings.planner_model if role == "planner" else settings.validator_model
    if not value:
        raise ValueError(f"RAG_{role.upper()}_MODEL must name {MODEL_NAMES[backend]} for the {backend} backend")
    return value


def text_backend(settings: Settings, role: ModelRole) -> TextBackend:
    """The configured text backend for a role, built from the role's model and the backend's settings (imports
    heavy libraries only for the backend asked for: vLLM is an optional extra)."""
    backend = role_backend(settings, role)
    if backend not in MODEL_NAMES:
        raise ValueError(f"the {backend} backend is not a text backend")
    model = role_model(settings, role)
    if backend == "transformers":
        from agentic_rag.models.packaged import resolve_model
        from agentic_rag.models.transformers_backend import TransformersBackend

        model_dir, gguf_file = resolve_model(model, settings)
        return TransformersBackend(model_dir, device=settings.model_device, gguf_file=gguf_file,
                                   constraint=settings.transformers_constraint,
                                   repetition_penalty=settings.repetition_penalty,
                                   choice=settings.transformers_choice,
                                   batch_size=settings.transformers_batch_size,
                                   batch_wait_s=settings.transformers_batch_wait_ms / 1000,
                                   dtype=settings.transformers_dtype,
                                   name=f"transformers:{model}" if gguf_file else None)
    if backend == "openai":
        from agentic_rag.models.openai_backend import OpenAIBackend

        return OpenAIBackend(settings, model)
    from agentic_rag.models.vllm_backend import VLLMBackend

    return VLLMBackend(settings, model)


def build_fallback(settings: Settings) -> StructuredModel:
    """What decides a stage when its model fails or no time is left for one (pydantic-ai's FallbackModel
    idea, composed here so the loop never names a concrete model): the heuristic, which needs no model."""
    return HeuristicModel()


def build_model(settings: Settings, role: ModelRole) -> StructuredModel:
    """The model that plays ``role``: the heuristic when no model is configured, else a validated generator."""
    backend = role_backend(settings, role)
    if backend == "heuristic":
        return HeuristicModel()
    style = settings.prompt_style if settings.prompt_style != "auto" else (
        "compact" if backend == "transformers" else "full")
    return StructuredGenerator(text_backend(settings, role), max_attempts=settings.generation_max_attempts,
                               shape=shaper(style))
