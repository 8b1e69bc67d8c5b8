"""View policies, misalignment measures and the Platonic theorem on finite worlds."""

import itertools

import numpy as np
import pytest

from prh.errors import InputError
from prh.theory import generators as gen
from prh.theory import views
from prh.theory.jepa import solve_jepa
from prh.theory.measures import (
    cross_modal_moment,
    misalignment,
    mutual_knn,
    nuisance_fraction,
    procrustes_error,
    subspace_sin_theta,
)
from prh.theory.world import random_world


def _state_kernel(seed, N=8, kind="geometric"):
    rng = np.random.default_rng(seed)
    prior = gen.random_prior(N, rng)
    return prior, gen.state_kernel(kind, prior, rng), rng


def test_good_views_marginal_and_independent_nuisance():
    prior, pi, rng = _state_kernel(0)
    q = gen.random_prior(3, rng)
    W = views.good_views(pi, q)
    np.testing.assert_allclose(W.sum(), 1, atol=1e-12)
    np.testing.assert_allclose(W.sum(1), np.kron(prior, q), atol=1e-14)
    W4 = W.reshape(8, 3, 8, 3)  # P(n, n' | s, s') = q(n) q(n')
    expected = pi[:, None, :, None] * np.outer(q, q)[None, :, None, :]
    np.testing.assert_allclose(W4, expected, atol=1e-15)


def test_bad_views_share_the_nuisance_and_mixture_is_linear():
    _prior, pi, rng = _state_kernel(1)
    q = gen.random_prior(3, rng)
    bad = views.bad_views(pi, q).reshape(8, 3, 8, 3).transpose(0, 2, 1, 3)  # (s, s', n, n')
    off = ~np.eye(3, dtype=bool)
    assert np.all(bad[:, :, off] == 0)  # the two views never differ in nuisance
    np.testing.assert_allclose(bad[:, :, ~off].sum(-1), pi, atol=1e-15)
    good, badW = views.good_views(pi, q), views.bad_views(pi, q)
    np.testing.assert_allclose(views.mixture_views(pi, q, 0.3), 0.3 * good + 0.7 * badW, atol=1e-15)
    with pytest.raises(InputError, match=r"rho: expected a fraction of good views in \[0, 1\]"):
        views.mixture_views(pi, q, 1.5)


def test_nuisance_kernel_keeps_marginal_and_persistence_one_is_shared():
    q = np.array([0.2, 0.3, 0.5])
    K = views.nuisance_kernel(q, 0.6, seed=3)
    np.testing.assert_allclose(K.sum(1), q, atol=1e-12)
    np.testing.assert_allclose(K, K.T, atol=1e-15)
    np.testing.assert_allclose(views.nuisance_kernel(q, 1.0), np.diag(q))
    np.testing.assert_allclose(views.nuisance_spectrum(q), np.ones(3), atol=1e-12)


def test_predicted_count_matches_dense_embedding():
    # the count m(rho) from the product spectrum equals k * (nuisance fraction) of the dense solve
    prior, pi, rng = _state_kernel(2, N=10)
    q = np.full(3, 1 / 3)
    kb = views.nuisance_kernel(q, 0.8, rng)
    k = 4
    l = solve_jepa(pi, k).eigenvalues
    mu = views.nuisance_spectrum(q, kb)
    for rho in (0.0, 0.2, 0.5, 0.8, 1.0):
        sol = solve_jepa(views.mixture_views(pi, q, rho, kb), k)
        nf = nuisance_fraction(sol.embedding.reshape(10, 3, k), np.tile(q, (10, 1)), prior)
        assert abs(k * nf - views.predicted_nuisance_count(l, mu, rho, k)) < 1e-9
    star = views.rho_star(l, mu[1], k)
    assert views.predicted_nuisance_count(l, mu, min(1.0, star + 1e-6), k) == 0
    assert views.predicted_nuisance_count(l, mu, max(0.0, star - 1e-3), k) >= 1


def test_e_cca_equals_max_m_over_k_for_two_bad_modalities():
    prior, pi, rng = _state_kernel(3, N=30)
    k = 5
    l = solve_jepa(pi, k).eigenvalues
    qa, qb = np.full(2, 0.5), np.full(3, 1 / 3)
    ka, kb = views.nuisance_kernel(qa, 0.9, rng), views.nuisance_kernel(qb, 0.7, rng)
    for rho in (0.0, 0.5):
        Fa = solve_jepa(views.mixture_views(pi, qa, rho, ka), k).embedding.reshape(30, 2, k)
        Fb = solve_jepa(views.mixture_views(pi, qb, rho, kb), k).embedding.reshape(30, 3, k)
        C = cross_modal_moment(Fa, np.tile(qa, (30, 1)), Fb, np.tile(qb, (30, 1)), prior)
        m = max(
            views.predicted_nuisance_count(l, views.nuisance_spectrum(q, K), rho, k)
            for q, K in ((qa, ka), (qb, kb))
        )
        assert m > 0
        assert abs(misalignment(C).e_cca - m / k) < 1e-9


