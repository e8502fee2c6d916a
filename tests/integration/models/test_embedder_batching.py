"""Concurrent in-process embeddings share forward passes, and each caller gets exactly its own rows."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from agentic_rag.models.embeddings import Embedder, Vectors
from agentic_rag.settings import Settings

pytestmark = pytest.mark.integration

QUESTIONS = [f"which anime is character number {i} in" for i in range(40)]


class CountingEmbedder(Embedder):
    """The real embedder, counting its forward passes."""

    passes: int = 0

    def embed(self, texts: list[str]) -> Vectors:  # type: ignore[override]
        self.passes += 1
        return super().embed(texts)


@pytest.fixture(scope="module")
def embedder(settings: Settings) -> CountingEmbedder:
    e = CountingEmbedder(settings.model_copy(update={"embedding_batch_size": 16}))
    e.embed(["warm up"])
    return e


async def test_concurrent_calls_share_passes_and_get_their_own_rows(embedder: CountingEmbedder) -> None:
    alone = np.stack([embedder.embed([q])[0] for q in QUESTIONS])
    embedder.passes = 0
    # 30 calls of one or two texts, all at once: 40 texts, at most 16 per pass
    calls = [[q] for q in QUESTIONS[:20]] + [QUESTIONS[i:i + 2] for i in range(20, 40, 2)]
    results = await asyncio.gather(*(embedder.aembed(c) for c in calls))
    for texts, rows in zip(calls, results, strict=True):
        assert rows.shape == (len(texts), 384)
        expected = np.stack([alone[QUESTIONS.index(t)] for t in texts])
        assert np.allclose(rows, expected, atol=1e-5), "a caller got another caller's rows"
    total = sum(len(c) for c in calls)
    assert embedder.passes <= -(-total // 16) + 1, f"{len(calls)} calls took {embedder.passes} passes"


async def test_a_cancelled_caller_leaves_the_others_their_answers(embedder: CountingEmbedder) -> None:
    tasks = [asyncio.create_task(embedder.aembed([q])) for q in QUESTIONS[:6]]
    await asyncio.sleep(0)  # all queued, none embedded yet (the batch waits to gather)
    tasks[2].cancel()
    done = await asyncio.gather(*tasks, return_exceptions=True)
    assert isinstance(done[2], asyncio.CancelledError)
    assert all(isinstance(d, np.ndarray) and d.shape == (1, 384) for i, d in enumerate(done) if i != 2)


async def test_a_whole_batch_and_no_wait_skip_the_batcher(settings: Settings) -> None:
    e = CountingEmbedder(settings.model_copy(update={"embedding_batch_wait_ms": 0}))
    rows = await asyncio.gather(e.aembed(["a"]), e.aembed(["b"]))
    assert e.passes == 2 and all(r.shape == (1, 384) for r in rows)


def test_texts_go_through_in_passes_by_token_budget(settings: Settings) -> None:
    short = [f"who is {i}" for i in range(40)]
    long = ["what happens in the story of the one about " + "a very long journey " * (5 + i) for i in range(6)]
    texts = [*short[:20], *long, *short[20:]]
    budget = Embedder(settings.model_copy(update={"embedding_batch_size": 32, "embedding_batch_tokens": 256}))
    fixed = Embedder(settings.model_copy(update={"embedding_batch_size": 32, "embedding_batch_tokens": 0}))
    model = budget._load()
    lengths = model.token_lengths(texts)
    passes = budget._passes(model, texts)
    assert sorted(i for p in passes for i in p) == list(range(len(texts)))  # every text once
    firsts = [lengths[p[0]] for p in passes]
    assert firsts == sorted(firsts, reverse=True)  # longest first
    for p in passes:
        longest = max(lengths[i] for i in p)
        assert len(p) <= 32 and (len(p) == 1 or len(p) * longest <= 256)
    assert len(passes[0]) < 32 == max(len(p) for p in passes)  # a few long texts a pass, short ones by the size
    assert fixed._passes(model, texts) == [list(range(32)), list(range(32, len(texts)))]
    # the same vectors, in the caller's order
    assert np.allclose(budget.embed(texts), fixed.embed(texts), atol=1e-5)


def test_the_embedders_torch_threads_come_from_the_settings(settings: Settings) -> None:
    import torch

    before = torch.get_num_threads()
    try:
        e = Embedder(settings.model_copy(update={"embedding_threads": 1, "embedding_runtime": "torch"}))
        e.embed(["one thread"])
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    Embedder(settings.model_copy(update={"embedding_runtime": "torch"})).embed(["torch's default"])  # 0: left alone
    assert torch.get_num_threads() == before


def test_bfloat16_vectors_are_unit_rows_close_to_float32s(settings: Settings) -> None:
    from agentic_rag.models.embeddings import native_bfloat16

    exact = Embedder(settings).embed(QUESTIONS[:8])
    half = Embedder(settings.model_copy(update={"embedding_dtype": "bfloat16"}))
    rows = half.embed(QUESTIONS[:8])
    assert half.dtype == "bfloat16" and rows.dtype == np.float32 and rows.shape == exact.shape
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-6)
    cosines = (rows * exact).sum(axis=1)
    assert cosines.min() >= 0.99, cosines
    # the nearest question to each is still itself
    assert ((rows @ exact.T).argmax(axis=1) == np.arange(8)).all()
    auto = Embedder(settings.model_copy(update={"embedding_dtype": "auto"}))
    assert auto.dtype == ("bfloat16" if native_bfloat16("cpu") else "float32")
