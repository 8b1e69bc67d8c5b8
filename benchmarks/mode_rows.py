"""One reading of an encoder against a theory embedding, shared by the mode-by-mode benchmarks
(``image_reach.py``, ``text_modes.py``): the width-fair held-out canonical correlations and the
held-out R^2 of every eigenfunction, the modes below the cut included."""

from __future__ import annotations

import numpy as np


def read_modes(x_fit, x_test, g_fit, g_test, k: int) -> dict:
    """The width-fair cc against the first ``k`` columns of ``g`` (mean, 95% bootstrap interval,
    each correlation) and the held-out R^2 of every column of ``g`` from ``k`` principal
    directions of ``x`` (``g`` may hold modes below the cut after the first ``k``)."""
    from prh.metrics.theory_cca import mode_profile, width_fair_cc

    cc = width_fair_cc(x_fit, g_fit[:, :k], x_test, g_test[:, :k], components=k, n_boot=200)
    modes = mode_profile(x_fit, g_fit, x_test, g_test, components=k).to_dict()
    return {
        "cc": float(cc.mean),
        "ci": [float(v) for v in cc.ci],
        "correlations": [float(v) for v in np.atleast_1d(cc.correlations)],
        "r2": modes["r2"],
        "r2_below": modes["r2_below"],
        "modes": modes["describe"],
    }


def mode_header(k: int, below: int) -> str:
    """``   g1    g2 ... |   g9 ...``: the column heads of :func:`mode_cells`."""
    heads = [f"{'g' + str(j + 1):>5}" for j in range(k + below)]
    return " ".join(heads[:k]) + " |" + " ".join(heads[k:])


def mode_cells(row: dict) -> str:
    """A row's R^2 per mode, above and below the cut, and which modes it misses or holds instead."""
    return (" ".join(f"{v:5.2f}" for v in row["r2"]) + " |"
            + " ".join(f"{v:5.2f}" for v in row["r2_below"]) + f"  {row['modes']}")  # fmt: skip
