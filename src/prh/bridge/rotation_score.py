"""Is it one rotation? The whitened orthonormal map against the unconstrained (ridge) map.

The Platonic representation theorem ([theory.md] sec. 3) says that two encoders trained on good
views of one world learn one embedding up to a rotation. On held-out rows this module fits, on the
training rows of a pair of feature sets,

- the **orthonormal map**: each side reduced to its top principal components, by default to one
  common ``k = min(dims, rank_x, rank_y)`` (``common=True``: the theorem's statement, the WHOLE
  ``k``-dim embedding is shared), else to ``k_x = min(dims, rank_x)`` and ``k_y`` on its own;
  centred and ZCA-whitened, then the partial isometry of rank ``r = min(k_x, k_y)`` found by
  Procrustes (:class:`prh.bridge.SemiOrthogonalMap` with ``whiten=True``; orthogonal when
  ``k_x = k_y``), coloured back into ``Y``'s space;
- the **ridge map**: unconstrained linear regression of ``Y``'s components on ``X``'s
  (:class:`prh.bridge.RidgeMap`), the best any linear map can do;

and scores both on the held-out rows: ``R^2`` of predicting ``Y`` from ``X`` and retrieval R@1
(cosine, X->Y and Y->X, :func:`prh.bridge.retrieval`). The **rotation score** is the ratio
orthonormal / ridge of the mean R@1 of both directions (the headline) and of ``R^2``.

What it measures. After whitening, ``X_w^T Y_w / n = U S V^T`` where ``S`` holds the canonical
correlations ``rho_i`` of the two sides. The ridge map predicts ``Y_w ≈ X_w U S V^T``, the
orthonormal one ``X_w U V^T``: the two coincide exactly when every ``rho_i`` is equal (all 1 for
two encoders one rotation apart), and the orthonormal map falls behind as soon as some shared
directions are well predicted and others poorly (it gives a noisy direction the same weight as a
clean one; ridge shrinks it by ``rho_i``). Per whitened direction the expected ``R^2`` is
``2 rho_i - 1`` for the orthonormal map and ``rho_i^2`` for ridge.

What it does not detect. Whitening both sides turns ANY invertible linear map ``Y = X A`` into an
orthogonal one (``C_x^{1/2} A C_y^{-1/2}`` is orthogonal), so an ill-conditioned linear distortion
scores 1: "one rotation" here is the theorem's statement about whitened embeddings. With
``common=False`` private dimensions on the wider side (more PCA dims kept on one side than on the
other) are ignored by the rank-``min(k_x, k_y)`` map, which picks the best-shared directions of
the wider side; with the default ``common=True`` both sides keep the same top-``k`` principal
subspace, and private dimensions inside either one lower the score. What lowers the score:
private (nuisance) dimensions in the compared subspaces, a relation nonlinear in some directions
only, noise concentrated in some shared directions.

Why R@1 is the headline. R@1 is bounded in ``[0, 1]``, invariant to a global scale of the
prediction (so a uniform drop of every ``rho_i`` leaves the R@1 ratio at 1: the two encoders are
still one rotation apart, only noisier) and it is what the map is used for. The ``R^2`` ratio is
reported too but is fragile: the orthonormal ``R^2`` is negative as soon as ``rho_i < 1/2`` and
the ratio of two small numbers is meaningless when ridge itself predicts little.

References
----------
.. [1] P. H. Schönemann, "A generalized solution of the orthogonal Procrustes problem", 1966.
.. [2] H. Hotelling, "Relations between two sets of variates", Biometrika 28, 1936 (canonical
   correlations).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from prh.bridge.procrustes import RidgeMap, SemiOrthogonalMap
from prh.bridge.retrieval import true_ranks
from prh.errors import InputError
from prh.linalg import pca

__all__ = [
    "MapScore",
    "RotationScore",
    "above_chance",
    "canonical_correlations",
    "pca_basis",
    "ratio_interval",
    "rotation_score",
    "split_rows",
]

RIDGE_ALPHA = 1e-2  # the ridge penalty of prh's bridge baseline (caption.pipeline.VisionProjector)
WHITEN_EPS = 1e-3  # relative eigenvalue floor when whitening, as in the bridge's projector
CHANCE_LEVEL = 0.999  # ridge must beat this quantile of chance hits for the score to mean anything
RANK_TOL = 1e-6  # principal directions below this fraction of the largest singular value: dropped


@dataclass(frozen=True)
class MapScore:
    """One map's held-out fit: ``r2`` of ``Y`` from ``X``, R@1 both ways (fractions)."""

    r2: float
    r1_x_to_y: float
    r1_y_to_x: float

    @property
    def r1(self) -> float:
        """Mean R@1 of the two retrieval directions."""
        return 0.5 * (self.r1_x_to_y + self.r1_y_to_x)

    def to_dict(self) -> dict[str, float]:
        return {
            "r2": self.r2,
            "r1_x_to_y": self.r1_x_to_y,
            "r1_y_to_x": self.r1_y_to_x,
            "r1": self.r1,
        }


