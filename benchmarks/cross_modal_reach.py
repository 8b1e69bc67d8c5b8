"""Image and sketch encoders against text encoders trained apart (and against each other): the
cross-modal canonical correlations issue 31 asks for, beside the theory's prediction.

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
for partial ones). A run's modality (image or sketch) is its own config's; two runs of
different modalities are read against each other too (sketch ~ image). Beside each pair: the
largest deviation of a canonical correlation from its predicted value (both sorted descending),
and a floor, the same measure with one side's held-out rows shuffled. Prints one table; figures
in docs/training.md ("Wider than the gap").
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


def modality(run: str) -> str:
    """The modality a ``prh train`` run folder was trained on (``image`` or ``sketch``)."""
    from prh.training.lifecycle import read_stored

    return read_stored(Path(run)).get("modality", "image")


def judged(a: tuple, b: tuple, predicted: list[float], floor_seed: int = 0) -> dict:
    """One pair's width-fair held-out cc (``a``, ``b``: ``(fit, test)`` rows), its prediction,
    the largest per-direction deviation from it, and the shuffled-rows floor."""
    from prh.demo.literal_rule import largest_deviation
    from prh.demo.theory import two_readouts

    cc = two_readouts(a[0], b[0], a[1], b[1], K)
    order = np.random.default_rng(floor_seed).permutation(len(b[1]))
    floor = two_readouts(a[0], b[0], a[1], b[1][order], K, n_boot=2)["mean"]
    return {
        "cc": cc["mean"], "ci": cc["ci"], "correlations": cc["correlations"],
        "predicted": float(np.mean(predicted)),
        "predicted_each": sorted((float(v) for v in predicted), reverse=True),
        "worst_deviation": largest_deviation(cc["correlations"], predicted),
        "shuffled": float(floor),
    }  # fmt: skip


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
    ap.add_argument("images", nargs="+", help="prh train image or sketch run folders")
    ap.add_argument("--out", required=True)
    ap.add_argument("--text-samples", type=int, default=131072)
    ap.add_argument("--seeds", default="0")
    a = ap.parse_args()
    from image_reach import _states
    from prh.training import load_run
    from prh.world import make_world
    from prh.world.observation import predicted_cc

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    _, fit, test = _states()
    images, mods = {}, {run: modality(run) for run in a.images}
    for i, run in enumerate(a.images):
        f = out / f"img{i}-{Path(run).name}"
        images[run] = tuple(_embed_images(run, split, ids, Path(f"{f}-{split}.safetensors"), 64,
                                          mods[run])
                            for split, ids in (("train", fit), ("test", test)))  # fmt: skip
    rows = []
    for kind, world_name in KINDS.items():
        world = make_world(world_name, seed=0)
        for seed in (int(s) for s in a.seeds.split(",")):
            t0 = time.time()
            run = load_run(train_text(world_name, a.text_samples, seed, out / f"{kind}-s{seed}"))
            text = (_embed_texts(run, world, fit, 5, 0), _embed_texts(run, world, test, 1, 1))
            for image, emb in images.items():
                pred = predicted_cc(world, mods[image], "text", K)["observation"]
                rows.append({"image": image, "kind": kind, "seed": seed, **judged(emb, text, pred),
                             "text_s": round(time.time() - t0, 1)})  # fmt: skip
    world = make_world("moving", seed=0)
    runs = list(images)
    for i, x in enumerate(runs):
        for y in runs[i + 1 :]:
            if mods[x] != mods[y]:
                pred = predicted_cc(world, mods[x], mods[y], K)["observation"]
                rows.append({"image": x, "kind": f"~ {Path(y).name} ({mods[y]})", "seed": "-",
                             **judged(images[x], images[y], pred)})  # fmt: skip
    (out / "cross_modal.json").write_text(json.dumps({"args": vars(a), "rows": rows}, indent=1))
    print(f"{'run':<28} {'against':<24} {'seed':>4} {'cc':>6} {'95% interval':>15} "
          f"{'weakest':>7} {'predicted':>9} {'worst dev':>9} {'shuffled':>8}")  # fmt: skip
    for r in rows:
        ci = f"[{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]"
        print(f"{r['image'][-28:]:<28} {r['kind'][-24:]:<24} {r['seed']:>4} {r['cc']:6.3f} "
              f"{ci:>15} {min(r['correlations']):7.3f} {r['predicted']:9.3f} "
              f"{r['worst_deviation']:9.3f} {r['shuffled']:8.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
