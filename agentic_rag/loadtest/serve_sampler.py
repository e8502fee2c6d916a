"""The sampler process: replica counts from Ray Serve and runs in flight from ``/metrics``, every interval.

``python -m agentic_rag.loadtest.serve_sampler --out DIR --url URL [--ray-address auto] [--interval 1]``
appends one :class:`~agentic_rag.loadtest.records.ReplicaSample` per tick to ``DIR/replicas.jsonl`` and
says once, in ``DIR/sampler.json``, whether Serve could be read, until SIGINT or SIGTERM. Every
``--latency-every`` ticks it also reads Serve's own per-replica processing-latency counters from each
node's metrics export (Ray's Prometheus endpoint), which give each deployment's latency per step,
the Embedder's included (a run's trajectory times the retrieval that embeds, not the embedding).

It is a process of its own because reading Serve means joining the Ray cluster as a driver
(``ray.init(address=...)`` then ``serve.status()``), which the command, let alone the gevent-patched
locust worker, should not do. With no cluster reachable it still samples ``/metrics``; replica counts
are then reported as unavailable, and the load test goes on.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from prometheus_client.parser import text_string_to_metric_families

from agentic_rag.dsn import to_url
from agentic_rag.loadtest.records import ReplicaSample

REPLICAS_FILE = "replicas.jsonl"
STATUS_FILE = "sampler.json"
RUNS_IN_FLIGHT = "agentic_rag_runs_in_flight"  # the gauge of api/http/metrics.py
SERVE_LATENCY = "ray_serve_deployment_processing_latency_ms"  # a histogram, per replica and route
NO_RAY = ("", "none", "off")
REPLICA_PREFIX = "SERVE_REPLICA::"
DB_SQL = """SELECT (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()),
                   (SELECT count(*) FROM trajectories)"""
ERROR_CHARS = 200  # characters of the error a status line gives when no Ray cluster answers

ReadReplicas = Callable[[], dict[str, dict[str, int]]]
ReadUrls = Callable[[], list[str]]


def serve_processes() -> dict[str, list[int]]:
    """The pids of Serve's processes by what they serve: each deployment's replicas, the controller, the proxy.
    Read from the GCS actor table (Ray's state API needs the dashboard, which a small machine runs without)."""
    from ray._private import state as ray_state

    out: dict[str, list[int]] = {}
    for actor in ray_state.actors().values():
        name, pid = str(actor.get("Name") or ""), actor.get("Pid")
        if actor.get("State") != "ALIVE" or not pid:
            continue
        if name.startswith(REPLICA_PREFIX):  # SERVE_REPLICA::<app>#<deployment>#<replica>
            what = name.split("#")[1] if name.count("#") == 2 else name
        elif name == "SERVE_CONTROLLER_ACTOR":
            what = "controller"
        elif name.startswith("SERVE_PROXY_ACTOR"):
            what = "proxy"
        else:
            continue
        out.setdefault(what, []).append(int(pid))
    return out


def process_usage(pids: dict[str, list[int]]) -> tuple[dict[str, float], dict[str, int]]:
    """Resident memory (MB) and open file descriptors of each group's processes, from /proc: the processes on this
    machine (a process of another node, or gone since, counts nothing)."""
    memory: dict[str, float] = {}
    fds: dict[str, int] = {}
    for what, group in pids.items():
        for pid in group:
            try:
                status = Path(f"/proc/{pid}/status").read_text()
                rss_kb = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
                count = len(os.listdir(f"/proc/{pid}/fd"))
            except (OSError, StopIteration, ValueError):
                continue
            memory[what] = memory.get(what, 0.0) + rss_kb / 1024
            fds[what] = fds.get(what, 0) + count
    return memory, fds


class Database:
    """The app's database as the sampler reads it: its connections and trajectory rows (one short query each)."""

    def __init__(self, dsn: str) -> None:
        self._dsn = dsn
        self._loop = asyncio.new_event_loop()
        self._conn: Any = None

    def read(self) -> tuple[int | None, int | None]:
        try:
            return self._loop.run_until_complete(self._read())
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError):
            self._conn = None  # reconnect at the next tick
            return None, None

    async def _read(self) -> tuple[int | None, int | None]:
        if self._conn is None:
            self._conn = await asyncpg.connect(to_url(self._dsn), timeout=2)
        row = await self._conn.fetchrow(DB_SQL, timeout=2)
        return int(row[0]), int(row[1])

    def close(self) -> None:
        if self._conn is not None:
            self._loop.run_until_complete(self._conn.close())
        self._loop.close()