@dataclass(frozen=True)
class RotationScore:
    """The outcome of :func:`rotation_score`.

    Attributes
    ----------
    orthonormal, ridge : MapScore
        Held-out ``R^2`` and R@1 of the whitened orthonormal map and of the ridge map.
    score : float
        ``orthonormal.r1 / ridge.r1`` (the headline; NaN unless ridge is above chance, see
        ``ridge_above_chance``).
    score_ci : (float, float) or None
        95 % percentile bootstrap interval of ``score`` over held-out items (``bootstrap > 0``).
    r2_ratio : float
        ``orthonormal.r2 / ridge.r2`` (NaN when ridge ``R^2 <= 0``).
    k_x, k_y, rank : int
        Principal dimensions kept on each side and the orthonormal map's rank ``min(k_x, k_y)``.
    n_train, n_test : int
    chance_r1 : float
        R@1 of a random ranking, ``1 / n_test``.
    ridge_above_chance : bool
        Ridge's R@1 hits (both directions, ``2 n_test`` queries) exceed what a random ranking
        reaches with probability ``CHANCE_LEVEL`` (binomial): when False the ratio compares two
        chance levels and means nothing.
    canonical : tuple of float
        The ``rank`` canonical correlations on the training rows (whitened cross-covariance's
        singular values), largest first: all 1 for an exact rotation.
    """

    orthonormal: MapScore
    ridge: MapScore
    score: float
    score_ci: tuple[float, float] | None
    r2_ratio: float
    k_x: int
    k_y: int
    rank: int
    n_train: int
    n_test: int
    chance_r1: float
    ridge_above_chance: bool
    canonical: tuple[float, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "score_ci": list(self.score_ci) if self.score_ci is not None else None,
            "r2_ratio": self.r2_ratio,
            "orthonormal": self.orthonormal.to_dict(),
            "ridge": self.ridge.to_dict(),
            "k_x": self.k_x,
            "k_y": self.k_y,
            "rank": self.rank,
            "n_train": self.n_train,
            "n_test": self.n_test,
            "chance_r1": self.chance_r1,
            "ridge_above_chance": self.ridge_above_chance,
            "canonical": list(self.canonical),
        }


