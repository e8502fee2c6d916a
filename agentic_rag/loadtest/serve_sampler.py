"""The sampler process: replica counts from Ray Serve and runs in flight from ``/metrics``, every interval.

``python -m agentic_rag.loadtest.serve_sampler --out DIR --url URL [--ray-address auto] [--interval 1]``
appends one :class:`~agentic_rag.loadtest.records.ReplicaSample` per tick to ``DIR/replicas.jsonl`` and
says once, in ``DIR/sampler.json``, whether Serve could be read, until SIGTERM or SIGINT.

It is a process of its own because reading Serve means joining the Ray cluster as a driver
(``ray.init(address=...)`` then ``serve.status()``), which the command, let alone the gevent-patched
locust worker, should not do. With no cluster reachable it still samples ``/metrics``; replica counts
are then reported as unavailable, and the load test goes on.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from agentic_rag.loadtest.records import ReplicaSample

REPLICAS_FILE = "replicas.jsonl"
STATUS_FILE = "sampler.json"
RUNS_IN_FLIGHT = "agentic_rag_runs_in_flight"  # the gauge of deployments/http_metrics.py
NO_RAY = ("", "none", "off")

ReadReplicas = Callable[[], dict[str, dict[str, int]]]


def connect_serve(address: str) -> tuple[ReadReplicas | None, str | None]:
    """A function that reads replica counts from the Serve on the Ray cluster at ``address``, or why there is none."""
    if address.lower() in NO_RAY:
        return None, "replica sampling turned off (--ray-address none)"
    # Ray is imported here so that ``--ray-address none`` costs nothing; and as the launcher does, a
    # local single-user cluster is joined without token authentication unless the operator chose otherwise
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    try:
        import ray
        from ray import serve

        ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
    except Exception as exc:  # ConnectionError for no cluster; anything else is as fatal to sampling
        return None, f"no Ray cluster at {address!r}: {type(exc).__name__}: {str(exc)[:200]}"

    def read() -> dict[str, dict[str, int]]:
        apps = serve.status().applications
        out: dict[str, dict[str, int]] = {}
        for app_name, app in apps.items():
            for dep_name, dep in app.deployments.items():
                # deployment names are unique within an application; name them bare when there is one app
                key = dep_name if len(apps) == 1 else f"{app_name}:{dep_name}"
                out[key] = {str(getattr(state, "value", state)): int(n) for state, n in dep.replica_states.items()}
        return out

    return read, None


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


def sample_forever(out: Path, url: str | None, address: str, interval_s: float, stop: threading.Event) -> None:
    """Write a sample every ``interval_s`` until ``stop`` is set."""
    read, reason = connect_serve(address)
    (out / STATUS_FILE).write_text(json.dumps({"available": read is not None, "reason": reason}), encoding="utf-8")
    with httpx.Client(timeout=min(interval_s, 2.0)) as client, (out / REPLICAS_FILE).open("a") as f:
        while not stop.is_set():
            t = time.time()
            replicas = None
            if read is not None:
                try:
                    replicas = read()
                except Exception as exc:  # the cluster went away mid-test: a gap in the timeline, not a crash
                    logging.getLogger(__name__).warning("reading Serve failed: %s", exc)
            flight = runs_in_flight(client, url) if url else None
            f.write(ReplicaSample(t=t, replicas=replicas, runs_in_flight=flight).model_dump_json() + "\n")
            f.flush()
            stop.wait(max(0.0, interval_s - (time.time() - t)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="Directory for replicas.jsonl and sampler.json.")
    parser.add_argument("--url", help="The service's base URL, for /metrics.")
    parser.add_argument("--ray-address", default="auto", help="Ray cluster to read Serve from; 'none' turns it off.")
    parser.add_argument("--interval", type=float, default=1.0, help="Seconds between samples.")
    args = parser.parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    args.out.mkdir(parents=True, exist_ok=True)
    sample_forever(args.out, args.url, args.ray_address, args.interval, stop)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
