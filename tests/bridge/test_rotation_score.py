"""The rotation score recovers planted answers: a rotation scores ~1, private dimensions on both
sides score clearly lower, and whitening makes any invertible linear map count as a rotation."""

from __future__ import annotations

import numpy as np
import pytest

from prh.bridge.planted_pairs import planted_pair
from prh.bridge.rotation_score import (
    above_chance,
    canonical_correlations,
    pca_basis,
    rotation_score,
    split_rows,
)
from prh.bridge.synthetic import random_rotation
from prh.errors import InputError

N, N_TRAIN, D = 1600, 800, 24  # noise 0.5 per side: R@1 well inside (0, 1), not saturated


def _score(x, y, **kw):
    return rotation_score(x[:N_TRAIN], y[:N_TRAIN], x[N_TRAIN:], y[N_TRAIN:], **kw)


def _case(case, seed=0, **kw):
    x, y = planted_pair(case, n=N, d=D, noise=0.5, seed=seed)
    return _score(x, y, **kw)


def test_planted_rotation_scores_one():
    r = _case("rotation")
    assert r.ridge_above_chance
    assert 0.2 < r.ridge.r1 < 0.99  # retrieval not saturated, so the ratio can show a gap
    assert r.score == pytest.approx(1.0, abs=0.05)
    assert r.r2_ratio == pytest.approx(1.0, abs=0.1)
    assert (r.k_x, r.k_y, r.rank, r.n_train, r.n_test) == (D, D, D, N_TRAIN, N - N_TRAIN)


def test_exact_rotation_is_perfect_and_canonical_correlations_are_one():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((400, 8)) * np.arange(1, 9)
    r = rotation_score(*_halves(x, x @ random_rotation(8, rng)))
    assert r.orthonormal.r1 == 1.0 and r.ridge.r1 == 1.0
    assert r.orthonormal.r2 == pytest.approx(1.0, abs=1e-6)
    assert np.allclose(r.canonical, 1.0, atol=1e-8)


def _halves(x, y):
    h = len(x) // 2
    return x[:h], y[:h], x[h:], y[h:]


def test_private_dimensions_on_both_sides_score_clearly_lower():
    # The orthonormal map must map X's private half onto Y's (noise at full weight); ridge
    # ignores it.
    r = _case("private-both")
    assert r.ridge_above_chance
    assert r.score < 0.6
    assert r.orthonormal.r2 < r.ridge.r2
    assert r.score < _case("rotation").score - 0.3


def test_partly_nonlinear_relation_scores_lower():
    r = _case("nonlinear-half")
    assert r.ridge_above_chance
    assert r.score < 0.6


def test_whitening_makes_any_invertible_linear_map_a_rotation():
    # What the score does NOT detect: Y = X A with A ill-conditioned.
    assert _case("linear").score == pytest.approx(1.0, abs=0.06)


def test_uniform_saturation_keeps_the_r1_score_but_lowers_the_r2_ratio():
    # Every direction equally saturated: all canonical correlations drop together, R@1
    # (scale-free) cannot tell, R^2 can.
    r = _case("tanh")
    assert r.ridge_above_chance
    assert r.score == pytest.approx(1.0, abs=0.06)
    assert r.r2_ratio < 0.9


