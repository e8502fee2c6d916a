"""The cost of a conversation's history: the in-process latency of a follow-up turn beside a first turn.

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/bench_conversation.py --rounds 20

Each round runs the same five-turn conversation (a first question, then follow-ups that lean on it: a pronoun, a
question with no subject, a fragment, a place in a list), each turn sent with the conversation id the first
returned, and, interleaved with it, each turn's standalone question asked alone (a first turn: no claim, no
card, no follow-up reading). Times are wall-clock around the call (the conversation's claim and the turn's write
included). Prints p50 and p95 per turn, and the ratio of turn 5 to its own question asked alone.
Run on the demo catalog with the heuristic models.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid

from agentic_rag.cli._app import load_settings, with_dev_database
from agentic_rag.orchestrator.runtime import open_runtime

CONVERSATION = (
    ("who directed Death Note?", "who directed Death Note?"),
    ("what else did he direct?", "what else did Tetsurō Araki direct?"),
    ("how many episodes?", "how many episodes of Death Note?"),
    ("and the manga?", "how many episodes of Death Note manga?"),
    ("is it finished?", "is Death Note finished?"),
)


def p(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    settings = await asyncio.to_thread(with_dev_database, load_settings())
    async with open_runtime(settings) as rt:
        o = rt.orchestrator
        followed: list[list[float]] = [[] for _ in CONVERSATION]
        alone: list[list[float]] = [[] for _ in CONVERSATION]
        for round_ in range(args.rounds + 1):  # the first round warms up
            conversation: uuid.UUID | None = None
            for i, (asked, standalone) in enumerate(CONVERSATION):
                t0 = time.perf_counter()
                await o.run(standalone, tenant="bench")
                t1 = time.perf_counter()
                turn = await o.run(asked, tenant="bench", conversation_id=conversation)
                t2 = time.perf_counter()
                conversation = turn.conversation_id
                if round_:  # wall-clock around the call: the claim and the turn's write included
                    alone[i].append((t1 - t0) * 1000)
                    followed[i].append((t2 - t1) * 1000)
    print(f"{args.rounds} rounds, in-process, demo catalog, heuristic models\n")
    print("| turn | asked | p50 ms (turn) | p50 ms (alone) | p95 ms (turn) | p95 ms (alone) |")
    print("|---:|---|---:|---:|---:|---:|")
    for i, (asked, _) in enumerate(CONVERSATION):
        print(f"| {i + 1} | {asked} | {statistics.median(followed[i]):.1f} | {statistics.median(alone[i]):.1f} | "
              f"{p(followed[i], 0.95):.1f} | {p(alone[i], 0.95):.1f} |")
    fifth, first = statistics.median(followed[-1]), statistics.median(followed[0])
    print(f"\nturn 5 p50 / its question alone p50: {fifth / statistics.median(alone[-1]):.2f}x; "
          f"turn 5 p50 / turn 1 p50: {fifth / first:.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
