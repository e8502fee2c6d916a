"""The KubeRay manifests: valid against the RayService CRD, and serving exactly configs/gpu.yaml."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from ray.serve.schema import ServeDeploySchema

REPO = Path(__file__).resolve().parents[3]
K8S = REPO / "k8s"
CRD = REPO.parent / "shared" / "kuberay" / "ray.io_rayservices.yaml"


def load(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((K8S / name).read_text(encoding="utf-8")) if d]


def rayservice() -> dict[str, Any]:
    (doc,) = load("rayservice.yaml")
    return doc


def test_rayservice_is_generated_from_the_gpu_config() -> None:
    spec = importlib.util.spec_from_file_location("render", REPO / "scripts" / "render_rayservice.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.render() == (K8S / "rayservice.yaml").read_text(encoding="utf-8"), \
        "k8s/rayservice.yaml is stale: run scripts/render_rayservice.py"
    serve = yaml.safe_load(rayservice()["spec"]["serveConfigV2"])
    assert serve == yaml.safe_load((REPO / "configs" / "gpu.yaml").read_text(encoding="utf-8"))
    ServeDeploySchema.model_validate(serve)


@pytest.mark.skipif(not CRD.exists(), reason="the KubeRay CRD is not in ../shared/kuberay")
def test_rayservice_matches_the_crd_schema() -> None:
    crd = yaml.safe_load(CRD.read_text(encoding="utf-8"))
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")
    schema = version["schema"]["openAPIV3Schema"]
    doc = rayservice()
    jsonschema.validate(doc, schema)
    groups = {g["groupName"]: g for g in doc["spec"]["rayClusterConfig"]["workerGroupSpecs"]}
    assert set(groups) == {"cpu", "gpu"}
    gpu = groups["gpu"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert gpu["nvidia.com/gpu"] == "1"
    assert doc["spec"]["rayClusterConfig"]["enableInTreeAutoscaling"] is True
    # a wrong field is caught: the check is not vacuous
    bad = {**doc, "spec": {**doc["spec"], "rayClusterConfig": {**doc["spec"]["rayClusterConfig"],
                                                                 "enableInTreeAutoscaling": "yes"}}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_the_services_it_needs_are_there() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text(encoding="utf-8"))
    for resource in kustomization["resources"]:
        assert (K8S / resource).is_file(), resource
    kinds = {(d["kind"], d["metadata"]["name"]) for name in kustomization["resources"] for d in load(name)}
    assert {("Service", "agentic-rag-postgres"), ("StatefulSet", "agentic-rag-postgres"),
            ("Service", "agentic-rag-qdrant"), ("StatefulSet", "agentic-rag-qdrant"),
            ("PersistentVolumeClaim", "agentic-rag-models"), ("RayService", "agentic-rag"),
            ("CronJob", "agentic-rag-prune")} <= kinds
    # every secret key the manifests read is in the example secret
    (secret,) = load("secrets.example.yaml")
    text = "".join((K8S / n).read_text(encoding="utf-8") for n in kustomization["resources"])
    for key in ("database-url", "qdrant-api-key", "postgres-password"):
        assert key in secret["stringData"] and key in text
    dockerfile = (K8S / "Dockerfile").read_text(encoding="utf-8")
    assert "FROM rayproject/ray:2.60.0" in dockerfile


def test_the_image_builds_on_the_cuda_and_the_vllm_that_the_extra_pins() -> None:
    # vLLM 0.33.0's wheel links CUDA 13 and pins torch 2.14.0 (CUDA 13): a CUDA 12 base installs it and then fails
    dockerfile = (K8S / "Dockerfile").read_text(encoding="utf-8")
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    (pin,) = pyproject["project"]["optional-dependencies"]["vllm"]
    assert pin == "vllm==0.33.0"
    assert f'pip install --no-cache-dir "{pin}"' in dockerfile
    (base,) = [line.split()[1] for line in dockerfile.splitlines() if line.startswith("FROM ")]
    assert base.endswith("-cu130") and "-py312-" in base  # Ray's CUDA 13.0 images are built for Python 3.12


def test_the_pods_run_serve_in_the_environment_agentic_rag_serve_sets() -> None:
    from agentic_rag.serve.launch import SERVE_ENV

    (service,) = [d for d in load("rayservice.yaml") if d["kind"] == "RayService"]
    cluster = service["spec"]["rayClusterConfig"]
    pods = [cluster["headGroupSpec"], *cluster["workerGroupSpecs"]]
    for pod in pods:
        (container,) = [c for c in pod["template"]["spec"]["containers"] if c["name"].startswith("ray-")]
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert {k: env.get(k) for k in SERVE_ENV} == SERVE_ENV


def test_every_pod_exports_its_spans_to_a_collector_beside_it() -> None:
    from agentic_rag import tracing

    (service,) = [d for d in load("rayservice.yaml") if d["kind"] == "RayService"]
    serve_config = yaml.safe_load(service["spec"]["serveConfigV2"])
    assert serve_config["tracing_config"]["enabled"] is True
    assert serve_config["tracing_config"]["exporter_import_path"] == tracing.SERVE_EXPORTER
    assert 0 < serve_config["tracing_config"]["sampling_ratio"] <= 1
    (collector_config,) = load("otel-collector.yaml")
    assert (collector_config["kind"], "otel-collector.yaml") == ("ConfigMap", "otel-collector.yaml")
    pipeline = yaml.safe_load(collector_config["data"]["collector.yaml"])["service"]["pipelines"]["traces"]
    assert pipeline["receivers"] == ["otlp"] and pipeline["exporters"]
    cluster = service["spec"]["rayClusterConfig"]
    for pod in [cluster["headGroupSpec"], *cluster["workerGroupSpecs"]]:
        spec = pod["template"]["spec"]
        ray = next(c for c in spec["containers"] if c["name"].startswith("ray-"))
        env = {e["name"]: e.get("value") for e in ray["env"]}
        assert tracing.endpoint(env) == "http://localhost:4318"  # the sidecar's OTLP/HTTP receiver
        sidecar = next(c for c in spec["containers"] if c["name"] == "otel-collector")
        (mount,) = sidecar["volumeMounts"]
        volume = next(v for v in spec["volumes"] if v["name"] == mount["name"])
        assert volume["configMap"]["name"] == collector_config["metadata"]["name"]
        assert "--config=/conf/collector.yaml" in sidecar["args"] and mount["mountPath"] == "/conf"


def test_a_cronjob_prunes_daily_with_the_rayservice_image_and_database() -> None:
    import typer.main

    from agentic_rag.cli import app
    from agentic_rag.settings import Settings

    (job,) = load("prune-cronjob.yaml")
    assert (job["apiVersion"], job["kind"]) == ("batch/v1", "CronJob")
    spec = job["spec"]
    minute, hour, *every = spec["schedule"].split()
    assert minute.isdigit() and hour.isdigit() and every == ["*", "*", "*"]  # once a day
    assert spec["concurrencyPolicy"] == "Forbid"  # never two prunes at once
    pod = spec["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["restartPolicy"] in ("Never", "OnFailure")
    (container,) = pod["containers"]
    (head, _collector) = rayservice()["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"]
    assert container["image"] == head["image"]
    env = {e["name"]: e for e in container["env"]}
    assert env["RAG_DATABASE_URL"] == next(e for e in head["env"] if e["name"] == "RAG_DATABASE_URL")
    # what it runs is the command line's own prune, with options it has and a retention the settings accept
    program, name, *args = [*container["command"], *container.get("args", [])]
    assert (program, name) == ("agentic-rag", "prune")
    typer.main.get_command(app).commands["prune"].make_context("prune", list(args))  # type: ignore[attr-defined]
    retention = env["RAG_TRAJECTORY_RETENTION"]["value"]
    assert Settings(trajectory_retention=retention).trajectory_retention.days == 30
