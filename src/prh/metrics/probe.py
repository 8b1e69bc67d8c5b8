"""Factor probes: how much of a known factor a representation's neighbourhoods hold.

Leave-one-out kNN accuracy of a label (the largest object's shape, its colour, the object count):
each sample's ``k`` nearest neighbours (cosine, self excluded; on centred features with
``centre=True``, the convention of issue 12's text probes) vote, the majority label (ties: the
smallest label) is the prediction. Rows with a negative (undefined) label are left out. The one
implementation: :mod:`prh.training.image_probe` uses it too. Computed per layer; the
*best-layer* figure is the maximum over layers.

**Within groups.** In a themed world every encoder scores higher overall, an untrained one too,
because the theme alone predicts much of the scene. ``groups`` (the scene's theme) restricts the
neighbours to the sample's own group (features centred within the group) and averages over groups
weighted by their size: what the representation knows *beyond* the theme. The same holds for
alignment: :func:`mutual_knn_within_groups`.

Layer: pure functions on arrays.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from prh.errors import InputError
from prh.metrics.api import measure


def _normalise(x: np.ndarray, centre: bool) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if centre:
        x = x - x.mean(0)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def knn_predict(x: np.ndarray, labels: np.ndarray, k: int = 10, centre: bool = False) -> np.ndarray:
    """Leave-one-out kNN majority vote of integer ``labels`` ``(N,)`` (all >= 0) from ``x``.

    Neighbours by cosine similarity (of centred rows when ``centre``), self excluded, ``k``
    capped at ``N - 1``; ties in similarity go to the lower index, ties in the vote to the
    smaller label.
    """
    x = _normalise(x, centre)
    y = np.asarray(labels, dtype=np.int64)
    n = len(x)
    if n < 2:
        raise InputError(f"kNN probe: need >= 2 samples, got {n}")
    k = min(int(k), n - 1)
    S = x @ x.T  # (N, N)
    np.fill_diagonal(S, -np.inf)
    nn = np.argsort(-S, axis=1, kind="stable")[:, :k]  # (N, k)
    votes = np.zeros((n, int(y.max()) + 1), dtype=np.int64)  # (N, C)
    np.add.at(votes, (np.repeat(np.arange(n), k), y[nn].ravel()), 1)
    return votes.argmax(axis=1)


def knn_accuracy(
    x: np.ndarray,
    labels: np.ndarray,
    k: int = 10,
    groups: np.ndarray | None = None,
    centre: bool = False,
) -> float:
    """Leave-one-out kNN@k accuracy of integer ``labels`` from ``x`` ``(N, D)``.

    Rows whose label is negative (undefined, e.g. a tie for the largest object) are left out
    before anything else. ``groups`` ``(N,)``: neighbours only within a sample's own group
    (features centred per group when ``centre``); the result is the size-weighted mean over
    groups of two or more samples.
    """
    y = np.asarray(labels)
    if len(y) != len(x):
        raise InputError(f"kNN probe: {len(x)} feature rows but {len(y)} labels")
    keep = y >= 0
    x, y = np.asarray(x)[keep], y[keep]
    if groups is None:
        return float((knn_predict(x, y, k, centre) == y).mean())
    g = np.asarray(groups)
    if len(g) != len(keep):
        raise InputError(f"kNN probe: {len(keep)} labels but {len(g)} group ids")
    g = g[keep]
    hits, total = 0, 0
    for v in np.unique(g):
        idx = np.flatnonzero(g == v)
        if len(idx) < 2:
            continue
        hits += int((knn_predict(x[idx], y[idx], k, centre) == y[idx]).sum())
        total += len(idx)
    if total == 0:
        raise InputError("kNN probe: no group holds two or more samples")
    return hits / total


def best_layer_accuracy(
    feats: np.ndarray,
    labels: np.ndarray,
    k: int = 10,
    groups: np.ndarray | None = None,
    centre: bool = False,
) -> tuple[float, int]:
    """``(accuracy, layer)``: :func:`knn_accuracy` of the best layer of ``feats`` ``(N, L, D)``."""
    f = np.asarray(feats)
    if f.ndim == 2:
        f = f[:, None, :]
    accs = [knn_accuracy(f[:, layer], labels, k, groups, centre) for layer in range(f.shape[1])]
    best = int(np.argmax(accs))
    return float(accs[best]), best


def factor_accuracy(
    feats: np.ndarray,
    factors: Mapping[str, np.ndarray],
    k: int = 10,
    groups: np.ndarray | None = None,
    centre: bool = False,
) -> dict:
    """Best-layer kNN accuracy of every factor, overall and (with ``groups``) within group.

    Returns
    -------
    dict
        ``{factor: {"overall": acc, "overall_layer": l, "chance": c,
        ["within": acc, "within_layer": l]}}``; ``chance`` is the accuracy of always
        predicting the most frequent label.
    """
    out = {}
    for name, y in factors.items():
        y = np.asarray(y)
        acc, layer = best_layer_accuracy(feats, y, k, centre=centre)
        row = {"overall": acc, "overall_layer": layer, "chance": chance(y)}
        if groups is not None:
            acc_w, layer_w = best_layer_accuracy(feats, y, k, groups, centre)
            row.update(within=acc_w, within_layer=layer_w)
        out[name] = row
    return out


def chance(labels: np.ndarray) -> float:
    """Accuracy of always answering the most frequent label (over rows with a label >= 0)."""
    y = np.asarray(labels)
    y = y[y >= 0]
    return float(np.bincount(y).max() / len(y))


def mutual_knn_within_groups(
    a: np.ndarray, b: np.ndarray, groups: np.ndarray, k: int = 10
) -> float:
    """Mutual-kNN alignment of ``a`` and ``b`` (rows paired) measured inside each group.

    The size-weighted mean over groups of ``measure(a[g], b[g], "mutual_knn")`` (best layer pair
    per group, ``k`` capped at the group size - 1); groups of fewer than 3 samples are skipped.
    """
    g = np.asarray(groups)
    if not len(a) == len(b) == len(g):
        raise InputError(f"mutual kNN within groups: {len(a)}, {len(b)}, {len(g)} rows differ")
    total, weight = 0.0, 0
    for v in np.unique(g):
        idx = np.flatnonzero(g == v)
        if len(idx) < 3:
            continue
        score = measure(a[idx], b[idx], "mutual_knn", k=min(k, len(idx) - 1)).score
        total += score * len(idx)
        weight += len(idx)
    if weight == 0:
        raise InputError("mutual kNN within groups: no group holds three or more samples")
    return total / weight


def mutual_knn_chance_within_groups(groups: np.ndarray, k: int = 10) -> float:
    """Expected within-group mutual-kNN of unrelated features: the size-weighted mean of
    ``k_g / (n_g - 1)`` (``k_g = min(k, n_g - 1)``) over groups of three or more samples.

    Small groups raise it (``k = 10`` among 24 neighbours gives 0.42): print it beside
    :func:`mutual_knn_within_groups`.
    """
    _, sizes = np.unique(np.asarray(groups), return_counts=True)
    sizes = sizes[sizes >= 3]
    if len(sizes) == 0:
        raise InputError("mutual kNN within groups: no group holds three or more samples")
    per = np.minimum(k, sizes - 1) / (sizes - 1)
    return float((per * sizes).sum() / sizes.sum())


def mean_pairwise_cosine(rows: np.ndarray, centre: np.ndarray | None = None) -> float:
    """Mean cosine over the distinct pairs of ``rows (n, D)``, after subtracting ``centre (D,)``.

    With the mean row of a token-embedding table as ``centre``, this says whether a set of words
    (the world's shape words, say) stay distinct (near 0) or merge (near 1) in a model.
    """
    x = np.asarray(rows, dtype=np.float64)
    if x.ndim != 2 or len(x) < 2:
        raise InputError(f"expected at least 2 rows (n, D), got shape {x.shape}")
    if centre is not None:
        x = x - np.asarray(centre, dtype=np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    if not (norms > 0).all():
        raise InputError("a zero row has no direction; its cosine is undefined")
    v = x / norms
    n = len(v)
    return float(((v @ v.T).sum() - n) / (n * (n - 1)))
