"""Can the scratch image CNN see shape at all? A supervised shape classifier on the moving cave.

    PYTHONPATH=src python benchmarks/image_shape_probe.py [--arch tiny,tiny-full,tiny-s3]
        [--steps 300] [--threads 2] [--cache runs/cache]

The JEPA's scratch CNN carries no shape mode of ``g*`` (docs/training.md). This separates "the
network cannot see the shapes" from "good views do not teach them": the same
:class:`prh.models.ImageEncoder` (the ``tiny`` image preset), its last pooled layer under a linear
classifier, trained with cross-entropy on the object's shape (8 classes) from renders of the
training states (4 nuisance draws each, 64 px), scored on the 216 held-out states' renders.
Variants: ``tiny`` (stride-2 stem, 4 stages), ``tiny-full`` (the stem at full resolution: 4x the
pixels through every stage), ``tiny-s3`` (3 stages). Prints held-out accuracy every 100 steps
(chance 0.125) and the seconds so far. AdamW, lr 2e-3, batch 128, seed 0.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from torch import nn

ARCHS = ("tiny", "tiny-full", "tiny-s3")


def encoder(arch: str) -> nn.Module:
    """The ``tiny`` image encoder, or one of its variants (see the module docstring)."""
    from prh.models import ImageEncoder, model_config
    from prh.training.image_config import IMAGE_PRESETS

    shape = {**IMAGE_PRESETS["tiny"], "embed_dim": 8}
    if arch == "tiny-s3":
        shape["image_stages"] = 3
    model = ImageEncoder(model_config("tiny", 1, **shape))
    if arch == "tiny-full":
        model.stem[0].stride = (1, 1)
    return model


def run(arch: str, renders: np.ndarray, shapes: torch.Tensor, split: dict, steps: int) -> None:
    torch.manual_seed(0)
    model = encoder(arch)
    head = nn.Linear(model.cfg.d_model, int(shapes.max()) + 1)
    opt = torch.optim.AdamW([*model.parameters(), *head.parameters()], lr=2e-3)
    rng = np.random.default_rng(0)
    views = renders.shape[1]

    def images(states: np.ndarray, view: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(np.asarray(renders[states, view])).permute(0, 3, 1, 2).float() / 255

    def logits(states: np.ndarray, view: np.ndarray) -> torch.Tensor:
        return head(model(images(states, view)).layers[:, -1])

    t0 = time.perf_counter()
    test = split["test"]
    for step in range(1, steps + 1):
        s = rng.choice(split["train"], 128)
        loss = nn.functional.cross_entropy(logits(s, rng.integers(0, views, 128)), shapes[s])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0 or step == steps:
            with torch.no_grad():
                acc = np.mean([
                    (logits(test, np.full(len(test), v)).argmax(1) == shapes[test]).float().mean()
                    for v in range(views)
                ])  # fmt: skip
            took = time.perf_counter() - t0
            print(f"{arch:10s} {step:5d} {loss.item():8.3f} {acc:9.3f} {took:7.0f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default=",".join(ARCHS), help=f"comma list of {', '.join(ARCHS)}")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cache", default="runs/cache", help="render cache folder (shared)")
    a = ap.parse_args()
    archs = a.arch.split(",")
    if bad := [x for x in archs if x not in ARCHS]:
        ap.error(f"--arch {bad[0]!r}: expected one of {', '.join(ARCHS)}")
    torch.set_num_threads(a.threads)
    from prh.views.render_cache import cache_key, load_or_build
    from prh.world import make_world

    world = make_world("moving", seed=0)
    ids = np.arange(world.num_scenes)
    renders = load_or_build(a.cache, cache_key(0, "image", 64, 4, ids, "moving"), ids, workers=2)
    split = {s: np.asarray(world.split(s)) for s in ("train", "test")}
    shapes = torch.as_tensor(world.grid[:, 0].astype(np.int64))
    print("arch        step     loss  held-out acc  seconds   (chance 0.125)")
    for arch in archs:
        run(arch, renders, shapes, split, a.steps)


if __name__ == "__main__":
    main()
