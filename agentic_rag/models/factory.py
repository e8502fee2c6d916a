"""One place that turns settings into the planner and validator models."""

from __future__ import annotations

from agentic_rag.models.base import ModelRole, StructuredGenerator, StructuredModel, TextBackend
from agentic_rag.models.heuristic import HeuristicModel
from agentic_rag.models.prompts import shaper
from agentic_rag.settings import Settings


def text_backend(settings: Settings, role: ModelRole) -> TextBackend:
    """The configured text backend for a role (imports heavy libraries only for the backend asked for)."""
    backend = settings.planner_backend if role == "planner" else settings.validator_backend
    if backend == "transformers":
        from agentic_rag.models.transformers_backend import TransformersBackend

        return TransformersBackend.from_settings(settings, role)
    if backend == "openai":
        from agentic_rag.models.openai_backend import OpenAIBackend

        return OpenAIBackend.from_settings(settings, role)
    if backend == "vllm":
        from agentic_rag.models.vllm_backend import VLLMBackend

        return VLLMBackend.from_settings(settings, role)
    raise ValueError(f"the {backend} backend is not a text backend")


def build_fallback(settings: Settings) -> StructuredModel:
    """What decides a stage when its model fails or no time is left for one (pydantic-ai's FallbackModel
    idea, composed here so the loop never names a concrete model): the heuristic, which needs no model."""
    return HeuristicModel()


def build_model(settings: Settings, role: ModelRole) -> StructuredModel:
    """The model that plays ``role``: the heuristic when no model is configured, else a validated generator."""
    backend = settings.planner_backend if role == "planner" else settings.validator_backend
    if backend == "heuristic":
        return HeuristicModel()
    style = settings.prompt_style if settings.prompt_style != "auto" else (
        "compact" if backend == "transformers" else "full")
    return StructuredGenerator(text_backend(settings, role), max_attempts=settings.generation_max_attempts,
                               shape=shaper(style))
