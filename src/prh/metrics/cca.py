"""SVCCA: singular vector canonical correlation analysis (Raghu et al. 2017).

Each side is standardised per feature (``(x - mean) / (std + 1e-8)``, ``std`` with ``N - 1``),
reduced to its top ``dim`` left singular vectors ``U`` ``(N, dim)``; the score is the mean canonical
correlation between ``U_A`` and ``U_B``. The columns of ``U`` are orthonormal and centred, so the
canonical correlations are exactly the singular values of ``U_A^T U_B`` [2]_.

Differences from ``minyoungg/platonic-rep`` on purpose: an exact SVD (the reference uses the
randomised ``torch.svd_lowrank``) and exact canonical correlations (the reference runs
scikit-learn's iterative ``CCA`` and adds ``1e-10`` noise); they agree up to the reference's
iteration tolerance.

References
----------
.. [1] M. Raghu, J. Gilmer, J. Yosinski, J. Sohl-Dickstein, "SVCCA: Singular Vector Canonical
   Correlation Analysis for Deep Learning Dynamics and Interpretability", NeurIPS 2017.
.. [2] A. Bjorck, G. Golub, "Numerical methods for computing angles between linear subspaces",
   Math. Comp. 27, 1973.
"""

from __future__ import annotations

import numpy as np

from prh.errors import InputError


def svcca_basis(x: np.ndarray, dim: int = 10) -> np.ndarray:
    """Top ``dim`` left singular vectors of the standardised ``(N, D)`` features: ``(N, dim)``."""
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape
    if not 1 <= dim <= min(n - 1, d):
        raise InputError(
            f"SVCCA dim must satisfy 1 <= dim <= min(N - 1, D) = {min(n - 1, d)}, got {dim}"
        )
    xc = x - x.mean(axis=0)
    xs = xc / (xc.std(axis=0, ddof=1) + 1e-8)  # (N, D)
    u, _, _ = np.linalg.svd(xs, full_matrices=False)
    return np.ascontiguousarray(u[:, :dim])  # (N, dim)


def svcca_from_bases(ua: np.ndarray, ub: np.ndarray, perm: np.ndarray | None = None) -> float:
    """Mean canonical correlation of two orthonormal centred bases; ``perm`` permutes B's rows."""
    ub = ub if perm is None else ub[perm]
    rho = np.linalg.svd(ua.T @ ub, compute_uv=False)  # (dim,) canonical correlations
    return float(np.clip(rho, 0.0, 1.0).mean())


def svcca(a: np.ndarray, b: np.ndarray, dim: int = 10) -> float:
    """SVCCA similarity of ``(N, D_a)`` and ``(N, D_b)`` features (rows paired), in ``[0, 1]``.

    Parameters
    ----------
    a, b : np.ndarray
        Features, rows paired.
    dim : int
        Singular directions kept per side (the reference's ``cca_dim``, default 10).
    """
    return svcca_from_bases(svcca_basis(a, dim), svcca_basis(b, dim))
