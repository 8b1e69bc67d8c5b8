"""Which of the theory's modes a good-view text JEPA carries, seed by seed (issue 31).

    PYTHONPATH=src python benchmarks/text_modes.py --out runs/text-modes [--world moving-literal]
        [--samples 32768] [--seeds 0,1,2] [--warmup-batches 8] [--min-lr-frac 1]
        [--embed-dim 8]

Trains (or reuses, by folder) one good-view text JEPA per seed with the demo's text recipe
(``tiny``, batch 128, lr 1e-3, max_len 48, the whole training split; by default the demo's
cells' warm-up of 8 batches and constant learning rate, so ``--seeds 0`` at 32,768 samples on
``moving-literal`` is the default demo's literal run) and reads it on the demo's states as the
demo's literal step does: 500 bridge states of the training split fit (the mean embedding of 5
captions each, wording seed 0), the 216 held-out states scored (one caption each, wording seed 1):

- ``cc`` and ``min``: the width-fair held-out canonical correlations with ``g*`` (on literal
  captions, the text modality's own theory), their mean and the weakest;
- ``R2 g1..g8 | g9..g12``: the held-out R^2 of each eigenfunction from the embedding's 8
  directions, the four modes below the cut included: where a direction missing from ``g1..g8``
  went instead.

``--embed-dim`` above 8 trains a wider JEPA and reads it through its own spectral read-out: the
top 8 components of the cross-view eigenproblem on 8,192 positive pairs of training states
(:func:`prh.bridge.spectral.cross_view_spectrum`; no theory, no held-out state). Prints one table;
figures in docs/training.md ("The last direction").
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from mode_rows import mode_cells, mode_header, read_modes

K, BELOW, READOUT_PAIRS = 8, 4, 8192


def _states(world):
    from prh.world.registry import split_sample

    return split_sample(world, "train", 500, from_end=True), split_sample(world, "test", 216)


def _embed(run, world, ids, n: int, seed: int) -> np.ndarray:
    """The mean output embedding of ``n`` captions (wording ``seed``) of each state."""
    caps = [c for i in ids for c in world.captions(int(i), n, seed)]
    w = run.model.cfg.embed_dim
    x = np.asarray(run.encode_texts(caps))[:, -1, :w].astype(np.float64)
    return x.reshape(len(ids), n, w).mean(1)


def spectral_readout(run, world, k: int = K, n_pairs: int = READOUT_PAIRS, seed: int = 123):
    """``(mean, projection (w, k))``: the top ``k`` cross-view components of the run's own
    positive pairs (lag pairs of training states, one caption each, fresh wordings)."""
    from prh.training.readout import readout_of_pairs

    train = {int(i) for i in world.split("train")}
    a, b = world.pairs(4 * n_pairs, seed=seed)
    keep = [j for j in range(len(a)) if int(a[j]) in train and int(b[j]) in train][:n_pairs]
    w = run.model.cfg.embed_dim
    halves = []
    for side, off in ((a, 0), (b, 1)):
        caps = [world.captions(int(side[j]), 1, 10_000 + 2 * j + off)[0] for j in keep]
        halves.append(np.asarray(run.encode_texts(caps))[:, -1, :w].astype(np.float64))
    r = readout_of_pairs(*halves, k)
    return r.mean, r.projection


def read(run, world) -> dict:
    fit, test = _states(world)
    g_fit, g_test = world.theory_embedding(fit, K + BELOW), world.theory_embedding(test, K + BELOW)
    x_fit, x_test = _embed(run, world, fit, 5, 0), _embed(run, world, test, 1, 1)
    if x_fit.shape[1] > K:
        mean, proj = spectral_readout(run, world)
        x_fit, x_test = (x_fit - mean) @ proj, (x_test - mean) @ proj
    return read_modes(x_fit, x_test, g_fit, g_test, K)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--world", default="moving-literal")
    ap.add_argument("--samples", type=int, default=32768)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--warmup-batches", type=int, default=8, help="warm-up steps (default 8)")
    ap.add_argument("--min-lr-frac", type=float, default=1.0, help="cosine floor (1: constant)")
    ap.add_argument("--embed-dim", type=int, default=K, help="JEPA width (> 8: spectral read-out)")
    a = ap.parse_args()
    import prh
    from prh.training import load_run
    from prh.world import make_world

    out, rows = Path(a.out), []
    out.mkdir(parents=True, exist_ok=True)
    world = make_world(a.world, seed=0)
    steps = a.samples // 128
    for seed in (int(s) for s in a.seeds.split(",")):
        cfg = prh.train_config(
            "tiny", world=a.world, views="good", samples=a.samples, batch_size=128, lr=1e-3,
            max_len=48, min_lr_frac=a.min_lr_frac, warmup_frac=a.warmup_batches / steps,
            train_scenes=1944, seed=seed, checkpoint_every=0,
            model_overrides={"embed_dim": a.embed_dim} if a.embed_dim != K else {},
        )  # fmt: skip
        run_dir = out / f"s{seed}"
        t0 = time.time()
        if not (run_dir / "model.safetensors").exists():
            prh.train(cfg, run_dir, progress=False)
        rows.append({"seed": seed, "train_s": round(time.time() - t0, 1),
                     **read(load_run(run_dir, device="cpu"), world)})  # fmt: skip
    (out / "text_modes.json").write_text(json.dumps({"args": vars(a), "rows": rows}, indent=1))
    print(f"{'seed':>4} {'cc':>6} {'min':>6}  " + mode_header(K, BELOW))
    for r in rows:
        print(f"{r['seed']:>4} {r['cc']:6.3f} {min(r['correlations']):6.3f}  " + mode_cells(r))


if __name__ == "__main__":
    main()
