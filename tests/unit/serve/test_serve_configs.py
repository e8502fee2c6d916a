"""The Serve config files: valid for Ray's own schema, and consistent with the application they deploy."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from ray.serve._private import api as serve_private_api
from ray.serve._private.client import ServeControllerClient
from ray.serve.config import gRPCOptions
from ray.serve.schema import ServeDeploySchema

from agentic_rag.api.graphql.app import APPLICATION
from agentic_rag.api.grpc.proto import searchai_pb2
from agentic_rag.serve.app import DEPLOYMENTS, MODEL_DEPLOYMENTS, build_app, deployment_names
from agentic_rag.serve.args import env_overridden, settings_from
from agentic_rag.serve.graphql import GraphQL, build_graphql_app
from agentic_rag.serve.ingress import Ingress
from agentic_rag.serve.wire import MODEL_DEPLOYMENT
from agentic_rag.settings import Settings

CONFIGS = Path(__file__).resolve().parents[3] / "configs"
CONFIG_FILES = ["local.yaml", "gpu.yaml", "smollm2.yaml"]
NAMES = {d.name for d in DEPLOYMENTS}


def _load(name: str) -> ServeDeploySchema:
    return ServeDeploySchema.model_validate(yaml.safe_load((CONFIGS / name).read_text(encoding="utf-8")))


def _settings(config: ServeDeploySchema, index: int = 0) -> Settings:
    """What build_app reads: the application's args over its runtime environment's RAG_ variables."""
    app = config.applications[index]
    env = app.runtime_env.get("env_vars", {})
    return settings_from({**{k.removeprefix("RAG_").lower(): v for k, v in env.items() if k.startswith("RAG_")},
                          **app.args})


def _overrides(config: ServeDeploySchema, index: int = 0) -> dict[str, dict[str, Any]]:
    app = config.applications[index]
    return {d.name: d.model_dump(exclude_unset=True, exclude={"name"}) for d in app.deployments}


@pytest.mark.parametrize("name", CONFIG_FILES)
def test_config_is_valid_for_serve_and_names_the_app_builders(name: str) -> None:
    config = _load(name)
    agent, graphql = config.applications
    assert (agent.name, agent.route_prefix, agent.import_path) == (
        "agentic_rag", "/", "agentic_rag.serve.app:build_app")
    assert build_app.__module__ == "agentic_rag.serve.app"
    assert (graphql.route_prefix, graphql.import_path) == (
        "/graphql", "agentic_rag.serve.graphql:build_graphql_app")
    assert build_graphql_app.__module__ == "agentic_rag.serve.graphql"
    # every override names a deployment of its application, or Serve refuses the whole config at deploy time; and
    # every deployment the application has for these settings is sized here (a model deployment only where a
    # role's backend holds weights)
    assert set(_overrides(config)) == deployment_names(_settings(config))
    assert set(_overrides(config, 1)) == {GraphQL.name}
    # the backend asks the agent's application over the gRPC proxy of this config
    target = settings_from(graphql.args).graphql_agent_target
    assert target.endswith(f":{config.grpc_options.port}")
    assert agent.name == APPLICATION  # the name the backend sends in its calls' metadata


@pytest.mark.parametrize("name", CONFIG_FILES)
def test_overrides_are_options_the_deployments_accept(name: str) -> None:
    by_name = {d.name: d for d in DEPLOYMENTS}
    for dep_name, options in _overrides(_load(name)).items():
        deployment = by_name[dep_name]
        if "autoscaling_config" in options:
            options = {**options, "num_replicas": None}
        deployment.options(**options)  # raises on a bad combination (replica counts with autoscaling, ...)
        # a deployment's ray_actor_options in a config replace the code's as a whole: CPUs must be explicit
        assert "num_cpus" in options["ray_actor_options"], dep_name


@pytest.mark.parametrize("name", CONFIG_FILES)
def test_args_and_env_are_settings(name: str) -> None:
    for app in _load(name).applications:
        settings = settings_from(app.args)
        env = app.runtime_env.get("env_vars", {})
        fields = {k.removeprefix("RAG_").lower(): v for k, v in env.items() if k.startswith("RAG_")}
        assert set(fields) <= set(Settings.model_fields), "a RAG_ variable that no setting reads"
        assert "database_url" not in app.args and "RAG_DATABASE_URL" not in env, "a DSN belongs in a secret"
        settings_from({**app.args, **fields})
        assert settings.planner_backend in ("heuristic", "vllm", "transformers")


@pytest.mark.parametrize("name", CONFIG_FILES)
def test_grpc_options_serve_searchai_and_the_ingress_implements_it(name: str) -> None:
    options = _load(name).grpc_options
    assert options.port == 9000
    assert options.request_timeout_s == _load(name).http_options.request_timeout_s
    # imported the way Serve's proxy imports them; one that does not import is dropped with only a warning
    [add_servicer] = gRPCOptions(**options.model_dump()).grpc_servicer_func_callable
    assert add_servicer.__name__ == "add_SearchAIServicer_to_server"
    # the proxy calls the ingress method named like the RPC, passing the context by this parameter name
    methods = searchai_pb2.DESCRIPTOR.services_by_name["SearchAI"].methods_by_name
    assert set(methods) == {"Ask", "Search", "Clarify", "AskStream", "ClarifyStream"}
    for rpc, descriptor in methods.items():
        method = getattr(Ingress.func_or_class, rpc)
        # a server-streaming RPC is an async generator on the Ingress, a unary one a coroutine
        streams = descriptor.server_streaming
        assert (inspect.isasyncgenfunction(method) if streams else inspect.iscoroutinefunction(method)), rpc
        assert list(inspect.signature(method).parameters) == ["self", "request", "grpc_context"], rpc


def test_local_config_fits_one_cpu_machine() -> None:
    config = _load("local.yaml")
    overrides = _overrides(config)
    actors = [o["ray_actor_options"] for i in range(len(config.applications)) for o in _overrides(config, i).values()]
    assert not any(a.get("num_gpus") for a in actors)
    # every deployment at its minimum scale fits in 2 CPUs, with room for the controller and proxy
    assert sum(a["num_cpus"] for a in actors) <= 1.5
    assert config.http_options.host == "127.0.0.1"
    settings = settings_from(config.applications[0].args)
    assert settings.qdrant_url is None and settings.planner_backend == "heuristic"
    # Qdrant local mode: one process per storage path, so the config must not make the retriever scale
    assert "autoscaling_config" not in overrides["VectorRetriever"]
    assert "num_replicas" not in overrides["VectorRetriever"]


def test_the_local_configs_deploy_a_model_only_for_weights() -> None:
    # the heuristic holds no weights: it runs inside the Orchestrator, and local.yaml deploys no model at all
    local = _load("local.yaml")
    assert deployment_names(_settings(local)) == NAMES - {"PlannerModel", "ValidatorModel"}
    # SmolLM2 as the planner: its weights get a deployment, the heuristic validator still none
    smol = _load("smollm2.yaml")
    settings = _settings(smol)
    assert (settings.planner_backend, settings.planner_model, settings.validator_backend) == (
        "transformers", "smollm2", "heuristic")
    assert deployment_names(settings) == NAMES - {"ValidatorModel"}
    actors = [o["ray_actor_options"] for i in range(len(smol.applications)) for o in _overrides(smol, i).values()]
    assert not any(a.get("num_gpus") for a in actors)
    assert sum(a["num_cpus"] for a in actors) <= 2.0  # fits the 2-core machine it is written for


def test_the_smollm2_config_is_the_local_one_with_a_planner_model() -> None:
    local = yaml.safe_load((CONFIGS / "local.yaml").read_text(encoding="utf-8"))
    smol = yaml.safe_load((CONFIGS / "smollm2.yaml").read_text(encoding="utf-8"))
    agent = smol["applications"][0]
    planner = {"planner_backend": "transformers", "planner_model": "smollm2", "transformers_constraint": "xgrammar"}
    assert {k: agent["args"].pop(k) for k in planner} == planner
    assert agent["deployments"].pop(2) == {"name": "PlannerModel", "ray_actor_options": {"num_cpus": 0.5}}
    assert smol == local  # nothing else drifts apart


def test_an_environment_variable_a_config_overrides_is_reported() -> None:
    args = {"planner_backend": "heuristic", "pool_max_size": 10, "agent_max_turns": 3}
    env = {"RAG_PLANNER_BACKEND": "transformers", "RAG_POOL_MAX_SIZE": "10", "AGENT_MAX_STEPS": "5",
           "RAG_LOG_LEVEL": "DEBUG"}
    said = env_overridden(args, env)
    # a variable set to the config's own value (10) or to a setting the config leaves alone is not reported;
    # an alias (AGENT_MAX_STEPS) is
    assert said == ["AGENT_MAX_STEPS='5' is overridden by the config's agent_max_turns: 3",
                    "RAG_PLANNER_BACKEND='transformers' is overridden by the config's planner_backend: 'heuristic'"]
    assert env_overridden(args, {}) == []


def test_the_app_builder_reports_an_overridden_environment_variable(monkeypatch: pytest.MonkeyPatch,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("RAG_AGENT_MAX_TURNS", "5")
    with caplog.at_level("WARNING", logger="agentic_rag.serve.app"):
        build_app({"agent_max_turns": 3, "database_url": "postgresql://u@h:5432/db", "log_level": "WARNING"})
    assert "RAG_AGENT_MAX_TURNS='5' is overridden by the config's agent_max_turns: 3" in caplog.text


def test_gpu_config_puts_each_model_on_a_gpu_and_scales_the_rest() -> None:
    config = _load("gpu.yaml")
    app = config.applications[0]
    overrides = _overrides(config)
    env = app.runtime_env["env_vars"]
    assert env["RAG_PLANNER_BACKEND"] == "vllm" and env["RAG_VALIDATOR_BACKEND"] == "vllm"
    for model in ("PlannerModel", "ValidatorModel"):
        assert overrides[model]["ray_actor_options"]["num_gpus"] == 1
    # the embedder's text and image models share a GPU between two replicas, on the device the settings name
    assert overrides["Embedder"]["ray_actor_options"]["num_gpus"] == 0.5
    settings = settings_from(app.args)
    assert settings.embedding_device == settings.image_device == "cuda"
    for name in NAMES - {"PlannerModel", "ValidatorModel", "Embedder"}:
        assert not overrides[name]["ray_actor_options"].get("num_gpus"), name
    for name in NAMES - {"PlannerModel", "ValidatorModel"}:
        assert overrides[name]["autoscaling_config"]["min_replicas"] >= 2, name
    assert settings.qdrant_url


def test_the_gpu_worker_group_holds_every_gpu_replica() -> None:
    config = _load("gpu.yaml")
    overrides = _overrides(config)
    gpus = {n: o["ray_actor_options"].get("num_gpus", 0) for n, o in overrides.items()}
    low = sum(g * overrides[n]["autoscaling_config"]["min_replicas"] for n, g in gpus.items())
    high = sum(g * overrides[n]["autoscaling_config"]["max_replicas"] for n, g in gpus.items())
    rayservice = yaml.safe_load_all((CONFIGS.parent / "k8s" / "rayservice.yaml").read_text(encoding="utf-8"))
    (group,) = [g for d in rayservice for g in d["spec"]["rayClusterConfig"]["workerGroupSpecs"]
                if g["groupName"] == "gpu"]
    # one GPU a pod: the deployments' minimum fits the group's minimum, and their maximum its maximum
    assert group["minReplicas"] >= low and group["maxReplicas"] >= high


def test_the_private_serve_api_the_launcher_uses_still_exists() -> None:
    # ray is pinned; this fails loudly on an upgrade that moves what `serve run CONFIG` itself calls
    assert callable(serve_private_api.serve_start)
    assert callable(ServeControllerClient.deploy_apps)


def test_app_args_by_field_name_reach_aliased_settings() -> None:
    # Settings ignores a bare field name when the field has an alias (database_url, agent_max_turns)
    settings = settings_from({"agent_max_turns": 3, "database_url": "postgresql://u@h:5432/db"})
    assert settings.agent_max_turns == 3
    assert settings.database_url == "postgresql://u@h:5432/db"


def test_unknown_app_args_are_an_error() -> None:
    with pytest.raises(ValueError, match="unknown setting"):
        settings_from({"planner_backnd": "vllm"})


def test_gpu_config_stays_within_postgres_connections() -> None:
    config = _load("gpu.yaml")
    overrides = _overrides(config)
    pool = settings_from(config.applications[0].args).pool_max_size
    postgres = (CONFIGS.parent / "k8s" / "postgres.yaml").read_text(encoding="utf-8")
    limit = int(re.search(r"max_connections=(\d+)", postgres).group(1))  # type: ignore[union-attr]
    # every replica of these holds a pool of its own; leave room for ingest and administration
    holders = ("Orchestrator", "GraphRetriever", "VectorRetriever")
    assert sum(overrides[n]["autoscaling_config"]["max_replicas"] for n in holders) * pool <= limit - 50


def test_a_vllm_model_deployment_asks_for_a_gpu_of_its_own() -> None:
    # Ray 2.60 shows every GPU to an actor that asks for none: the code's own options ask for one for vLLM
    app = build_app({"planner_backend": "vllm", "planner_model": "/models/planner", "log_level": "WARNING"})
    bound = {d.name: d.ray_actor_options for a in app._bound_deployment.init_args
             if (d := getattr(a, "_bound_deployment", None)) is not None}
    assert bound["PlannerModel"]["num_gpus"] == 1
    assert "ValidatorModel" not in bound  # the heuristic validator holds no weights: it runs in the Orchestrator
    # the callers name each role's deployment as the builder deploys it
    assert {role: d.name for role, d in MODEL_DEPLOYMENTS.items()} == MODEL_DEPLOYMENT
    both = build_app({"planner_backend": "vllm", "planner_model": "/models/planner", "validator_backend": "vllm",
                      "validator_model": "/models/validator", "log_level": "WARNING"})
    bound = {d.name: d.ray_actor_options for a in both._bound_deployment.init_args
             if (d := getattr(a, "_bound_deployment", None)) is not None}
    assert bound["PlannerModel"]["num_gpus"] == bound["ValidatorModel"]["num_gpus"] == 1


def test_calls_between_replicas_hold_the_largest_image(monkeypatch: pytest.MonkeyPatch) -> None:
    from ray.serve._private import constants

    from agentic_rag.serve import launch
    from agentic_rag.serve.app import replica_message_problem

    largest = Settings(image_model="/models/clip", image_max_bytes=10 * 2**20)  # the most the settings allow
    monkeypatch.setattr(constants, "RAY_SERVE_USE_GRPC_BY_DEFAULT", True)
    monkeypatch.setattr(constants, "RAY_SERVE_REPLICA_GRPC_MAX_MESSAGE_LENGTH", 4 * 2**20)  # Ray's default
    problem = replica_message_problem(Settings(image_model="/models/clip"))  # the default 4 MiB image: too big
    assert problem is not None and "RAY_SERVE_REPLICA_GRPC_MAX_MESSAGE_LENGTH is 4194304" in problem
    with pytest.raises(ValueError, match="set it to at least"):
        build_app({"image_model": "/models/clip", "database_url": "postgresql://u@h:5432/db"})
    assert replica_message_problem(Settings()) is None  # no image search: nothing large crosses
    # what agentic-rag serve (and the pods' environment) sets holds the largest image the settings allow
    monkeypatch.setattr(constants, "RAY_SERVE_REPLICA_GRPC_MAX_MESSAGE_LENGTH",
                        int(launch.SERVE_ENV["RAY_SERVE_REPLICA_GRPC_MAX_MESSAGE_LENGTH"]))
    assert replica_message_problem(largest) is None
    monkeypatch.setattr(constants, "RAY_SERVE_USE_GRPC_BY_DEFAULT", False)  # handles over Ray's own transport
    monkeypatch.setattr(constants, "RAY_SERVE_REPLICA_GRPC_MAX_MESSAGE_LENGTH", 4 * 2**20)
    assert replica_message_problem(largest) is None


def test_a_local_ray_that_fails_to_start_is_stopped_and_started_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from tenacity import wait_none

    from agentic_rag.serve import launch

    calls: list[str] = []
    failures = [2]

    def init(**options: Any) -> None:
        calls.append("init")
        if failures[0] > 0:
            failures[0] -= 1
            raise Exception("The current node timed out during startup.")  # what ray.init raises then

    monkeypatch.setattr(launch.ray, "is_initialized", lambda: False)
    monkeypatch.setattr(launch.ray, "init", init)
    monkeypatch.setattr(launch.ray, "shutdown", lambda: calls.append("shutdown"))
    monkeypatch.setattr(launch, "wait_fixed", lambda seconds: wait_none())
    launch.start_ray(num_cpus=2)
    assert calls == ["init", "shutdown", "init", "shutdown", "init"]
    # one that never starts: the error after the last attempt, as Ray said it
    calls.clear()
    failures[0] = 10
    with pytest.raises(Exception, match="timed out during startup"):
        launch.start_ray(num_cpus=2)
    assert calls.count("init") == launch.START_ATTEMPTS