def split_rows(n: int, test_fraction: float = 0.5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Train and test row indices from a seeded permutation of ``range(n)``, each sorted.

    ``round(n * test_fraction)`` rows go to the test side; both sides keep at least 2 rows.
    """
    if not 0.0 < test_fraction < 1.0:
        raise InputError(f"test fraction must be in (0, 1), got {test_fraction}")
    n_test = round(n * test_fraction)
    if n_test < 2 or n - n_test < 2:
        raise InputError(
            f"{n} rows split at test fraction {test_fraction} leave {n - n_test} train and "
            f"{n_test} test rows; need at least 2 each"
        )
    perm = np.random.default_rng(seed).permutation(n)
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


# A side whose centred spread is below this fraction of its raw size is constant up to rounding
# (float32 resolves ~6e-8 of a value): its "principal directions" would be rounding noise.
CONSTANT_RTOL = 1e-5


def is_constant(x: np.ndarray) -> bool:
    """True when rows ``x (N, D)`` are one point up to rounding: ``||x - mean||_F <=
    CONSTANT_RTOL * ||x||_F`` (all-zero rows included)."""
    x = np.asarray(x, dtype=np.float64)
    total = float(np.linalg.norm(x))
    return not float(np.linalg.norm(x - x.mean(0))) > CONSTANT_RTOL * total


def pca_basis(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean ``(D,)`` and top principal directions ``(k', D)`` of rows ``x (N, D)``.

    ``k' = min(k, numerical rank)``: directions whose singular value is below ``RANK_TOL`` of the
    largest (constant or zero-padded columns, ``N - 1`` limit) are dropped, since whitening would
    blow them up.
    """
    p = pca(x)
    return p.mean, p.components[: min(k, p.rank(RANK_TOL))]


def canonical_correlations(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Canonical correlations of rows ``x (N, k_x)`` and ``y (N, k_y)``, largest first.

    Singular values of ``Q_x^T Q_y`` where ``Q`` is an orthonormal basis of each centred side
    (exact whitening, no ridge); ``min(k_x, k_y)`` values in ``[0, 1]``. On training rows they are
    biased upwards when ``k`` is large against ``N``.
    """
    qx, _ = np.linalg.qr(x - x.mean(0))  # (N, k_x)
    qy, _ = np.linalg.qr(y - y.mean(0))  # (N, k_y)
    return np.clip(np.linalg.svd(qx.T @ qy, compute_uv=False), 0.0, 1.0)


def _project(x: np.ndarray, basis: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    mean, comps = basis
    return (x - mean) @ comps.T  # (N, k)


def r2_score(pred: np.ndarray, y: np.ndarray) -> float:
    """``1 - SS_res / SS_tot`` of predictions ``pred`` of targets ``y`` (both ``(N, k)``)."""
    return 1.0 - float(((y - pred) ** 2).sum()) / max(float(((y - y.mean(0)) ** 2).sum()), 1e-30)


def _score_map(pred: np.ndarray, y: np.ndarray) -> tuple[MapScore, np.ndarray]:
    """R^2 and R@1 of predictions ``pred (N, k_y)`` of centred targets ``y (N, k_y)``, and the
    per-item hits ``(N, 2)`` (X->Y query, Y->X query) that R@1 averages."""
    r2 = r2_score(pred, y)
    idx = np.arange(len(y))
    hits = np.stack([true_ranks(pred, y, idx) == 1, true_ranks(y, pred, idx) == 1], 1)  # (N, 2)
    x_to_y, y_to_x = hits.mean(0)
    return MapScore(r2=r2, r1_x_to_y=float(x_to_y), r1_y_to_x=float(y_to_x)), hits


def ratio_interval(
    hits_a: np.ndarray, hits_b: np.ndarray, bootstrap: int, seed: int = 0, level: float = 0.95
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of ``sum(hits_a) / sum(hits_b)`` over resampled items.

    ``hits_a``, ``hits_b``: ``(N, Q)`` hits of the two maps on the same ``N`` held-out items (both
    query directions of an item resampled together, the gallery fixed); one resample serves both
    maps (paired). ``None`` when ``bootstrap = 0``; resamples where ``b`` has no hit are dropped.
    """
    if bootstrap <= 0:
        return None
    rng = np.random.default_rng(seed)
    a, b = hits_a.sum(1), hits_b.sum(1)  # (N,)
    idx = rng.integers(0, len(a), size=(bootstrap, len(a)))  # (R, N)
    num, den = a[idx].sum(1), b[idx].sum(1)
    ratios = num[den > 0] / den[den > 0]
    if len(ratios) == 0:
        return None
    lo, hi = np.quantile(ratios, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def above_chance(r1: float, n: int, level: float = CHANCE_LEVEL) -> bool:
    """Whether mean R@1 ``r1`` over both directions (``2 n`` queries among ``n`` items) beats the
    ``level`` quantile of a random ranking's hits, ``Binomial(2 n, 1 / n)``."""
    from scipy.stats import binom

    hits = round(r1 * 2 * n)
    return bool(hits > binom.ppf(level, 2 * n, 1.0 / n))


def _check(name: str, a: np.ndarray, min_rows: int) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    if a.ndim != 2:
        raise InputError(f"{name}: expected rows (N, D), got shape {a.shape}")
    if len(a) < min_rows:
        raise InputError(f"{name}: need at least {min_rows} rows, got {len(a)}")
    if not np.isfinite(a).all():
        raise InputError(f"{name}: holds NaN or infinite values")
    return a


def _check_paired(
    x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, y_test: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The four sets as checked float rows: paired counts, equal train and test widths."""
    xtr, ytr = _check("x_train", x_train, 2), _check("y_train", y_train, 2)
    xte, yte = _check("x_test", x_test, 2), _check("y_test", y_test, 2)
    if len(xtr) != len(ytr) or len(xte) != len(yte):
        raise InputError(
            f"paired rows required: train {len(xtr)} vs {len(ytr)}, test {len(xte)} vs {len(yte)}"
        )
    if xtr.shape[1] != xte.shape[1] or ytr.shape[1] != yte.shape[1]:
        raise InputError(
            f"train and test widths differ: X {xtr.shape[1]} vs {xte.shape[1]}, "
            f"Y {ytr.shape[1]} vs {yte.shape[1]}"
        )
    return xtr, ytr, xte, yte


def rotation_score(
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_test: np.ndarray,
    y_test: np.ndarray,
    dims: int = 256,
    common: bool = True,
    alpha: float = RIDGE_ALPHA,
    eps: float = WHITEN_EPS,
    bootstrap: int = 0,
    seed: int = 0,
) -> RotationScore:
    """Held-out fit of the whitened orthonormal map against ridge, and their ratio.

    Parameters
    ----------
    x_train, y_train : np.ndarray
        ``(N_train, D_x)``, ``(N_train, D_y)`` paired training rows (row ``i`` of each: one item).
    x_test, y_test : np.ndarray
        ``(N_test, D_x)``, ``(N_test, D_y)`` paired held-out rows.
    dims : int
        Principal dimensions kept per side, at most; never more than a side's numerical rank.
    common : bool
        Both sides keep the same number ``min(dims, rank_x, rank_y)`` (default); ``False``: each
        side keeps ``min(dims, rank)`` and the map has rank ``min(k_x, k_y)``.
    alpha : float
        Ridge penalty (relative to the mean input variance, see :class:`prh.bridge.RidgeMap`).
    eps : float
        Eigenvalue floor of the whitening, relative to the largest eigenvalue.
    bootstrap : int
        Resamples of the held-out items for a 95 % interval of the score (0: none).
    seed : int
        Seeds the bootstrap.

    Returns
    -------
    RotationScore
        Both maps' held-out ``R^2`` (in ``Y``'s top-``k_y`` principal coordinates, all of ``Y``
        when ``D_y <= k``) and R@1 (cosine, centred by the training mean), and their ratios.
    """
    if dims < 1:
        raise InputError(f"dims must be >= 1, got {dims}")
    xtr, ytr, xte, yte = _check_paired(x_train, y_train, x_test, y_test)
    bx, by = pca_basis(xtr, dims), pca_basis(ytr, dims)
    if common:  # one k for both sides: the top-k principal subspaces must be one rotation apart
        k = min(len(bx[1]), len(by[1]))
        bx, by = (bx[0], bx[1][:k]), (by[0], by[1][:k])
    k_x, k_y = len(bx[1]), len(by[1])
    if k_x == 0 or k_y == 0:
        raise InputError("a side is constant on the training rows: nothing to map")
    px_tr, py_tr = _project(xtr, bx), _project(ytr, by)  # (N_train, k_x), (N_train, k_y)
    px_te, py_te = _project(xte, bx), _project(yte, by)  # (N_test, k_x), (N_test, k_y)
    ortho = SemiOrthogonalMap(whiten=True, eps=eps).fit(px_tr, py_tr)
    ridge = RidgeMap(alpha=alpha).fit(px_tr, py_tr)
    rho = canonical_correlations(px_tr, py_tr)[: ortho.rank_]
    o, hits_o = _score_map(ortho.transform(px_te).astype(np.float64), py_te)
    r, hits_r = _score_map(ridge.transform(px_te).astype(np.float64), py_te)
    informative = above_chance(r.r1, len(xte))
    return RotationScore(
        orthonormal=o,
        ridge=r,
        score=o.r1 / r.r1 if informative else float("nan"),
        score_ci=ratio_interval(hits_o, hits_r, bootstrap, seed) if informative else None,
        r2_ratio=o.r2 / r.r2 if r.r2 > 0 else float("nan"),
        k_x=k_x,
        k_y=k_y,
        rank=int(ortho.rank_),
        n_train=len(xtr),
        n_test=len(xte),
        chance_r1=1.0 / len(xte),
        ridge_above_chance=informative,
        canonical=tuple(float(v) for v in rho),
    )
