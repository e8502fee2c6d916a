"""Faults under load (issue 15): the real Serve app while its dependencies fail, judged as a client would.

configs/local.yaml on a local Ray, with two Orchestrator replicas and a sweep that closes a dead replica's
runs within seconds (``FAULT_ARGS``), over the session's database and a copy of its Qdrant points. Twelve
clients keep asking the demo questions while an Orchestrator, a GraphRetriever and the Embedder replica
are killed, every PostgreSQL backend is terminated, and Qdrant goes down with the VectorRetriever replica
that embeds it; each fault lasts until the service is clean again. Clarifications are resumed by eight
callers at once. Then each check of :data:`~agentic_rag.loadtest.faults.CHECKS` is one test. The same run
with more clients and its figures: ``scripts/fault_suite.py`` (docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from agentic_rag.eval import load_demo_questions
from agentic_rag.loadtest.faults import CHECKS, FaultRun, Verdict, markdown
from agentic_rag.serve import launch
from agentic_rag.serve.faults import FAULT_ARGS, fault_config, fault_suite
from agentic_rag.settings import Settings

pytestmark = pytest.mark.integration

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "local.yaml"
CLIENTS = 12
FAULTS = 5


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def fault_run(serve_qdrant: Path, dsn: str, settings: Settings) -> tuple[FaultRun, Verdict]:
    """The app deployed, the faults injected under load, the checks made; Ray stopped again."""
    config = fault_config(launch.load_config(CONFIG, port=_free_port(), grpc_port=_free_port(), args={
        "database_url": dsn, "qdrant_path": str(serve_qdrant), "data_dir": str(settings.data_dir.resolve()),
        "log_level": "WARNING",
    }), orchestrators=2, args=FAULT_ARGS)
    questions = [q.question for q in load_demo_questions()]
    launch.start_ray(num_cpus=2, log_to_driver=False)
    try:
        launch.deploy(config)
        launch.wait_until_running(config, timeout_s=150)
        run, verdict = asyncio.run(fault_suite(launch.app_url(config), dsn, config.applications[0].name, questions,
                                               tenant="faults", clients=CLIENTS, baseline_s=4, contenders=8,
                                               rounds=2, max_recovery_s=45))
    finally:
        launch.shutdown()
    print(f"\n{markdown(run, verdict)}")
    return run, verdict


def test_every_fault_was_injected_and_the_service_recovered(fault_run: tuple[FaultRun, Verdict]) -> None:
    run, _ = fault_run
    faults = run.phases[1:]
    assert [p.name for p in faults][:3] == ["Orchestrator replica killed", "GraphRetriever replica killed",
                                            "Embedder replica killed"] and len(faults) == FAULTS
    for p in faults:
        assert p.recovered, f"{p.name}: not clean {p.recovery_s:.0f} s after it was injected"
    # under load: most clients had a request in flight when each fault struck, and each phase answered some
    # (how many a phase answers depends on how fast the machine is while it lasts: not a measure of load)
    for p in faults:
        in_flight = sum(1 for o in run.outcomes if o.started <= p.injected_at < o.ended)
        assert in_flight >= CLIENTS // 2, f"{p.name}: {in_flight} requests in flight when it was injected"
    assert all(p.outcomes for p in run.phases), [(p.name, len(p.outcomes)) for p in run.phases]
    # the faults bit: a killed Orchestrator replica had runs in flight, which its clients got as 503s
    assert any(o.status == 503 for o in faults[0].outcomes), [o.status for o in faults[0].outcomes]


@pytest.mark.parametrize("check", list(CHECKS))
def test_under_faults(fault_run: tuple[FaultRun, Verdict], check: str) -> None:
    _, verdict = fault_run
    assert not verdict.problems[check], f"{CHECKS[check]}:\n" + "\n".join(verdict.problems[check])
