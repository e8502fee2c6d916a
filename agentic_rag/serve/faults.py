"""The faults of issue 15 on a running Serve app: replicas killed, PostgreSQL backends terminated.

A replica is killed the way a crash or an OOM kill ends it: SIGKILL to its process (:func:`crash`), with no chance
to clean up; Serve's controller notices and starts another. The embedded Qdrant store (edge or local mode)
lives in the VectorRetriever replica's process, so killing that replica is what makes Qdrant unavailable
here: the store goes down with the process and comes back when a new replica reopens it from disk. (With
a Qdrant server, ``RAG_QDRANT_URL``, stopping the server is the same fault from the outside.)
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import ray
from ray import serve
from ray._private import state as ray_state  # the GCS's actor table: the state API needs the dashboard
from ray.cluster_utils import Cluster
from ray.serve._private.common import DeploymentStatus
from ray.serve.schema import ApplicationStatus, RayActorOptionsSchema, ServeDeploySchema

from agentic_rag.loadtest.faults import Fault, FaultRun, Verdict, judge, terminate_backends
from agentic_rag.settings import Settings

__all__ = ["FAULT_ARGS", "NodeLoss", "fault_config", "fault_suite", "kill_replica", "node_lost", "replica_actors",
           "replica_actors_by_node", "replicas_by_node", "standard_faults"]

# Settings for a fault run: a run may take 15 s, not 30. The runs a killed replica leaves are closed by the live
# ones once it has gone unheard for the default lapse (runner_lapse_ms, 10 s): the timed sweep keeps its defaults
# (deadline + 60 s grace, looked for each minute), so a run left running past the lapse and a margin fails the run.
FAULT_ARGS: dict[str, Any] = {"agent_deadline_ms": 15_000}
RUNNER_LAPSE_S = Settings.model_fields["runner_lapse_ms"].default / 1000
REQUEST_GRACE_S = 20.0
# recovery bounds (recovery_bound_s): a replica starts up to this many times slower under the fault run's load than
# when the app was deployed (2026-11-28: Embedder 18.9 s deployed, 29.9 s replaced under 12 clients, and CI's busier
# machine 44 s); Serve's own part of a replacement; no bound below this
LOADED_START_FACTOR = 2.5
REPLACEMENT_S = 15.0
MIN_RECOVERY_S = 30.0  # past a run's deadline: its final writes, the hops and the proxy (the API allows 15 s)
# Losing a node: Ray's GCS calls a node dead after health_check_failure_threshold (5) failed checks
# health_check_period_ms (3 s) apart, Ray's defaults, kept as a real cluster has them; only then does Serve replace the
# replicas it held. The fault's recovery bound adds this to a replica's replacement.
NODE_DEATH_S = 5 * 3.0
HEAD_RESOURCE = "node:__internal_head__"  # a resource of 1 that Ray gives the head node alone
HEAD_SLIVER = 0.001
SERVE_NAMESPACE = "serve"
DEAD_WAIT_S = 10.0  # how long a killed replica's actor may take to be called dead
REPLICA_PREFIX = "SERVE_REPLICA::"  # Serve's actor name: SERVE_REPLICA::<app>#<deployment>#<replica id>


def fault_config(config: ServeDeploySchema, *, orchestrators: int, args: dict[str, Any],
                 on_head: Sequence[str] = ()) -> ServeDeploySchema:
    """``config`` with exactly ``orchestrators`` Orchestrator replicas (a resume must be claimed across
    replicas; one killed leaves another), and ``args`` over every application's args (shorter sweep times).
    The deployments named in ``on_head`` are placed on the head node (a sliver of Ray's own ``node:__internal_head__``
    resource, which only the head has)."""
    apps = []
    for app in config.applications:
        deployments = []
        for d in app.deployments:
            if d.name == "Orchestrator":
                scaling = {**(d.autoscaling_config if isinstance(d.autoscaling_config, dict) else {}),
                           "min_replicas": orchestrators, "max_replicas": orchestrators}
                d = d.model_copy(update={"autoscaling_config": scaling})
            if d.name in on_head:
                options = (d.ray_actor_options if isinstance(d.ray_actor_options, RayActorOptionsSchema)
                           else RayActorOptionsSchema())
                resources = {**(options.resources or {}), HEAD_RESOURCE: HEAD_SLIVER}
                d = d.model_copy(update={"ray_actor_options": options.model_copy(update={"resources": resources})})
            deployments.append(d)
        apps.append(app.model_copy(update={"deployments": deployments, "args": {**app.args, **args}}))
    return config.model_copy(update={"applications": apps})


def replica_actors(app: str, deployment: str) -> list[str]:
    """The live replica actors of ``deployment`` in ``app``, by actor name (sorted)."""
    prefix = f"{REPLICA_PREFIX}{app}#{deployment}#"
    return sorted(a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                  if a["namespace"] == SERVE_NAMESPACE and a["name"].startswith(prefix))


def _ongoing(name: str) -> int:
    """Requests in flight at a replica, as Serve's router asks it (0 when it cannot say)."""
    try:
        actor = ray.get_actor(name, namespace=SERVE_NAMESPACE)
        count: Any = ray.get(actor.get_num_ongoing_requests.remote(), timeout=2)
        return int(count)
    except Exception:  # the replica actor's method is Serve's own, not a public API: the count is a nicety
        return 0


