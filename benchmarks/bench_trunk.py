"""The backbone trunk's layout: contiguous (NCHW) against channels-last, in images per second.

    PYTHONPATH=src python benchmarks/bench_trunk.py [--threads 2] [--batch 128] [--repeats 3]

The demo's image recipe (:data:`prh.demo.config.DEMO_IMAGE_ENCODER`) sends every render of its
spectral pair-free draws (16,384 per comparison) through EfficientNet-Lite0's trunk at 128 px.
This builds that encoder (seeded init: ``random:efficientnet-lite0``, the same architecture and
cost), then times its forward pass on 64 px renders with the trunk in each layout (best of
``--repeats``), and prints the largest difference of the two outputs.
"""

from __future__ import annotations

import argparse
import time

import torch


def contiguous_trunk(trunk: torch.nn.Module, images: torch.Tensor) -> torch.Tensor:
    """:class:`prh.models.backbone.Trunk`'s computation as it ran before channels-last: every
    tensor in the ordinary NCHW layout."""
    import torch.nn.functional as F

    x = F.interpolate(images, size=(trunk.size, trunk.size), mode="bilinear", antialias=True)
    h = trunk.act(trunk.bn0(trunk.conv_stem(x * 2.0 - 1.0)))
    for block in trunk.blocks:
        h = block(h)
    return h


def rate(model: torch.nn.Module, images: torch.Tensor, repeats: int) -> float:
    with torch.no_grad():
        model(images[:8])  # warm-up
        best = float("inf")
        for _ in range(repeats):
            t = time.perf_counter()
            model(images)
            best = min(best, time.perf_counter() - t)
    return len(images) / best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    from dataclasses import replace

    from prh.demo.config import DEMO_IMAGE_ENCODER
    from prh.training import train_config
    from prh.training.image import build_image_model

    image = replace(DEMO_IMAGE_ENCODER, backbone="random:efficientnet-lite0")
    model = build_image_model(train_config("tiny", world="moving"), image)[0].eval()
    x = torch.rand(a.batch, 3, 64, 64, generator=torch.Generator().manual_seed(0))
    after = rate(model, x, a.repeats)
    with torch.no_grad():
        want = model(x).pooled
    model.trunk.to(memory_format=torch.contiguous_format)
    model.trunk.forward = lambda imgs: contiguous_trunk(model.trunk, imgs)  # the layout before
    before = rate(model, x, a.repeats)
    with torch.no_grad():
        gap = float((model(x).pooled - want).abs().max())
    print(f"threads {a.threads}, batch {a.batch}, 64 px renders -> trunk at 128 px")
    print("| trunk layout    | images/s |")
    print("|-----------------|----------|")
    print(f"| contiguous      | {before:8.1f} |")
    print(f"| channels-last   | {after:8.1f} |")
    print(f"speed-up {after / before:.2f}x; largest output difference {gap:.2e}")


if __name__ == "__main__":
    main()
