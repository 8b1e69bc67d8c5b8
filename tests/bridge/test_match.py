"""Pair-free matching: swap gains vs brute force, planted permutations, noise, determinism."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from prh.bridge.assign import blocked_assignment, kmeans
from prh.bridge.match import (
    kernel_matrix,
    match_classes,
    match_kernels,
    match_samples,
    qap_objective,
    swap_gains,
    two_opt,
)
from prh.bridge.synthetic import planted_clouds
from prh.errors import InputError


def _sym(rng, n):
    a = rng.standard_normal((n, n))
    return a + a.T


def test_swap_gains_match_brute_force():
    rng = np.random.default_rng(0)
    n = 7
    kx, ky = _sym(rng, n), _sym(rng, n)
    perm = rng.permutation(n)
    gains = swap_gains(kx, ky[np.ix_(perm, perm)])
    base = qap_objective(kx, ky, perm)
    for i in range(n):
        for j in range(n):
            p = perm.copy()
            p[i], p[j] = p[j], p[i]
            assert gains[i, j] == pytest.approx(qap_objective(kx, ky, p) - base, abs=1e-9)


def test_two_opt_reaches_a_local_optimum_and_never_decreases():
    rng = np.random.default_rng(1)
    kx, ky = _sym(rng, 25), _sym(rng, 25)
    start = rng.permutation(25)
    perm, val = two_opt(kx, ky, start)
    assert val >= qap_objective(kx, ky, start)
    assert val == pytest.approx(qap_objective(kx, ky, perm))
    assert swap_gains(kx, ky[np.ix_(perm, perm)]).max() <= 1e-9 * np.abs(kx).max() ** 2
    assert sorted(perm) == list(range(25))


@pytest.mark.parametrize("n", [10, 30, 100])
def test_recovers_planted_permutation(n):
    x, y, truth = planted_clouds(n, noise=0.02, seed=n)
    res = match_classes(x, y, truth=truth)
    assert res.accuracy == 1.0
    assert res.objective > 0.99
    assert sorted(res.permutation.tolist()) == list(range(n))


def test_accuracy_degrades_with_noise():
    accs = []
    for noise in (0.02, 0.3, 1.0):
        runs = [
            match_classes(
                *planted_clouds(60, noise=noise, seed=s)[:2],
                truth=planted_clouds(60, noise=noise, seed=s)[2],
            ).accuracy
            for s in range(3)
        ]
        accs.append(np.mean(runs))
    assert accs[0] == 1.0
    assert accs[0] > accs[1] > accs[2]
    assert accs[2] < 0.3


def test_polish_raises_the_qap_objective():
    x, y, truth = planted_clouds(40, noise=0.3, seed=5)
    kx, ky = kernel_matrix(x), kernel_matrix(y)
    plain = match_kernels(kx, ky, truth=truth)
    polished = match_kernels(kx, ky, truth=truth, polish="2opt")
    assert polished.objective >= plain.objective - 1e-12


def test_deterministic():
    x, y, _ = planted_clouds(500, noise=0.2, seed=3)
    a = match_classes(x, y, seed=7).permutation
    b = match_classes(x, y, seed=7).permutation
    np.testing.assert_array_equal(a, b)


def test_errors():
    with pytest.raises(InputError, match="equal N"):
        match_classes(np.zeros((5, 2)), np.zeros((4, 2)))
    with pytest.raises(InputError, match="kernels must be square"):
        match_kernels(np.eye(3), np.eye(4))
    with pytest.raises(InputError, match="unknown kernel"):
        kernel_matrix(np.zeros((3, 2)), "poly")


def test_blocked_assignment_exact_when_small_and_close_when_large():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((600, 3))
    truth = rng.permutation(600)
    b = np.empty_like(a)
    b[truth] = a + 0.05 * rng.standard_normal(a.shape)  # aligned sets, as after Procrustes
    cost = ((a[:, None] - b[None]) ** 2).sum(-1)
    _, exact = linear_sum_assignment(cost)
    np.testing.assert_array_equal(blocked_assignment(a, b, block=1024), exact)
    perm = blocked_assignment(a, b, block=64)
    assert sorted(perm.tolist()) == list(range(600))
    rows = np.arange(600)
    assert cost[rows, perm].sum() <= 1.1 * cost[rows, exact].sum()
    assert (perm == exact).mean() > 0.9


def test_kmeans_finds_separated_clusters():
    rng = np.random.default_rng(5)
    centres = 10 * rng.standard_normal((4, 2))
    x = np.repeat(centres, 50, axis=0) + 0.1 * rng.standard_normal((200, 2))
    _, lab = kmeans(x, 4, seed=0)
    assert len(set(lab.tolist())) == 4
    assert all(len(set(lab[i * 50 : (i + 1) * 50].tolist())) == 1 for i in range(4))


@pytest.mark.slow
def test_sample_level_recovers_most_rows():
    x, y, truth = planted_clouds(5000, noise=0.02, clusters=30, seed=6)
    res = match_samples(x, y, truth=truth, block=512)
    assert res.accuracy > 0.95
    assert res.rotation.shape == (8, 8)
    np.testing.assert_allclose(res.rotation @ res.rotation.T, np.eye(8), atol=1e-8)
