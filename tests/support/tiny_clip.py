"""A tiny CLIP built on the spot: what the image tests and the image benchmark load where no weights can be downloaded.

A randomly initialised ``transformers`` ``CLIPModel`` (2-layer vision and text towers, 32 wide, ViT-B/32's
224-pixel input in 32-pixel patches) with a fixed seed, saved with a ``CLIPProcessor`` (CLIP's own image
preprocessing, and a byte-level CLIP tokenizer with no merges) like any Hugging Face model directory, so
sentence-transformers' real loading code reads it as a CLIP model, as it would read a real one. Its vectors
mean nothing semantically; a function of the pixels they are, so the same pixels give the same vector and
nearby pixels nearby vectors.

Import it as ``tests.support.tiny_clip``: pytest puts the repository root on ``sys.path``, and so do the benchmark
scripts that build it.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.tiny import built_once

# Bump when anything below changes what gets built: a new version is built beside the old one.
VERSION = "1"
SEED = 1234
IMAGE_SIZE = 224
PATCH = 32
WIDTH = 32  # hidden size of both towers, and of the shared embedding


def build_tiny_clip(root: Path) -> Path:
    """The tiny CLIP's directory under ``root``, built on first use (a second or two) and reused after."""
    return built_once(Path(root) / f"tiny-clip-v{VERSION}", _build)


def _build(out: Path) -> None:
    import torch
    from tokenizers import pre_tokenizers
    from transformers import (
        CLIPConfig,
        CLIPImageProcessor,
        CLIPModel,
        CLIPProcessor,
        CLIPTextConfig,
        CLIPTokenizer,
        CLIPVisionConfig,
    )

    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for char in sorted(pre_tokenizers.ByteLevel.alphabet()):  # every byte, alone and ending a word
        vocab[char] = len(vocab)
        vocab[char + "</w>"] = len(vocab)
    tokenizer = CLIPTokenizer(vocab=vocab, merges=[], model_max_length=77)
    images = CLIPImageProcessor(size={"shortest_edge": IMAGE_SIZE},
                                crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})
    CLIPProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(out)

    torch.manual_seed(SEED)
    tower = {"hidden_size": WIDTH, "intermediate_size": 2 * WIDTH, "num_hidden_layers": 2, "num_attention_heads": 4}
    text = CLIPTextConfig(vocab_size=len(vocab), max_position_embeddings=77, bos_token_id=0, eos_token_id=1,
                          pad_token_id=1, **tower)
    vision = CLIPVisionConfig(image_size=IMAGE_SIZE, patch_size=PATCH, **tower)
    config = CLIPConfig(text_config=text.to_dict(), vision_config=vision.to_dict(), projection_dim=WIDTH)
    CLIPModel(config).eval().save_pretrained(out)
