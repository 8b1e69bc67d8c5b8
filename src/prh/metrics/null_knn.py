"""The mutual-kNN permutation null without a new search: relabel stored lists, intersect as bits.

Permuting the rows of ``B`` by ``pi`` changes no neighbour list, only its labels: row ``r`` of
``B[pi]`` has the neighbours ``{c : pi(c) in kNN_B(pi(r))}`` (:func:`prh.metrics.neighbors.
permute_knn`). So the null's intersection count of a layer pair ``(i, j)`` is

``h_ij(pi) = #{(r, c) in E(A_i) : (pi(r), pi(c)) in E(B_j)}``,

where ``E(X)`` is the set of ``N k`` directed edges ``(r, c)``, ``c`` a neighbour of ``r``. Each
draw therefore needs one lookup per edge of ``A`` (not ``k^2`` comparisons per row), and one lookup
serves every layer pair at once:

* every ``B`` layer sets one bit of a word per edge (a dense ``N^2`` table of words while it fits
  in :data:`TABLE_BYTES`, else a sorted array of edge keys searched by bisection);
* the union of the ``A`` layers' edges is looked up once per draw: ``(E,)`` words;
* the words are sliced into one bitset over the union edges per ``B`` layer, and
  ``h_ij = popcount(A_i & B'_j)`` for every pair, ``A_i`` the fixed bitset of ``A`` layer ``i``.

The null statistic is ``max_ij h_ij / (N k)``, the mutual-kNN score of the best layer pair (Huh et
al. 2024, eq. 11): the same statistic as recomputing :func:`prh.metrics.neighbors.mutual_knn_rows`
on the relabelled lists, counted exactly in integers. (:func:`prh.metrics.api.measure` rescores,
by the float mean over rows, the rare draw whose best count equals the observed one, so that its
p-value is the pair loop's bit for bit.) Cost per draw: ``O(E + L_A L_B E / 64)`` word operations
for ``E <= L_A N k`` union edges, against ``O(L_A L_B N k^2)`` comparisons for the loop
(``benchmarks/bench_null.py`` times both).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

TABLE_BYTES = 256 * 2**20  # largest dense (N^2,) word table of B's edges
_AND_BYTES = 16 * 2**20  # budget of one (A layers, B layers, words) AND block
_WORD = 64  # B layers per word (uint64)


def edge_keys(lists: np.ndarray) -> np.ndarray:
    """``(N k,)`` int64 keys ``r N + c`` of the edges of ``(N, k)`` neighbour lists."""
    n = lists.shape[0]
    return (np.arange(n, dtype=np.int64)[:, None] * n + lists).ravel()


class _EdgeWords:
    """For up to 64 neighbour lists of one side, a word per edge key whose bit ``j`` says that
    the edge is in list ``j``: a dense ``(N^2,)`` table, or sorted keys when that is too large."""

    def __init__(self, lists: Sequence[np.ndarray], n: int, table_bytes: int) -> None:
        self.dtype = next(
            t for t in (np.uint8, np.uint16, np.uint32, np.uint64) if 8 * t().itemsize >= len(lists)
        )
        self.layers = len(lists)
        self.masks = (1 << np.arange(len(lists), dtype=np.uint64)).astype(self.dtype)  # (layers,)
        self.dense = n * n * np.dtype(self.dtype).itemsize <= table_bytes
        keys = [edge_keys(x) for x in lists]
        if self.dense:
            self.words = np.zeros(n * n, dtype=self.dtype)
            for j, kj in enumerate(keys):
                self.words[kj] |= self.dtype(1 << j)  # keys within one list are distinct
            return
        self.keys = np.unique(np.concatenate(keys))  # (U,) sorted
        self.words = np.zeros(len(self.keys), dtype=self.dtype)
        for j, kj in enumerate(keys):
            self.words[np.searchsorted(self.keys, kj)] |= self.dtype(1 << j)

    def __getitem__(self, q: np.ndarray) -> np.ndarray:
        """Words of the keys ``q`` (0 for a key in no list)."""
        if self.dense:
            return np.take(self.words, q)  # np.take: several times faster than words[q]
        pos = np.minimum(np.searchsorted(self.keys, q), len(self.keys) - 1)
        return np.where(np.take(self.keys, pos) == q, np.take(self.words, pos), self.dtype(0))


class MutualKnnNull:
    """Intersection counts of every layer pair under row permutations of ``B``, batched.

    Parameters
    ----------
    lists_a, lists_b : sequence of np.ndarray
        ``(N, k)`` neighbour lists of each layer of ``A`` and of ``B`` (entries within a row
        distinct, self excluded), as :func:`prh.metrics.knn.knn` returns them.
    table_bytes : int
        Largest dense edge table; above it ``B``'s edges are searched by bisection (same counts).

    Examples
    --------
    >>> import numpy as np
    >>> from prh.metrics.knn import knn
    >>> from prh.metrics.neighbors import mutual_knn_rows, permute_knn
    >>> x = np.random.default_rng(0).standard_normal((30, 4))
    >>> la, lb = [knn(x, 3)], [knn(x + 0.1, 3)]
    >>> perm = np.random.default_rng(1).permutation(30)
    >>> h = MutualKnnNull(la, lb).counts(perm)  # (1, 1)
    >>> bool(h[0, 0] == mutual_knn_rows(la[0], permute_knn(lb[0], perm)).sum() * 3)
    True
    """

    def __init__(
        self,
        lists_a: Sequence[np.ndarray],
        lists_b: Sequence[np.ndarray],
        table_bytes: int = TABLE_BYTES,
    ) -> None:
        self.n, self.k = lists_a[0].shape
        n = self.n
        keys = np.concatenate([edge_keys(x) for x in lists_a])  # (L_A N k,)
        union, where = np.unique(keys, return_inverse=True)  # (E,), edge -> union position
        self.rows, self.cols = union // n, union % n  # (E,) each
        self.n_edges = len(union)
        self.n_words = -(-self.n_edges // 64)
        member = np.zeros((len(lists_a), 64 * self.n_words), dtype=bool)
        for i in range(len(lists_a)):
            member[i, where[i * n * self.k : (i + 1) * n * self.k]] = True
        self.bits_a = _pack(member)  # (L_A, W) uint64 bitsets over the union edges
        self.tables = [
            _EdgeWords(lists_b[g : g + _WORD], n, table_bytes)
            for g in range(0, len(lists_b), _WORD)
        ]
        self.shape = (len(lists_a), len(lists_b))
        self.scale = 1.0 / (n * self.k)  # score = count * scale

    def counts(self, perm: np.ndarray) -> np.ndarray:
        """``(L_A, L_B)`` int64 ``h_ij``: shared edges of ``A_i`` and ``B_j[perm]``."""
        p = np.asarray(perm, dtype=np.int64)
        q = np.take(p * self.n, self.rows) + np.take(p, self.cols)  # (E,) relabelled union keys
        bits_b = np.concatenate([self._slices(t, q) for t in self.tables])  # (L_B, W)
        out = np.empty(self.shape, dtype=np.int64)
        step = max(1, _AND_BYTES // (8 * self.n_words * self.shape[1]))
        for i0 in range(0, self.shape[0], step):
            both = self.bits_a[i0 : i0 + step, None, :] & bits_b[None, :, :]  # (a, L_B, W)
            out[i0 : i0 + step] = _popcount(both).sum(axis=2, dtype=np.int64)
        return out

    def _slices(self, table: _EdgeWords, q: np.ndarray) -> np.ndarray:
        """``(layers, W)`` uint64 bitsets over the union edges: bit ``e`` of row ``j`` says that
        relabelled union edge ``e`` (keys ``q`` ``(E,)``) is in the table's list ``j``."""
        words = np.zeros(64 * self.n_words, dtype=table.dtype)
        words[: self.n_edges] = table[q]
        hit = (words[None, :] & table.masks[:, None]) != 0  # (layers, 64 W)
        return np.packbits(hit, axis=1, bitorder="little").view(np.uint64)


