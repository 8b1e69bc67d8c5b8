"""The spectral pair-free map between two runs trained apart, as the demo's literal step finds it,
at a pair cap of your choosing (issue 31, item 6).

    PYTHONPATH=src python benchmarks/spectral_reach.py --x-run RUN_X --x-files TRAIN TEST \\
        --y-run RUN_Y --y-files TRAIN TEST --cap 32768 --json OUT.json

Each side draws its own positive pairs from its run (:func:`prh.training.moving.run_positive_pairs`,
round ``r`` seeded ``r``), doubling from 4,096 until every one of the top 8 components is separated
on both sides or ``--cap`` pairs a side
(:func:`prh.bridge.spectral.spectral_align_until_separated`, components matched by eigenvalue,
signs from the held-out rows). ``--x-files`` / ``--y-files`` are ``prh embed`` files of the same
states (the training split's rows fit the paired map, the test split's are scored); a run's
stored ``prh readout`` applies to both its draws and its files. Prints whether the rotation is
pinned (or the method's one-line reason), the pairs drawn, and the held-out R@1 and R^2 through
the spectral map against the paired orthonormal map (:func:`prh.demo.spectral.compare_maps`).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np


def _rows(path: str, width: int) -> np.ndarray:
    from prh.features import last_layer, load_features

    f = load_features(path)
    return last_layer(f.features, f.layer_dims)[:, :width].astype(np.float64)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for side in ("x", "y"):
        ap.add_argument(f"--{side}-run", required=True)
        ap.add_argument(f"--{side}-files", nargs=2, required=True, metavar=("TRAIN", "TEST"))
    ap.add_argument("--cap", type=int, default=8192, help="pairs a side at most (default 8192)")
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    from prh.bridge.spectral import spectral_align_until_separated
    from prh.demo.spectral import compare_maps
    from prh.training import load_run
    from prh.training.moving import run_positive_pairs

    runs = {s: load_run(getattr(a, f"{s}_run"), device="cpu") for s in ("x", "y")}
    widths = {s: int(r.model_config.embed_dim) for s, r in runs.items()}
    fx, tx = (_rows(p, widths["x"]) for p in a.x_files)
    fy, ty = (_rows(p, widths["y"]) for p in a.y_files)

    def drawer(side: str):
        return lambda n, rnd: run_positive_pairs(runs[side], n, seed=rnd).embedding()

    t0 = time.time()
    res = spectral_align_until_separated(
        drawer("x"), drawer("y"), tx, ty, k=min(8, *widths.values()), start=min(4096, a.cap),
        cap=a.cap, truth=np.arange(len(ty)), seed=0, assignment="hungarian",
    )  # fmt: skip
    d = res.to_dict()
    keep = ("k", "pinned", "reason", "eigenvalues_x", "eigenvalues_y", "pairs_drawn", "stopped",
            "accuracy")  # fmt: skip
    out = {**{f: d[f] for f in keep}, **compare_maps(res, (fx, fy), (tx, ty)),
           "seconds": round(time.time() - t0, 1), "args": vars(a)}  # fmt: skip
    Path(a.json).write_text(json.dumps(out, indent=1, default=float))
    print(f"pinned: {out['pinned']} ({out['reason'] or 'every component separated and matched'})")
    print(f"pairs drawn a side: {out['pairs_drawn']} (stopped: {out['stopped']})")
    for side in ("x", "y"):
        print(f"eigenvalues {side}: " + " ".join(f"{v:.3f}" for v in out[f"eigenvalues_{side}"]))
    s, p = out["spectral"], out["paired"]
    print(f"held-out R@1 spectral {s['r1']:.3f} vs paired {p['r1']:.3f} "
          f"({out['r1_ratio']:.0%} of paired, {s['r1'] / out['chance_r1']:.0f}x chance); "
          f"R^2 {s['r2']:.3f} vs {p['r2']:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
