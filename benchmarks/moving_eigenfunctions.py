"""Which factors each of the moving cave's top eigenfunctions depends on.

    PYTHONPATH=src python benchmarks/moving_eigenfunctions.py [--k 8]

For each of the top ``k`` non-constant eigenfunctions ``g_i`` of the pair kernel (seed 0), the
fraction of its variance (under the stationary law ``p``) explained by each factor alone (shape,
colour, size, row, col) and by the best pair of factors (the ``p``-weighted means of ``g_i`` over
the factor's, or the pair's, values): 1 for a function of that factor alone, 0 when the factor
says nothing of it. A function that no pair explains depends on three or more factors jointly
(position and shape through the mobility, and size): an encoder must carry such an interaction
to carry ``g_i``.
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np

from prh.world import make_world

FACTORS = ("shape", "colour", "size", "row", "col")


def explained(y: np.ndarray, codes: np.ndarray, p: np.ndarray) -> float:
    """Fraction of the ``p``-weighted variance of ``y`` explained by its means within ``codes``."""
    m = np.empty_like(y)
    for c in np.unique(codes):
        sel = codes == c
        m[sel] = np.average(y[sel], weights=p[sel])
    mu = np.average(y, weights=p)
    return 1.0 - np.average((y - m) ** 2, weights=p) / np.average((y - mu) ** 2, weights=p)


def main() -> None:
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument("--k", type=int, default=8)
    k = a.parse_args().k
    w = make_world("moving", seed=0)
    ids = np.arange(w.num_scenes)
    g, p = w.theory_embedding(ids, k), w.spectrum(k + 1).p
    f = {n: np.array([getattr(w.object(int(i)), n) for i in ids]) for n in FACTORS}
    print("| g_i | eigenvalue | " + " | ".join(FACTORS) + " | best pair |")
    print("|---|---|" + "---|" * len(FACTORS) + "---|")
    ev = w.spectrum(k + 1).nontrivial()
    for i in range(k):
        one = [explained(g[:, i], f[n], p) for n in FACTORS]
        pair = max(
            (explained(g[:, i], f[x] * 100 + f[y], p), f"{x}+{y}")
            for x, y in itertools.combinations(FACTORS, 2)
        )
        cells = " | ".join(f"{v:.2f}" for v in one)
        print(f"| {i + 1} | {ev[i]:.4f} | {cells} | {pair[1]} {pair[0]:.2f} |")
    print("\n" + one_hot_line(w, k))


def one_hot_line(w, k: int) -> str:
    """The held-out canonical correlations of a linear read-out of the one-hot factors with
    ``g*`` (fitted on 500 evenly spaced training states, scored on the 216 test states, as the
    demo's theory cc)."""
    from prh.metrics.theory_cca import heldout_cc
    from prh.world.registry import split_sample

    def one_hot(ids):
        rows = []
        for i in ids:
            o, parts = w.object(int(i)), []
            for name, n in zip(FACTORS, (8, 10, 3, 3, 3), strict=True):
                parts.append(np.eye(n)[int(getattr(o, name))])
            rows.append(np.concatenate(parts))
        return np.array(rows)

    fit, test = split_sample(w, "train", 500, from_end=True), split_sample(w, "test", 216)
    r = heldout_cc(one_hot(fit), w.theory_embedding(fit, k), one_hot(test),
                   w.theory_embedding(test, k), components=k)  # fmt: skip
    return f"one-hot factors, held-out cc: mean {r.mean:.3f}; " + " ".join(
        f"{c:.2f}" for c in r.correlations
    )


if __name__ == "__main__":
    main()