def kill_replica(app: str, deployment: str, *, wait_busy_s: float = 3.0) -> str:
    """Kill the busiest replica of ``deployment`` at once (waiting up to ``wait_busy_s`` for one with requests
    in flight, so the fault meets work); say which, and what it held."""
    deadline = time.monotonic() + wait_busy_s
    while True:
        names = replica_actors(app, deployment)
        if not names:
            raise LookupError(f"{deployment} of {app} has no live replica to kill")
        ongoing, name = max((_ongoing(n), n) for n in names)
        if ongoing or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    actor = ray.get_actor(name, namespace=SERVE_NAMESPACE)
    crash(actor)
    dead_s = _until_dead(actor._actor_id.hex())
    return (f"killed 1 of {len(names)} {deployment} replica(s), {ongoing} request(s) in flight; "
            f"{'dead' if dead_s is not None else 'NOT dead'} after {dead_s or DEAD_WAIT_S:.1f} s")


def crash(actor: Any) -> None:
    """End a replica's process the way a crash or the OOM killer does: SIGKILL to its process when it runs on this
    machine. (``ray.kill`` is not that: the GCS asks the worker to exit, and a replica busy on its event loop was
    seen to finish the runs in flight first.) A process on another machine is killed through Ray."""
    info = ray_state.actors(actor._actor_id.hex()) or {}
    pid, ip = info.get("Pid"), (info.get("Address") or {}).get("IPAddress")
    if pid and ip == ray.util.get_node_ip_address():
        try:
            os.kill(int(pid), signal.SIGKILL)
            return
        except ProcessLookupError:
            pass
    ray.kill(actor, no_restart=True)


