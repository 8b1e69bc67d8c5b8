"""The closed-form whitened JEPA against dense references, brute force and planted answers."""

import numpy as np
import pytest
import scipy.linalg

from prh.errors import InputError
from prh.theory.graph import check_pair_law, normalized_adjacency, spectrum
from prh.theory.jepa import (
    covariance,
    jepa_loss,
    soft_whitening_objective,
    soft_whitening_solution,
    solve_jepa,
    subspace_iteration,
    whiten,
    whitening_residual,
)
from prh.theory.measures import subspace_sin_theta


def slow_loss(W, F):
    """sum_{x,x'} W[x,x'] ||F_x - F_x'||^2 by a double loop."""
    M = W.shape[0]
    return sum(W[i, j] * np.sum((F[i] - F[j]) ** 2) for i in range(M) for j in range(M))


@pytest.mark.parametrize("seed,kind", [(0, "good"), (1, "bad"), (2, "good")])
def test_closed_form_matches_generalized_eigenproblem(seed, kind, law):
    W = law(seed, kind=kind)
    k = 3
    sol = solve_jepa(W, k)
    d = W.sum(1)
    vals, vecs = scipy.linalg.eigh(W, np.diag(d))  # W f = l D f, dense reference
    vals, vecs = vals[::-1], vecs[:, ::-1]
    np.testing.assert_allclose(sol.eigenvalues, vals, atol=1e-12)
    np.testing.assert_allclose(spectrum(W), vals, atol=1e-12)
    assert subspace_sin_theta(sol.embedding, vecs[:, 1 : k + 1], d) < 1e-9
    assert abs(slow_loss(W, sol.embedding) - sol.loss) < 1e-12
    assert abs(jepa_loss(W, sol.embedding) - 2 * np.sum(1 - vals[1 : k + 1])) < 1e-12
    mean_err, cov_err = whitening_residual(sol.embedding, d)
    assert mean_err < 1e-12 and cov_err < 1e-12


def test_normalized_adjacency_fixes_sqrt_degrees(law):
    W = law(3)
    T = normalized_adjacency(W)
    s = np.sqrt(W.sum(1))
    np.testing.assert_allclose(T @ s, s, atol=1e-14)
    assert np.all(np.abs(np.linalg.eigvalsh(T)) <= 1 + 1e-12)


def test_brute_force_over_embeddings_on_tiny_world(law):
    # M = 4, k = 1: every white f is a unit vector orthogonal to sqrt(d) in G-space (a circle
    # on the 2-sphere); scan it densely, nothing beats the closed form and the best is close.
    W = law(4, N=2, K=2)
    sol = solve_jepa(W, 1)
    d = W.sum(1)
    s = np.sqrt(d)
    basis = scipy.linalg.null_space(s[None, :])  # (4, 3)
    th, ph = np.meshgrid(np.linspace(0, np.pi, 400), np.linspace(0, 2 * np.pi, 800))
    dirs = np.stack([np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.cos(th)], -1)
    G = dirs.reshape(-1, 3) @ basis.T  # (P, 4) unit, orthogonal to s
    F = G / s  # white f
    losses = 2 * np.sum(d * F * F, 1) - 2 * np.einsum("pi,ij,pj->p", F, W, F)
    assert losses.min() >= sol.loss - 1e-12
    assert losses.min() - sol.loss < 1e-4


def test_random_search_and_solvers_never_beat_closed_form(law):
    rng = np.random.default_rng(5)
    W = law(5, N=5, K=2)
    sol = solve_jepa(W, 2)
    d = W.sum(1)
    for _ in range(300):
        assert jepa_loss(W, whiten(rng.standard_normal((10, 2)), d)) >= sol.loss - 1e-12
    F = subspace_iteration(W, 2, rng, iters=3000)
    assert abs(jepa_loss(W, F) - sol.loss) < 1e-10


def test_rotation_invariance(law):
    W = law(6)
    sol = solve_jepa(W, 3)
    Q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((3, 3)))
    assert abs(jepa_loss(W, sol.embedding @ Q) - sol.loss) < 1e-12
    assert subspace_sin_theta(sol.embedding @ Q, sol.embedding, sol.degrees) < 1e-12


def test_planted_spectrum():
    # W = D^1/2 (s s^T + sum l_i u_i u_i^T) D^1/2 with small l_i stays non-negative
    rng = np.random.default_rng(1)
    M = 8
    d = rng.dirichlet(np.full(M, 5.0))
    s = np.sqrt(d)
    U = scipy.linalg.null_space(s[None, :])[:, :3]
    planted = np.array([0.06, 0.04, -0.02])
    T = np.outer(s, s) + (U * planted) @ U.T
    W = s[:, None] * T * s[None, :]
    assert W.min() > 0
    sol = solve_jepa(W, 2)
    np.testing.assert_allclose(sol.eigenvalues[1:3], planted[:2], atol=1e-12)
    np.testing.assert_allclose(sol.gap, 0.04 - 0.0, atol=1e-12)  # l_4 is one of the zeros


def test_no_gap_cycle_has_two_optima_sqrt2k_apart():
    from prh.prove.spectral import _procrustes_distance, cycle_law

    n = 10
    W = cycle_law(n)
    sol = solve_jepa(W, 1)
    assert abs(sol.gap) < 1e-12
    t = 2 * np.pi * np.arange(n) / n
    a, b = np.sqrt(2) * np.cos(t)[:, None], np.sqrt(2) * np.sin(t)[:, None]
    assert abs(jepa_loss(W, a) - sol.loss) < 1e-12 and abs(jepa_loss(W, b) - sol.loss) < 1e-12
    assert abs(_procrustes_distance(a, b, W.sum(1)) - np.sqrt(2)) < 1e-12


def test_soft_whitening_covariance_and_optimality(law):
    W = law(7)
    k = 3
    hard = solve_jepa(W, k)
    for beta in (1.0, 2.5):
        soft = soft_whitening_solution(W, k, beta)
        ev = np.sort(np.linalg.eigvalsh(covariance(soft.embedding, hard.degrees)))[::-1]
        np.testing.assert_allclose(ev, 1 - (1 - hard.eigenvalues[1 : k + 1]) / beta, atol=1e-12)
        assert subspace_sin_theta(soft.embedding, hard.embedding, hard.degrees) < 1e-9
        best = soft_whitening_objective(W, soft.embedding, beta)
        rng = np.random.default_rng(0)
        for _ in range(200):  # random perturbations never improve on it
            F = soft.embedding + 0.05 * rng.standard_normal(soft.embedding.shape)
            F = F - hard.degrees @ F
            assert soft_whitening_objective(W, F, beta) >= best - 1e-12


def test_bad_input(law):
    W = law(0)
    with pytest.raises(InputError, match="1 <= k <= M - 1"):
        solve_jepa(W, W.shape[0])
    with pytest.raises(InputError, match="symmetric"):
        check_pair_law(W + np.triu(np.full_like(W, 0.01), 1))
    with pytest.raises(InputError, match="non-negative"):
        check_pair_law(W - 0.5)
    with pytest.raises(InputError, match="total mass 1"):
        check_pair_law(2 * W)
    Z = np.zeros((3, 3))
    Z[0, 1] = Z[1, 0] = 0.5
    with pytest.raises(InputError, match="observation 2 has degree 0"):
        check_pair_law(Z)
    with pytest.raises(InputError, match="beta > 0"):
        soft_whitening_solution(W, 2, beta=0)
    with pytest.raises(InputError, match="singular"):
        whiten(np.ones((W.shape[0], 2)), W.sum(1))
