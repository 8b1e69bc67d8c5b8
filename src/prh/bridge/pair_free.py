"""Pair-free matching of one pair of encoders on the same scenes: class level and sample level.

Given rows ``x (N, D_x)`` and ``y (N, D_y)`` of two encoders on the same ``N`` scenes (row ``i``
of each: scene ``i``; the pairing is used **only to score** the match) and class labels of the
scenes (the largest object's shape and colour, say), :func:`pair_free` reports

- **class level**, per labelled factor: the ``C`` class centroids of each side, matched with no
  pairs by :func:`prh.bridge.match_classes` (quadratic assignment over the centroids' kernels);
  the accuracy of the recovered class correspondence, whether it is exact, chance ``1 / C``;
- **sample level**: ``y``'s rows shuffled (seeded), then matched back one to one, from two starts:
  :func:`prh.bridge.match_samples` (principal axes, k-means clusters) and the rotation between the
  class means paired by the class-level matches, each refined by Wasserstein-Procrustes
  (assignment, Procrustes, repeat); the matching one rotation explains best wins. Reported: the
  fraction of scenes matched to their own row, chance ``1 / N`` and their ratio.

Both sides are first reduced to one common number ``k <= dims`` of principal components and, by
default, whitened (unit variance per component): the theorem's "one rotation" is a statement about
whitened embeddings (:mod:`prh.bridge.rotation_score`), and whitening removes the per-direction
scales that differ between two encoders one rotation apart in their whitened coordinates.

A class-level match uses the labels on each side separately (which scenes are "cubes" in the image
set, which in the caption set), never which image goes with which caption; this is the setting of
Schnaus et al. [1]_.

References
----------
.. [1] D. Schnaus, N. Araslanov, D. Cremers, "It's a (Blind) Match! Towards Vision-Language
   Correspondence without Parallel Data", CVPR 2025.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from prh.bridge.assign import blocked_assignment
from prh.bridge.match import match_classes, match_samples
from prh.bridge.rotation_score import pca_basis
from prh.errors import InputError
from prh.linalg import procrustes_rotation

__all__ = [
    "ClassMatch",
    "PairFree",
    "SampleMatch",
    "anchor_rotation",
    "find_matching",
    "fit_of",
    "match_factor",
    "match_rows",
    "pair_free",
    "reduce_pair",
    "reduce_rows",
    "refine",
]

SHUFFLE_SALT = 0x5A17  # the sample-level shuffle's seed is (seed, SHUFFLE_SALT)


@dataclass(frozen=True)
class ClassMatch:
    """Pair-free match of one factor's class centroids.

    Attributes
    ----------
    factor : str
        The labelled factor (``"shape"``, ``"colour"``, ...).
    classes : tuple of int
        The class labels matched (those with at least one labelled row), in centroid order.
    rows : int
        Scenes with a label for this factor (a negative label means undefined and is left out).
    permutation : tuple of int
        Centroid ``c`` of X is matched to centroid ``permutation[c]`` of Y.
    accuracy : float
        Fraction of classes matched to their own class.
    exact : bool
        Every class matched to its own.
    chance : float
        Expected accuracy of a random correspondence, ``1 / C``.
    objective : float
        Normalised kernel alignment of the match (:class:`prh.bridge.MatchResult`).
    """

    factor: str
    classes: tuple[int, ...]
    rows: int
    permutation: tuple[int, ...]
    accuracy: float
    exact: bool
    chance: float
    objective: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "factor": self.factor,
            "classes": list(self.classes),
            "rows": self.rows,
            "permutation": list(self.permutation),
            "accuracy": self.accuracy,
            "exact": self.exact,
            "chance": self.chance,
            "objective": self.objective,
        }


@dataclass(frozen=True)
class SampleMatch:
    """Pair-free one-to-one match of the scenes.

    Attributes
    ----------
    n : int
        Scenes matched.
    accuracy : float
        Fraction of scenes matched to their own row.
    chance : float
        ``1 / N``, the expected accuracy of a random one-to-one match.
    times_chance : float
        ``accuracy / chance``.
    fit : float
        :func:`fit_of` the matching (the criterion that chose it).
    start : str
        The start that won: ``match_samples`` or ``class-anchored``.
    seconds : float
        Wall time of the match.
    """

    n: int
    accuracy: float
    chance: float
    times_chance: float
    fit: float
    start: str
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "accuracy": self.accuracy,
            "chance": self.chance,
            "times_chance": self.times_chance,
            "fit": self.fit,
            "start": self.start,
            "seconds": self.seconds,
        }


@dataclass(frozen=True)
class PairFree:
    """The outcome of :func:`pair_free`: class level per factor, sample level, and settings."""

    classes: dict[str, ClassMatch]
    samples: SampleMatch | None
    dims: int
    whiten: bool
    info: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "classes": {f: m.to_dict() for f, m in self.classes.items()},
            "samples": self.samples.to_dict() if self.samples is not None else None,
            "dims": self.dims,
            "whiten": self.whiten,
            **self.info,
        }


def reduce_rows(x: np.ndarray, dims: int, whiten: bool = True) -> np.ndarray:
    """Centred top-``dims`` principal coordinates ``(N, k)`` of rows ``x (N, D)``, each scaled to
    unit variance when ``whiten``; ``k = min(dims, numerical rank)``
    (:func:`prh.bridge.rotation_score.pca_basis`)."""
    mean, comps = pca_basis(x, dims)  # (D,), (k, D)
    if len(comps) == 0:
        raise InputError("a side is constant: nothing to match")
    z = (x - mean) @ comps.T  # (N, k)
    if whiten:
        z = z / np.maximum(z.std(0), 1e-30)
    return z


def _check(name: str, a: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    if a.ndim != 2:
        raise InputError(f"{name}: expected rows (N, D), got shape {a.shape}")
    if not np.isfinite(a).all():
        raise InputError(f"{name}: holds NaN or infinite values")
    return a


def _centroids(z: np.ndarray, labels: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """``(C, k)`` mean row of each class, centred over the classes."""
    c = np.stack([z[labels == k].mean(0) for k in classes])
    return c - c.mean(0)


def match_factor(
    zx: np.ndarray,
    zy: np.ndarray,
    factor: str,
    labels: np.ndarray,
    seed: int = 0,
    labels_y: np.ndarray | None = None,
) -> ClassMatch:
    """Class-level match of one factor's centroids of ``zx (N, k_x)`` and ``zy (M, k_y)``.

    ``labels (N,)`` label ``zx``'s rows and, unless ``labels_y (M,)`` is given (rows of ``zy``
    in another order), ``zy``'s too; negative labels are left out.
    """
    lx = np.asarray(labels)
    ly = lx if labels_y is None else np.asarray(labels_y)
    if lx.shape != (len(zx),) or ly.shape != (len(zy),):
        raise InputError(
            f"labels {factor!r}: expected {len(zx)} and {len(zy)} labels, got shapes "
            f"{lx.shape} and {ly.shape}"
        )
    classes = np.unique(lx[lx >= 0])
    if len(classes) < 2:
        raise InputError(f"labels {factor!r}: need at least 2 classes, got {len(classes)}")
    if not np.array_equal(classes, np.unique(ly[ly >= 0])):
        raise InputError(f"labels {factor!r}: the two sides have different classes")
    cx = _centroids(zx[lx >= 0], lx[lx >= 0], classes)
    cy = _centroids(zy[ly >= 0], ly[ly >= 0], classes)
    truth = np.arange(len(classes))
    m = match_classes(cx, cy, truth=truth, seed=seed)
    acc = float(m.accuracy if m.accuracy is not None else 0.0)
    return ClassMatch(
        factor=factor,
        classes=tuple(int(c) for c in classes),
        rows=int((lx >= 0).sum()),
        permutation=tuple(int(p) for p in m.permutation),
        accuracy=acc,
        exact=bool(np.array_equal(m.permutation, truth)),
        chance=1.0 / len(classes),
        objective=float(m.objective),
    )


def anchor_rotation(
    zx: np.ndarray,
    zy: np.ndarray,
    labels: Mapping[str, np.ndarray],
    found: Mapping[str, ClassMatch],
    labels_y: Mapping[str, np.ndarray] | None = None,
) -> np.ndarray:
    """Procrustes rotation ``(k_y, k_x)`` between class means of ``zx`` and ``zy`` paired by the
    class-level matches (no scene pairs): ``zx @ W.T ~ zy``.

    The anchors are the mean of every class of every factor and, with several factors, of every
    joint cell (a shape-and-colour combination, paired through both factors' matches: more
    anchors than dimensions pin the rotation down). Each mean weighs by the square root of its
    row count; ``labels_y`` as in :func:`match_factor`.
    """
    fs = list(found)
    lx = np.stack([np.asarray(labels[f]) for f in fs], 1)  # (N, F)
    ly = lx if labels_y is None else np.stack([np.asarray(labels_y[f]) for f in fs], 1)
    to_y = [dict(zip(found[f].classes, (found[f].classes[p] for p in found[f].permutation)))
            for f in fs]  # fmt: skip
    ax, ay = [], []
    cells = [(j,) for j in range(len(fs))] + ([tuple(range(len(fs)))] if len(fs) > 1 else [])
    for cols in cells:
        defined = (lx[:, cols] >= 0).all(1)
        for key in {tuple(r) for r in lx[defined][:, cols]}:
            rx = defined & (lx[:, cols] == key).all(1)
            want = [to_y[c][k] for c, k in zip(cols, key, strict=True)]
            ry = (ly[:, cols] == want).all(1)
            if ry.any():
                w = np.sqrt(rx.sum())
                ax.append(w * zx[rx].mean(0))
                ay.append(w * zy[ry].mean(0))
    return procrustes_rotation(np.stack(ax), np.stack(ay))


def refine(
    zx: np.ndarray, zy: np.ndarray, w: np.ndarray, iters: int = 30, seed: int = 0
) -> np.ndarray:
    """Wasserstein-Procrustes from a start ``W``: alternate the one-to-one assignment of
    ``zx @ W.T`` to ``zy`` (:func:`prh.bridge.assign.blocked_assignment`, exact up to 1024 rows)
    and ``W = Procrustes(zx, zy[perm])``; returns the last permutation."""
    perm = blocked_assignment(zx @ w.T, zy, seed=seed)
    for _ in range(iters):
        w = procrustes_rotation(zx, zy[perm])
        new = blocked_assignment(zx @ w.T, zy, seed=seed)
        if np.array_equal(new, perm):
            break
        perm = new
    return perm


def fit_of(zx: np.ndarray, zy: np.ndarray, perm: np.ndarray) -> float:
    """How well one rotation explains a matching: ``max_W tr(W zx^T zy[perm]) =
    ||zx^T zy[perm]||_*`` (nuclear norm), per row; chooses between pair-free starts."""
    return float(np.linalg.svd(zx.T @ zy[perm], compute_uv=False).sum()) / len(zx)


def find_matching(
    zx: np.ndarray, zy: np.ndarray, seed: int = 0, anchor: np.ndarray | None = None
) -> tuple[np.ndarray, str, float]:
    """One-to-one matching of unpaired rows ``zx (N, k)`` and ``zy (N, k)`` with no pairs.

    Starts: :func:`prh.bridge.match_samples` (its own principal-axis and cluster starts) and,
    when given, the rotation ``anchor`` found from matched class means (:func:`anchor_rotation`),
    refined by :func:`refine`. The matching that one rotation explains best (:func:`fit_of`)
    wins.

    Returns
    -------
    perm : np.ndarray
        ``(N,)``: row ``i`` of ``zx`` is matched to row ``perm[i]`` of ``zy``.
    start : str
        ``"match_samples"`` or ``"class-anchored"``.
    fit : float
        :func:`fit_of` the winner.
    """
    found = {"match_samples": match_samples(zx, zy, seed=seed).permutation}
    if anchor is not None:
        found["class-anchored"] = refine(zx, zy, anchor, seed=seed)
    fits = {k: fit_of(zx, zy, p) for k, p in found.items()}
    start = max(fits, key=lambda k: fits[k])
    return found[start], start, fits[start]


def match_rows(
    zx: np.ndarray,
    zy: np.ndarray,
    seed: int = 0,
    anchor: np.ndarray | None = None,
) -> SampleMatch:
    """Sample-level match: ``zy``'s rows shuffled by a seeded permutation, matched back to
    ``zx``'s by :func:`find_matching`; scored against the true pairing (row ``i`` with row
    ``i``), which the matcher never sees."""
    t0 = time.perf_counter()
    n = len(zx)
    shuffle = np.random.default_rng([seed, SHUFFLE_SALT]).permutation(n)
    perm, start, fit = find_matching(zx, zy[shuffle], seed=seed, anchor=anchor)
    acc = float((perm == np.argsort(shuffle)).mean())
    return SampleMatch(
        n=n,
        accuracy=acc,
        chance=1.0 / n,
        times_chance=acc * n,
        fit=fit,
        start=start,
        seconds=time.perf_counter() - t0,
    )


def reduce_pair(
    x: np.ndarray, y: np.ndarray, dims: int, whiten: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Both sides by :func:`reduce_rows`, cut to one common ``k`` (the whole ``k``-dim embedding
    is what the theorem says is shared)."""
    zx, zy = reduce_rows(x, dims, whiten), reduce_rows(y, dims, whiten)
    k = min(zx.shape[1], zy.shape[1])
    return zx[:, :k], zy[:, :k]


