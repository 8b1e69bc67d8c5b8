"""The moving cave world (issue 21 items 1-2): chain, exact spectrum, theory embedding."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from prh.errors import InputError
from prh.theory.jepa import solve_jepa
from prh.theory.markov import dense_pair_kernel, pair_spectrum, reversible_chain
from prh.theory.measures import subspace_sin_theta
from prh.world import make_world
from prh.world.moving import MovingWorld, MovingWorldConfig

SMALL = dict(colours=3, shapes=2, sizes=2)  # 3 * 2 * 2 * 9 = 108 states


def test_chain_is_reversible_stochastic_and_lazy():
    w = make_world("moving", seed=0, **SMALL)
    Q, p = w.chain.Q.toarray(), w.chain.p
    assert np.allclose(Q.sum(1), 1) and Q.min() >= 0
    assert np.allclose(p @ Q, p)
    assert np.abs(p[:, None] * Q - (p[:, None] * Q).T).max() < 1e-15
    assert Q.diagonal().min() >= 0.5


def test_sparse_spectrum_matches_dense_pair_kernel():
    """The solver's eigenvalues and eigenfunctions against eigh of Pi = p Q^D, formed densely."""
    cfg = MovingWorldConfig(lag=7, **SMALL)
    w = MovingWorld(cfg)
    W = dense_pair_kernel(w.chain, cfg.lag)
    ref = solve_jepa(W, 6)
    spec = w.spectrum(20)
    assert np.abs(spec.eigenvalues - ref.eigenvalues[:21]).max() < 1e-12
    G = w.theory_embedding(np.arange(w.num_scenes), 6)
    assert subspace_sin_theta(G, ref.embedding, w.chain.p) < 1e-8


def test_lanczos_path_matches_dense_on_the_default_world():
    w = make_world("moving", seed=0)
    assert w.num_scenes == 2160
    lanczos = w.spectrum(10)
    S = w.chain.symmetric().toarray()
    mu = np.sort(np.linalg.eigvalsh(S))[::-1]
    assert np.abs(lanczos.eigenvalues - mu[:11] ** w.config.lag).max() < 1e-10


def test_default_world_meets_the_issue_targets():
    spec = make_world("moving", seed=0).spectrum(12)
    assert spec.separation(8) >= 0.02
    assert spec.gap(8) >= 0.05


def test_even_lag_on_a_chain_with_negative_eigenvalues():
    """Two-state flip chain: mu = 1, -0.8; at an even lag -0.8 squared must be found."""
    Q = np.array([[0.1, 0.9], [0.9, 0.1]])
    chain = reversible_chain(Q, np.array([0.5, 0.5]))
    assert pair_spectrum(chain, 2, 1).eigenvalues == pytest.approx([1.0, 0.64])


def test_still_world_and_no_gap_are_refused_naming_eigenvalues():
    with pytest.raises(InputError, match=r"no gap after eigenvalue 8.*1, 1"):
        make_world("moving", lag=0).theory_embedding([0, 1], 8)


def test_not_reversible_lag_rate_and_ids_are_one_line():
    cyc = sp.csr_matrix(np.roll(np.eye(3), 1, axis=1) * 0.5 + np.eye(3) * 0.5)
    with pytest.raises(InputError, match="not reversible"):  # stationary, but it circulates
        reversible_chain(cyc, np.full(3, 1 / 3))
    with pytest.raises(InputError, match="lag"):
        make_world("moving", lag=-1)
    with pytest.raises(InputError, match="colour_rate"):
        make_world("moving", colour_rate=0.0)
    with pytest.raises(InputError, match="exceeds"):
        make_world("moving", colour_rate=0.2, shape_rate=0.2)
    with pytest.raises(InputError, match="outside the world"):
        make_world("moving", seed=0, **SMALL).theory_embedding([108], 4)
    with pytest.raises(InputError, match="world moving"):
        make_world("moving", no_such_option=1)


def test_seed_gives_identical_worlds_trajectories_and_pairs():
    a, b = MovingWorld(MovingWorldConfig(**SMALL)), MovingWorld(MovingWorldConfig(**SMALL))
    assert np.array_equal(a.trajectory(50, seed=3), b.trajectory(50, seed=3))
    assert not np.array_equal(a.trajectory(50, seed=3), a.trajectory(50, seed=4))
    for x, y in zip(a.pairs(100, seed=1), b.pairs(100, seed=1), strict=True):
        assert np.array_equal(x, y)
    assert np.array_equal(a.render(5, 2), b.render(5, 2))
    assert a.captions(5, 3) == b.captions(5, 3)
    sa, sb = a.spectrum(6), b.spectrum(6)
    assert np.array_equal(sa.functions, sb.functions)


def test_trajectory_moves_one_factor_one_step_at_a_time():
    w = MovingWorld(MovingWorldConfig(**SMALL))
    traj = w.trajectory(400, seed=0)
    steps = np.abs(np.diff(w.grid[traj], axis=0))
    assert steps.sum(1).max() == 1  # at most one factor changes, by one value
    assert len(set(traj.tolist())) > 10


def test_sampled_pairs_follow_the_pair_kernel():
    cfg = MovingWorldConfig(lag=3, **SMALL)
    w = MovingWorld(cfg)
    s, t = w.pairs(200_000, seed=0)
    W = dense_pair_kernel(w.chain, cfg.lag)
    emp = np.zeros_like(W)
    np.add.at(emp, (s, t), 1.0 / s.size)
    assert np.abs(emp - W).sum() < 0.1  # total variation of 108^2 cells at 2e5 draws


def test_frames_render_as_the_state_says():
    w = MovingWorld(MovingWorldConfig(**SMALL))
    obj, row = w.object(17), w.grid[17]
    assert obj.shape == w.lines[0].values[row[0]] and obj.colour == w.lines[1].values[row[1]]
    assert (obj.size, obj.row, obj.col) == (row[2], row[3], row[4])
    assert w.render(17).shape == (64, 64, 3) and w.sketch(17).shape == (64, 64, 3)
