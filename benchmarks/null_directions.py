"""How often the per-direction reading of issue 31's cross-modal target (every canonical
correlation within 0.1 of its prediction) fails for two encoders that meet the prediction.

    PYTHONPATH=src python benchmarks/null_directions.py [--trials 200] [--tests 216,1000]

Two planted 8-wide embeddings share two directions (the second side adds noise of sd 0.1, so
the shared correlation is about 0.995) and carry six unrelated Gaussian directions each: the
theory's ``[1, 1, 0, 0, 0, 0, 0, 0]`` (sketch ~ image, sketch ~ literal text). Each trial fits
the width-fair canonical correlations on 500 rows and scores held-out rows
(:func:`prh.demo.theory.two_readouts`, the demo's and ``cross_modal_reach.py``'s measure), then
takes the largest deviation of the sorted correlations from the prediction
(:func:`prh.demo.literal_rule.largest_deviation`, the literal rule's own). Prints, per
held-out size, the median worst deviation and the share of trials above 0.1: the rate at which
the reading fails a pair that has what the theory predicts. Figures in docs/training.md
("Sketches across modalities").
"""

from __future__ import annotations

import argparse

import numpy as np

PREDICTED = np.array([1, 1, 0, 0, 0, 0, 0, 0], dtype=float)
FIT = 500


def trial(rng: np.random.Generator, n_test: int) -> float:
    """One trial's largest deviation of the held-out correlations from ``PREDICTED``."""
    from prh.demo.literal_rule import largest_deviation
    from prh.demo.theory import two_readouts

    n = FIT + n_test
    shared = rng.normal(size=(n, 2))
    a = np.hstack([shared, rng.normal(size=(n, 6))])
    b = np.hstack([shared + 0.1 * rng.normal(size=(n, 2)), rng.normal(size=(n, 6))])
    cc = two_readouts(a[:FIT], b[:FIT], a[FIT:], b[FIT:], 8, n_boot=2)
    return largest_deviation(cc["correlations"], PREDICTED)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--tests", default="216,1000", help="held-out sizes, comma-separated")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    print(f"{'held-out rows':>13} {'trials':>6} {'median worst deviation':>22} {'share > 0.1':>11}")
    for n_test in (int(t) for t in a.tests.split(",")):
        rng = np.random.default_rng(a.seed)
        w = np.array([trial(rng, n_test) for _ in range(a.trials)])
        print(f"{n_test:>13} {a.trials:>6} {np.median(w):>22.3f} {np.mean(w > 0.1):>11.3f}")


if __name__ == "__main__":
    main()