class CycleKnnNull:
    """Cycle-kNN counts of every layer pair under row permutations of ``B``, batched.

    Row ``r`` is found when it is an ``A_i``-neighbour of one of its ``B_j[perm]``-neighbours
    ``c = perm^-1(kNN_Bj(perm(r)))``: the edge ``(c, r)`` is in ``A_i``. One lookup of those ``N k``
    keys per ``B`` layer in a table of ``A``'s edges (a bit per ``A`` layer) answers every ``A``
    layer at once; ``h_ij`` is the number of rows found. Same interface as
    :class:`MutualKnnNull` (``counts``, ``scale``), the score being ``h_ij / N``.
    """

    def __init__(
        self,
        lists_a: Sequence[np.ndarray],
        lists_b: Sequence[np.ndarray],
        table_bytes: int = TABLE_BYTES,
    ) -> None:
        self.n, self.k = lists_a[0].shape
        self.lists_b = [np.asarray(x) for x in lists_b]
        self.tables = [
            _EdgeWords(lists_a[g : g + _WORD], self.n, table_bytes)
            for g in range(0, len(lists_a), _WORD)
        ]
        self.shape = (len(lists_a), len(lists_b))
        self.scale = 1.0 / self.n  # score = count * scale

    def counts(self, perm: np.ndarray) -> np.ndarray:
        """``(L_A, L_B)`` int64 ``h_ij``: rows found back through ``A_i`` from ``B_j[perm]``."""
        p = np.asarray(perm, dtype=np.int64)
        inv = np.empty_like(p)
        inv[p] = np.arange(self.n)
        rows = np.arange(self.n, dtype=np.int64)[:, None]  # (N, 1)
        out = np.empty(self.shape, dtype=np.int64)
        for j, lb in enumerate(self.lists_b):
            c = np.take(inv, np.take(lb, p, axis=0))  # (N, k) B[perm]-neighbours of each row
            keys = c * self.n + rows  # (N, k) the edges (c, r) to find in A
            i0 = 0
            for t in self.tables:
                found = np.bitwise_or.reduce(t[keys], axis=1)  # (N,) a bit per A layer
                for i, mask in enumerate(t.masks):
                    out[i0 + i, j] = np.count_nonzero(found & mask)
                i0 += t.layers
        return out


def _pack(member: np.ndarray) -> np.ndarray:
    """``(rows, 64 W)`` booleans as ``(rows, W)`` uint64 bitsets (bit ``e % 64`` of word
    ``e // 64`` is entry ``e``)."""
    return np.packbits(member, axis=1, bitorder="little").view(np.uint64)


_BYTE_BITS = np.array([bin(v).count("1") for v in range(256)], dtype=np.uint8)


def _popcount(x: np.ndarray) -> np.ndarray:
    """Set bits of each uint64 of ``x``, as uint8 (``np.bitwise_count`` from numpy 2)."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x)
    return _BYTE_BITS[x.view(np.uint8)].reshape(*x.shape, 8).sum(axis=-1, dtype=np.uint8)
