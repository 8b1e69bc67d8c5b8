"""The backbone trunk's forward, three ways, in images per second.

    PYTHONPATH=src python benchmarks/bench_trunk.py [--threads 2] [--batch 128] [--repeats 3]

The demo's image recipe (:data:`prh.demo.config.DEMO_IMAGE_ENCODER`) sends every render of its
spectral pair-free draws (16,384 per comparison) through EfficientNet-Lite0's trunk at 128 px.
This builds that encoder (seeded init: ``random:efficientnet-lite0``, the same architecture and
cost, with its batch-norm statistics and gains drawn at random so that folding them is not the
identity), then times its forward pass on 64 px renders with the trunk run three ways (best of
``--repeats``):

- ``modules, NCHW``: the package's modules one by one in the ordinary layout (before 816e9aa);
- ``modules, channels-last``: the same modules in the NHWC layout (b4f06d9);
- ``folded, channels-last``: :class:`prh.models.backbone.Trunk` now, batch norm and symmetric
  padding folded into each convolution, ReLU6 in place (:mod:`prh.models.folded`);

and prints the largest difference of each output from the folded one.
"""

from __future__ import annotations

import argparse
import time

import torch


def module_trunk(trunk: torch.nn.Module, images: torch.Tensor, layout) -> torch.Tensor:
    """:class:`prh.models.backbone.Trunk`'s computation module by module, every tensor in
    ``layout``."""
    import torch.nn.functional as F

    x = F.interpolate(images, size=(trunk.size, trunk.size), mode="bilinear", antialias=True)
    h = trunk.act(trunk.bn0(trunk.conv_stem((x * 2.0 - 1.0).contiguous(memory_format=layout))))
    for block in trunk.blocks:
        h = block(h)
    return h.contiguous()


def rate(model: torch.nn.Module, images: torch.Tensor, repeats: int) -> float:
    with torch.no_grad():
        model(images[:8])  # warm-up
        best = float("inf")
        for _ in range(repeats):
            t = time.perf_counter()
            model(images)
            best = min(best, time.perf_counter() - t)
    return len(images) / best


def randomise_batch_norms(model: torch.nn.Module) -> None:
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                n = m.num_features
                m.running_mean.copy_(0.1 * torch.randn(n, generator=g))
                m.running_var.copy_(0.5 + torch.rand(n, generator=g))
                m.weight.copy_(0.5 + torch.rand(n, generator=g))
                m.bias.copy_(0.1 * torch.randn(n, generator=g))


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
    randomise_batch_norms(model)
    x = torch.rand(a.batch, 3, 64, 64, generator=torch.Generator().manual_seed(0))
    folded = rate(model, x, a.repeats)
    with torch.no_grad():
        want = model(x).pooled
    trunk = model.trunk
    rows = [("folded, channels-last", folded, 0.0)]
    for name, layout in (("modules, channels-last", torch.channels_last),
                         ("modules, NCHW", torch.contiguous_format)):  # fmt: skip
        trunk.to(memory_format=layout)
        trunk.forward = lambda imgs, lay=layout: module_trunk(trunk, imgs, lay)
        r = rate(model, x, a.repeats)
        with torch.no_grad():
            rows.append((name, r, float((model(x).pooled - want).abs().max())))
    print(f"threads {a.threads}, batch {a.batch}, 64 px renders -> trunk at 128 px; the whole "
          "image encoder's forward")  # fmt: skip
    print("| trunk                  | images/s | vs NCHW | largest output difference |")
    print("|------------------------|----------|---------|---------------------------|")
    base = rows[-1][1]
    for name, r, gap in reversed(rows):
        print(f"| {name:<22} | {r:8.1f} | {r / base:6.2f}x | {gap:25.2e} |")


if __name__ == "__main__":
    main()
