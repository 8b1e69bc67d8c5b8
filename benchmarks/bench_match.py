"""Pair-free matching, side by side: prh vs scipy FAQ vs POT entropic Gromov-Wasserstein.

Problems with a planted answer (``prh.bridge.synthetic.planted_clouds``: clustered anisotropic
clouds in 8 dimensions, rotated by a Haar rotation, Gaussian noise, rows shuffled). Every method
gets the same two linear kernels ``K = X_c X_c^T`` and returns a permutation; we report accuracy
(fraction of rows matched to their planted partner) and wall seconds. ``oracle`` is the Hungarian
assignment under the *true* rotation: the accuracy the noise allows.

    python benchmarks/bench_match.py               # N = 10, 30, 100, 1000
    python benchmarks/bench_match.py --large       # plus prh's sample level at N = 100,000

Hook: the cave world's class-level problem (class-mean features of two encoders) becomes one more
row through ``extra_problems()`` once the world and encoder features exist.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.optimize import linear_sum_assignment, quadratic_assignment

from prh.bridge.match import kernel_matrix, match_kernels, match_samples
from prh.bridge.synthetic import planted_clouds


def oracle(x, y, truth):
    from prh.linalg import procrustes_rotation

    q = procrustes_rotation(x, y[truth])
    xq = x @ q.T
    _, cols = linear_sum_assignment(((xq[:, None] - y[None]) ** 2).sum(-1))
    return cols


def run_prh(kx, ky, polish="auto"):
    return match_kernels(kx, ky, polish=polish).permutation


def run_faq(kx, ky):
    return quadratic_assignment(kx, ky, method="faq", options={"maximize": True}).col_ind


def _dist(k):
    # Euclidean distances from the kernel, d_ij^2 = K_ii + K_jj - 2 K_ij: GW's usual input (on
    # the kernels themselves entropic GW collapses to the uniform coupling here)
    d = np.sqrt(np.maximum(np.diag(k)[:, None] + np.diag(k)[None, :] - 2 * k, 0.0))
    return d / d.max()


def run_gw(kx, ky, epsilon=1e-3):
    import ot

    n = len(kx)
    p = np.full(n, 1.0 / n)
    c1, c2 = _dist(kx), _dist(ky)
    t = ot.gromov.entropic_gromov_wasserstein(
        c1, c2, p, p, loss_fun="square_loss", epsilon=epsilon, max_iter=200
    )
    return linear_sum_assignment(-np.asarray(t))[1]


def extra_problems():
    """Yield ``(name, x, y, truth)`` rows beyond the synthetic ones.

    TODO(cave world): class means of two encoders' features over the world's classes, truth =
    identity over shared class names (see ``prh match --classes-x/--classes-y``).
    """
    return iter(())


def timed(fn, *a, **kw):
    t0 = time.perf_counter()
    out = fn(*a, **kw)
    return out, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 30, 100, 1000])
    ap.add_argument("--noise", type=float, default=0.1)
    ap.add_argument("--seeds", type=int, default=3, help="problems per size (1 at N >= 1000)")
    ap.add_argument("--large", action="store_true", help="add prh sample level at N = 100,000")
    ap.add_argument("--methods", nargs="+", default=None, help="subset of the columns to run")
    args = ap.parse_args()
    methods = {
        "prh": lambda kx, ky: run_prh(kx, ky),
        "prh+2opt": lambda kx, ky: run_prh(kx, ky, "2opt"),
        "FAQ": run_faq,
        "POT eGW": run_gw,
    }
    if args.methods:
        methods = {m: f for m, f in methods.items() if m in args.methods}
    print(f"planted clouds, d = 8, noise = {args.noise}; accuracy (mean over seeds) and seconds")
    head = f"{'N':>6} {'oracle':>7} " + " ".join(f"{m:>18}" for m in methods)
    print(head)
    problems = []
    for n in args.sizes:
        seeds = 1 if n >= 1000 else args.seeds
        problems.append(
            (str(n), [planted_clouds(n, noise=args.noise, seed=s) for s in range(seeds)])
        )
    for name, x, y, truth in extra_problems():
        problems.append((name, [(x, y, truth)]))
    for name, cases in problems:
        acc = {m: [] for m in methods}
        sec = {m: [] for m in methods}
        orc = []
        for x, y, truth in cases:
            kx, ky = kernel_matrix(x), kernel_matrix(y)
            orc.append((oracle(x, y, truth) == truth).mean())
            for m, fn in methods.items():
                perm, s = timed(fn, kx, ky)
                acc[m].append((np.asarray(perm) == truth).mean())
                sec[m].append(s)
        cells = " ".join(f"{np.mean(acc[m]):>8.3f} {np.mean(sec[m]):>8.3f}s" for m in methods)
        print(f"{name:>6} {np.mean(orc):>7.3f} {cells}", flush=True)
    if args.large:
        x, y, truth = planted_clouds(100_000, noise=0.01, clusters=30, seed=0)
        res = match_samples(x, y, truth=truth)
        print(
            f"sample level N = 100000, noise = 0.01: prh accuracy {res.accuracy:.4f}, "
            f"{res.seconds:.1f} s"
        )


if __name__ == "__main__":
    main()
