"""A tiny causal LM built on the spot: what tests load where no real weights can be downloaded.

A byte-level BPE tokenizer trained with ``tokenizers`` on protocol-shaped JSON (every byte is in its
alphabet, so any text, every JSON character included, is representable), wrapped as a
``PreTrainedTokenizerFast`` with a ChatML template, and a randomly initialised 2-layer Qwen2 with a
fixed seed. Saved with ``save_pretrained`` like any Hugging Face model directory, so the real loading
code is what reads it. Its output is meaningless: a fuzzer for constrained decoding and retries.

Import it as ``tests.support.tiny``: pytest puts the repository root on ``sys.path``, and so do the benchmark
scripts that build it.
"""

from __future__ import annotations

import json
import os
import shutil
import string
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path

# Where the tests build the tiny models: .data/ is gitignored, and each model is keyed by its VERSION, so later
# sessions reuse it.
CACHE = Path(__file__).resolve().parents[2] / ".data" / "test-models"
# Bump when anything below changes what gets built: a new version is built beside the old one.
VERSION = "2"  # 2: the validator report lost suggested_next_action
EOS = "<|im_end|>"
PAD = "<|endoftext|>"
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
VOCAB_SIZE = 1024
SEED = 1234


def build_tiny_model(root: Path) -> Path:
    """The tiny model's directory under ``root``, built on first use (a second or two) and reused after."""
    return built_once(Path(root) / f"tiny-qwen2-v{VERSION}", _build)


def built_once(target: Path, build: Callable[[Path], None]) -> Path:
    """``target``, made by ``build`` into a private directory renamed into place unless it is there already."""
    if (target / "config.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".tiny-", dir=target.parent))
    try:
        build(work)
        os.chmod(work, 0o755)  # mkdtemp made it private
        try:
            os.rename(work, target)  # atomic: a concurrent builder either wins or finds it built
        except OSError:
            if not (target / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def _build(out: Path) -> None:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE, min_frequency=2, special_tokens=[PAD, "<|im_start|>", EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token=EOS, pad_token=PAD, chat_template=CHAT_TEMPLATE,
        model_max_length=8192,
    )
    tokenizer.save_pretrained(out)

    torch.manual_seed(SEED)
    config = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192, tie_word_embeddings=True,
        bos_token_id=None, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
    )
    model = Qwen2ForCausalLM(config).eval()
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(out)


def _id(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, name))


def corpus() -> list[str]:
    """Training text: protocol-shaped JSON, chat-formatted prompts, and every printable ASCII character."""
    titles = ["Cowboy Bebop", "Naruto", "Fullmetal Alchemist", "Mushishi", "Monster", "Vinland Saga",
              "Spirited Away", "Sailor Moon", "Steins;Gate", "Trigun", "Akira", "Ping Pong"]
    types = ["anime", "manga", "character", "episode", "franchise", "studio", "person"]
    docs: list[dict[str, object]] = []
    for i, title in enumerate(titles):
        ref = {"entity_type": types[i % len(types)], "id": _id(title)}
        other = {"entity_type": types[(i + 3) % len(types)], "id": _id(title + "/2")}
        docs += [
            {"rewritten_query": f"Who directed {title}?", "needs_external_context": True,
             "retrieval_mode": ["vector", "graph", "hybrid", "none"][i % 4], "mentions": [title],
             "rationale": "needs the staff of one anime"},
            {"action": "qdrant_search", "rationale": "find the anime", "search_intent": {
                "rationale": "resolve the title", "entity_type": "anime", "query": title,
                "filters": {"year_min": 1990 + i, "genres": ["drama", "action"], "format": ["tv"]},
                "limit": 10}, "graph_intent": None},
            {"action": "pg_graph", "rationale": "follow relations", "search_intent": None, "graph_intent": {
                "rationale": "sequels", "query_type": ["neighbors", "k_hop", "path", "compare"][i % 4],
                "start": ref, "end": other, "max_hops": 1 + i % 6, "edge_types": ["sequel", "adapted_from"],
                "filters": {"node_types": ["anime"]}, "limits": {"max_results": 50, "max_fanout_per_hop": 50}}},
            {"action": "finish", "rationale": "the context answers it"},
            {"answer": f"{title} was made by a studio.", "source_entities": [ref], "result_entities": [other],
             "evidence": {"paths": [{"nodes": [ref, other], "rels": ["appears_in"]}], "ranked": [ref],
                          "facts": [f"{title} aired in {1990 + i}"]},
             "citations": [title], "confidence": round(0.05 * i, 2)},
            {"sufficient": i % 2 == 0, "rationale": "the draft names the director", "missing": ["year"]},
            {"grades": [{"index": j, "relevant": j % 2 == 0} for j in range(i % 5 + 1)]},
            {"answer": title, "status": "answered", "source_entities": [ref], "confidence": 0.5,
             "warnings": ["budget"], "clarification": None},
        ]
    texts = [json.dumps(d) for d in docs] + [json.dumps(d, separators=(",", ":")) for d in docs]
    texts += [
        f"<|im_start|>system\nReply with one JSON object.<|im_end|>\n<|im_start|>user\nQuestion: {t}<|im_end|>\n"
        f"<|im_start|>assistant\n" for t in titles
    ]
    texts += [string.printable, string.ascii_letters + string.digits, string.punctuation * 2]
    return texts
