"""Spectral pair-free alignment on the planted 960-state moving world (issue 22, item 2).

The world is the probe's (``prh.bridge.planted_spectral.probe_world``: a product of four
reversible path chains, k = 8, adjacent eigenvalues >= 0.033 apart, gap 0.087 after them).
Each modality m sees ``g*(s) R_m + 0.1 N(0, I)`` with its own Haar rotation ``R_m``; each gets
its own ``n`` positive pairs (two states at the lag) and ``n`` unpaired rows, and never a
cross-modal pair. ``prh.bridge.spectral.spectral_align`` returns the map; we report

- the relative rotation error ``||W - W_true||_F / ||W_true||_F`` (``W_true = R_y^T R_x``),
- whether it said ``pinned`` (and how many of the seeds),
- the weakest component's relative separation (its eigenvalue gap in sampling errors of the
  coupling, both sides; the rule pins at >= 8) and the weakest sign confidence,
- state retrieval R@1 on 500 distinct held-out states (noise-free features, X -> Y) through
  the spectral map and through the true map, by largest inner product (the probe's measure)
  and by nearest Euclidean neighbour (chance 0.002; the top 8 eigenfunctions do not tell
  every one of 960 states apart, so even the true map stays low),

as the mean over ``--seeds`` seeds, (a) over pairs per modality and (b) over eigenvalue
separation at fixed pairs, by slowing every factor's walk (``rate_scale``).

    python benchmarks/bench_spectral_pair_free.py            # 3 seeds; about 30 CPU-seconds
    python benchmarks/bench_spectral_pair_free.py --quick    # 1 seed, no 128k
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

from prh.bridge.planted_spectral import planted_features, probe_world
from prh.bridge.spectral import spectral_align
from prh.bridge.synthetic import random_rotation

HELD_OUT = 500
NOISE = 0.1


def one(world, n: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng([seed, n])
    rx, ry = random_rotation(world.k, rng), random_rotation(world.k, rng)

    def side(r):
        s, t = world.pairs(n, rng)
        return planted_features(world, s, r, NOISE, rng), planted_features(world, t, r, NOISE, rng)

    px, py = side(rx), side(ry)
    ux = planted_features(world, world.states(n, rng), rx, NOISE, rng)
    uy = planted_features(world, world.states(n, rng), ry, NOISE, rng)
    t0 = time.process_time()
    res = spectral_align(px, py, ux, uy, assignment="none")
    cpu = time.process_time() - t0
    true = ry.T @ rx
    held = rng.choice(world.num_states, HELD_OUT, replace=False)
    xa, xb = world.embedding[held] @ rx, world.embedding[held] @ ry

    def r1(w):  # the probe's: largest inner product
        return float((((xa @ w.T) @ xb.T).argmax(1) == np.arange(HELD_OUT)).mean())

    def nn1(w):  # nearest in Euclidean distance (no pull towards long rows)
        m = xa @ w.T
        d2 = (m**2).sum(1)[:, None] + (xb**2).sum(1)[None, :] - 2 * m @ xb.T
        return float((d2.argmin(1) == np.arange(HELD_OUT)).mean())

    return {
        "err": float(np.linalg.norm(res.map - true) / np.linalg.norm(true)),
        "pinned": float(res.pinned),
        "sep": float(min(res.relative_separation_x.min(), res.relative_separation_y.min())),
        "sign": float(res.sign_z.min()),
        "r1": r1(res.map),
        "r1_true": r1(true),
        "nn": nn1(res.map),
        "nn_true": nn1(true),
        "cpu": cpu,
    }


def row(label: str, runs: list[dict[str, float]]) -> str:
    m = {k: float(np.mean([r[k] for r in runs])) for k in runs[0]}
    errs = [r["err"] for r in runs]
    pinned = int(sum(r["pinned"] for r in runs))
    return (
        f"| {label} | {m['err']:.3f} ({min(errs):.3f}-{max(errs):.3f}) | {pinned}/{len(runs)} | "
        f"{m['sep']:.1f} | {m['sign']:.1f} | {m['r1']:.3f} / {m['r1_true']:.3f} | "
        f"{m['nn']:.3f} / {m['nn_true']:.3f} | {m['cpu']:.2f} |"
    )


HEAD = (
    "| {what} | rotation error, mean (range) | pinned | weakest separation (errors) | "
    "weakest sign z | R@1 inner product, spectral / true map | R@1 nearest, spectral / true "
    "map | CPU s / align |\n"
    "|---|---|---|---|---|---|---|---|"
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="1 seed, no 128k pairs")
    a = ap.parse_args()
    seeds = range(1 if a.quick else a.seeds)
    counts = (2000, 8000, 32000) if a.quick else (2000, 8000, 32000, 128000)
    t0 = time.process_time()
    with threadpool_limits(limits=1):
        world = probe_world()
        print(f"world: {world.num_states} states, lag {world.lag}, k = {world.k}, top "
              f"eigenvalues {np.round(world.eigenvalues[:8], 3).tolist()}, separation "
              f"{world.separation():.3f}, gap {world.gap():.3f}\n")  # fmt: skip
        print("(a) over pairs per modality (rate_scale 1)\n")
        print(HEAD.format(what="pairs per modality"))
        for n in counts:
            print(row(f"{n:,}", [one(world, n, s) for s in seeds]), flush=True)
        print("\n(b) over eigenvalue separation, 32,000 pairs per modality\n")
        print(HEAD.format(what="rate_scale: separation, gap, l_1"))
        for c in (1.0, 0.3, 0.1, 0.03):
            w = world if c == 1.0 else probe_world(rate_scale=c)
            label = f"{c:g}: {w.separation():.4f}, {w.gap():.4f}, {w.eigenvalues[0]:.3f}"
            print(row(label, [one(w, 32000, s) for s in seeds]), flush=True)
    print(f"\ntotal {time.process_time() - t0:.0f} CPU-s")


if __name__ == "__main__":
    main()
