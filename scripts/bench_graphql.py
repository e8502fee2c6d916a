"""searchAi through the GraphQL backend against POST /v1/search_ai, on the same Serve deployment, in one run.

    .venv/bin/python scripts/bench_graphql.py [--config configs/local.yaml] [--concurrency 1,32] [--rounds 2]

Deploys the config (both applications: the agent's and the GraphQL backend) on a local Ray, then asks the
questions of the demo eval set at each concurrency, alternating the two paths round by round so that both see
the same machine: the HTTP API's ``/v1/search_ai`` (what a direct client pays), and the backend's ``searchAi``
(GraphQL parsing and limits, a gRPC call through Serve's gRPC proxy to the same Ingress, and the result
entities hydrated with their names by its DataLoaders). Prints p50/p95 per path and concurrency and the ratio,
with how the runs ended on each path.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

from agentic_rag.eval import load_demo_questions
from agentic_rag.eval.metrics import percentile
from agentic_rag.serve import launch

SEARCH_AI = """query ($q: String!) { searchAi(question: $q) {
    status answer trajectoryId resultEntities { id entityType name } } }"""
Ask = Callable[[str], Awaitable[str]]


async def batch(ask: Ask, questions: list[str], concurrency: int) -> tuple[list[float], dict[str, int]]:
    """Each question's client time (ms) with ``concurrency`` in flight (closed loop), and how the runs ended."""
    gate = asyncio.Semaphore(concurrency)
    times: list[float] = []
    ended: dict[str, int] = {}

    async def one(q: str) -> None:
        async with gate:
            t0 = time.perf_counter()
            status = await ask(q)
            times.append((time.perf_counter() - t0) * 1000)
            ended[status] = ended.get(status, 0) + 1

    await asyncio.gather(*(one(q) for q in questions))
    return times, ended


async def measure(url: str, graphql_url: str, questions: list[str], levels: list[int],
                  rounds: int) -> dict[tuple[str, int], tuple[list[float], dict[str, int]]]:
    limits = httpx.Limits(max_connections=max(levels) + 8)
    async with httpx.AsyncClient(timeout=120.0, limits=limits) as client:
        async def rest(q: str) -> str:
            r = await client.post(f"{url}/v1/search_ai", json={"question": q}, headers={"X-Tenant": "bench"})
            r.raise_for_status()
            return str(r.json()["status"])

        async def graphql(q: str) -> str:
            r = await client.post(graphql_url, json={"query": SEARCH_AI, "variables": {"q": q}},
                                  headers={"X-Tenant": "bench"})
            r.raise_for_status()
            body = r.json()
            if body.get("errors"):
                return f"error: {body['errors'][0].get('extensions', {}).get('code', 'unknown')}"
            return str(body["data"]["searchAi"]["status"]).lower()

        paths: dict[str, Ask] = {"/v1/search_ai": rest, "GraphQL searchAi": graphql}
        for ask in paths.values():  # warm-up, excluded: connections, first hydrations
            await batch(ask, questions[:8], 4)
        out: dict[tuple[str, int], tuple[list[float], dict[str, int]]] = {}
        for c in levels:
            for _ in range(rounds):
                for name, ask in paths.items():
                    times, ended = await batch(ask, questions, c)
                    prev_times, prev_ended = out.get((name, c), ([], {}))
                    out[(name, c)] = (prev_times + times,
                                      {k: prev_ended.get(k, 0) + ended.get(k, 0) for k in {*prev_ended, *ended}})
        return out


def main(config: Path, levels: list[int], rounds: int) -> None:
    questions = [q.question for q in load_demo_questions()]
    cfg = launch.load_config(config)
    url, playground = launch.app_url(cfg), launch.playground_url(cfg)
    if playground is None:
        raise SystemExit(f"{config} does not deploy the GraphQL backend (agentic_rag.serve.graphql)")
    graphql_url = playground.removesuffix("/playground/")
    launch.start_ray()
    try:
        launch.deploy(cfg)
        launch.wait_until_running(cfg, timeout_s=600)
        results = asyncio.run(measure(url, graphql_url, questions, levels, rounds))
    finally:
        launch.shutdown()
    print(f"\n{len(questions)} questions x {rounds} round(s) per path and concurrency, paths alternating\n")
    print("| concurrency | path | runs | p50 ms | p95 ms | mean ms | ratio p50 / p95 | how the runs ended |")
    print("|---:|---|---:|---:|---:|---:|---:|---|")
    for c in levels:
        base = results[("/v1/search_ai", c)][0]
        for name in ("/v1/search_ai", "GraphQL searchAi"):
            times, ended = results[(name, c)]
            p50, p95 = percentile(times, 50) or 0.0, percentile(times, 95) or 0.0
            ratio = f"{p50 / (percentile(base, 50) or 1):.2f}x / {p95 / (percentile(base, 95) or 1):.2f}x"
            print(f"| {c} | {name} | {len(times)} | {p50:.0f} | {p95:.0f} | {statistics.fmean(times):.0f} | "
                  f"{ratio} | {', '.join(f'{k} {v}' for k, v in sorted(ended.items()))} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=Path("configs/local.yaml"))
    parser.add_argument("--concurrency", default="1,32", help="comma-separated levels")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    main(args.config, [int(c) for c in args.concurrency.split(",")], args.rounds)
