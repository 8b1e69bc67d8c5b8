"""The whitened JEPA on a finite world, in closed form (docs/theory.md sec. 2).

Objective over tables ``F in R^{M x k}`` (one row per observation)::

    min_F  E_{(x,x')~W} ||F_x - F_x'||^2   s.t.  E_d[F] = 0,  E_d[F F^T] = I_k.

With ``G = D^1/2 F`` the loss is ``2k - 2 tr(G^T T G)``; by Ky Fan the minimisers are
``F* = D^-1/2 U_k Q`` (``U_k``: eigenvectors of ``l_2..l_{k+1}``, ``Q`` any rotation), i.e.
Laplacian eigenmaps ``W f = l D f``, with optimal loss ``L* = 2 sum_{i=2}^{k+1} (1 - l_i)``.
The minimiser is unique up to rotation iff the gap ``l_{k+1} - l_{k+2}`` is positive.

References
----------
.. [1] Balestriero & LeCun (2026), whitened JEPAs learn the spectral embedding of their pair graph.
.. [2] Belkin & Niyogi (2003), Laplacian eigenmaps. Neural Computation 15(6).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from prh.errors import InputError
from prh.theory.graph import check_pair_law, deflated_adjacency, degrees


@dataclass(frozen=True, eq=False)
class JepaSolution:
    """Closed-form whitened JEPA on one pair law.

    Attributes
    ----------
    embedding : ndarray, shape (M, k)
        ``F* = D^-1/2 U_k``: centred and white under ``d``.
    eigenvalues : ndarray, shape (M,)
        Spectrum of ``T``, descending, ``l_1 = 1`` first.
    degrees : ndarray, shape (M,)
        ``d = W 1``.
    k : int
        Embedding dimension.
    """

    embedding: np.ndarray
    eigenvalues: np.ndarray
    degrees: np.ndarray
    k: int

    @property
    def gap(self) -> float:
        """``delta_k = l_{k+1} - l_{k+2}`` (infinite when ``k + 1 = M``)."""
        ev = self.eigenvalues
        return float(ev[self.k] - ev[self.k + 1]) if self.k + 1 < ev.size else float("inf")

    @property
    def loss(self) -> float:
        """Optimal loss ``L* = 2 sum_{i=2}^{k+1} (1 - l_i)``."""
        return float(2.0 * np.sum(1.0 - self.eigenvalues[1 : self.k + 1]))


def _check_k(k: int, M: int) -> int:
    if not isinstance(k, int | np.integer) or not 1 <= k <= M - 1:
        raise InputError(f"embedding dimension: expected 1 <= k <= M - 1 = {M - 1}, got {k}")
    return int(k)


def solve_jepa(W: np.ndarray, k: int) -> JepaSolution:
    """Closed-form minimiser of the whitened JEPA on the pair law ``W`` (M, M).

    Deflates the constant eigenfunction (``T - 3 s s^T``), takes the top-k eigenvectors ``U_k``
    of the result and divides rows by ``sqrt(d)``: ``F* = D^-1/2 U_k``, shape (M, k).
    """
    W = check_pair_law(W)
    k = _check_k(k, W.shape[0])
    Td, _ = deflated_adjacency(W)
    vals, vecs = np.linalg.eigh(Td)  # ascending; the constant one is vals[0] = -2
    vals, vecs = vals[::-1], vecs[:, ::-1]
    d = degrees(W) / W.sum()
    F = vecs[:, :k] / np.sqrt(d)[:, None]  # (M, k)
    eigenvalues = np.concatenate([[1.0], vals[:-1]])
    return JepaSolution(embedding=F, eigenvalues=eigenvalues, degrees=d, k=k)


def jepa_loss(W: np.ndarray, F: np.ndarray) -> float:
    """``E_{(x,x')~W} ||F_x - F_x'||^2 = sum_{x,x'} W[x,x'] ||F_x - F_x'||^2``; F shape (M, k).

    Computed as ``2 tr(F^T D F) - 2 tr(F^T W F)``.
    """
    W = np.asarray(W, dtype=np.float64)
    F = np.asarray(F, dtype=np.float64)
    d = W.sum(axis=1)
    return float(2.0 * np.sum(d[:, None] * F * F) - 2.0 * np.sum(F * (W @ F)))


def covariance(F: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Centred covariance ``E_w[(f - Ef)(f - Ef)^T]``, shape (k, k); weights (M,) sum to 1."""
    F = np.asarray(F, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64) / np.sum(weights)
    Fc = F - w @ F
    return Fc.T @ (w[:, None] * Fc)


def whitening_residual(F: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    """``(||E_w f||, ||E_w[f f^T] - I||_F)``: how far ``F`` (M, k) is from the constraints."""
    F = np.asarray(F, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64) / np.sum(weights)
    mean = w @ F
    second = F.T @ (w[:, None] * F)
    return float(np.linalg.norm(mean)), float(np.linalg.norm(second - np.eye(F.shape[1])))


def whiten(
    F: np.ndarray, weights: np.ndarray, *, drop_singular: bool = False, rtol: float = 1e-14
) -> np.ndarray:
    """Centre and whiten ``F`` (..., M, k) under ``weights`` (M,): ``(F - Ef) Cov^-1/2``.

    The symmetric root (ZCA): of all whitenings the one closest to ``F``. Works on a stack of
    tables at once (leading axes). A covariance eigenvalue at most ``rtol`` times the largest
    is singular: an error, or with ``drop_singular`` that direction is dropped (mapped to 0).

    Raises
    ------
    InputError
        When the covariance is singular (the embedding has collapsed) and not ``drop_singular``.
    """
    F = np.asarray(F, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64) / np.sum(weights)
    Fc = F - (w @ F)[..., None, :]  # (..., M, k)
    vals, vecs = np.linalg.eigh(
        np.swapaxes(Fc, -1, -2) @ (w[:, None] * Fc)
    )  # (..., k), (..., k, k)
    small = vals <= rtol * np.maximum(vals.max(-1, keepdims=True), 1e-300)
    if small.any() and not drop_singular:
        raise InputError(f"whiten: covariance is singular (eigenvalues {vals.min():.3g} .. )")
    root = np.sqrt(np.where(small, np.inf, vals))[..., None, :]  # 1 / inf drops a direction
    return Fc @ (vecs / root) @ np.swapaxes(vecs, -1, -2)


def soft_whitening_solution(W: np.ndarray, k: int, beta: float = 1.0) -> JepaSolution:
    """Minimiser of the soft-whitened JEPA ``L(F) + beta ||Cov_d(F) - I||_F^2``, F centred.

    With ``F = D^-1/2 U diag(sigma)`` the objective separates into
    ``sum_i 2 s_i (1 - l_i) + beta (s_i - 1)^2`` over ``s_i = sigma_i^2 >= 0``, minimised at
    ``s_i = max(0, 1 - (1 - l_i) / beta)``: the same span as the hard-whitened solution, with
    covariance eigenvalues ``1 - (1 - l_i)/beta`` (exactly ``l_i`` for beta = 1).
    """
    if not beta > 0:
        raise InputError(f"soft whitening: expected beta > 0, got {beta}")
    hard = solve_jepa(W, k)
    s = np.maximum(0.0, 1.0 - (1.0 - hard.eigenvalues[1 : k + 1]) / beta)
    return JepaSolution(
        embedding=hard.embedding * np.sqrt(s)[None, :],
        eigenvalues=hard.eigenvalues,
        degrees=hard.degrees,
        k=hard.k,
    )


def soft_whitening_objective(W: np.ndarray, F: np.ndarray, beta: float = 1.0) -> float:
    """``E ||f - f'||^2 + beta ||Cov_d(f) - I||_F^2`` for a centred table F (M, k)."""
    d = degrees(W)
    cov = covariance(F, d)
    return jepa_loss(W, F) + beta * float(np.sum((cov - np.eye(cov.shape[0])) ** 2))


def subspace_iteration(
    W: np.ndarray, k: int, rng: np.random.Generator, iters: int = 300
) -> np.ndarray:
    """A local solver from a random start: shifted orthogonal iteration, F (M, k) white under d.

    Iterates ``X <- orth((T - 3 s s^T + 2 I) X)`` from a Gaussian start and maps back with
    ``F = D^-1/2 X``. With a gap it converges to the closed form (up to rotation); without one
    the limit depends on the start. Used to check that no solver beats :func:`solve_jepa`.
    """
    W = check_pair_law(W)
    k = _check_k(k, W.shape[0])
    Td, _ = deflated_adjacency(W)
    A = Td + 2.0 * np.eye(W.shape[0])  # positive semi-definite, same eigenvectors
    X, _ = np.linalg.qr(rng.standard_normal((W.shape[0], k)))
    for _ in range(iters):
        X, _ = np.linalg.qr(A @ X)
    d = degrees(W) / W.sum()
    return X / np.sqrt(d)[:, None]
