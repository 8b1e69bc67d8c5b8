"""Issue 13's experiment on a kernel WITH a gap: the positive control of the demo's modalities step.

The demo's good views pair two observations of the SAME scene: the state kernel is
``Pi = diag(p)``, ``T_Pi = I`` has no gap, and Theorem 1 fixes no embedding (``docs/demo.md``).
Here the positives relate DIFFERENT scenes: two observations of two scenes whose largest object
has the same shape, ``Pi(s, s') ~ [shape(s) = shape(s')]``. Its operator has eigenvalue 1 on the
8 shape indicators (the constant and 7 centred ones) and 0 elsewhere: a gap after k = 7, so with a
7-dimensional embedding every minimiser, in every modality, is the same shape simplex up to one
rotation.

Both encoders are trained by the toolkit's own trainers; only their positive pairs change, through
their inputs:

- text (tiny preset, ``embed_dim = 7``): a JSONL caption corpus whose "image" ``k<s>`` holds one
  caption of each of 5 training scenes that share scene ``s``'s largest shape, so that the
  good-view sampler's "two captions of one image" is two captions of two same-shape scenes;
- image (the demo's backbone recipe, ``embed_dim = 7``): a render cache whose row ``j`` holds
  renders of 4 training scenes sharing scene ``j``'s largest shape (nuisance seed = view), so that
  "two views of one row" is two renders of two same-shape scenes.

Then, on the 500 held-out scenes (bridge: the last 500 training scenes), the modality evidence of
the pair (mutual-kNN, CKA, rotation score, pair-free shape and colour classes and samples), beside
the largest-shape kNN probe of each side. Usage::

    OMP_NUM_THREADS=2 python benchmarks/kernel_gap.py OUT [--samples 25600] [--threads 2]

Prints a table and writes ``OUT/kernel_gap.json``. About 15 CPU-minutes.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

TRAIN_TEXT_SCENES = 4000
TRAIN_IMAGE_SCENES = 1000
EMBED = 7  # the kernel's top eigenspace: 8 shape indicators less the constant


def same_shape_partners(shapes: np.ndarray, pool_shapes: np.ndarray, n: int, rng) -> np.ndarray:
    """``(len(shapes), n)`` indices into the pool: ``n`` draws (with replacement) among the pool
    rows whose shape equals each row's shape."""
    by = {int(c): np.flatnonzero(pool_shapes == c) for c in np.unique(pool_shapes)}
    return np.stack([rng.choice(by[int(c)], size=n) for c in shapes])


def write_corpus(world, path: Path, rng) -> None:
    from prh.io import atomic_write
    from prh.world.factors import scene_factors

    ids = np.asarray(world.split("train")[:TRAIN_TEXT_SCENES])
    shape = scene_factors(world, ids, ties="first")["shape"]
    partners = same_shape_partners(shape, shape, 5, rng)
    with atomic_write(path, "w") as f:
        for j, s in enumerate(ids):
            caps = [
                world.captions(int(ids[i]), 1, int(s) * 7 + c)[0] for c, i in enumerate(partners[j])
            ]
            f.write(json.dumps({"image": f"k{int(s)}", "captions": caps}) + "\n")