def connect_serve(address: str) -> tuple[ReadReplicas | None, ReadUrls, str | None]:
    """Functions that read replica counts from the Serve on the Ray cluster at ``address`` and list its nodes'
    metrics endpoints; or why there are none."""
    if address.lower() in NO_RAY:
        return None, list, "replica sampling turned off (--ray-address none)"
    # Ray is imported here so that ``--ray-address none`` costs nothing; and as the launcher does, a
    # local single-user cluster is joined without token authentication unless the operator chose otherwise
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    try:
        import ray
        from ray import serve

        ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
    except Exception as exc:  # ConnectionError for no cluster; anything else is as fatal to sampling
        return None, list, f"no Ray cluster at {address!r}: {type(exc).__name__}: {str(exc)[:ERROR_CHARS]}"

    def read() -> dict[str, dict[str, int]]:
        apps = serve.status().applications
        out: dict[str, dict[str, int]] = {}
        for app_name, app in apps.items():
            for dep_name, dep in app.deployments.items():
                # deployment names are unique within an application; name them bare when there is one app
                key = dep_name if len(apps) == 1 else f"{app_name}:{dep_name}"
                out[key] = {str(getattr(state, "value", state)): int(n) for state, n in dep.replica_states.items()}
        return out

    def metrics_urls() -> list[str]:
        return [f"http://{n['NodeManagerAddress']}:{n['MetricsExportPort']}/metrics" for n in ray.nodes()
                if n.get("Alive") and n.get("MetricsExportPort")]

    return read, metrics_urls, None


def runs_in_flight(client: httpx.Client, url: str) -> float | None:
    """The runs-in-flight gauge of the ingress that answers this scrape (one replica's, when there are several)."""
    try:
        reply = client.get(f"{url.rstrip('/')}/metrics")
        reply.raise_for_status()
        for family in text_string_to_metric_families(reply.text):
            if family.name == RUNS_IN_FLIGHT:
                return sum(s.value for s in family.samples)
    except (httpx.HTTPError, ValueError):
        return None
    return None


def serve_latency(client: httpx.Client, urls: list[str]) -> dict[str, dict[str, list[float]]] | None:
    """Serve's processing-latency counters: deployment -> replica -> [sum of ms, requests], since each replica began."""
    out: dict[str, dict[str, list[float]]] = {}
    wanted = (f"{SERVE_LATENCY}_sum{{", f"{SERVE_LATENCY}_count{{")
    try:
        for url in urls:
            # a node's export is megabytes of every Ray metric: parse only the two series read here
            text = "\n".join(line for line in client.get(url).text.splitlines() if line.startswith(wanted))
            for family in text_string_to_metric_families(text):
                for s in family.samples:
                    deployment, replica = s.labels.get("deployment"), s.labels.get("replica")
                    if not deployment or not replica:
                        continue
                    pair = out.setdefault(deployment, {}).setdefault(replica, [0.0, 0.0])
                    pair[0 if s.name.endswith("_sum") else 1] += s.value  # summed over the replica's routes
    except (httpx.HTTPError, ValueError):
        return None
    return out or None


def sample_forever(out: Path, url: str | None, address: str, interval_s: float, stop: threading.Event,
                   latency_every: int = 5, dsn: str | None = None) -> None:
    """Write a sample every ``interval_s`` until ``stop`` is set."""
    read, metrics_urls, reason = connect_serve(address)
    database = Database(dsn) if dsn else None
    (out / STATUS_FILE).write_text(json.dumps({"available": read is not None, "reason": reason}), encoding="utf-8")
    with httpx.Client(timeout=min(interval_s, 2.0)) as client, (out / REPLICAS_FILE).open("a") as f:
        for tick in itertools.count():
            if stop.is_set():
                break
            t = time.time()
            replicas = latency = memory = fds = None
            if read is not None:
                try:
                    replicas = read()
                    if tick % latency_every == 0:
                        latency = serve_latency(client, metrics_urls())
                        memory, fds = process_usage(serve_processes())
                except Exception as exc:  # the cluster went away mid-test: a gap in the timeline, not a crash
                    logging.getLogger(__name__).warning("reading Serve failed: %s", exc)
            connections, trajectories = (database.read() if database is not None and tick % latency_every == 0
                                         else (None, None))
            flight = runs_in_flight(client, url) if url else None
            sample = ReplicaSample(t=t, replicas=replicas, runs_in_flight=flight, serve_latency=latency,
                                   memory_mb=memory or None, open_fds=fds or None, db_connections=connections,
                                   trajectories=trajectories)
            f.write(sample.model_dump_json(exclude_none=True) + "\n")
            f.flush()
            stop.wait(max(0.0, interval_s - (time.time() - t)))
    if database is not None:
        database.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="Directory for replicas.jsonl and sampler.json.")
    parser.add_argument("--url", help="The service's base URL, for /metrics.")
    parser.add_argument("--ray-address", default="auto", help="Ray cluster to read Serve from; 'none' turns it off.")
    parser.add_argument("--interval", type=float, default=1.0, help="Seconds between samples.")
    parser.add_argument("--latency-every", type=int, default=5,
                        help="Read Serve's latency counters, processes and database every N samples.")
    parser.add_argument("--dsn", help="The app's database: its connections and trajectory rows are sampled too.")
    args = parser.parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    args.out.mkdir(parents=True, exist_ok=True)
    sample_forever(args.out, args.url, args.ray_address, args.interval, stop, max(args.latency_every, 1),
                   args.dsn)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