def pair_free(
    x: np.ndarray,
    y: np.ndarray,
    labels: Mapping[str, np.ndarray] | None = None,
    *,
    dims: int = 32,
    whiten: bool = True,
    samples: bool = True,
    seed: int = 0,
) -> PairFree:
    """Pair-free matching of two encoders' rows of the same scenes, class and sample level.

    Parameters
    ----------
    x, y : np.ndarray
        ``(N, D_x)``, ``(N, D_y)``: row ``i`` of each describes scene ``i`` (the pairing only
        scores the match; the matchers never see it).
    labels : mapping factor -> np.ndarray, optional
        ``(N,)`` integer class of each scene per factor (negative: undefined, left out of that
        factor's centroids); one class-level match per factor.
    dims : int
        Principal components kept per side before matching.
    whiten : bool
        Scale each kept component to unit variance (default).
    samples : bool
        Also the sample-level match (seconds at N = 500).
    seed : int
        Seeds the shuffle and the matchers; same seed, same result.

    Returns
    -------
    PairFree
    """
    x, y = _check("x", x), _check("y", y)
    if len(x) != len(y):
        raise InputError(f"x and y must describe the same scenes: {len(x)} vs {len(y)} rows")
    if len(x) < 4:
        raise InputError(f"need at least 4 scenes to match, got {len(x)}")
    if dims < 1:
        raise InputError(f"dims must be >= 1, got {dims}")
    zx, zy = reduce_pair(x, y, dims, whiten)
    k = zx.shape[1]
    labels = dict(labels or {})
    classes = {f: match_factor(zx, zy, f, lab, seed=seed) for f, lab in labels.items()}
    sample = None
    if samples:
        anchor = anchor_rotation(zx, zy, labels, classes) if classes else None
        sample = match_rows(zx, zy, seed=seed, anchor=anchor)
    return PairFree(classes, sample, k, whiten)
