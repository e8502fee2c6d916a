"""Model-layer throughput: the tiny transformers model constrained vs unconstrained, and the embedder.

    .venv/bin/python scripts/bench_models.py --n 20

Builds (or reuses) the tiny random Qwen2 model of tests/support/tiny.py under .data/test-models,
then times, in one run and with the same prompts and seeds: structured generation through
``StructuredGenerator`` with outlines constraints, and the same calls unconstrained. Then the
embedding model (``Embedder(Settings())``) on the same texts at several batch sizes. Prints a
markdown table. The tiny model's numbers measure the machinery (prompt rendering, the outlines mask,
``generate``), not a real model's speed.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import sys
import time
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel

from agentic_rag.models.base import CallShape, Completion, GenerationError, Message, StructuredGenerator, schema_for
from agentic_rag.models.embeddings import Embedder
from agentic_rag.models.transformers_backend import TransformersBackend
from agentic_rag.protocol import NextStep, QueryRewrite
from agentic_rag.settings import Settings

REPO = Path(__file__).resolve().parents[1]


def tiny_model_dir() -> Path:
    sys.path.insert(0, str(REPO))  # the tests' helpers, importable as tests.support
    from tests.support.tiny import build_tiny_model

    return Path(build_tiny_model(REPO / ".data" / "test-models"))


def messages(output_type: type[BaseModel], i: int) -> list[Message]:
    return [
        {"role": "system", "content": f"Reply with one {output_type.__name__} JSON object."},
        {"role": "user", "content": f"Question {i}: which anime did studio {i} animate after {1990 + i}?"},
    ]


class Counting:
    """Sums the completion tokens of every call, valid or not."""

    def __init__(self, inner: TransformersBackend) -> None:
        self.inner = inner
        self.name = inner.name
        self.tokens = 0
        self.calls = 0

    async def complete(self, messages: list[Message], schema: dict[str, Any] | None, *, max_tokens: int,
                       temperature: float, calibration: list[Message] | None = None) -> Completion:
        done = await self.inner.complete(messages, schema, max_tokens=max_tokens, temperature=temperature,
                                            calibration=calibration)
        self.tokens += done.completion_tokens
        self.calls += 1
        return done


async def generation_rows(backend: TransformersBackend, n: int, max_tokens: int) -> list[list[str]]:
    attempts = Settings().generation_max_attempts
    rows = []
    # warm up torch and outlines' masking kernel (compiled on first use), so that the first call
    # per schema below measures the index build
    await backend.complete(messages(QueryRewrite, -1), {"type": "boolean"}, max_tokens=8, temperature=1.0)
    for output_type in (QueryRewrite, NextStep):
        t0 = time.perf_counter()  # the first constrained call builds the outlines index for the schema
        await backend.complete(messages(output_type, -1), schema_for(output_type), max_tokens=8, temperature=0.0)
        build_s = time.perf_counter() - t0
        for constrained in (True, False):
            counting = Counting(backend)
            generator = StructuredGenerator(counting, max_attempts=attempts, constrained=constrained)
            valid = 0
            t0 = time.perf_counter()
            for i in range(n):
                torch.manual_seed(i)
                try:
                    await generator.generate_shaped(CallShape(messages=messages(output_type, i),
                                                              schema=schema_for(output_type)), output_type,
                                                    max_tokens=max_tokens, temperature=1.0)
                except GenerationError:
                    continue
                valid += 1
            elapsed = time.perf_counter() - t0
            tokens = counting.tokens
            per_valid = f"{elapsed / valid * 1000:.0f} ms" if valid else "no valid object"
            rows.append([
                f"tiny model, {output_type.__name__}, {'constrained' if constrained else 'unconstrained'}",
                f"{n}", f"{valid}/{n}", per_valid, f"{tokens / elapsed:.0f} tok/s",
                f"{counting.calls} model calls ({attempts} attempts max), {tokens / counting.calls:.0f} tokens/call"
                + (f"; outlines index build {build_s:.1f} s (once per schema)" if constrained else ""),
            ])
    return rows


def embedding_rows(texts: list[str], batch_sizes: list[int]) -> list[list[str]]:
    rows = []
    for batch_size in batch_sizes:
        embedder = Embedder(Settings(embedding_batch_size=batch_size))
        embedder.embed(texts[:batch_size])  # load the model and warm up
        t0 = time.perf_counter()
        vectors = embedder.embed(texts)
        elapsed = time.perf_counter() - t0
        rows.append([f"embedder, batch size {batch_size}", f"{len(texts)}", f"{vectors.shape[0]}",
                     f"{elapsed / len(texts) * 1000:.2f} ms", f"{len(texts) / elapsed:.0f} emb/s",
                     f"{vectors.shape[1]} dims"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20, help="generations per schema and mode")
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--texts", type=int, default=512, help="texts embedded per batch size")
    parser.add_argument("--batch-sizes", default="1,32,256")
    args = parser.parse_args()

    backend = TransformersBackend(tiny_model_dir())
    rows = asyncio.run(generation_rows(backend, args.n, args.max_tokens))
    texts = [f"Anime {i}: a story about studio {i % 37} and its {i % 11} sequels, aired {1980 + i % 45}."
             for i in range(args.texts)]
    rows += embedding_rows(texts, [int(b) for b in args.batch_sizes.split(",")])

    print(f"\n{platform.processor() or platform.machine()}, {torch.get_num_threads()} torch threads, "
          f"torch {torch.__version__}\n")
    header = ["what", "calls / texts", "valid", "time per valid object / per text", "throughput", "notes"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
