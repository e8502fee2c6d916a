"""The sentence embedding model on ONNX Runtime: exported once from the sentence-transformers directory, then run
without torch.

Why (issue 41, point 6): a replica that embeds with sentence-transformers imports torch, transformers and
sentence-transformers and builds the model before it is ready, 13-15 s of a replacement's 23 s under the fault
suite's load. ONNX Runtime and the Rust tokenizer import in a fifth of a second and open the exported graph in a
third, and give the same vectors (cosine 0.9999998 to sentence-transformers', float32 both; docs/benchmarks.md).

The export needs torch and is done once per model and data directory, by whichever process first embeds there
(``agentic-rag ingest`` does, before anything serves): the model's transformer with sentence-transformers' mean
pooling and normalisation folded into one graph, written beside the data under ``models/onnx/`` and moved into
place atomically, so processes exporting at once each leave a whole file. Only the module layout sentence-
transformers writes for MiniLM-like models is exported (a Transformer, mean pooling, Normalize); anything else
stays on torch (:func:`exportable`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

log = logging.getLogger(__name__)

EXPORT_VERSION = 1  # bump when the exported graph changes: the file name carries it
OPSET = 17
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
MEAN_POOLING = {"pooling_mode_mean_tokens": True, "pooling_mode_cls_token": False, "pooling_mode_max_tokens": False,
                "pooling_mode_mean_sqrt_len_tokens": False}


def _modules(model_dir: Path) -> list[str]:
    try:
        return [str(m["type"]) for m in json.loads((model_dir / "modules.json").read_text(encoding="utf-8"))]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def exportable(model_dir: Path) -> bool:
    """Whether the sentence-transformers model in ``model_dir`` is one this module exports: a transformer with a
    fast tokenizer (``tokenizer.json``), mean pooling over the tokens, and normalised output."""
    kinds = [k.rsplit(".", 1)[-1] for k in _modules(model_dir)]
    if kinds != ["Transformer", "Pooling", "Normalize"] or not (model_dir / "tokenizer.json").is_file():
        return False
    pooling = next((p for p in model_dir.glob("*_Pooling/config.json")), None)
    try:
        config = json.loads(pooling.read_text(encoding="utf-8")) if pooling else {}
    except (OSError, ValueError):
        return False
    return all(config.get(k, False) == v for k, v in MEAN_POOLING.items())


def onnx_path(model_dir: Path, cache_dir: Path) -> Path:
    """Where the export of ``model_dir`` lives under ``cache_dir``: named by the model's weights (name, size and
    modification time of each file, so a changed model is exported again) and :data:`EXPORT_VERSION`."""
    digest = hashlib.sha256(f"{EXPORT_VERSION}:{OPSET}:{model_dir.resolve()}".encode())
    for f in sorted(model_dir.glob("*")):
        if f.is_file():
            st = f.stat()
            digest.update(f"{f.name}:{st.st_size}:{int(st.st_mtime)}".encode())
    return cache_dir / f"{model_dir.resolve().name}-{digest.hexdigest()[:16]}.onnx"


def export(model_dir: Path, out: Path) -> Path:
    """Export the model in ``model_dir`` (transformer, mean pooling, L2 normalisation in one graph) to ``out``,
    atomically. Needs torch, transformers and onnx."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    class Pooled(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.model(input_ids=input_ids, attention_mask=attention_mask,
                                token_type_ids=token_type_ids).last_hidden_state
            weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2, dim=1)

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    model = AutoModel.from_pretrained(str(model_dir), local_files_only=True).eval()
    sample = tokenizer(["an example", "a longer example sentence"], padding=True, return_tensors="pt")
    if "token_type_ids" not in sample:
        sample["token_type_ids"] = torch.zeros_like(sample["input_ids"])
    axes = {0: "texts", 1: "tokens"}
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    os.close(fd)
    try:
        # the tracer's notes on the attention mask's Python-side checks: each holds for every shape (the mask is always
        # given, as long as the input), which the test against sentence-transformers' own vectors shows
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(Pooled(model), tuple(sample[k] for k in INPUTS), tmp, input_names=list(INPUTS),
                              output_names=["embedding"], opset_version=OPSET, dynamo=False,
                              dynamic_axes={**{k: axes for k in INPUTS}, "embedding": {0: "texts"}})
        os.chmod(tmp, 0o644)  # as any file written there: mkstemp's 0600 would keep it from other users
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    log.info("exported %s to ONNX at %s", model_dir, out)
    return out


class OnnxSentenceModel:
    """The exported model and its tokenizer: what :class:`~agentic_rag.models.embeddings.Embedder` runs a pass
    through when its runtime is ``onnx``."""

    def __init__(self, model_dir: Path, cache_dir: Path, *, threads: int = 0) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        path = onnx_path(model_dir, cache_dir)
        if not path.is_file():
            log.info("no ONNX export of %s yet: exporting it once (needs torch; later starts do not)", model_dir)
            export(model_dir, path)
        config = json.loads((model_dir / "sentence_bert_config.json").read_text(encoding="utf-8")) if (
            model_dir / "sentence_bert_config.json").is_file() else {}
        self.max_seq_length = int(config.get("max_seq_length", 256))
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(self.max_seq_length)
        self._tokenizer.no_padding()
        options = onnxruntime.SessionOptions()
        # ONNX Runtime's pool spins between passes by default: on cores every replica shares, that is CPU taken
        # from the others for a few microseconds saved a pass
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if threads:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.path = path
        self.dimension = int(self.encode(["dimension"]).shape[1])

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        """Each text's length in tokens, as truncated."""
        return [len(e.ids) for e in self._tokenizer.encode_batch(list(texts))]

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One forward pass over ``texts`` (padded to the longest): unit vectors, float32."""
        encodings = self._tokenizer.encode_batch(list(texts))
        width = max(len(e.ids) for e in encodings)
        feed = {name: np.zeros((len(encodings), width), dtype=np.int64) for name in INPUTS}
        for i, e in enumerate(encodings):
            n = len(e.ids)
            feed["input_ids"][i, :n] = e.ids
            feed["attention_mask"][i, :n] = e.attention_mask
            feed["token_type_ids"][i, :n] = e.type_ids
        out: npt.NDArray[np.float32] = self._session.run(None, feed)[0]
        return out.astype(np.float32, copy=False)
