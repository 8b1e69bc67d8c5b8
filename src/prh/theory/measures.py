"""Misalignment between embeddings (docs/theory.md sec. 3).

Both embeddings white (``E f = 0``, ``E f f^T = I_k``); ``C = E[f_A f_B^T]`` over the joint law
(same observation for a subspace comparison; for two modalities ``s ~ p`` and nuisances
independent given ``s``, so ``C = sum_s p(s) E[f_A|s] E[f_B|s]^T``); ``C = U S V^T``:

- ``e_proc = min_Q (E ||Q^T f_A - f_B||^2)^1/2 = (2k - 2 ||C||_*)^1/2``;
- ``e_cca = 1 - ||C||_* / k``;
- ``||sin Theta||_F = (k - ||C||_F^2)^1/2``.

The formulas above cancel catastrophically near zero (``sqrt(1e-16) = 1e-8``), so the functions
used for tight checks (:func:`subspace_sin_theta`, :func:`procrustes_error`) sum non-negative
residuals instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from prh.linalg import procrustes_rotation
from prh.theory.jepa import whiten


@dataclass(frozen=True)
class Misalignment:
    """``e_proc``, ``e_cca`` and ``||sin Theta||_F`` of one cross-moment ``C`` (k, k)."""

    e_proc: float
    e_cca: float
    sin_theta: float


def misalignment(C: np.ndarray) -> Misalignment:
    """Measures from the cross-moment ``C = E[f_A f_B^T]`` (k, k) of two white embeddings."""
    C = np.asarray(C, dtype=np.float64)
    k = C.shape[0]
    nuc = float(np.linalg.svd(C, compute_uv=False).sum())
    fro2 = float(np.sum(C * C))
    return Misalignment(
        e_proc=float(np.sqrt(max(0.0, 2 * k - 2 * nuc))),
        e_cca=1.0 - nuc / k,
        sin_theta=float(np.sqrt(max(0.0, k - fro2))),
    )


def state_means(F_grid: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``E[f | s] = sum_n q(n|s) f(s, n)``: (N, K, k), (N, K) -> (N, k)."""
    return np.einsum("snk,sn->sk", F_grid, q)


def cross_modal_moment(
    FA_grid: np.ndarray, qA: np.ndarray, FB_grid: np.ndarray, qB: np.ndarray, prior: np.ndarray
) -> np.ndarray:
    """``C = sum_s p(s) E[f_A|s] E[f_B|s]^T`` (k, k) for two modalities of one world."""
    return state_means(FA_grid, qA).T @ (prior[:, None] * state_means(FB_grid, qB))


def subspace_sin_theta(FA: np.ndarray, FB: np.ndarray, weights: np.ndarray) -> float:
    """``||sin Theta||_F`` between the spans of FA and FB (M, k) in ``L2(weights)``.

    Both are centred and whitened first; then with ``G = W^1/2 F`` orthonormal,
    ``||sin Theta||_F = ||G_A - G_B G_B^T G_A||_F`` (a residual, precise near zero).
    """
    w = np.asarray(weights, dtype=np.float64) / np.sum(weights)
    GA = np.sqrt(w)[:, None] * whiten(FA, w)
    GB = np.sqrt(w)[:, None] * whiten(FB, w)
    return float(np.linalg.norm(GA - GB @ (GB.T @ GA)))


def procrustes_error(
    FA_grid: np.ndarray, qA: np.ndarray, FB_grid: np.ndarray, qB: np.ndarray, prior: np.ndarray
) -> float:
    """``e_proc = min_Q (E ||Q^T f_A - f_B||^2)^1/2`` over the cross-modal joint law, directly.

    Shapes: F grids (N, K_A, k), (N, K_B, k); q laws (N, K_A), (N, K_B); prior (N,).
    With conditional means ``m_A(s), m_B(s)`` the expectation splits into three non-negative
    sums: ``E||f_A - m_A||^2 + E||f_B - m_B||^2 + E||Q^T m_A - m_B||^2``.
    """
    mA, mB = state_means(FA_grid, qA), state_means(FB_grid, qB)
    Q = procrustes_rotation(mA, prior[:, None] * mB).T  # argmax_Q tr(Q^T mA^T P mB)
    var_a = np.einsum("s,sn,snk->", prior, qA, (FA_grid - mA[:, None, :]) ** 2)
    var_b = np.einsum("s,sn,snk->", prior, qB, (FB_grid - mB[:, None, :]) ** 2)
    between = np.sum(prior[:, None] * (mA @ Q - mB) ** 2)
    return float(np.sqrt(var_a + var_b + between))


def nuisance_fraction(F_grid: np.ndarray, q: np.ndarray, prior: np.ndarray) -> float:
    """Nuisance share of the variance: ``E||f - E[f|s]||^2 / E||f - Ef||^2``; F (N, K, k)."""
    m = state_means(F_grid, q)
    w = prior[:, None] * q  # (N, K)
    mean = np.einsum("sn,snk->k", w, F_grid)
    within = np.einsum("sn,snk->", w, (F_grid - m[:, None, :]) ** 2)
    total = np.einsum("sn,snk->", w, (F_grid - mean) ** 2)
    return float(within / total)


def sample_by_state(F_grid: np.ndarray, q: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One observation per state, nuisance ``n ~ q(.|s)``: (N, K, k) -> (N, k)."""
    u = rng.random(q.shape[0])[:, None]
    n = np.minimum((np.cumsum(q, axis=1) < u).sum(axis=1), q.shape[1] - 1)
    return F_grid[np.arange(q.shape[0]), n]


def mutual_knn(A: np.ndarray, B: np.ndarray, k: int = 10) -> float:
    """Mutual k-nearest-neighbour alignment (Huh et al. 2024) of paired rows A (N, D), B (N, E).

    Rows L2-normalised, cosine similarity, self excluded, ties broken by index; the mean over
    rows of ``|kNN_A(i) & kNN_B(i)| / k``. Dense O(N^2): meant for the finite worlds here.
    """

    def knn(X: np.ndarray) -> np.ndarray:
        X = X / np.linalg.norm(X, axis=1, keepdims=True)
        S = X @ X.T
        np.fill_diagonal(S, -np.inf)
        return np.argsort(-S, axis=1, kind="stable")[:, :k]

    na, nb = knn(np.asarray(A, dtype=np.float64)), knn(np.asarray(B, dtype=np.float64))
    hits = [np.intersect1d(na[i], nb[i]).size for i in range(na.shape[0])]
    return float(np.mean(hits) / k)
