"""Image embedding throughput by batch size: the image pipeline of ``models/image_embeddings.py`` on one device.

    .venv/bin/python scripts/bench_images.py --images 256 --batch-sizes 1,8,32,128
    .venv/bin/python scripts/bench_images.py --model /path/to/clip-ViT-B-32 --device cuda

Without ``--model`` it builds (or reuses) the tiny random CLIP of tests/support/tiny_clip.py under
.data/test-models: 2-layer towers 32 wide, at CLIP ViT-B/32's 224-pixel input. Its weights are random and
tiny, so its figure is the pipeline's cost (verifying and decoding each encoded image, shrinking it, CLIP's
preprocessing, sentence-transformers' batching, a forward pass that costs almost nothing), not a real CLIP's:
a real ViT-B/32 adds its forward pass (about 4.4 GFLOPs an image) on top. With ``--model`` it measures that
model. Images are generated PNGs (gradients with noise, 640x480 by default, seeded), embedded through
``ImageEmbedder.embed`` as the ingest and a query embed them; each batch size runs once to warm up, then
``--repeats`` times, and the best run is kept. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import io
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from agentic_rag.models.image_embeddings import ImageEmbedder
from agentic_rag.settings import Settings

REPO = Path(__file__).resolve().parents[1]


def tiny_clip_dir() -> Path:
    sys.path.insert(0, str(REPO))  # the tests' helpers, importable as tests.support
    from tests.support.tiny_clip import build_tiny_clip

    return Path(build_tiny_clip(REPO / ".data" / "test-models"))


def pictures(n: int, size: tuple[int, int]) -> list[bytes]:
    """``n`` PNGs: a gradient between two random colours with noise on it, seeded."""
    rng = np.random.default_rng(0)
    w, h = size
    ramp = np.linspace(0.0, 1.0, w)[None, :, None]
    out = []
    for _ in range(n):
        c1, c2 = rng.integers(0, 256, 3), rng.integers(0, 256, 3)
        pixels = c1 * (1 - ramp) + c2 * ramp + rng.normal(0, 12, (h, w, 3))
        buffer = io.BytesIO()
        Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(buffer, "PNG")
        out.append(buffer.getvalue())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="a CLIP model directory (default: the tiny random CLIP of the tests)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--images", type=int, default=256, help="images embedded per batch size")
    parser.add_argument("--size", default="640x480", help="width x height of the generated images")
    parser.add_argument("--batch-sizes", default="1,8,32,128")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    tiny = args.model is None
    model = str(tiny_clip_dir()) if tiny else args.model
    width, height = (int(x) for x in args.size.split("x"))
    images = pictures(args.images, (width, height))
    rows = []
    for batch_size in (int(b) for b in args.batch_sizes.split(",")):
        embedder = ImageEmbedder(Settings(image_model=model, image_device=args.device, image_batch_size=batch_size))
        embedder.embed(images[:batch_size])  # load the model and warm up
        best = float("inf")
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            for start in range(0, len(images), batch_size):  # as the ingest hands them over: a batch at a time
                embedder.embed(images[start:start + batch_size])
            best = min(best, time.perf_counter() - t0)
        rows.append([str(batch_size), str(len(images)), f"{best / len(images) * 1000:.2f} ms",
                     f"{len(images) / best:.1f} img/s"])

    kind = ("tiny random CLIP (2 layers, 32 wide, 224 px input): the pipeline's cost, not a real CLIP's"
            if tiny else model)
    print(f"\nmodel: {kind}\ndevice: {args.device}, {platform.processor() or platform.machine()}, "
          f"{torch.get_num_threads()} torch threads, torch {torch.__version__}; "
          f"{args.images} PNG images of {width}x{height}, best of {args.repeats}\n")
    header = ["batch size", "images", "time per image", "throughput"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    if tiny:
        print("\nThe weights are random and tiny: these figures are the pipeline's cost (decode, verify, resize, "
              "preprocess, batch), not a real CLIP model's throughput.")


if __name__ == "__main__":
    main()
