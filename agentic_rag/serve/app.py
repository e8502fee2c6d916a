"""The application builder: ``import_path: agentic_rag.serve.app:build_app`` in a Serve config.

``args`` are settings fields by name (see :mod:`agentic_rag.serve.args`); everything else
comes from each replica's environment. The graph::

    Ingress -> Orchestrator -> [PlannerModel], [ValidatorModel], VectorRetriever (-> Embedder),
                               GraphRetriever (-> Embedder)
            -> GraphRetriever, VectorRetriever, Embedder  (typeahead, hydration, readiness)
            -> [PlannerModel], [ValidatorModel]  (the OpenAI-compatible route, /openai/v1/chat/completions)

A model deployment exists to hold a model's weights: PlannerModel and ValidatorModel are deployed only for a role
whose backend loads them (transformers, vLLM: :data:`~agentic_rag.planners.factory.WEIGHTED_BACKENDS`). A weightless
role (the heuristic, or a client of a remote OpenAI-compatible server) runs inside the Orchestrator, as its fallback
does, and inside the Ingress for the chat-completions route: no hop for a call that costs a millisecond.
"""

from __future__ import annotations

import logging
from typing import Any

from ray.serve import Application
from ray.serve._private import constants as serve_constants
from ray.serve.deployment import Deployment

from agentic_rag.models.base import ModelRole
from agentic_rag.models.images import base64_body_bytes
from agentic_rag.planners.factory import MODEL_ROLES, holds_weights
from agentic_rag.serve.args import env_overridden, settings_from
from agentic_rag.serve.ingress import Ingress
from agentic_rag.serve.models import Embedder, PlannerModel, ValidatorModel
from agentic_rag.serve.orchestrator import Orchestrator
from agentic_rag.serve.retrievers import GraphRetriever, VectorRetriever
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import resolve_dsn

log = logging.getLogger(__name__)
ENVELOPE_MAX = 256 * 2**10  # what rides beside a question's image in one call between replicas (question, budget)
VLLM_ACTOR = {"num_cpus": 1, "num_gpus": 1}  # a model replica on vLLM: the engine's GPU, a core for its loop
DEPLOYMENTS: tuple[Deployment, ...] = (Ingress, Orchestrator, PlannerModel, ValidatorModel, Embedder,
                                       VectorRetriever, GraphRetriever)
MODEL_DEPLOYMENTS: dict[ModelRole, Deployment] = {"planner": PlannerModel, "validator": ValidatorModel}


def model_roles(settings: Settings) -> tuple[ModelRole, ...]:
    """The roles served by a model deployment of their own: those whose backend holds weights."""
    return tuple(role for role in MODEL_ROLES if holds_weights(settings, role))


def deployment_names(settings: Settings) -> set[str]:
    """The deployments :func:`build_app` deploys for these settings (a Serve config may list only these: Serve
    refuses a config that names a deployment its application does not have)."""
    models = {MODEL_DEPLOYMENTS[r].name for r in model_roles(settings)}
    return {d.name for d in DEPLOYMENTS if d not in MODEL_DEPLOYMENTS.values()} | models


def replica_message_problem(settings: Settings) -> str | None:
    """Why a question's largest image could not cross from one replica to the next, or None.

    In Serve's throughput-optimized mode replicas call each other over gRPC, and a replica's server takes
    messages up to ``RAY_SERVE_REPLICA_GRPC_MAX_MESSAGE_LENGTH`` (4 MiB unless set; ``launch.SERVE_ENV`` sets
    16 MiB). The image crosses Ingress -> Orchestrator -> VectorRetriever -> Embedder as base64 in the envelope,
    so the limit must hold ``image_max_bytes`` in base64 and the rest of the call."""
    if settings.image_model is None or not serve_constants.RAY_SERVE_USE_GRPC_BY_DEFAULT:
        return None
    need = base64_body_bytes(settings) + ENVELOPE_MAX
    have = serve_constants.RAY_SERVE_REPLICA_GRPC_MAX_MESSAGE_LENGTH
    if have >= need:
        return None
    return (f"image_max_bytes={settings.image_max_bytes} needs calls between replicas of up to {need} bytes, "
            f"but RAY_SERVE_REPLICA_GRPC_MAX_MESSAGE_LENGTH is {have}: set it to at least {need} in the environment "
            "of every Ray process (agentic-rag serve does), or lower image_max_bytes")


def build_app(args: dict[str, Any]) -> Application:
    """Bind every deployment; ``args`` override settings fields. Raises ValueError on an unknown setting, or on
    settings the cluster cannot serve (:func:`replica_message_problem`)."""
    args = dict(args)
    settings = settings_from(args)  # a bad config fails here, once, not in every replica
    for line in env_overridden(args):  # `serve run` and `serve deploy` too, not only `agentic-rag serve`, say so
        log.warning("%s: the application's args win over the environment in every replica", line)
    if (problem := replica_message_problem(settings)) is not None:
        raise ValueError(problem)
    if settings.database_url is None:
        # resolved once here (possibly creating the database): replicas starting together must not race for it
        args["database_url"] = resolve_dsn(settings)
    # one data directory for every replica, whatever its working directory (the embedder's ONNX export lives there)
    args["data_dir"] = str(settings.data_dir.resolve())
    vector = VectorRetriever
    if settings.qdrant_url is None:
        # an embedded store (edge or local mode) opens its path in one process only: exactly one replica serves it
        args["qdrant_path"] = str(settings.resolved_qdrant_path.resolve())
        vector = VectorRetriever.options(num_replicas=1, autoscaling_config=None)
    embedder = Embedder.bind(args)
    retriever = vector.bind(args, embedder)
    graph = GraphRetriever.bind(args, embedder)
    # a model deployment for each role whose backend holds weights; None tells the replicas to run the role in
    # their own process. A vLLM engine needs a GPU of its own (a config that lists the deployment replaces these
    # options as a whole; a replica that still gets none refuses to start: serve.models.gpu_request_problem).
    models: dict[ModelRole, Any] = {role: None for role in MODEL_ROLES}
    for role in model_roles(settings):
        deployment = MODEL_DEPLOYMENTS[role]
        backend = settings.planner_backend if role == "planner" else settings.validator_backend
        models[role] = (deployment.options(ray_actor_options=VLLM_ACTOR) if backend == "vllm"
                        else deployment).bind(args)
    orchestrator = Orchestrator.bind(args, models["planner"], models["validator"], retriever, graph)
    return Ingress.bind(args, orchestrator, graph, retriever, embedder, models["planner"], models["validator"])
