"""The embedding model on ONNX Runtime (issue 41, point 6): the same vectors as sentence-transformers', an export made
once and reused, and a process that embeds without importing torch, which is what makes an Embedder replica's
replacement quick."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agentic_rag.models.embeddings import Embedder, default_model_path
from agentic_rag.models.onnx_embeddings import exportable, onnx_path
from agentic_rag.settings import Settings

pytestmark = pytest.mark.integration

MIXED = ["who directed Death Note?", "Frieren", "anime like Frieren but darker, with a mage who outlives everyone",
         "what happens in the story of the one about " + "a very long journey " * 40, "ナルト", "", "?" * 3]


@pytest.fixture(scope="module")
def onnx(settings: Settings) -> Embedder:
    e = Embedder(settings.model_copy(update={"embedding_runtime": "onnx"}))
    e.embed(["warm up"])  # exported here once, if the data directory has no export yet
    return e


def test_onnx_gives_sentence_transformers_vectors(onnx: Embedder, settings: Settings) -> None:
    """Texts of every length in passes by token budget (padding inside a pass), one past the model's 256 tokens."""
    torch_model = Embedder(settings.model_copy(update={"embedding_runtime": "torch"}))
    a, b = onnx.embed(MIXED), torch_model.embed(MIXED)
    assert onnx.runtime == "onnx" and torch_model.runtime == "torch"
    assert a.shape == b.shape == (len(MIXED), 384) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    assert (a * b).sum(axis=1).min() > 0.99999, (a * b).sum(axis=1)
    assert np.abs(a - b).max() < 1e-4
    # one text alone and the same text in a padded pass: the same vector
    assert np.allclose(onnx.embed([MIXED[1]])[0], a[1], atol=1e-5)


def test_auto_is_onnx_for_a_float32_model_on_the_cpu(settings: Settings) -> None:
    assert Embedder(settings.model_copy(update={"embedding_runtime": "auto"})).runtime == "onnx"
    assert Embedder(settings.model_copy(update={"embedding_runtime": "auto", "embedding_dtype": "bfloat16"})
                    ).runtime == "torch"


def test_only_a_mean_pooled_normalised_model_is_exported(tmp_path: Path) -> None:
    model = Path(default_model_path())
    assert exportable(model)
    copy = tmp_path / "cls"
    shutil.copytree(model, copy, ignore=shutil.ignore_patterns("*.safetensors"))
    pooling = copy / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    pooling.write_text(json.dumps({**config, "pooling_mode_mean_tokens": False, "pooling_mode_cls_token": True}))
    assert not exportable(copy)
    (copy / "modules.json").unlink()
    assert not exportable(copy)


def test_the_export_is_made_once_and_named_by_the_model(onnx: Embedder, settings: Settings, tmp_path: Path) -> None:
    cache = settings.data_dir / "models" / "onnx"
    path = onnx_path(Path(onnx.model_name), cache)
    assert path.is_file() and oct(path.stat().st_mode & 0o777) == "0o644"
    written = path.stat().st_mtime_ns
    Embedder(settings.model_copy(update={"embedding_runtime": "onnx"})).embed(["again"])
    assert path.stat().st_mtime_ns == written  # reused, not exported again
    assert not [f for f in cache.iterdir() if f.name.endswith(".tmp")]  # no half-written file left
    # a changed model is another file
    copy = tmp_path / "model"
    shutil.copytree(onnx.model_name, copy)
    os.utime(copy / "model.safetensors", (1, 1))
    assert onnx_path(copy, cache) != path


def test_a_process_embeds_without_importing_torch(onnx: Embedder, settings: Settings) -> None:
    """What an Embedder replica's start costs once the export exists: no torch, transformers or
    sentence-transformers in the process."""
    script = (
        "import sys, time\n"
        "t0 = time.perf_counter()\n"
        "from agentic_rag.models.embeddings import Embedder\n"
        "from agentic_rag.settings import Settings\n"
        f"e = Embedder(Settings(data_dir={str(settings.data_dir)!r}))\n"
        "v = e.embed(['who directed Death Note?'])\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules)\n"
        "print(e.runtime, v.shape[1], heavy, round(time.perf_counter() - t0, 2))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "RAG_EMBEDDING_RUNTIME": "auto"})
    assert done.returncode == 0, done.stderr
    runtime, dim, heavy, seconds = done.stdout.split(" ", 3)
    print(f"\na fresh process embedded one question in {seconds.strip()} s")
    assert (runtime, dim, heavy) == ("onnx", "384", "[]")