def test_next_token_keeps_style_and_good_views_drop_it():
    prior, pi, _rng = _state_kernel(4, N=12)
    style, wording = np.array([0.5, 0.3, 0.2]), np.full(2, 0.5)
    q, K = views.document_nuisance(style, wording, 0.95, seed=0)
    np.testing.assert_allclose(K.sum(1), q, atol=1e-12)
    # style persists (mostly), wording is fresh
    K4 = K.reshape(3, 2, 3, 2)
    K_style = K4.sum((1, 3))
    np.testing.assert_allclose(
        K4, K_style[:, None, :, None] * np.outer(wording, wording)[None, :, None, :], atol=1e-15
    )
    assert np.all(K_style - 0.95 * np.diag(style) >= -1e-15)
    W = views.next_token_views(pi, style, wording, seed=0)
    sol = solve_jepa(W, 4)
    nf = nuisance_fraction(sol.embedding.reshape(12, 6, 4), np.tile(q, (12, 1)), prior)
    assert nf > 0.2
    good = solve_jepa(views.next_token_views(pi, style, wording, rho=1.0, seed=0), 4)
    assert nuisance_fraction(good.embedding.reshape(12, 6, 4), np.tile(q, (12, 1)), prior) < 1e-20


def test_measure_relations_and_brute_force_procrustes():
    rng = np.random.default_rng(0)
    N, k = 40, 2
    prior = gen.random_prior(N, rng)
    q1 = np.ones((N, 1))
    for _ in range(5):
        A = rng.standard_normal((N, k))
        B = A @ np.linalg.qr(rng.standard_normal((k, k)))[0] + 0.5 * rng.standard_normal((N, k))
        from prh.theory.jepa import whiten

        A, B = whiten(A, prior), whiten(B, prior)
        C = A.T @ (prior[:, None] * B)
        m = misalignment(C)
        assert abs(m.e_proc**2 - 2 * k * m.e_cca) < 1e-12
        assert m.sin_theta <= m.e_proc + 1e-12 <= np.sqrt(2) * m.sin_theta + 2e-12
        # brute force over O(2): rotations and reflections on a fine grid
        t = np.linspace(0, 2 * np.pi, 20000)
        c, si = np.cos(t), np.sin(t)
        best = np.inf
        for r in (1, -1):
            Q = np.stack([np.stack([c, -r * si], -1), np.stack([si, r * c], -1)], -2)  # (G,2,2)
            best = min(best, float((prior[:, None] * (A @ Q - B) ** 2).sum((1, 2)).min()))
        direct = procrustes_error(A[:, None, :], q1, B[:, None, :], q1, prior)
        assert abs(direct - m.e_proc) < 1e-9
        assert direct <= np.sqrt(best) + 1e-12 and np.sqrt(best) - direct < 1e-6
        assert abs(subspace_sin_theta(A, B, prior) - m.sin_theta) < 1e-9


def slow_mutual_knn(A, B, k):
    def nn(X):
        X = X / np.linalg.norm(X, axis=1, keepdims=True)
        out = []
        for i in range(len(X)):
            sims = [(-(X[i] @ X[j]), j) for j in range(len(X)) if j != i]
            out.append({j for _, j in sorted(sims)[:k]})
        return out

    return np.mean([len(a & b) / k for a, b in zip(nn(A), nn(B))])


def test_mutual_knn_reference_rotation_and_shuffle():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((60, 5))
    B = A + 0.7 * rng.standard_normal((60, 5))
    assert abs(mutual_knn(A, B, k=5) - slow_mutual_knn(A, B, 5)) < 1e-12
    Q = np.linalg.qr(rng.standard_normal((5, 5)))[0]
    assert mutual_knn(A, A @ Q, k=10) == 1.0
    assert mutual_knn(A, B[rng.permutation(60)], k=10) < mutual_knn(A, B, k=10)


def test_platonic_theorem_and_its_failure():
    rng = np.random.default_rng(8)
    N, k = 15, 3
    prior = gen.random_prior(N, rng)
    pi = gen.state_kernel("geometric", prior, rng)
    world = random_world(prior, [2, 3, 4], rng)
    grids = []
    for m in world.modalities:
        sol = solve_jepa(m.to_observations(views.good_views(pi, m.nuisance)), k)
        grids.append(m.to_grid(sol.embedding))
        assert np.abs(grids[-1] - grids[-1][:, :1]).max() < 1e-9  # constant in the nuisance
    mods = world.modalities
    for i, j in itertools.combinations(range(3), 2):
        assert (
            procrustes_error(grids[i], mods[i].nuisance, grids[j], mods[j].nuisance, prior) < 1e-9
        )
    # the rendering matters to nothing but the order: without it the embedding is scrambled
    scrambled = solve_jepa(views.good_views(pi, mods[0].nuisance), k).embedding.reshape(N, 2, k)
    assert procrustes_error(scrambled, mods[0].nuisance, grids[0], mods[0].nuisance, prior) < 1e-9
    # failure: l_{k+1} < 0 puts a nuisance direction in the top k, e_cca >= 1/k
    from prh.prove.alignment import check_platonic
    from prh.prove.result import ProveConfig

    r = check_platonic(ProveConfig(seed=3))
    assert r.passed and r.figures["failure_l_k+1"] < 0
    assert r.figures["failure_min_e_cca"] >= 1 / r.figures["failure_k"] - 1e-9
