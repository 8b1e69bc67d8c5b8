"""Theory against an encoder (issue 21 item 4): held-out CCA on planted data."""

from __future__ import annotations

import numpy as np
import pytest

from prh.errors import InputError
from prh.metrics import theory_cca


def _planted(n: int, k: int, d: int, noise: float, seed: int, related: bool = True):
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((n, k))
    R = rng.standard_normal((k, d))
    x = (g if related else rng.standard_normal((n, k))) @ R + noise * rng.standard_normal((n, d))
    return x, g


def test_features_that_rotate_the_theory_score_near_one():
    x, g = _planted(1200, 8, 32, 0.05, seed=0)
    r = theory_cca(x[:600], g[:600], x[600:], g[600:], n_boot=200)
    assert r.correlations.shape == (8,)
    assert r.correlations.min() > 0.98
    assert r.ci[0] <= r.mean <= r.ci[1] and r.ci[0] > 0.98


def test_unrelated_features_score_near_zero_though_the_fit_is_optimistic():
    x, g = _planted(1200, 8, 32, 0.05, seed=1, related=False)
    r = theory_cca(x[:600], g[:600], x[600:], g[600:], n_boot=200)
    assert abs(r.mean) < 0.05
    assert r.ci[0] < 0.0 < r.ci[1] or abs(r.mean) < 0.03
    assert r.fit_correlations.max() > 0.15  # the fitting states alone would mislead


def test_noise_lowers_the_score_monotonically():
    scores = []
    for noise in (0.1, 1.0, 3.0):
        x, g = _planted(1000, 4, 16, noise, seed=2)
        scores.append(theory_cca(x[:500], g[:500], x[500:], g[500:], n_boot=50).mean)
    assert scores[0] > scores[1] > scores[2]


def test_deterministic_in_its_seed():
    x, g = _planted(400, 4, 8, 0.5, seed=3)
    a = theory_cca(x[:200], g[:200], x[200:], g[200:], n_boot=100, seed=5)
    b = theory_cca(x[:200], g[:200], x[200:], g[200:], n_boot=100, seed=5)
    assert a.to_dict() == b.to_dict()


def test_bad_shapes_are_one_line():
    x, g = _planted(100, 4, 8, 0.5, seed=4)
    with pytest.raises(InputError, match="one N"):
        theory_cca(x[:50], g[:40], x[50:], g[50:])
    with pytest.raises(InputError, match="NaN"):
        theory_cca(np.full((50, 8), np.nan), g[:50], x[50:], g[50:])
