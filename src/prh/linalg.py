"""Small linear-algebra pieces used by several layers (numpy only, no I/O).

One implementation each of row normalisation (:func:`l2_normalize`), ZCA whitening
(:func:`zca_whitener`), principal components (:func:`pca`) and the Procrustes rotation
(:func:`procrustes_rotation`); the metrics, the maps of :mod:`prh.bridge`, the caption decoder's
condition space and the theory all use these.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from prh.errors import InputError

__all__ = ["Pca", "l2_normalize", "pca", "procrustes_rotation", "row_norms", "zca_whitener"]


def row_norms(x: np.ndarray) -> np.ndarray:
    """``(N,)`` float64 Euclidean norms of the rows of ``(N, D)`` ``x``, in row chunks."""
    out = np.empty(x.shape[0], dtype=np.float64)
    step = max(1, 2**18 // max(x.shape[1], 1))  # 2 MiB float64 chunks: small, warm temporaries
    for s0 in range(0, x.shape[0], step):
        out[s0 : s0 + step] = np.sqrt(np.square(x[s0 : s0 + step], dtype=np.float64).sum(axis=1))
    return out


def l2_normalize(
    x: np.ndarray, name: str = "features", dtype: type[np.floating] = np.float32
) -> np.ndarray:
    """Rows divided by their Euclidean norm.

    Parameters
    ----------
    x : np.ndarray
        ``(N, D)``.
    name : str
        How to name ``x`` in error messages (a file path).
    dtype : numpy float type
        Precision of the result (the norm is accumulated in float64, then rounded to it).

    Returns
    -------
    np.ndarray
        ``(N, D)``, ``x_i / ||x_i||``.

    Raises
    ------
    InputError
        When a row is all zeros: it has no direction, and a silent zero row would score a cosine
        of 0 against everything (a collapsed embedding would go unnoticed).

    Examples
    --------
    >>> l2_normalize(np.array([[3.0, 4.0]]), dtype=np.float64)
    array([[0.6, 0.8]])
    """
    x = np.asarray(x, dtype=dtype)
    norms = row_norms(x).astype(dtype)  # (N,)
    zero = np.flatnonzero(norms == 0)
    if zero.size:
        raise InputError(f"{name}: row {int(zero[0])} is all zeros and cannot be L2-normalised")
    return x / norms[:, None]


def zca_whitener(xc: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """ZCA whitening ``C^{-1/2}`` and colouring ``C^{1/2}`` of centred rows ``xc (N, d)``.

    ``C`` is the unbiased covariance with ``eps`` times its largest eigenvalue added to every
    eigenvalue (a relative ridge), so both matrices exist for a rank-deficient ``C``. ZCA is the
    whitening closest to the identity (Kessy, Lewin & Strimmer, Am. Stat. 2018).

    Returns
    -------
    (white, colour) : tuple of np.ndarray
        ``(d, d)`` each, symmetric, ``colour @ white = I``.
    """
    cov = xc.T @ xc / max(len(xc) - 1, 1)  # (d, d)
    evals, evecs = np.linalg.eigh(cov)
    evals = np.clip(evals, 0.0, None) + eps * max(float(evals.max()), 1e-30)
    white = (evecs / np.sqrt(evals)) @ evecs.T
    colour = (evecs * np.sqrt(evals)) @ evecs.T
    return white, colour


@dataclass(frozen=True, eq=False)
class Pca:
    """Principal components of rows ``x (N, D)``: ``x - mean = U diag(s) Vt`` (thin SVD).

    Attributes
    ----------
    mean : np.ndarray
        ``(D,)`` the rows' mean.
    singular_values : np.ndarray
        ``(min(N, D),)`` descending; ``s_i^2 / (N - 1)`` is the variance along axis ``i``.
    components : np.ndarray
        ``(min(N, D), D)`` orthonormal rows, the principal axes in the same order.
    """

    mean: np.ndarray
    singular_values: np.ndarray
    components: np.ndarray

    def rank(self, tol: float) -> int:
        """Axes whose singular value is above ``tol`` times the largest (0 for no axis)."""
        s = self.singular_values
        return int((s > tol * max(float(s[0]), 1e-30)).sum()) if len(s) else 0

    def scores(self, x: np.ndarray, k: int) -> np.ndarray:
        """``(N, k)`` coordinates of rows ``x`` on the first ``k`` axes."""
        return (x - self.mean) @ self.components[:k].T


def pca(x: np.ndarray) -> Pca:
    """The principal components of rows ``x (N, D)`` (centred by their mean; signs as the SVD
    leaves them).

    Examples
    --------
    >>> p = pca(np.array([[0.0, 0.0], [2.0, 0.0], [4.0, 0.0]]))
    >>> p.mean.tolist(), p.rank(1e-6), abs(p.components[0]).tolist()
    ([2.0, 0.0], 1, [1.0, 0.0])
    """
    mean = x.mean(0)
    _, s, vt = np.linalg.svd(x - mean, full_matrices=False)  # s (min(N, D),), vt (., D)
    return Pca(mean, s, vt)


def procrustes_rotation(x: np.ndarray, y: np.ndarray, rank: int | None = None) -> np.ndarray:
    """The partial isometry ``W (d_y, d_x)`` maximising ``tr(W X^T Y)`` (so ``x W^T ≈ y``).

    Parameters
    ----------
    x : np.ndarray
        ``(N, d_x)`` rows, already centred (and whitened) as wanted.
    y : np.ndarray
        ``(N, d_y)`` rows paired with ``x``.
    rank : int, optional
        Number of singular directions kept, ``r <= min(d_x, d_y)``; default ``min(d_x, d_y)``.

    Returns
    -------
    np.ndarray
        ``W = V_r U_r^T`` of shape ``(d_y, d_x)`` where ``X^T Y = U S V^T`` (Schönemann 1966).
        For ``r = d_x = d_y`` it is the orthogonal Procrustes solution; for ``r = d_y < d_x`` it
        has orthonormal rows.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((20, 3))
    >>> q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    >>> bool(np.allclose(procrustes_rotation(x, x @ q.T), q))
    True
    """
    d_x, d_y = x.shape[1], y.shape[1]
    r = min(d_x, d_y) if rank is None else rank
    m = x.T.astype(np.float64) @ y.astype(np.float64)  # (d_x, d_y)
    u, _, vt = np.linalg.svd(m, full_matrices=False)  # u (d_x, m), vt (m, d_y)
    return vt[:r].T @ u[:, :r].T  # (d_y, d_x)
