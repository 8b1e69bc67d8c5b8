"""The alignment matrix: every pair of encoders on the same held-out items.

For ``E`` encoders (feature sets with rows paired across all of them, split into training and
held-out rows), :func:`alignment_matrix` returns ``(E, E)`` matrices of

- mutual-kNN@k on the held-out rows with a bootstrap interval (:func:`prh.metrics.measure`, the
  reference preprocessing: clamp and L2 rows), symmetric;
- linear CKA on the held-out rows, symmetric;
- the rotation score (:func:`prh.bridge.rotation_score.rotation_score`): maps fitted on the
  training rows of encoder ``i`` (rows of the matrix, X) to encoder ``j`` (columns, Y), scored
  on the held-out rows; not symmetric (``R^2`` predicts Y from X, the map's rank is the narrower
  side's).

The diagonal is left undefined (NaN): an encoder against itself says nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from prh.bridge.rotation_score import RotationScore, is_constant, rotation_score
from prh.errors import InputError
from prh.io import json_safe

__all__ = ["AlignmentMatrix", "alignment_matrix"]


@dataclass(frozen=True)
class AlignmentMatrix:
    """The outcome of :func:`alignment_matrix`; every matrix is ``(E, E)``, rows X, columns Y.

    Attributes
    ----------
    names : tuple of str
        The encoders, in matrix order.
    mutual_knn, mutual_knn_ci : np.ndarray
        Held-out mutual-kNN@``k`` ``(E, E)`` and its bootstrap interval ``(E, E, 2)`` (NaN when
        ``bootstrap = 0``).
    cka : np.ndarray
        Held-out linear CKA.
    layers : np.ndarray
        ``(E, E, 2)`` layer pair the metrics used (fixed, or the best pair of mutual-kNN).
    rotation, rotation_r2 : np.ndarray
        Rotation score (R@1 ratio, the headline) and ``R^2`` ratio of the map X -> Y.
    rotation_ci : np.ndarray
        ``(E, E, 2)`` bootstrap interval of the rotation score (NaN when ``bootstrap = 0``).
    pairs : dict
        ``(i, j) -> RotationScore`` for every ordered pair ``i != j`` whose sides both vary on
        the training rows (a constant side has no map: its cells are NaN, and no entry here).
    k, n_train, n_test, bootstrap, dims, layer : int
    common : bool
    """

    names: tuple[str, ...]
    mutual_knn: np.ndarray
    mutual_knn_ci: np.ndarray
    cka: np.ndarray
    layers: np.ndarray
    rotation: np.ndarray
    rotation_r2: np.ndarray
    rotation_ci: np.ndarray
    pairs: dict[tuple[int, int], RotationScore]
    k: int
    n_train: int
    n_test: int
    bootstrap: int
    dims: int
    common: bool
    layer: int

    def score_matrices(self) -> dict[str, np.ndarray]:
        """Name -> ``(E, E)`` matrix, the panels of the heatmap."""
        return {
            f"mutual_knn@{self.k}": self.mutual_knn,
            "cka (linear)": self.cka,
            "rotation score (R@1)": self.rotation,
            "rotation score (R^2)": self.rotation_r2,
        }

    def heatmap_png(self) -> bytes:
        """One heatmap panel per matrix (:func:`prh.metrics.heatmap.heatmap_png`); each cell
        is annotated with the layer pair its metrics used (the fixed ``layer`` for the
        rotation score)."""
        from prh.metrics.heatmap import heatmap_png

        scores = self.score_matrices()
        fixed = np.broadcast_to(np.array([self.layer, self.layer]), self.layers.shape)
        layers = {m: self.layers if m.startswith(("mutual", "cka")) else fixed for m in scores}
        return heatmap_png(scores, layers, list(self.names), list(self.names))

    def to_dict(self) -> dict[str, Any]:
        def m(a: np.ndarray) -> list:
            return [[None if not np.isfinite(v) else float(v) for v in row] for row in a]

        return {
            "names": list(self.names),
            "k": self.k,
            "n_train": self.n_train,
            "n_test": self.n_test,
            "bootstrap": self.bootstrap,
            "dims": self.dims,
            "common": self.common,
            "layer": self.layer,
            "mutual_knn": m(self.mutual_knn),
            "mutual_knn_ci_low": m(self.mutual_knn_ci[..., 0]),
            "mutual_knn_ci_high": m(self.mutual_knn_ci[..., 1]),
            "cka": m(self.cka),
            "layers": self.layers.tolist(),
            "rotation": m(self.rotation),
            "rotation_ci_low": m(self.rotation_ci[..., 0]),
            "rotation_ci_high": m(self.rotation_ci[..., 1]),
            "rotation_r2": m(self.rotation_r2),
            "pairs": [
                {"x": self.names[i], "y": self.names[j], **json_safe(r.to_dict())}
                for (i, j), r in sorted(self.pairs.items())
            ],
        }


def alignment_matrix(
    train: Mapping[str, np.ndarray],
    test: Mapping[str, np.ndarray],
    *,
    k: int = 10,
    bootstrap: int = 1000,
    seed: int = 0,
    dims: int = 256,
    common: bool = True,
    layer: int = -1,
    best_layers: bool = False,
    layer_dims: Mapping[str, list[int] | None] | None = None,
) -> AlignmentMatrix:
    """Mutual-kNN (with interval), linear CKA and rotation score for every pair of encoders.

    Parameters
    ----------
    train, test : mapping name -> np.ndarray
        Each encoder's training and held-out rows, ``(N_train, L, D)`` and ``(N_test, L, D)``
        (``(N, D)`` is read as one layer); row ``i`` of every encoder describes one item. The
        same names in the same order in both.
    k : int
        Neighbours of mutual-kNN.
    bootstrap : int
        Bootstrap resamples of the mutual-kNN and rotation score intervals (95 %); 0: none.
    seed : int
        Seeds the bootstrap.
    dims : int
        Principal dimensions per side of the rotation score's maps.
    common : bool
        Rotation score in one common ``k`` for both sides (default), else ``k`` per side.
    layer : int
        Layer used by the rotation score, and by the metrics unless ``best_layers``.
    best_layers : bool
        Metrics take the maximum over layer pairs (the PRH benchmark's protocol) instead of
        ``layer`` on both sides.
    layer_dims : mapping name -> list of int, optional
        True widths of zero-padded layers (``FeatureSet.layer_dims``), for the metrics' clamp.

    Returns
    -------
    AlignmentMatrix
    """
    names = tuple(train)
    if tuple(test) != names:
        raise InputError(f"train and test name different encoders: {names} vs {tuple(test)}")
    if len(names) < 2:
        raise InputError(f"need at least 2 encoders for a matrix, got {len(names)}")
    tr = {n: _layers(train[n], f"{n} (train)") for n in names}
    te = {n: _layers(test[n], f"{n} (test)") for n in names}
    n_train, n_test = _rows(tr, "train"), _rows(te, "test")
    if n_test <= k:
        raise InputError(f"mutual-kNN@{k} needs more than {k} held-out rows, got {n_test}")
    for n in names:
        _layer_of(tr[n], layer, n)
    fixed = None if best_layers else (layer, layer)
    knn, ci, cka, layers = _pair_metrics(te, k, bootstrap, seed, fixed, dict(layer_dims or {}))
    rot, rot_r2, rot_ci, pairs = _rotation_scores(
        tr, te, layer, dims=dims, common=common, bootstrap=bootstrap, seed=seed
    )
    return AlignmentMatrix(
        names=names,
        mutual_knn=knn,
        mutual_knn_ci=ci,
        cka=cka,
        layers=layers,
        rotation=rot,
        rotation_r2=rot_r2,
        rotation_ci=rot_ci,
        pairs=pairs,
        k=k,
        n_train=n_train,
        n_test=n_test,
        bootstrap=bootstrap,
        dims=dims,
        common=common,
        layer=layer,
    )


def _pair_metrics(te, k, bootstrap, seed, fixed, dims_of) -> tuple[np.ndarray, ...]:
    """Mutual-kNN ``(E, E)`` with its interval ``(E, E, 2)``, CKA at mutual-kNN's layer pair,
    and that pair ``(E, E, 2)``, for every unordered pair of the held-out sets ``te``."""
    from prh.metrics import measure

    names = tuple(te)
    e = len(names)
    knn, cka = np.full((e, e), np.nan), np.full((e, e), np.nan)
    ci = np.full((e, e, 2), np.nan)
    layers = np.zeros((e, e, 2), dtype=np.int64)
    caches: dict[str, dict[Any, Any]] = {"mutual_knn": {}, "cka": {}}
    for i in range(e):
        for j in range(i + 1, e):
            a, b = te[names[i]], te[names[j]]
            kw: dict[str, Any] = {
                "seed": seed,
                "name_a": names[i],
                "name_b": names[j],
                "layer_dims_a": dims_of.get(names[i]),
                "layer_dims_b": dims_of.get(names[j]),
            }
            r = measure(a, b, "mutual_knn", k=k, bootstrap=bootstrap, layers=fixed,
                        cache=caches["mutual_knn"], **kw)  # fmt: skip
            c = measure(a, b, "cka", k=k, layers=r.layers, cache=caches["cka"], **kw)
            knn[i, j] = knn[j, i] = r.score
            cka[i, j] = cka[j, i] = c.score
            if r.ci is not None:
                ci[i, j] = ci[j, i] = r.ci
            layers[i, j], layers[j, i] = r.layers, r.layers[::-1]
    return knn, ci, cka, layers


def _rotation_scores(tr, te, layer: int, **kw: Any) -> tuple[Any, ...]:
    """Rotation score ``(E, E)``, its R^2 ratio and interval of every ordered pair at ``layer``
    (``kw``: :func:`rotation_score`'s settings), and the scores by pair. A constant side has no
    map to fit: its cells stay NaN and the pair has no entry."""
    names = tuple(tr)
    e = len(names)
    rot, rot_r2 = np.full((e, e), np.nan), np.full((e, e), np.nan)
    rot_ci = np.full((e, e, 2), np.nan)
    pairs: dict[tuple[int, int], RotationScore] = {}
    at = {n: (_layer_of(tr[n], layer, n), _layer_of(te[n], layer, n)) for n in names}
    constant = [is_constant(at[n][0]) for n in names]
    for i in range(e):
        for j in range(e):
            if i == j or constant[i] or constant[j]:
                continue
            (xtr, xte), (ytr, yte) = at[names[i]], at[names[j]]
            s = rotation_score(xtr, ytr, xte, yte, **kw)
            pairs[i, j] = s
            if s.score_ci is not None:
                rot_ci[i, j] = s.score_ci
            rot[i, j], rot_r2[i, j] = s.score, s.r2_ratio
    return rot, rot_r2, rot_ci, pairs


def _layers(a: np.ndarray, name: str) -> np.ndarray:
    a = np.asarray(a, dtype=np.float32)
    if a.ndim == 2:
        a = a[:, None, :]
    if a.ndim != 3:
        raise InputError(f"{name}: expected rows (N, D) or (N, L, D), got shape {a.shape}")
    return a


def _rows(sets: Mapping[str, np.ndarray], what: str) -> int:
    ns = {n: len(a) for n, a in sets.items()}
    if len(set(ns.values())) != 1:
        raise InputError(f"paired {what} rows required, got {ns}")
    return next(iter(ns.values()))


def _layer_of(a: np.ndarray, layer: int, name: str) -> np.ndarray:
    """Rows of one layer ``(N, D)``; a clear error for an index out of range."""
    n_layers = a.shape[1]
    if not -n_layers <= layer < n_layers:
        raise InputError(
            f"layer {layer}: {name} has {n_layers} layers (valid -{n_layers}..{n_layers - 1})"
        )
    return a[:, layer, :]
