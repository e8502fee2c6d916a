"""The fault suite of issue 15 in full, against the configured catalog: faults under load, and the checks.

    .venv/bin/python scripts/fault_suite.py [--config configs/local.yaml] [--clients 16] [--orchestrators 2]

Starts a local Ray, deploys the config (two Orchestrator replicas, a short sweep: see
``agentic_rag.serve.faults.FAULT_ARGS``) over the configured database and Qdrant store (run
``agentic-rag ingest`` first), and keeps ``--clients`` clients asking the demo questions while it kills an
Orchestrator, a GraphRetriever and the Embedder replica, terminates every PostgreSQL backend, takes
the embedded Qdrant down with the VectorRetriever replica that holds it, restarts PostgreSQL (a server of
the run's own holding a copy of the database: ``--restart-postgres``), and first of all kills a worker node: Ray runs
as two nodes on this machine (``--nodes``; Ray's own ``cluster_utils.Cluster``), Serve spreads the replicas over them
(the Ingress stays with the proxy on the head), and the worker's raylet and every process on it are killed at
once. Prints one Markdown table (a row per fault: requests, status codes, degraded answers, recovery time), where
the replicas were before and after, and the checks; exits 1 if one failed.
The test suite runs a shorter form of the same (tests/integration/serve/test_faults.py).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

from agentic_rag.eval import load_demo_questions
from agentic_rag.loadtest.faults import markdown
from agentic_rag.loadtest.pgserver import PrivatePostgres
from agentic_rag.serve import launch
from agentic_rag.serve.faults import FAULT_ARGS, fault_config, fault_suite, node_lost, replicas_by_node
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import resolve_dsn


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, default=launch.DEFAULT_CONFIG)
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients (closed loop)")
    parser.add_argument("--orchestrators", type=int, default=2, help="Orchestrator replicas (2 or more)")
    parser.add_argument("--baseline", type=float, default=10.0, help="seconds of load before the first fault")
    parser.add_argument("--contenders", type=int, default=8, help="concurrent resumes of one clarification")
    parser.add_argument("--rounds", type=int, default=3, help="clarifications raced")
    parser.add_argument("--dump", type=Path, help="write every request and readiness probe here (JSON lines)")
    parser.add_argument("--restart-postgres", type=float, default=5.0, metavar="SECONDS",
                        help="last fault: PostgreSQL stopped for this long and started again. The app then runs on a "
                             "copy of the configured database, on a server of the run's own (in a temporary directory; "
                             "the configured server is never restarted). 0: no restart")
    parser.add_argument("--nodes", type=int, default=2,
                        help="Ray nodes on this machine; with 2 or more, the last fault kills a worker node. 1: a "
                             "plain local Ray, no node lost")
    parser.add_argument("--node-cpus", type=int, default=2, help="logical CPUs of each node")
    args = parser.parse_args()

    settings = Settings()
    dsn = resolve_dsn(settings)
    postgres: PrivatePostgres | None = None
    first, more = [], []
    if args.restart_postgres > 0:
        postgres = PrivatePostgres.temporary(settings.local_postgres_port + 1)
        postgres.start()
        dsn = postgres.copy_of(dsn, "agentic_rag_faults")
        more.append(postgres.restart(down_s=args.restart_postgres))
    config = fault_config(launch.load_config(args.config, args={"database_url": dsn, "log_level": "WARNING"}),
                          orchestrators=args.orchestrators, args=FAULT_ARGS, on_head=["Ingress"])
    apps = [a.name for a in config.applications]
    questions = [q.question for q in load_demo_questions()]
    t0 = time.perf_counter()
    cluster = None
    if args.nodes > 1:
        cluster = launch.start_cluster(nodes=args.nodes, num_cpus=args.node_cpus, log_to_driver=False)
        first.append(node_lost(cluster, apps)[0])
    else:
        launch.start_ray(log_to_driver=False)
    try:
        launch.deploy(config)
        launch.wait_until_running(config, timeout_s=300)
        print(f"deployed in {time.perf_counter() - t0:.1f} s; {args.clients} clients, {args.orchestrators} "
              f"Orchestrator replicas; replicas by node: {replicas_by_node(apps)}", file=sys.stderr)
        t1 = time.perf_counter()
        run, verdict = asyncio.run(fault_suite(
            launch.app_url(config), dsn, config.applications[0].name, questions, tenant=f"faults-{int(time.time())}",
            clients=args.clients, baseline_s=args.baseline, contenders=args.contenders, rounds=args.rounds,
            first=first, more=more))
        print(f"replicas by node after the faults: {replicas_by_node(apps)}", file=sys.stderr)
    finally:
        launch.shutdown()
        if cluster is not None:
            cluster.shutdown()
        if postgres is not None:
            postgres.remove()
    if args.dump:
        run.dump(args.dump)
    print(markdown(run, verdict))
    print(f"\nfault run {time.perf_counter() - t1:.0f} s, {time.perf_counter() - t0:.0f} s with Ray's start and stop",
          file=sys.stderr)
    return 1 if any(verdict.problems.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