def test_private_dimensions_on_the_wider_side_only_are_ignored_per_side():
    r = _case("private-wider", common=False)
    assert (r.k_x, r.k_y, r.rank) == (D, D // 2, D // 2)
    assert r.score == pytest.approx(1.0, abs=0.06)
    # one common k: X's top-12 principal subspace mixes its private half in, and that shows
    c = _case("private-wider")
    assert (c.k_x, c.k_y, c.rank) == (D // 2, D // 2, D // 2)
    assert c.ridge_above_chance and c.score < r.score - 0.15


def test_unrelated_sides_give_no_score():
    r = _case("unrelated")
    assert not r.ridge_above_chance
    assert np.isnan(r.score) and r.score_ci is None


def test_deterministic_and_split_is_seeded():
    x, y = planted_pair("tanh", n=N, d=D, seed=7)
    assert _score(x, y).to_dict() == _score(x, y).to_dict()
    x2, y2 = planted_pair("tanh", n=N, d=D, seed=7)
    assert np.array_equal(x, x2) and np.array_equal(y, y2)
    tr, te = split_rows(100, 0.3, seed=5)
    tr2, te2 = split_rows(100, 0.3, seed=5)
    assert np.array_equal(tr, tr2) and np.array_equal(te, te2)
    assert len(te) == 30 and sorted(np.concatenate([tr, te]).tolist()) == list(range(100))
    assert not np.array_equal(split_rows(100, 0.3, seed=6)[1], te)


def test_pca_basis_drops_constant_and_padded_columns():
    rng = np.random.default_rng(8)
    x = np.hstack([rng.standard_normal((50, 5)), np.zeros((50, 3)), np.ones((50, 2))])
    _, comps = pca_basis(x, 256)
    assert comps.shape == (5, 10)
    assert np.allclose(comps[:, 5:], 0.0, atol=1e-12)


def test_canonical_correlations_against_a_direct_computation():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((300, 4))
    y = x[:, :3] @ rng.standard_normal((3, 3)) + rng.standard_normal((300, 3))
    xc, yc = x - x.mean(0), y - y.mean(0)
    cxx, cyy, cxy = xc.T @ xc, yc.T @ yc, xc.T @ yc

    def inv_sqrt(c):
        w, v = np.linalg.eigh(c)
        return (v / np.sqrt(w)) @ v.T

    ref = np.linalg.svd(inv_sqrt(cxx) @ cxy @ inv_sqrt(cyy), compute_uv=False)
    assert np.allclose(canonical_correlations(x, y), ref, atol=1e-10)


def test_above_chance_threshold():
    assert not above_chance(1 / 500, 500)  # exactly chance
    assert above_chance(0.05, 500)
    assert not above_chance(0.0, 500)


@pytest.mark.parametrize(
    "args, match",
    [
        (((10, 3), (10, 3), (5, 3), (4, 3)), "paired rows"),
        (((10, 3), (10, 3), (5, 4), (5, 3)), "widths differ"),
        (((1, 3), (1, 3), (5, 3), (5, 3)), "at least 2 rows"),
    ],
)
def test_bad_shapes(args, match):
    arrays = [np.random.default_rng(0).standard_normal(s) for s in args]
    with pytest.raises(InputError, match=match):
        rotation_score(*arrays)


def test_bad_split_and_non_finite():
    with pytest.raises(InputError, match="test fraction"):
        split_rows(10, 1.0)
    with pytest.raises(InputError, match="at least 2"):
        split_rows(3, 0.5)
    x = np.ones((6, 2))
    x[0, 0] = np.nan
    with pytest.raises(InputError, match="NaN"):
        rotation_score(x, x, x, x)


def test_score_interval_brackets_the_score_and_is_seeded():
    x, y = planted_pair("rotation", n=N, d=D, seed=11)
    r = _score(x, y, bootstrap=200, seed=1)
    lo, hi = r.score_ci
    assert lo <= r.score <= hi and lo < 1.0 < hi
    assert _score(x, y, bootstrap=200, seed=1).score_ci == r.score_ci
    assert _score(x, y).score_ci is None


def test_matches_the_maps_and_retrieval_built_by_hand():
    from prh.bridge import RidgeMap, SemiOrthogonalMap, retrieval

    x, y = planted_pair("tanh", n=N, d=D, seed=12)
    y = y[:, :16]
    r = _score(x, y, dims=20, common=False)
    assert (r.k_x, r.k_y) == (20, 16)
    bx, by = pca_basis(x[:N_TRAIN], 20), pca_basis(y[:N_TRAIN], 20)

    def proj(a, b):
        return (a - b[0]) @ b[1].T

    px, py = proj(x, bx), proj(y, by)
    for m, got in ((SemiOrthogonalMap(whiten=True, eps=1e-3), r.orthonormal),
                   (RidgeMap(alpha=1e-2), r.ridge)):  # fmt: skip
        m.fit(px[:N_TRAIN], py[:N_TRAIN])
        ret = retrieval(m.transform(px[N_TRAIN:]), py[N_TRAIN:], ks=(1,))
        assert (got.r1_x_to_y, got.r1_y_to_x) == (ret.x_to_y[1], ret.y_to_x[1])
        assert got.r2 == pytest.approx(m.score(px[N_TRAIN:], py[N_TRAIN:]), abs=1e-6)
