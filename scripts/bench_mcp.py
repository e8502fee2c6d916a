"""``ask`` over MCP against ``POST /v1/search_ai``, on one served app, alternating (issue 40).

    .venv/bin/python scripts/bench_mcp.py [--config configs/local.yaml] [--concurrency 1,32] [--rounds 2]

On the catalog of the configured database (run ``agentic-rag ingest`` first). Ray starts, the config is deployed,
and the demo eval set's questions go through both doors of the same app at each concurrency, the doors taking turns
(rounds x door, so drift on a noisy machine falls on both): over HTTP, one JSON request a question on a shared
connection pool; over MCP, the official SDK's client on streamable HTTP (``/mcp``), one session a worker (as an
agent keeps its session), each question one ``tools/call`` of ``ask``. Prints one Markdown table: p50 and p95 per
door and concurrency, and the MCP/HTTP ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from agentic_rag.api.mcp import MCP_PATH
from agentic_rag.eval import load_demo_questions
from agentic_rag.eval.metrics import percentile
from agentic_rag.serve import launch


async def _http(url: str, questions: list[str], concurrency: int) -> list[float]:
    todo = list(reversed(questions))
    took: list[float] = []
    async with httpx.AsyncClient(base_url=url, timeout=120,
                                 limits=httpx.Limits(max_connections=concurrency)) as http:
        async def worker() -> None:
            while todo:
                question = todo.pop()
                t0 = time.perf_counter()
                r = await http.post("/v1/search_ai", json={"question": question})
                r.raise_for_status()
                took.append((time.perf_counter() - t0) * 1000)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return took


async def _mcp(url: str, questions: list[str], concurrency: int) -> list[float]:
    todo = list(reversed(questions))
    took: list[float] = []

    async def worker() -> None:
        async with streamable_http_client(f"{url}{MCP_PATH}") as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            while todo:
                question = todo.pop()
                t0 = time.perf_counter()
                result = await session.call_tool("ask", {"question": question})
                if result.is_error:
                    raise RuntimeError(f"ask failed: {result.content}")
                took.append((time.perf_counter() - t0) * 1000)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=launch.DEFAULT_CONFIG)
    parser.add_argument("--concurrency", default="1,32")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    levels = [int(c) for c in args.concurrency.split(",")]
    questions = [q.question for q in load_demo_questions()]
    launch.start_ray()
    config = launch.load_config(args.config)
    try:
        launch.deploy(config)
        launch.wait_until_running(config)
        url = launch.app_url(config)
        asyncio.run(_http(url, questions[:8], 4))  # warm both doors
        asyncio.run(_mcp(url, questions[:8], 4))
        samples: dict[tuple[str, int], list[float]] = {}
        for concurrency in levels:
            for _ in range(args.rounds):
                for door, run in (("HTTP /v1/search_ai", _http), ("MCP ask", _mcp)):
                    took = asyncio.run(run(url, questions, concurrency))
                    samples.setdefault((door, concurrency), []).extend(took)
                    print(f"{door} c={concurrency}: {len(took)} in, p50 {percentile(took, 50):.0f} ms", flush=True)
    finally:
        launch.shutdown()
    print("\n| concurrency | door | runs | p50 ms | p95 ms | MCP / HTTP p50 | p95 |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for concurrency in levels:
        http_s, mcp_s = samples[("HTTP /v1/search_ai", concurrency)], samples[("MCP ask", concurrency)]
        for door, got in (("HTTP /v1/search_ai", http_s), ("MCP ask", mcp_s)):
            ratio = (f"{(percentile(mcp_s, 50) or 0) / (percentile(http_s, 50) or 1):.2f}x | "
                     f"{(percentile(mcp_s, 95) or 0) / (percentile(http_s, 95) or 1):.2f}x"
                     if door == "MCP ask" else " | ")
            print(f"| {concurrency} | {door} | {len(got)} | {percentile(got, 50):.0f} | {percentile(got, 95):.0f} | "
                  f"{ratio} |")


if __name__ == "__main__":
    main()
