"""Theorem 2 bound, random-world generators, finite worlds and the gradient-trained learner."""

import numpy as np
import pytest
import scipy.linalg

from prh.errors import InputError
from prh.theory import generators as gen
from prh.theory import views
from prh.theory.bound import davis_kahan_bound, theorem2, worst_case_perturbation
from prh.theory.graph import deflated_adjacency
from prh.theory.jepa import solve_jepa
from prh.theory.learner import LearnerConfig, train_jepa
from prh.theory.measures import subspace_sin_theta
from prh.theory.world import random_world


@pytest.mark.parametrize("kind", gen.KERNEL_KINDS)
def test_kernels_and_sinkhorn(kind):
    rng = np.random.default_rng(0)
    K = gen.random_kernel(kind, 25, rng)
    assert np.allclose(K, K.T) and K.min() >= 0 and np.all(np.diag(K) > 0)
    p = gen.random_prior(25, rng)
    Pi = gen.sinkhorn_symmetric(K, p)
    np.testing.assert_allclose(Pi.sum(1), p, rtol=1e-12)
    np.testing.assert_allclose(Pi, Pi.T, atol=1e-18)
    # Pi = diag(a) K diag(a): the ratio Pi / K has rank one where K > 0
    a = np.sqrt(np.diag(Pi) / np.diag(K))
    np.testing.assert_allclose(Pi, a[:, None] * K * a[None, :], rtol=1e-9, atol=1e-300)


def test_generators_are_deterministic_and_validate():
    a = gen.random_kernel_pair(np.random.default_rng(3))
    b = gen.random_kernel_pair(np.random.default_rng(3))
    assert np.array_equal(a.pi_a, b.pi_a) and np.array_equal(a.pi_b, b.pi_b) and a.k == b.k
    with pytest.raises(InputError, match="kernel kind"):
        gen.random_kernel("torus", 5, np.random.default_rng(0))
    with pytest.raises(InputError, match="positive diagonal"):
        gen.sinkhorn_symmetric(np.zeros((3, 3)), np.full(3, 1 / 3))


def test_bound_holds_and_sin_theta_matches_principal_angles():
    rng = np.random.default_rng(11)
    ratios = []
    for _ in range(40):
        pair = gen.random_kernel_pair(rng, n_range=(10, 40))
        r = theorem2(pair.pi_a, pair.pi_b, pair.k)
        assert r.holds
        assert r.sin_theta <= r.e_proc + 1e-12 <= np.sqrt(2) * r.sin_theta + 1e-11
        # reference: principal angles between the two top-k eigenspaces
        TA, _ = deflated_adjacency(pair.pi_a)
        TB, _ = deflated_adjacency(pair.pi_b)
        UA = np.linalg.eigh(TA)[1][:, ::-1][:, : pair.k]
        UB = np.linalg.eigh(TB)[1][:, ::-1][:, : pair.k]
        angles = scipy.linalg.subspace_angles(UA, UB)
        assert abs(np.linalg.norm(np.sin(angles)) - r.sin_theta) < 1e-7
        # E = T_B - T_A and its norms
        E = TB - TA
        assert abs(np.linalg.norm(E, 2) - r.e_op) < 1e-12
        ratios.append(r.ratio)
    assert max(ratios) < 1


def test_worst_case_reaches_one_over_two_sqrt_two():
    rng = np.random.default_rng(2)
    p = gen.random_prior(20, rng)
    pi = gen.sinkhorn_symmetric(gen.geometric_kernel(20, rng) + 0.05, p)
    gap = solve_jepa(pi, 1).gap
    r = theorem2(pi, worst_case_perturbation(pi, 1, 1e-6 * gap), 1)
    assert abs(r.ratio - 1 / (2 * np.sqrt(2))) < 1e-4
    # a larger perturbation of the same shape is looser, never above the bound
    r2 = theorem2(pi, worst_case_perturbation(pi, 1, 0.2 * gap), 1)
    assert r2.holds and r2.ratio < r.ratio


def test_bound_is_infinite_without_gap():
    assert davis_kahan_bound(0.1, 0.1, 0.0, 2) == (float("inf"), float("inf"))
    assert davis_kahan_bound(0.1, 0.05, 0.5, 4) == (0.2, pytest.approx(0.2 * np.sqrt(2)))


def test_world_rendering_roundtrip_and_validation():
    w = random_world(np.full(4, 0.25), [2, 3], seed=0)
    assert [m.num_observations for m in w.modalities] == [8, 12]
    m = w.modalities[1]
    assert sorted(m.render.ravel()) == list(range(12))
    np.testing.assert_allclose(m.nuisance.sum(1), 1)
    grid = np.arange(12.0).reshape(12, 1)
    W = np.diag(np.arange(1.0, 13.0))
    Wo = m.to_observations(W)
    # the law of observation render[s, n] is the law of (s, n)
    np.testing.assert_array_equal(np.diag(Wo)[m.render.ravel()], np.diag(W))
    assert m.to_grid(grid).shape == (4, 3, 1)
    with pytest.raises(InputError, match="prior"):
        random_world(np.array([0.5, 0.6]), [2])
    with pytest.raises(InputError, match="nuisance sizes"):
        random_world(np.full(2, 0.5), [0])


def _tiny_problem():
    rng = np.random.default_rng(4)
    p = gen.random_prior(6, rng)
    pi = gen.sinkhorn_symmetric(gen.sbm_kernel(6, rng, blocks=3), p)
    W = views.good_views(pi, np.full(2, 0.5))
    return W, solve_jepa(W, 2)


def test_learner_is_deterministic_and_reaches_the_closed_form():
    W, sol = _tiny_problem()
    cfg = LearnerConfig(k=2, steps=200, lr=0.3, batch_size=4096, seed=1)
    a, b = train_jepa(W, cfg), train_jepa(W, cfg)
    assert np.array_equal(a.embedding, b.embedding) and np.array_equal(a.losses, b.losses)
    assert subspace_sin_theta(a.embedding, sol.embedding, sol.degrees) < 0.05
    c = train_jepa(W, LearnerConfig(k=2, steps=200, lr=0.3, batch_size=4096, seed=2))
    assert not np.array_equal(a.embedding, c.embedding)
    full = train_jepa(W, LearnerConfig(k=2, steps=0, full_batch_steps=400, lr=0.3))
    assert subspace_sin_theta(full.embedding, sol.embedding, sol.degrees) < 1e-4
    assert abs(full.losses[-1] - sol.loss) < 1e-6


def test_learner_soft_and_mlp():
    W, sol = _tiny_problem()
    soft = train_jepa(W, LearnerConfig(k=2, whitening="soft", steps=300, lr=0.3))
    assert subspace_sin_theta(soft.embedding, sol.embedding, sol.degrees) < 0.05
    mlp = train_jepa(W, LearnerConfig(k=2, model="mlp", steps=300, lr=0.05))
    assert subspace_sin_theta(mlp.embedding, sol.embedding, sol.degrees) < 0.05


def test_learner_config_errors():
    with pytest.raises(InputError, match="learner model"):
        LearnerConfig(model="transformer")
    with pytest.raises(InputError, match="whitening"):
        LearnerConfig(whitening="none")
    W, _ = _tiny_problem()
    with pytest.raises(InputError, match="k < M"):
        train_jepa(W, LearnerConfig(k=12))
