"""The rotation score on planted pairs: what it detects and what it does not (docs/bridge.md).

Each case of ``prh.bridge.planted_pairs`` (the same definitions the tests assert on) gets the
held-out rotation score: whitened orthonormal map vs ridge, fitted on the first half of the rows,
scored on the second. Deterministic in ``--seed``; the table in docs/bridge.md is seed 0.

    python benchmarks/bench_rotation.py
"""

from __future__ import annotations

import argparse
import math

from prh.bridge.planted_pairs import PLANTED_CASES, planted_pair
from prh.bridge.rotation_score import rotation_score

ROWS = (  # (case, common k for both sides?)
    ("rotation", True),
    ("private-both", True),
    ("nonlinear-half", True),
    ("linear", True),
    ("tanh", True),
    ("private-wider", False),
    ("private-wider", True),
    ("unrelated", True),
)


def _f(v: float) -> str:
    return "undefined" if not math.isfinite(v) else f"{v:.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1600, help="rows (half train, half held out)")
    ap.add_argument("--d", type=int, default=24, help="latent dimension")
    ap.add_argument("--noise", type=float, default=0.5, help="noise per side")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bootstrap", type=int, default=1000, help="resamples of the score interval")
    a = ap.parse_args()
    print("| planted pair | k | R@1 orthonormal / ridge | rotation score [95% CI] | R^2 ratio |")
    print("|---|---|---|---|---|")
    h = a.n // 2
    for case, common in ROWS:
        x, y = planted_pair(case, n=a.n, d=a.d, noise=a.noise, seed=a.seed)
        r = rotation_score(x[:h], y[:h], x[h:], y[h:], common=common, bootstrap=a.bootstrap)
        ci = f" [{r.score_ci[0]:.2f}, {r.score_ci[1]:.2f}]" if r.score_ci else ""
        k = f"{r.k_x}" if r.k_x == r.k_y else f"{r.k_x} x {r.k_y} (per side)"
        print(
            f"| {PLANTED_CASES[case][0]} | {k} | {r.orthonormal.r1:.3f} / {r.ridge.r1:.3f} "
            f"| {_f(r.score)}{ci} | {_f(r.r2_ratio)} |"
        )


if __name__ == "__main__":
    main()
