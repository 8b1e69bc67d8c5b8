"""Problems with a planted answer for the matchers: clustered anisotropic clouds, rotated, noisy.

Pure functions of a seed, so tests and ``benchmarks/bench_match.py`` share one definition.
"""

from __future__ import annotations

import numpy as np

__all__ = ["planted_clouds", "random_rotation"]


def random_rotation(d: int, rng: np.random.Generator) -> np.ndarray:
    """A Haar-random orthogonal ``(d, d)`` matrix (QR of a Gaussian with the sign fix)."""
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def planted_clouds(
    n: int,
    d: int = 8,
    clusters: int | None = None,
    noise: float = 0.05,
    spread: float = 0.35,
    anisotropy: float = 4.0,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two unmatched point sets related by a planted rotation and permutation.

    ``x`` holds ``n`` points around ``clusters`` centres drawn from ``N(0, diag(s))`` with scales
    ``s`` falling geometrically from 1 to ``1 / anisotropy`` (distinct principal axes); each point
    adds ``spread * N(0, diag(s))``. Then ``y[truth[i]] = Q x_i + noise * sigma * eps`` with
    ``Q`` Haar
    random and ``sigma`` the per-axis RMS of ``x``.

    Returns
    -------
    x : np.ndarray
        ``(n, d)``.
    y : np.ndarray
        ``(n, d)``, rows shuffled.
    truth : np.ndarray
        ``(n,)``: row ``i`` of ``x`` corresponds to row ``truth[i]`` of ``y``.
    """
    rng = np.random.default_rng(seed)
    k = clusters if clusters is not None else max(2, round(np.sqrt(n)))
    scales = anisotropy ** (-np.linspace(0.0, 1.0, d))  # (d,)
    centres = rng.standard_normal((k, d)) * scales  # (k, d)
    labels = rng.integers(0, k, size=n)
    x = centres[labels] + spread * rng.standard_normal((n, d)) * scales  # (n, d)
    q = random_rotation(d, rng)
    sigma = np.sqrt((x**2).mean())
    y_paired = x @ q.T + noise * sigma * rng.standard_normal((n, d))  # (n, d)
    truth = rng.permutation(n)
    y = np.empty_like(y_paired)
    y[truth] = y_paired
    return x, y, truth
