"""The whitened loss has no collapse loophole (docs/theory.md, "the whitening loophole").

A planted kernel: a finite world whose pair law ``W`` has a clear gap after its ``k``-th
non-constant eigenvalue. The closed form (``W f = l D f``, solved with scipy apart from the code
under test) is the top-k eigenspace; the loss on a large batch of pairs drawn from ``W`` must be
lowest there, higher for every partially collapsed copy of it (any subset of directions shrunk
below the whitening ridge), and gradient training from random init must reach it and keep every
direction alive. The ridge-only loss (the pre-fix one, rebuilt here from its definition) prefers
the collapse: the check can fail.
"""

import itertools

import numpy as np
import pytest
import scipy.linalg
import torch

from prh.losses import batch_covariance, whitened_jepa_loss, whitening_matrix


def _planted(seed: int = 0, blocks: int = 4, per: int = 5) -> np.ndarray:
    """A pair law on ``blocks * per`` states: strong pairs within blocks, a gap after k = 3."""
    rng = np.random.default_rng(seed)
    label = np.arange(blocks * per) % blocks
    pi = np.where(label[:, None] == label[None, :], 1.0, 0.03)
    pi = pi * rng.uniform(0.6, 1.4, size=pi.shape)
    pi = pi + pi.T
    return pi / pi.sum()


def _closed_form(w: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    lam, vecs = scipy.linalg.eigh(w, np.diag(w.sum(1)))  # ascending, D-orthonormal
    return np.ascontiguousarray(vecs[:, ::-1][:, 1 : k + 1]), lam[::-1].copy()


def _pairs(w: np.ndarray, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    M = w.shape[0]
    idx = np.random.default_rng(seed).choice(M * M, size=n, p=w.ravel())
    return torch.as_tensor(idx // M), torch.as_tensor(idx % M)


def _ridge_only_loss(za, zb, eps=1e-4):
    """The loss before the fix: the whitened pair error alone."""
    z = torch.cat([za, zb]).float()
    mu, cov = batch_covariance(z)
    wz = (z - mu) @ whitening_matrix(cov, eps).T
    return (wz[: za.shape[0]] - wz[za.shape[0] :]).square().sum(1).mean()


K = 3


@pytest.fixture(scope="module")
def planted():
    w = _planted()
    f_star, lam = _closed_form(w, K)
    assert lam[K] - lam[K + 1] > 0.3  # a real gap after the k-th non-constant eigenvalue
    i, j = _pairs(w, 20000, seed=1)
    return w, f_star, lam, i, j


def test_top_k_eigenspace_attains_the_theory_floor(planted):
    _, f_star, lam, i, j = planted
    f = torch.as_tensor(f_star, dtype=torch.float64)
    loss = float(whitened_jepa_loss(f[i], f[j]))
    floor = 2 * float(np.sum(1 - lam[1 : K + 1]))
    assert abs(loss - floor) < 0.05 * floor  # sampling error of 20k pairs


@pytest.mark.parametrize("scale", [1e-1, 1e-3, 1e-6])
def test_every_partial_collapse_scores_worse_than_the_eigenspace(planted, scale):
    _, f_star, _, i, j = planted
    f = torch.as_tensor(f_star, dtype=torch.float64)
    best = float(whitened_jepa_loss(f[i], f[j]))
    for r in range(1, K):
        for cols in itertools.combinations(range(K), r):
            g = f.clone()
            g[:, list(cols)] *= scale
            assert float(whitened_jepa_loss(g[i], g[j])) > best - 1e-6, (cols, scale)


def test_the_ridge_only_loss_rewards_the_collapse(planted):
    # The bug this file guards against, shown on the same kernel: crushing two of three
    # directions below the ridge lowers the ridge-only loss well below the eigenspace's.
    _, f_star, _, i, j = planted
    f = torch.as_tensor(f_star, dtype=torch.float64)
    g = f.clone()
    g[:, 1:] *= 1e-4
    assert float(_ridge_only_loss(g[i], g[j])) < 0.5 * float(_ridge_only_loss(f[i], f[j]))
    assert float(whitened_jepa_loss(g[i], g[j])) > float(whitened_jepa_loss(f[i], f[j])) + 0.5


def test_a_vanished_direction_costs_exactly_two():
    # u -> 0: the term 2 (1 - u l) -> 2 whatever the direction did before it vanished.
    g = torch.Generator().manual_seed(0)
    za = torch.randn(512, 3, generator=g, dtype=torch.float64)
    zb = za + 0.3 * torch.randn(512, 3, generator=g, dtype=torch.float64)
    dead = torch.zeros(512, 1, dtype=torch.float64)
    full = whitened_jepa_loss(torch.cat([za, dead + 1e-9 * za[:, :1]], 1),
                              torch.cat([zb, dead + 1e-9 * zb[:, :1]], 1))  # fmt: skip
    alive = whitened_jepa_loss(za, zb)
    assert abs(float(full) - float(alive) - 2.0) < 1e-3


@pytest.mark.slow
def test_training_from_random_init_reaches_the_eigenspace_and_keeps_every_direction(planted):
    w, f_star, _, _, _ = planted
    M, d = w.shape[0], w.sum(1)
    gen = torch.Generator().manual_seed(0)
    table = torch.nn.Parameter(torch.randn(M, K, dtype=torch.float64, generator=gen))
    opt = torch.optim.Adam([table], lr=0.05)
    rng = np.random.default_rng(2)
    for _ in range(1500):  # long, constant-rate training: where the collapse used to set in
        idx = rng.choice(M * M, size=256, p=w.ravel())
        loss = whitened_jepa_loss(table[idx // M], table[idx % M])  # default eps = 1e-4
        opt.zero_grad()
        loss.backward()
        opt.step()
    f = table.detach().numpy()
    fc = f - d @ f
    cov = fc.T @ (d[:, None] * fc)
    var = np.linalg.eigvalsh(cov)
    assert var.min() > 1e-3 * var.mean()  # no direction crushed
    # The learned span is the top-k eigenspace: d-weighted canonical correlations ~ 1.
    a, _ = np.linalg.qr(np.sqrt(d)[:, None] * fc)
    b, _ = np.linalg.qr(np.sqrt(d)[:, None] * (f_star - d @ f_star))
    assert np.linalg.svd(a.T @ b, compute_uv=False).min() > 0.98


def test_the_theory_learners_loss_charges_a_vanished_direction_too(planted):
    from prh.theory.learner import hard_whitened_loss

    w, f_star, _, _, _ = planted
    pw, d = torch.as_tensor(w), torch.as_tensor(w.sum(1))
    f = torch.as_tensor(f_star, dtype=torch.float64)
    best = float(hard_whitened_loss(f, pw, d))
    for cols in ([0], [1, 2], [0, 2]):
        g = f.clone()
        g[:, cols] *= 1e-6
        assert float(hard_whitened_loss(g, pw, d)) > best + 1.0
