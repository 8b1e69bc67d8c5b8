"""Good-view text JEPAs against the theory, partial vs literal captions (issue 31).

    PYTHONPATH=src python benchmarks/theory_reach.py --out runs/theory-reach [--samples 32768]
        [--seeds 0] [--worlds moving,moving-literal]

For each world and seed: a good-view text JEPA trained with the demo's text recipe (``tiny``,
batch 128, lr 1e-3 constant, max_len 48, the whole training split), its ``--eval-theory`` curve
against ``g*`` (width-fair), then on the demo's states (500 bridge states of the training split
fit, 216 held-out states scored; one caption per state, wording seed 1):

- ``vs g*``: the held-out cc with the world's theory embedding, width-fair and raw (top 64);
- ``vs own``: the width-fair held-out cc with the text modality's own theory embedding, each
  caption's content read back (:func:`prh.world.observation.theory_of_captions`), and its
  smallest direction;
- ``ceiling``: what a perfect text JEPA reaches against ``g*`` on one caption per state
  (population, :func:`prh.world.observation.predicted_cc`);
- ``min var``: the smallest output direction's variance over the mean (the collapse check; the
  loophole left 1e-8 before issue 31);
- the same figures for the random-init encoder of the same recipe (the floor).

Prints one table; figures in docs/benchmarks.md ("Theory reach").
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np


def _scores(world, x_fit, x_test, ids, k):
    from prh.metrics.theory_cca import heldout_cc, width_fair_cc
    from prh.world.observation import theory_of_captions

    fit, test = ids
    g_fit, g_test = world.theory_embedding(fit, k), world.theory_embedding(test, k)
    caps = [world.captions(int(i), 1, seed=1)[0] for i in (*fit, *test)]
    own = theory_of_captions(world, [*fit, *test], caps, k)
    o_fit, o_test = own[: len(fit)], own[len(fit) :]
    fair = width_fair_cc(x_fit, g_fit, x_test, g_test, components=k, n_boot=200)
    raw = heldout_cc(x_fit, g_fit, x_test, g_test, components=k, max_dim=64, n_boot=200)
    mine = width_fair_cc(x_fit, o_fit, x_test, o_test, components=k, n_boot=200)
    ev = np.linalg.eigvalsh(np.cov(np.concatenate([x_fit, x_test]), rowvar=False))
    return {
        "vs_gstar": fair.mean, "vs_gstar_ci": list(fair.ci), "vs_gstar_raw": raw.mean,
        "vs_own": mine.mean, "vs_own_ci": list(mine.ci),
        "vs_own_min": float(mine.correlations.min()),
        "min_var": float(ev.min() / ev.mean()),
    }  # fmt: skip


def _features(run_dir: Path, world, ids, random_init: bool = False):
    from prh.training import load_run

    run = load_run(run_dir, device="cpu")
    if random_init:
        from prh.demo.world import random_init_encoder

        enc = random_init_encoder(run_dir, 0)
    else:
        enc = run
    width = run.model.cfg.embed_dim
    out = []
    for part in ids:
        caps = [world.captions(int(i), 1, seed=1)[0] for i in part]
        out.append(np.asarray(enc.encode_texts(caps))[:, -1, :width].astype(np.float64))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--samples", type=int, default=32768)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--worlds", default="moving,moving-literal")
    ap.add_argument(
        "--min-lr-frac",
        type=float,
        default=1.0,
        help="cosine decay to this fraction of lr (1: the demo's constant lr)",
    )
    a = ap.parse_args()
    import prh
    from prh.features import save_features
    from prh.world import make_world
    from prh.world.observation import predicted_cc
    from prh.world.registry import split_sample

    out, k, rows = Path(a.out), 8, []
    out.mkdir(parents=True, exist_ok=True)
    for name in a.worlds.split(","):
        world = make_world(name, seed=0)
        ids = (split_sample(world, "train", 500, from_end=True), split_sample(world, "test", 216))
        gfile = out / f"gstar-{name}.safetensors"
        every = [*ids[0], *ids[1]]
        save_features(gfile, world.theory_embedding(every, k), [f"scene_{i}" for i in every])
        ceiling = float(np.mean(predicted_cc(world, "text", "g*", k)["observation"]))
        for seed in (int(s) for s in a.seeds.split(",")):
            cfg = prh.train_config(
                "tiny", world=name, views="good", samples=a.samples, batch_size=128, lr=1e-3,
                max_len=48, min_lr_frac=a.min_lr_frac, train_scenes=1944, seed=seed,
                eval_theory=str(gfile), eval_every=max(1, a.samples // 128 // 4),
            )  # fmt: skip
            run_dir = out / f"{name}-good-s{seed}"
            t0 = time.time()
            if not (run_dir / "model.safetensors").exists():
                prh.train(cfg, run_dir, progress=False)
            secs = time.time() - t0
            curve = [
                (r["samples"], round(r["eval_theory_cc"], 3))
                for r in map(json.loads, (run_dir / "metrics.jsonl").read_text().splitlines())
                if "eval_theory_cc" in r
            ]
            for label, rnd in (("trained", False), ("random-init", True)):
                x_fit, x_test = _features(run_dir, world, ids, random_init=rnd)
                r = _scores(world, x_fit, x_test, ids, k)
                rows.append({"world": name, "seed": seed, "encoder": label, "ceiling": ceiling,
                             "train_s": round(secs, 1) if not rnd else None,
                             "curve": curve if not rnd else None, **r})  # fmt: skip
    (out / "theory_reach.json").write_text(json.dumps(rows, indent=1))
    head = f"{'world':<15} {'seed':>4} {'encoder':<12} {'vs g*':>6} {'raw':>6} {'ceiling':>7} "
    print(head + f"{'vs own':>6} {'own min':>7} {'min var':>8}  curve vs g* (samples, cc)")
    for r in rows:
        print(f"{r['world']:<15} {r['seed']:>4} {r['encoder']:<12} {r['vs_gstar']:6.3f} "
              f"{r['vs_gstar_raw']:6.3f} {r['ceiling']:7.3f} {r['vs_own']:6.3f} "
              f"{r['vs_own_min']:7.3f} {r['min_var']:8.1e}  {r['curve'] or ''}")  # fmt: skip


if __name__ == "__main__":
    main()
