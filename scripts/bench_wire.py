"""What a value costs to cross a deployment handle: our JSON envelope against a pickled pydantic object.

    .venv/bin/python scripts/bench_wire.py [--question "..."] [--repeat 2000]

Runs one question in-process (``open_runtime``; run ``agentic-rag ingest`` first) to get a real run
reply, then times the two ways it could travel from the Orchestrator to the Ingress, each including
what Ray does to it (pickle, unpickle) and what the receiver does (validate): the envelope the
deployments use (``wire.ok``: ``to_jsonable_python``, then ``Reply`` and ``RunReply`` validation) and
the ``RunReply`` object itself (cloudpickle, as Ray pickles a pydantic model). Compare the figures with
a hop's own cost in ``scripts/bench_serve.py``'s cost account.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pickle
import time
from collections.abc import Callable

import ray.cloudpickle as cloudpickle
from pydantic_core import to_json

from agentic_rag.orchestrator.runtime import open_runtime
from agentic_rag.serve.wire import Reply, RunReply, ok
from agentic_rag.settings import Settings


async def one_reply(question: str) -> RunReply:
    async with open_runtime(Settings()) as rt:
        return RunReply.of(await rt.orchestrator.run(question, tenant="bench"))


def per_call_ms(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - t0) / repeat * 1000


def main(question: str, repeat: int) -> None:
    reply = asyncio.run(one_reply(question))

    def envelope() -> RunReply:
        raw = pickle.loads(pickle.dumps(ok(reply)))
        return RunReply.model_validate(Reply.model_validate(raw).value)

    def as_object() -> RunReply:
        raw = pickle.loads(cloudpickle.dumps({"value": reply}))
        return RunReply.model_validate(Reply.model_validate(raw).value)

    assert envelope() == reply == as_object()
    size = len(to_json(reply))
    print(f"a run reply of {size} JSON bytes ({question!r}), {repeat} times each:\n")
    print("| how it crosses | ms per hop | bytes on the wire |")
    print("|---|---:|---:|")
    print(f"| JSON envelope (wire.ok), validated on arrival | {per_call_ms(envelope, repeat):.3f} | "
          f"{len(pickle.dumps(ok(reply)))} |")
    print(f"| pickled RunReply object | {per_call_ms(as_object, repeat):.3f} | "
          f"{len(cloudpickle.dumps({'value': reply}))} |")


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--question", default="who are the characters in One Piece")
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()
    main(args.question, args.repeat)
