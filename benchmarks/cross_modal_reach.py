"""Image encoders against text encoders trained apart: the cross-modal canonical correlations
issue 31 asks for, beside the theory's prediction for each caption kind.

    PYTHONPATH=src python benchmarks/cross_modal_reach.py --out runs/cross-modal \\
        IMAGE_RUN [IMAGE_RUN ...] [--text-samples 131072] [--seeds 0]

Trains (or reuses, by folder) good-view text JEPAs on literal captions (``moving-literal``) and
on the world's partial captions (``moving``) with the literal step's converged recipe (``tiny``,
batch 128, lr 1e-3, cosine decay to 0.1, warm-up 5%, max_len 48, the 1,944 training states;
docs/training.md "The last direction"), one per seed. Every image run (``prh train --modality
image`` folders, read as ``prh embed`` reads them: a stored ``prh readout`` applies) and every
text run are read on the demo's states (``benchmarks/image_reach.py``'s: 500 states of the
training split fit, the 216 held-out states scored; a text state is the mean embedding of 5
captions when fitting, one caption when scoring). Each image ~ text pair gets the width-fair
held-out canonical correlations (:func:`prh.demo.theory.two_readouts`, top 8 directions of each
side, 95% bootstrap interval) and the mean of the theory's prediction for two perfect encoders
of those modalities (:func:`prh.world.observation.predicted_cc`: 1 for literal captions, below
for partial ones). Prints one table; figures in docs/training.md ("Wider than the gap").
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from image_reach import K
from image_reach import _embed as _embed_images
from text_modes import _embed as _embed_texts

KINDS = {"literal": "moving-literal", "partial": "moving"}


def train_text(world: str, samples: int, seed: int, out: Path) -> Path:
    """The literal step's converged text recipe on ``world`` (reused when ``out`` holds it)."""
    import prh

    if not (out / "model.safetensors").exists():
        cfg = prh.train_config(
            "tiny", world=world, views="good", samples=samples, batch_size=128, lr=1e-3,
            max_len=48, min_lr_frac=0.1, train_scenes=1944, seed=seed, checkpoint_every=0,
        )  # fmt: skip
        # warm-up: the trainer's default, 5% of the steps, uncapped
        prh.train(cfg, out, progress=False, threads=2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("images", nargs="+", help="prh train image run folders")
    ap.add_argument("--out", required=True)
    ap.add_argument("--text-samples", type=int, default=131072)
    ap.add_argument("--seeds", default="0")
    a = ap.parse_args()
    from image_reach import _states
    from prh.demo.theory import two_readouts
    from prh.training import load_run
    from prh.world import make_world
    from prh.world.observation import predicted_cc

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    _, fit, test = _states()
    images = {}
    for i, run in enumerate(a.images):
        f = out / f"img{i}-{Path(run).name}"
        images[run] = tuple(_embed_images(run, split, ids, Path(f"{f}-{split}.safetensors"), 64)
                            for split, ids in (("train", fit), ("test", test)))  # fmt: skip
    rows = []
    for kind, world_name in KINDS.items():
        world = make_world(world_name, seed=0)
        pred = float(np.mean(predicted_cc(world, "image", "text", K)["observation"]))
        for seed in (int(s) for s in a.seeds.split(",")):
            t0 = time.time()
            run = load_run(train_text(world_name, a.text_samples, seed, out / f"{kind}-s{seed}"))
            text = (_embed_texts(run, world, fit, 5, 0), _embed_texts(run, world, test, 1, 1))
            for image, (i_fit, i_test) in images.items():
                cc = two_readouts(i_fit, text[0], i_test, text[1], K)
                rows.append({"image": image, "kind": kind, "seed": seed, "cc": cc["mean"],
                             "ci": cc["ci"], "correlations": cc["correlations"],
                             "predicted": pred, "text_s": round(time.time() - t0, 1)})  # fmt: skip
    (out / "cross_modal.json").write_text(json.dumps({"args": vars(a), "rows": rows}, indent=1))
    print(f"{'image run':<28} {'captions':<8} {'seed':>4} {'cc':>6} {'95% interval':>15} "
          f"{'weakest':>7} {'predicted':>9}")  # fmt: skip
    for r in rows:
        ci = f"[{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]"
        print(f"{r['image'][-28:]:<28} {r['kind']:<8} {r['seed']:>4} {r['cc']:6.3f} {ci:>15} "
              f"{min(r['correlations']):7.3f} {r['predicted']:9.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
