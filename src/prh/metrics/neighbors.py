"""Neighbour-based alignment metrics: mutual kNN, cycle kNN, LCS kNN and edit-distance kNN.

Each metric compares the neighbour lists of the same sample in two representations ``A`` and ``B``
of the same ``N`` samples (row ``i`` of ``A`` and of ``B`` describe one sample). The ``*_from_knn``
functions take the ``(N, k)`` lists of :func:`prh.metrics.knn.knn`; the plain functions take
``(N, D)`` features. Definitions follow Huh et al. 2024 (``minyoungg/platonic-rep``,
``metrics.py``).

Differences from the reference, on purpose: ``lcs_knn`` is divided by ``k`` (the reference returns
the mean LCS length, in ``[0, k]``), so every kNN score lies in ``[0, 1]``; neighbour ties are
broken by index (see :mod:`prh.metrics.knn`).
"""

from __future__ import annotations

import numpy as np

from prh.metrics.knn import knn

_CHUNK = 1 << 14  # rows per chunk of the (rows, k, k) comparisons


def permute_knn(knn_b: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """Neighbour lists of ``B[perm]`` from those of ``B``, without a new search.

    Row ``i`` of ``B[perm]`` is row ``perm[i]`` of ``B``; its neighbours are the rows ``i'`` with
    ``perm[i']`` a neighbour of ``perm[i]``, that is ``inv[knn_b[perm[i]]]`` with ``inv = perm^-1``,
    in the same order. (Exact ties keep ``B``'s original index order.)

    Parameters
    ----------
    knn_b : np.ndarray
        ``(N, k)`` neighbour lists of ``B``.
    perm : np.ndarray
        ``(N,)`` a permutation of ``0..N-1``.

    Returns
    -------
    np.ndarray
        ``(N, k)`` neighbour lists of ``B[perm]``.
    """
    inv = np.empty_like(perm)
    inv[perm] = np.arange(len(perm))
    return inv[knn_b[perm]]


def mutual_knn_rows(knn_a: np.ndarray, knn_b: np.ndarray) -> np.ndarray:
    """``(N,)`` per-sample ``|kNN_A(i) & kNN_B(i)| / k``.

    Parameters
    ----------
    knn_a, knn_b : np.ndarray
        ``(N, k)`` neighbour lists (entries within a row distinct).
    """
    n, k = knn_a.shape
    hits = np.empty(n)
    for s in range(0, n, _CHUNK):
        a, b = knn_a[s : s + _CHUNK], knn_b[s : s + _CHUNK]
        hits[s : s + _CHUNK] = (a[:, :, None] == b[:, None, :]).sum(axis=(1, 2))  # (n',)
    return hits / k


def cycle_knn_rows(knn_a: np.ndarray, knn_b: np.ndarray) -> np.ndarray:
    """``(N,)`` 1 where ``i`` is among the ``A``-neighbours of one of its ``B``-neighbours, else 0.

    The reference's ``compute_knn_accuracy(knn_A[knn_B])``: go ``i -> j`` in ``B``, then look for
    ``i`` among ``j``'s neighbours in ``A``.
    """
    n = knn_a.shape[0]
    found = np.empty(n)
    for s in range(0, n, _CHUNK):
        rows = np.arange(s, min(s + _CHUNK, n))
        back = knn_a[knn_b[rows]]  # (n', k, k): A-neighbours of each B-neighbour
        found[s : s + _CHUNK] = (back == rows[:, None, None]).any(axis=(1, 2))
    return found


def mutual_knn_from_knn(knn_a: np.ndarray, knn_b: np.ndarray) -> float:
    """Mean over samples of ``|kNN_A(i) & kNN_B(i)| / k``."""
    return float(mutual_knn_rows(knn_a, knn_b).mean())


def cycle_knn_from_knn(knn_a: np.ndarray, knn_b: np.ndarray) -> float:
    """Fraction of samples ``i`` found among the ``A``-neighbours of one of its ``B``-neighbours."""
    return float(cycle_knn_rows(knn_a, knn_b).mean())


def lcs_lengths(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Longest common subsequence length of each row pair, ``(N,)`` int; DP vectorised over rows.

    ``L[i][j] = L[i-1][j-1] + 1`` if ``x_i == y_j`` else ``max(L[i-1][j], L[i][j-1])``.
    """
    n, m = x.shape[0], y.shape[1]
    prev = np.zeros((n, m + 1), dtype=np.int32)
    for i in range(x.shape[1]):
        cur = np.zeros_like(prev)
        eq = x[:, i : i + 1] == y  # (N, m)
        for j in range(1, m + 1):
            cur[:, j] = np.where(
                eq[:, j - 1], prev[:, j - 1] + 1, np.maximum(prev[:, j], cur[:, j - 1])
            )
        prev = cur
    return prev[:, m]


def edit_distances(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Levenshtein distance (unit insert, delete, substitute) of each row pair, ``(N,)`` int.

    ``E[i][j] = min(E[i-1][j] + 1, E[i][j-1] + 1, E[i-1][j-1] + [x_i != y_j])``, as
    ``torchaudio.functional.edit_distance`` in the reference.
    """
    n, m = x.shape[0], y.shape[1]
    prev = np.broadcast_to(np.arange(m + 1, dtype=np.int32), (n, m + 1)).copy()
    for i in range(1, x.shape[1] + 1):
        cur = np.empty_like(prev)
        cur[:, 0] = i
        ne = x[:, i - 1 : i] != y  # (N, m)
        for j in range(1, m + 1):
            cur[:, j] = np.minimum(
                np.minimum(prev[:, j] + 1, cur[:, j - 1] + 1), prev[:, j - 1] + ne[:, j - 1]
            )
        prev = cur
    return prev[:, m]


def lcs_knn_rows(knn_a: np.ndarray, knn_b: np.ndarray) -> np.ndarray:
    """``(N,)`` LCS length of the ordered neighbour lists, divided by ``k``."""
    return lcs_lengths(knn_a, knn_b) / knn_a.shape[1]


def edit_distance_knn_rows(knn_a: np.ndarray, knn_b: np.ndarray) -> np.ndarray:
    """``(N,)`` ``1 - edit distance / k`` of the ordered neighbour lists."""
    return 1.0 - edit_distances(knn_a, knn_b) / knn_a.shape[1]


def lcs_knn_from_knn(knn_a: np.ndarray, knn_b: np.ndarray) -> float:
    """Mean LCS length of the ordered neighbour lists, divided by ``k``; in ``[0, 1]``."""
    return float(lcs_knn_rows(knn_a, knn_b).mean())


def edit_distance_knn_from_knn(knn_a: np.ndarray, knn_b: np.ndarray) -> float:
    """``1 - mean(edit distance of the ordered neighbour lists) / k``; in ``[0, 1]``."""
    return float(edit_distance_knn_rows(knn_a, knn_b).mean())


def _pair(fn, a, b, k, block_size, backend):
    ka = knn(a, k, block_size=block_size, backend=backend, name="A")
    kb = knn(b, k, block_size=block_size, backend=backend, name="B")
    return fn(ka, kb)


def mutual_knn(
    a: np.ndarray,
    b: np.ndarray,
    k: int = 10,
    *,
    block_size: int | None = None,
    backend: str = "numpy",
) -> float:
    """Mutual k-nearest-neighbour alignment of two representations of the same samples.

    ``m = (1/N) sum_i |kNN_A(i) & kNN_B(i)| / k`` with cosine neighbours, self excluded
    (Huh et al. 2024, eq. 11). 1 when the neighbourhoods agree, about ``k / (N - 1)`` by chance.

    Parameters
    ----------
    a, b : np.ndarray
        ``(N, D_a)`` and ``(N, D_b)``; row ``i`` of each describes sample ``i``.
    k : int
        Neighbours, ``1 <= k < N``.
    block_size, backend
        See :func:`prh.metrics.knn.knn`; they do not change the result.
    """
    return _pair(mutual_knn_from_knn, a, b, k, block_size, backend)


def cycle_knn(
    a: np.ndarray, b: np.ndarray, k: int = 10, *, block_size: int | None = None, backend="numpy"
) -> float:
    """Cycle kNN: fraction of ``i`` reached back from a ``B``-neighbour by its ``A``-neighbours."""
    return _pair(cycle_knn_from_knn, a, b, k, block_size, backend)


def lcs_knn(
    a: np.ndarray, b: np.ndarray, k: int = 10, *, block_size: int | None = None, backend="numpy"
) -> float:
    """Mean longest common subsequence of the ordered neighbour lists, divided by ``k``."""
    return _pair(lcs_knn_from_knn, a, b, k, block_size, backend)


def edit_distance_knn(
    a: np.ndarray, b: np.ndarray, k: int = 10, *, block_size: int | None = None, backend="numpy"
) -> float:
    """``1 - mean Levenshtein distance / k`` between the ordered neighbour lists."""
    return _pair(edit_distance_knn_from_knn, a, b, k, block_size, backend)