def _until_dead(actor_id: str, limit_s: float = DEAD_WAIT_S) -> float | None:
    """Seconds until the GCS calls the actor dead (None: not within ``limit_s``)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        if (ray_state.actors(actor_id) or {}).get("State") == "DEAD":
            return time.monotonic() - t0
        time.sleep(0.05)
    return None


def _killer(app: str, deployment: str) -> Fault:
    async def inject() -> str:
        return await asyncio.to_thread(kill_replica, app, deployment)

    return Fault(f"{deployment} replica killed", inject)


def standard_faults(app: str, dsn: str, *, terminations: int = 3) -> list[Fault]:
    """The issue's faults in order: an Orchestrator, a GraphRetriever and the Embedder replica killed, every
    PostgreSQL backend terminated ``terminations`` times a second apart, Qdrant (the VectorRetriever replica
    that embeds it) killed."""

    async def terminate() -> str:
        notes = []
        for i in range(terminations):
            if i:
                await asyncio.sleep(1.0)
            notes.append(await terminate_backends(dsn))
        return "; ".join(notes)

    return [
        _killer(app, "Orchestrator"),
        _killer(app, "GraphRetriever"),
        _killer(app, "Embedder"),
        Fault("PostgreSQL backends terminated", terminate),
        Fault("Qdrant down (VectorRetriever replica, which embeds it, killed)",
              _killer(app, "VectorRetriever").inject),
    ]


def replica_actors_by_node(apps: Sequence[str]) -> dict[str, list[str]]:
    """Where the live replicas of ``apps`` are: node id (hex) -> the actor name of each replica there, sorted."""
    out: dict[str, list[str]] = {}
    for actor in ray_state.actors().values():
        name = str(actor.get("Name") or "")
        if actor.get("State") != "ALIVE" or not name.startswith(REPLICA_PREFIX) or name.count("#") != 2:
            continue
        if name.removeprefix(REPLICA_PREFIX).split("#")[0] in apps:
            out.setdefault(str(actor["Address"]["NodeID"]), []).append(name)
    return {node: sorted(names) for node, names in out.items()}


def _deployment(actor: str) -> str:
    """``app#deployment`` of a replica's actor name."""
    return actor.removeprefix(REPLICA_PREFIX).rsplit("#", 1)[0]


def replicas_by_node(apps: Sequence[str]) -> dict[str, list[str]]:
    """Where the live replicas of ``apps`` are: node id (hex) -> ``app#deployment`` of each replica there, sorted."""
    return {node: sorted(_deployment(a) for a in actors) for node, actors in replica_actors_by_node(apps).items()}


@dataclass
class NodeLoss:
    """What :func:`node_lost` killed: the node, and the replicas it held when it died."""

    node_id: str = ""
    held: list[str] = field(default_factory=list)
    in_flight: int = 0  # requests in flight on its busy replicas (the Orchestrators) when it died


def node_lost(cluster: Cluster, apps: Sequence[str], *, busy: Sequence[str] = ("Orchestrator",),
              wait_busy_s: float = 10.0) -> tuple[Fault, NodeLoss]:
    """A worker node of ``cluster`` killed at once: its raylet, object store and every worker process on it get
    SIGKILL with no chance to shut down (``remove_node(allow_graceful=False)``), as when a machine loses power or
    its pod is evicted. Serve replaces the replicas it held on the nodes left, once Ray calls the node dead
    (:data:`NODE_DEATH_S`). The node is killed once a replica of one of ``busy`` there has requests in flight (or
    ``wait_busy_s`` has passed). The returned :class:`NodeLoss` says, once injected, which node, what it held and
    how many requests its ``busy`` replicas had in flight."""
    lost = NodeLoss()

    def kill() -> str:
        # the node holding the most replicas, once an Orchestrator replica there has runs in flight (waiting up to
        # wait_busy_s), so the fault meets runs that its death must end as 503s
        deadline = time.monotonic() + wait_busy_s
        while True:
            placed = replica_actors_by_node(apps)  # one read of the GCS's actor table
            node = max(cluster.worker_nodes, key=lambda n: len(placed.get(n.node_id, [])))
            actors = placed.get(node.node_id, [])
            ongoing = sum(_ongoing(a) for a in actors if _deployment(a).split("#")[1] in busy)
            if ongoing or not busy or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        lost.node_id, lost.held, lost.in_flight = node.node_id, sorted(_deployment(a) for a in actors), ongoing
        cluster.remove_node(node, allow_graceful=False)
        return (f"worker node {node.node_id[:8]} killed, holding {len(lost.held)} replica(s): {', '.join(lost.held)}; "
                f"{ongoing} request(s) in flight on its {'/'.join(busy)} replica(s)")

    async def inject() -> str:
        return await asyncio.to_thread(kill)

    return Fault("worker node lost", inject, whole=lambda: serve_whole(apps), min_s=NODE_DEATH_S,
                 extra_s=NODE_DEATH_S), lost