def write_cache(world, folder: Path, rng, size: int = 64, views: int = 4) -> None:
    from prh.io import atomic_write, write_json
    from prh.views.render_cache import cache_key
    from prh.world.factors import scene_factors

    ids = np.asarray(world.split("train")[:TRAIN_IMAGE_SCENES])
    key = cache_key(0, "image", size, views, ids)
    path = folder / key.file_name
    if path.is_file():
        return
    shape = scene_factors(world, ids, ties="first")["shape"]
    partners = same_shape_partners(shape, shape, views, rng)
    arr = np.stack([
        np.stack([world.render(int(ids[i]), v, size) for v, i in enumerate(partners[j])])
        for j in range(len(ids))
    ])  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_write(path, "wb") as f:  # a killed run leaves no half cache to be read back
        np.save(f, arr)
    write_json(
        path.with_suffix(".json"), {"kernel": "same largest shape", "shape": list(arr.shape)}
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out")
    p.add_argument("--samples", type=int, default=25600)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    import torch

    from prh.bridge.evidence import EvidenceConfig, modality_evidence
    from prh.encoders import load_encoder
    from prh.encoders.embed import EmbedConfig, embed_world
    from prh.training import TrainConfig, train
    from prh.training.image import draw_scenes, load_image_run, train_image
    from prh.training.image_config import ImageConfig
    from prh.training.image_probe import probe_table
    from prh.world import CaveWorld, WorldConfig
    from prh.world.factors import scene_factors

    torch.set_num_threads(a.threads)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    world = CaveWorld(WorldConfig(seed=0))
    rng = np.random.default_rng(0)
    t0 = time.process_time()
    write_corpus(world, out / "shape_kernel.jsonl", rng)
    write_cache(world, out / "cache", rng)
    over = {"embed_dim": EMBED}
    text_run, image_run = out / "text", out / "image"
    if not (text_run / "model.safetensors").is_file():
        cfg = TrainConfig(
            world=None, corpus=str(out / "shape_kernel.jsonl"), views="good", samples=a.samples,
            batch_size=128, seed=0, model_overrides=over,
        )  # fmt: skip
        train(cfg, text_run, progress=False, threads=a.threads)
    if not (image_run / "model.safetensors").is_file():
        cfg = TrainConfig(
            world="cave", views="good", samples=a.samples, batch_size=128, lr=3e-4, seed=0,
            train_scenes=TRAIN_IMAGE_SCENES, model_overrides=over, checkpoint_every=50,
        )  # fmt: skip
        img = ImageConfig(
            image_size=64, render_views=4, cache_dir=str(out / "cache"),
            backbone="efficientnet-lite0", freeze_until=10, backbone_size=128,
        )  # fmt: skip
        train_image(cfg, img, image_run, progress=False, threads=a.threads)

    test = [int(i) for i in world.split("test")[:500]]
    bridge = [int(i) for i in world.split("train")[-500:]]
    enc = load_encoder(str(text_run))
    run = load_image_run(image_run, "cpu")
    feats: dict[str, dict[str, np.ndarray]] = {}
    for split, ids in (("test", test), ("train", bridge)):
        ec = (EmbedConfig(modality="text", caption_seed=1) if split == "test"
              else EmbedConfig(modality="text", caption_seed=0, captions_per_scene=5))  # fmt: skip
        t, _ = embed_world(enc, world, ids, ec)
        im = run.encode_images(draw_scenes(run.config, run.image, ids))
        feats[split] = {
            "text-shape-kernel": t[:, -1, :EMBED],
            "image-shape-kernel": im[:, -1, :EMBED],
        }
    f = scene_factors(world, test)
    labels = {"shape": f["shape"], "colour": f["colour"]}
    ecfg = EvidenceConfig(bootstrap=200, match_dims=EMBED)
    ev = modality_evidence(feats["train"], feats["test"], labels, config=ecfg)
    pair = ev.pair("image-shape-kernel", "text-shape-kernel")
    probes = {n: probe_table(x[:, None, :], {"shape": f["shape"], "colour": f["colour"]})
              for n, x in feats["test"].items()}  # fmt: skip
    result = {"pair": pair, "probes": probes, "cpu_s": round(time.process_time() - t0, 1),
              "samples": a.samples, "embed_dim": EMBED}  # fmt: skip
    (out / "kernel_gap.json").write_text(json.dumps(result, indent=1, default=float))
    pf = pair["pair_free"]
    rx, ry = pair["rotation_x_to_y"], pair["rotation_y_to_x"]
    print("| figure | value |\n|---|---|")
    for n, pr in probes.items():
        print(f"| {n} kNN@10 shape / colour | {pr['shape'][0]:.3f} / {pr['colour'][0]:.3f} |")
    print(f"| mutual-kNN@10 [95% CI] | {pair['mutual_knn']:.4f} [{pair['mutual_knn_ci'][0]:.4f}, "
          f"{pair['mutual_knn_ci'][1]:.4f}] |")  # fmt: skip
    print(f"| linear CKA | {pair['cka']:.3f} |")
    r1 = [f"{r['orthonormal']['r1']:.3f} / {r['ridge']['r1']:.3f}" for r in (rx, ry)]
    print(f"| rotation score image->text / text->image | {rx['score']} / {ry['score']} "
          f"(R@1 orthonormal / ridge {r1[0]}, {r1[1]}); R^2 ratio {rx['r2_ratio']} / "
          f"{ry['r2_ratio']} |")  # fmt: skip
    print(f"| canonical correlations (train) | {[round(c, 3) for c in rx['canonical']]} |")
    for fac, c in pf["classes"].items():
        print(f"| pair-free {fac} classes | {c['accuracy']:.2f} (exact: {c['exact']}) |")
    s = pf["samples"]
    print(f"| pair-free samples | {s['accuracy']:.4f} ({s['times_chance']:.1f}x chance) |")
    print(f"| CPU seconds | {result['cpu_s']} |")


if __name__ == "__main__":
    main()
