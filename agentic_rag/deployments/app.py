"""The application builder: ``import_path: agentic_rag.deployments.app:build_app`` in a Serve config.

``args`` are settings fields by name (see :mod:`agentic_rag.deployments.args`); everything else
comes from each replica's environment. The graph::

    Ingress -> Orchestrator -> PlannerModel, ValidatorModel, VectorRetriever (-> Embedder), GraphRetriever (-> Embedder)
            -> GraphRetriever, VectorRetriever, Embedder  (typeahead, hydration, readiness)
            -> PlannerModel, ValidatorModel  (the OpenAI-compatible route, /openai/v1/chat/completions)
"""

from __future__ import annotations

from typing import Any

from ray.serve import Application
from ray.serve.deployment import Deployment

from agentic_rag.deployments.args import settings_from
from agentic_rag.deployments.ingress import Ingress
from agentic_rag.deployments.models import Embedder, PlannerModel, ValidatorModel
from agentic_rag.deployments.orchestrator import Orchestrator
from agentic_rag.deployments.retrievers import GraphRetriever, VectorRetriever
from agentic_rag.storage.postgres import resolve_dsn

DEPLOYMENTS: tuple[Deployment, ...] = (Ingress, Orchestrator, PlannerModel, ValidatorModel, Embedder,
                                       VectorRetriever, GraphRetriever)


def build_app(args: dict[str, Any]) -> Application:
    """Bind every deployment; ``args`` override settings fields. Raises ValueError on an unknown setting."""
    args = dict(args)
    settings = settings_from(args)  # a bad config fails here, once, not in every replica
    if settings.database_url is None:
        # resolved once here (possibly creating the database): replicas starting together must not race for it
        args["database_url"] = resolve_dsn(settings)
    vector = VectorRetriever
    if settings.qdrant_url is None:
        # an embedded store (edge or local mode) opens its path in one process only: exactly one replica serves it
        args["qdrant_path"] = str(settings.resolved_qdrant_path.resolve())
        vector = VectorRetriever.options(num_replicas=1, autoscaling_config=None)
    embedder = Embedder.bind(args)
    retriever = vector.bind(args, embedder)
    graph = GraphRetriever.bind(args, embedder)
    planner, validator = PlannerModel.bind(args), ValidatorModel.bind(args)
    orchestrator = Orchestrator.bind(args, planner, validator, retriever, graph)
    return Ingress.bind(args, orchestrator, graph, retriever, embedder, planner, validator)