def serve_whole(apps: Sequence[str]) -> bool:
    """Whether every one of ``apps`` is RUNNING with each deployment HEALTHY: all its target replicas running."""
    status = serve.status().applications
    return all(a in status and status[a].status == ApplicationStatus.RUNNING
               and all(d.status == DeploymentStatus.HEALTHY for d in status[a].deployments.values()) for a in apps)


def replica_startup(app: str, deployment: str = "Embedder") -> dict[str, float]:
    """Where the start of ``deployment``'s replica went, in seconds, as the replica measured it
    (:func:`agentic_rag.serve.models.replica_startup`): its process's start, its imports, its constructor."""
    handle = serve.get_deployment_handle(deployment, app_name=app)
    startup: dict[str, float] = handle.startup.remote().result(timeout_s=30)
    return startup


def recovery_bound_s(startup: dict[str, float]) -> float:
    """How long a fault may take to recover before the run calls it unrecovered: what the slowest replica's start
    measurably cost (the Embedder: torch, sentence-transformers and its model), as many times over as a machine
    busy with the fault run's load makes it, plus Serve's replacement (noticing the death, placing the actor) and
    the clean window. Derived, so a slower machine gets a longer bound and a faster one a shorter."""
    return max(MIN_RECOVERY_S, LOADED_START_FACTOR * startup["total"] + REPLACEMENT_S)


async def fault_suite(url: str, dsn: str, app: str, questions: Sequence[str], *, tenant: str, clients: int,
                      baseline_s: float = 5.0, contenders: int = 8, rounds: int = 2,
                      max_recovery_s: float | None = None,
                      first: Sequence[Fault] = (), more: Sequence[Fault] = ()) -> tuple[FaultRun, Verdict]:
    """The whole run against a deployed app: a baseline under load, concurrent resumes, each of ``first`` (a node
    lost, while the replicas are where Serve spread them), each standard fault, then each of ``more`` (a PostgreSQL
    restart), each until the service is clean again, then the checks
    (:func:`~agentic_rag.loadtest.faults.judge`). ``max_recovery_s``: how long a fault may take to recover;
    unset, :func:`recovery_bound_s` of the Embedder's start as deployed."""
    deployed = await asyncio.to_thread(replica_startup, app)
    if max_recovery_s is None:
        max_recovery_s = recovery_bound_s(deployed)
    async with FaultRun(url, questions, tenant=tenant, clients=clients) as run:
        run.start()
        await run.baseline(baseline_s)
        for _ in range(rounds):
            await run.resume_race(contenders)
        for fault in [*first, *standard_faults(app, dsn), *more]:
            await run.fault(fault, max_s=max_recovery_s)
        await run.stop()
        # a run in flight ends by its deadline; one whose replica died is closed a lapse (and a beat) after it
        limit_s = max(FAULT_ARGS["agent_deadline_ms"] / 1000, RUNNER_LAPSE_S * 1.25) + 10
        # a run answers by its deadline plus the API's grace; the client's own bound is far above that
        verdict = await judge(run, dsn, sweep_limit_s=limit_s,
                              max_request_s=FAULT_ARGS["agent_deadline_ms"] / 1000 + REQUEST_GRACE_S)
    # the Embedder now serving is the replacement the fault started: where its start went, under the load
    replaced = await asyncio.to_thread(replica_startup, app)
    verdict.figures.update({"recovery_bound_s": round(max_recovery_s, 1),
                            "embedder_start_deployed": {k: round(v, 1) for k, v in deployed.items()},
                            "embedder_start_replaced": {k: round(v, 1) for k, v in replaced.items()}})
    return run, verdict
