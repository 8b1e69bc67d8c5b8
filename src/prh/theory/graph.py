"""The pair graph of a view policy: degrees, normalized adjacency, spectrum (docs/theory.md sec. 1).

A view policy is a symmetric joint law ``W[x, x'] = P(x, x')`` over positive pairs of ``M``
observations. Its degrees are ``d = W 1`` (the marginal law of one side of a pair) and its
normalized adjacency is ``T = D^-1/2 W D^-1/2``, whose spectrum lies in ``[-1, 1]`` with
``T sqrt(d) = sqrt(d)`` for the top eigenvalue 1.
"""

from __future__ import annotations

import numpy as np

from prh.errors import InputError


def check_pair_law(W: np.ndarray, atol: float = 1e-9) -> np.ndarray:
    """Validate a pair law and return it as a float64 array.

    Parameters
    ----------
    W : ndarray, shape (M, M)
        Symmetric, non-negative, sums to 1, every row sum (degree) positive.
    atol : float
        Tolerance on symmetry and total mass.

    Raises
    ------
    InputError
        Naming what was expected and what came.
    """
    W = np.asarray(W, dtype=np.float64)
    if W.ndim != 2 or W.shape[0] != W.shape[1] or W.shape[0] < 2:
        raise InputError(f"pair law: expected a square (M, M) matrix with M >= 2, got {W.shape}")
    if not np.all(np.isfinite(W)):
        raise InputError("pair law: contains NaN or inf")
    if W.min() < 0:
        raise InputError(f"pair law: expected non-negative entries, got min {W.min():.3g}")
    asym = np.abs(W - W.T).max()
    if asym > atol:
        raise InputError(f"pair law: expected a symmetric matrix, got max |W - W^T| = {asym:.3g}")
    total = W.sum()
    if abs(total - 1.0) > atol * W.shape[0]:
        raise InputError(f"pair law: expected total mass 1, got {total:.12g}")
    d = W.sum(axis=1)
    if d.min() <= 0:
        raise InputError(f"pair law: observation {int(np.argmin(d))} has degree 0 (never sampled)")
    return W


def degrees(W: np.ndarray) -> np.ndarray:
    """Degrees ``d = W 1``, shape (M,): the law of one side of a positive pair."""
    return np.asarray(W, dtype=np.float64).sum(axis=1)


def normalized_adjacency(W: np.ndarray) -> np.ndarray:
    """``T = D^-1/2 W D^-1/2``, shape (M, M), symmetrised against round-off."""
    W = np.asarray(W, dtype=np.float64)
    s = 1.0 / np.sqrt(degrees(W))
    T = W * s[:, None] * s[None, :]
    return 0.5 * (T + T.T)


def deflated_adjacency(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``T - 3 s s^T`` with ``s = sqrt(d) / ||sqrt(d)||`` and ``s`` itself.

    Deflation moves the constant eigenfunction (eigenvalue 1) to eigenvalue -2, below every other
    eigenvalue of ``T``, so the top-k eigenvectors of the result are ``u_2..u_{k+1}`` even when
    the graph is disconnected (docs/theory.md sec. 2, implementation hint).
    """
    d = degrees(W)
    s = np.sqrt(d / d.sum())
    return normalized_adjacency(W) - 3.0 * np.outer(s, s), s


def spectrum(W: np.ndarray) -> np.ndarray:
    """Eigenvalues of ``T``, descending, shape (M,); ``l_1 = 1`` first."""
    Td, _ = deflated_adjacency(W)
    vals = np.linalg.eigvalsh(Td)[::-1]  # constant one sits at -2, last
    return np.concatenate([[1.0], vals[:-1]])
