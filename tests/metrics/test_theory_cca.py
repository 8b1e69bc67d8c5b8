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


def test_width_fair_cc_does_not_reward_a_wide_map_that_only_keeps_identity():
    # 60 discrete states; g* a smooth function of the state (k = 4). A one-hot of the state is
    # 60 wide and carries no preference for g*: the raw read-out (top 64 directions) decodes g*
    # from it linearly, the width-fair one (top k directions) cannot. An encoder whose 4
    # dimensions ARE g* (rotated, noisy) scores high under both.
    from prh.metrics.theory_cca import heldout_cc, width_fair_cc

    rng = np.random.default_rng(0)
    n_states, k = 60, 4
    t = np.arange(n_states) / n_states
    table = np.stack([np.cos(2 * np.pi * (j + 1) * t) for j in range(k)], 1)  # (60, 4)
    s_fit, s_test = rng.integers(0, n_states, 500), rng.integers(0, n_states, 300)
    one_hot = np.eye(n_states)
    wide_fit = one_hot[s_fit] + 0.01 * rng.normal(size=(500, n_states))
    wide_test = one_hot[s_test] + 0.01 * rng.normal(size=(300, n_states))
    rot = np.linalg.qr(rng.normal(size=(k, k)))[0]
    narrow_fit = table[s_fit] @ rot + 0.1 * rng.normal(size=(500, k))
    narrow_test = table[s_test] @ rot + 0.1 * rng.normal(size=(300, k))
    g_fit, g_test = table[s_fit], table[s_test]
    raw = heldout_cc(wide_fit, g_fit, wide_test, g_test, components=k, n_boot=20).mean
    fair = width_fair_cc(wide_fit, g_fit, wide_test, g_test, components=k, n_boot=20).mean
    assert raw > 0.9 and fair < 0.6  # width bought the raw score
    good = width_fair_cc(narrow_fit, g_fit, narrow_test, g_test, components=k, n_boot=20).mean
    assert good > 0.95
    same = heldout_cc(narrow_fit, g_fit, narrow_test, g_test, components=k, n_boot=20).mean
    assert abs(good - same) < 1e-9  # k-wide encoders: the two read-outs are one
