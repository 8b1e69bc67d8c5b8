"""Scalable building blocks for sample-level matching: k-means and blocked exact assignment.

Both work in ``O(N k D)`` memory-bounded blocks, so 100k points fit in a few hundred MB.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

__all__ = ["blocked_assignment", "kmeans", "nearest_centroid"]


def nearest_centroid(x: np.ndarray, c: np.ndarray, block: int = 8192) -> np.ndarray:
    """Index of the nearest row of ``c (k, D)`` for each row of ``x (N, D)``, ``(N,)`` int64."""
    cn = (c**2).sum(1)  # (k,)
    out = np.empty(len(x), dtype=np.int64)
    for s in range(0, len(x), block):
        out[s : s + block] = (cn[None, :] - 2.0 * x[s : s + block] @ c.T).argmin(1)
    return out


def kmeans(
    x: np.ndarray, k: int, iters: int = 25, seed: int = 0, sample: int = 20000
) -> tuple[np.ndarray, np.ndarray]:
    """Lloyd's k-means with k-means++ seeding [1]_ on a subsample, then one pass over all rows.

    Parameters
    ----------
    x : np.ndarray
        ``(N, D)``.
    k : int
        Number of clusters (clipped to ``N``).
    iters : int
        Lloyd iterations on the subsample.
    seed : int
        Seeds the subsample and the k-means++ draws.
    sample : int
        Rows used to fit the centroids (all rows when ``N <= sample``).

    Returns
    -------
    centroids : np.ndarray
        ``(k, D)``.
    labels : np.ndarray
        ``(N,)`` nearest centroid of every row.

    References
    ----------
    .. [1] D. Arthur, S. Vassilvitskii, "k-means++: The Advantages of Careful Seeding", SODA 2007.
    """
    rng = np.random.default_rng(seed)
    x = np.asarray(x, dtype=np.float64)
    k = max(1, min(k, len(x)))
    xs = x if len(x) <= sample else x[rng.choice(len(x), sample, replace=False)]
    c = np.empty((k, x.shape[1]))
    c[0] = xs[rng.integers(len(xs))]
    d2 = ((xs - c[0]) ** 2).sum(1)
    for j in range(1, k):
        p = d2 / d2.sum() if d2.sum() > 0 else None
        c[j] = xs[rng.choice(len(xs), p=p)]
        d2 = np.minimum(d2, ((xs - c[j]) ** 2).sum(1))
    for _ in range(iters):
        lab = nearest_centroid(xs, c)
        counts = np.bincount(lab, minlength=k)
        sums = np.zeros_like(c)
        np.add.at(sums, lab, xs)
        nonempty = counts > 0
        new = c.copy()
        new[nonempty] = sums[nonempty] / counts[nonempty, None]
        if np.allclose(new, c):
            break
        c = new
    return c, nearest_centroid(x, c)


def _assign_with_opt_out(cost: np.ndarray, q: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
    """Hungarian on ``cost (nx, ny)`` where any point may stay unmatched at price ``tau``.

    ``tau`` is the ``q``-quantile of the rows' nearest costs, so a point whose partner lies in
    another cell (a cell boundary) is left for the next round instead of being forced onto a
    wrong partner. Returns the matched (row, column) pairs.
    """
    nx, ny = cost.shape
    tau = float(np.quantile(cost.min(1), q)) + 1e-12
    big = np.zeros((nx + ny, ny + nx))
    big[:nx, :ny] = cost
    big[:nx, ny:] = tau  # x -> dummy
    big[nx:, :ny] = tau  # dummy -> y
    r, c = linear_sum_assignment(big)
    keep = (r < nx) & (c < ny)
    return r[keep], c[keep]


def blocked_assignment(
    a: np.ndarray, b: np.ndarray, block: int = 1024, seed: int = 0
) -> np.ndarray:
    """Approximately minimise ``sum_i ||a_i - b_p(i)||^2`` over permutations, for large ``N``.

    Rounds: partition the still-unmatched points of both sets by their nearest of
    ``~2 N / block`` k-means centroids (fitted on ``b``); inside each cell solve an exact
    Hungarian problem where a point may stay unmatched at a price (so a point whose partner lies
    across a cell boundary is not forced onto a wrong one) and fix those pairs; the leftovers go
    to the next round. When at most ``block`` points remain (or a round makes no progress) one
    exact Hungarian problem finishes the job. Exact whenever ``N <= block``.

    Parameters
    ----------
    a, b : np.ndarray
        ``(N, D)`` each, already aligned.
    block : int
        Target cell size; the cost is about ``N * block^2`` per round instead of ``N^3``.
    seed : int
        Seeds the k-means partitions.

    Returns
    -------
    np.ndarray
        ``(N,)`` int64 permutation: ``a_i`` is matched to ``b_{p(i)}``.
    """
    n = len(a)
    perm = np.full(n, -1, dtype=np.int64)
    left_a, left_b = np.arange(n), np.arange(n)
    rnd = 0
    while len(left_a) > block:
        k = int(np.ceil(2 * len(left_a) / block))
        c, lab_b = kmeans(b[left_b], k, iters=10, seed=seed + rnd, sample=min(len(left_b), 20000))
        lab_a = nearest_centroid(a[left_a], c)
        order_a, order_b = np.argsort(lab_a, kind="stable"), np.argsort(lab_b, kind="stable")
        cut_a = np.searchsorted(lab_a[order_a], np.arange(k + 1))
        cut_b = np.searchsorted(lab_b[order_b], np.arange(k + 1))
        done_a, done_b = [], []
        for j in range(k):
            ia = left_a[order_a[cut_a[j] : cut_a[j + 1]]]
            ib = left_b[order_b[cut_b[j] : cut_b[j + 1]]]
            if len(ia) == 0 or len(ib) == 0:
                continue
            cost = (a[ia] ** 2).sum(1)[:, None] + (b[ib] ** 2).sum(1)[None, :] - 2 * a[ia] @ b[ib].T
            r, cidx = _assign_with_opt_out(np.maximum(cost, 0.0))
            perm[ia[r]] = ib[cidx]
            done_a.append(ia[r])
            done_b.append(ib[cidx])
        if not done_a:
            break
        done_a_all, done_b_all = np.concatenate(done_a), np.concatenate(done_b)
        left_a = np.setdiff1d(left_a, done_a_all, assume_unique=True)
        left_b = np.setdiff1d(left_b, done_b_all, assume_unique=True)
        rnd += 1
    if len(left_a):
        aa, bb = a[left_a], b[left_b]
        cost = (aa**2).sum(1)[:, None] + (bb**2).sum(1)[None, :] - 2 * aa @ bb.T
        r, cidx = linear_sum_assignment(cost)
        perm[left_a[r]] = left_b[cidx]
    return perm
