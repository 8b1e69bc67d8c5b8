"""Whitened JEPA training reaches the closed-form spectral embedding (docs/theory.md sections 2, 6).

A finite world: 12 states in 3 stochastic blocks, 2 nuisances per state, good views (nuisances
independent given the state). The encoder is a table (one row per observation), trained with
minibatches of pairs sampled from W. The closed form comes from the generalised eigenproblem
``W f = l D f`` solved with scipy, independently of the code under test.
"""

import numpy as np
import pytest
import scipy.linalg
import torch

from prh.losses import soft_whitening_loss, whitened_jepa_loss


def _world(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n_states, n_nuis, blocks = 12, 2, 3
    label = np.arange(n_states) % blocks
    pi = np.where(label[:, None] == label[None, :], 1.0, 0.08)
    pi *= rng.uniform(0.5, 1.5, size=(n_states, n_states))
    pi = (pi + pi.T) / 2  # symmetric state kernel
    q = rng.dirichlet(np.ones(n_nuis), size=n_states)  # q(n | s)
    # Good views: P((s, n), (s', n')) = Pi(s, s') q(n | s) q(n' | s')
    w = (pi[:, None, :, None] * q[:, :, None, None] * q[None, None, :, :]).reshape(24, 24)
    return w / w.sum()


def _closed_form(w: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    d = w.sum(1)
    lam, vecs = scipy.linalg.eigh(w, np.diag(d))  # ascending; vecs are D-orthonormal
    return vecs[:, ::-1][:, 1 : k + 1], lam[::-1]


def _sin_theta(f: np.ndarray, f_star: np.ndarray, d: np.ndarray) -> float:
    # Compare the d-weighted, centred column spaces.
    def basis(x):
        x = x - d @ x  # remove the d-mean
        q, _ = np.linalg.qr(np.sqrt(d)[:, None] * x)
        return q

    a, b = basis(f), basis(f_star)
    k = a.shape[1]
    return float(np.sqrt(max(k - np.linalg.norm(a.T @ b) ** 2, 0.0)))


def _train(w, k, loss_name, steps=600, batch=1024, seed=0):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    M = w.shape[0]
    probs = torch.tensor(w.reshape(-1), dtype=torch.float64)
    table = torch.nn.Parameter(torch.randn(M, k, dtype=torch.float64) * 0.1)
    opt = torch.optim.Adam([table], lr=0.05)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps, eta_min=1e-4)
    for _ in range(steps):
        idx = torch.multinomial(probs, batch, replacement=True, generator=gen)
        i, j = idx // M, idx % M
        if loss_name == "whitened":
            loss = whitened_jepa_loss(table[i], table[j], eps=1e-6)
        else:
            loss = soft_whitening_loss(table[i], table[j], beta=1.0)[0]
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    return table.detach().numpy()


@pytest.mark.slow
def test_whitened_jepa_reaches_closed_form_subspace_and_whitens():
    w = _world()
    k = 2
    f_star, lam = _closed_form(w, k)
    assert lam[k] - lam[k + 1] > 0.05  # a real gap: the optimum is unique up to rotation
    f = _train(w, k, "whitened")
    d = w.sum(1)
    assert _sin_theta(f, f_star, d) < 0.05
    # Whitening holds in the population: the whitening estimated on one fresh batch of pairs
    # makes the d-weighted covariance of the whole table close to I.
    from prh.losses import batch_covariance, whitening_matrix

    rows = torch.multinomial(
        torch.tensor(d), 2048, replacement=True, generator=torch.Generator().manual_seed(0)
    )
    mu, cov_b = batch_covariance(torch.tensor(f)[rows])
    fw = (f - mu.numpy()) @ whitening_matrix(cov_b, eps=1e-6).numpy().T
    fc = fw - d @ fw
    np.testing.assert_allclose(fc.T @ (d[:, None] * fc), np.eye(k), atol=0.1)
    # An untrained table is far from the closed form: the check can fail.
    f0 = np.random.default_rng(1).normal(size=f.shape)
    assert _sin_theta(f0, f_star, d) > 0.2


@pytest.mark.slow
def test_soft_whitening_same_span_with_eigenvalue_covariance():
    w = _world()
    k = 2
    f_star, lam = _closed_form(w, k)
    f = _train(w, k, "soft")
    d = w.sum(1)
    assert _sin_theta(f, f_star, d) < 0.05
    fc = f - d @ f
    cov_eigs = np.sort(np.linalg.eigvalsh(fc.T @ (d[:, None] * fc)))[::-1]
    # beta = 1: covariance eigenvalues are l_2 .. l_{k+1} (docs/theory.md section 2).
    np.testing.assert_allclose(cov_eigs, lam[1 : k + 1], atol=0.05)
