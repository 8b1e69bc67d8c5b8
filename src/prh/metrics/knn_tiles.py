"""The symmetric tile sweep of the exact kNN: float32 top-``c`` candidates of every row of
``X X^T`` from the tiles on and above its diagonal, each computed once.

A diagonal tile ``(I, I)`` seeds the running top-``c`` lists of its rows; an off-diagonal tile
``(I, J)``, ``J > I``, is folded into the lists of its rows (``S_IJ``) and of its columns
(``S_IJ^T``): about half the multiply-adds of two full Gram products. The exact order of the final
lists is :mod:`prh.metrics.knn`'s business; this module only promises, for every row, ``c`` float32
values that are the ``c`` largest of its row (ties in any order) with their columns.

Where the time goes
-------------------
A tile is one unit of work for one of ``workers`` threads (as many as BLAS had): its product on
one BLAS thread, then, while the tile is still in cache, one comparison per entry against the
current ``c``-th values of its row and of its column, and the sparse merge of the few entries
above them, under the lock of the row block merged into. Threads never wait for each other inside
a product (a multi-threaded BLAS product of a small tile waits for its slowest thread: on a
shared machine, for the scheduler), and one thread's merges overlap the other's products. A
diagonal tile is seeded without a dense top-k: the ``m``-th largest of ``4 m`` disjoint
column-group maxima of a row is at most its ``m``-th largest value, so the entries at or above it
(little more than ``m``) hold the row's top ``m`` (:func:`seed_tile`).

Thresholds are read without a lock: a row's ``c``-th value only rises, and any value it has had
is a valid bar (the list then held ``c`` entries at least that large), so a stale read only lets a
few more entries reach the merge, which keeps the ``c`` best. The candidates may then differ in
ties at the ``c``-th value from run to run; the exact selection in :mod:`prh.metrics.knn` does not
depend on them.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

import numpy as np

_TILE = 2048  # largest default tile side (16 MiB float32)
_MIN_TILE = 256  # smallest default tile side (smaller products lose BLAS efficiency)
_TORCH_TOPK_MIN_N = 768  # rows longer than this use torch.topk (argpartition copies the tile)
_STRIP = 128  # rows per strip of a tile's comparison (one threshold bound per strip)
_SEED_GROUPS = 4  # column groups per seeded candidate: more give a tighter bound, more maxima
_SEED_GROUP_MIN = 4  # group maxima seed a diagonal tile only when each group has this many columns

Product = Callable[[np.ndarray, np.ndarray, np.ndarray], None]


def tile_side(n: int, threads: int | None = None, cache_bytes: int | None = None) -> int:
    """Default side of the square tiles, from ``N``, the thread count and the last-level cache.

    About ``N / 4`` rows (so the tiles on and above the diagonal are near half of ``X X^T`` at
    small ``N``), 256 to 2048; no larger than lets one float32 tile per thread stay in the cache
    (``threads x side^2 x 4 <= cache_bytes``: a tile is scanned right after its product); and
    halved (not below 256) until there are at least two tiles per thread to share.

    Parameters
    ----------
    n : int
        Rows.
    threads : int, optional
        Sweep threads (default :func:`blas_threads`).
    cache_bytes : int, optional
        Last-level cache (default: read from ``/sys``; no bound when unknown).
    """
    t = threads or blas_threads()
    side = int(np.clip(-(-n // 256) * 64, _MIN_TILE, _TILE))
    cache = cache_bytes if cache_bytes is not None else _last_level_cache()
    if cache:
        side = min(side, max(_MIN_TILE, int(np.sqrt(cache / (4 * t))) // 64 * 64))
    while side > _MIN_TILE and _tiles(n, side) < 2 * t:
        side = max(_MIN_TILE, side // 128 * 64)
    return side


def _tiles(n: int, side: int) -> int:
    """Tiles on and above the diagonal of an ``N x N`` matrix cut in ``side`` blocks."""
    nb = -(-n // side)
    return nb * (nb + 1) // 2


def _last_level_cache() -> int | None:
    """Bytes of the largest CPU cache listed under ``/sys`` (Linux), else None."""
    sizes = []
    for f in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = f.read_text().strip()
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            sizes.append(int(digits) * scale)
    return max(sizes) if sizes else None


def numpy_product(xi: np.ndarray, xj: np.ndarray, out: np.ndarray) -> None:
    """``out = xi xj^T`` by numpy's BLAS (``sgemm``)."""
    np.matmul(xi, xj.T, out=out)


def sweep(
    x: np.ndarray,
    c: int,
    block_size: int,
    product: Product = numpy_product,
    workers: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The float32 top-``c`` of every row of ``x x^T``, self excluded.

    Parameters
    ----------
    x : np.ndarray
        ``(N, D)`` float32, C-contiguous.
    c : int
        Candidates per row, ``1 <= c <= N - 1``.
    block_size : int
        Tile side.
    product : callable
        ``product(xi, xj, out)`` writes ``xi xj^T`` into ``out`` (numpy's BLAS or torch's); it is
        called from ``workers`` threads at once and should run on one thread itself.
    workers : int, optional
        Threads, each taking whole tiles (default :func:`blas_threads`).

    Returns
    -------
    (np.ndarray, np.ndarray)
        ``(N, c)`` float32 values (a row's ``c`` largest, ties in any order), sorted descending,
        and their ``(N, c)`` int64 columns.
    """
    n = x.shape[0]
    bs = max(1, min(block_size, n))
    blocks = [(s, min(s + bs, n)) for s in range(0, n, bs)]
    lists = Lists(
        np.full((n, c), -np.inf, dtype=np.float32),
        np.zeros((n, c), dtype=np.int64),
        {s: threading.Lock() for s, _ in blocks},
    )
    tiles = [(b, b) for b in blocks] + [
        (bi, bj) for t, bi in enumerate(blocks) for bj in blocks[t + 1 :]
    ]  # diagonal seeds first: their thresholds keep the later merges sparse
    workers = max(1, min(workers or blas_threads(), len(tiles)))
    scratch: queue.SimpleQueue = queue.SimpleQueue()  # reused: fresh tiles cost page faults
    for _ in range(workers):
        scratch.put((np.empty(bs * bs, dtype=np.float32), np.empty(bs * bs, dtype=bool)))

    def run(tile: tuple[tuple[int, int], tuple[int, int]]) -> None:
        buf, mask = scratch.get()
        try:
            do_tile(x, tile, buf, mask, lists, product)
        finally:
            scratch.put((buf, mask))

    with _one_blas_thread():
        if workers == 1:
            for tile in tiles:
                run(tile)
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                try:
                    for _ in pool.map(run, tiles):  # in order; errors surface here
                        pass
                except BaseException:
                    pool.shutdown(cancel_futures=True)  # the tiles not yet started: dropped
                    raise
    return lists.v, lists.i


class Lists(NamedTuple):
    """The running candidate lists: values ``v`` ``(N, c)``, columns ``i`` ``(N, c)``, and one
    lock per row block (its start row), held while a merge writes that block's rows."""

    v: np.ndarray
    i: np.ndarray
    locks: dict[int, threading.Lock]


def blas_threads() -> int:
    """Threads of the loaded BLAS (the most among them; 1 when none is found)."""
    from threadpoolctl import threadpool_info

    return max([i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"] or [1])


def _one_blas_thread():
    """BLAS on one thread inside (the sweep's threads are its parallelism)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def do_tile(
    x: np.ndarray,
    tile: tuple[tuple[int, int], tuple[int, int]],
    buf: np.ndarray,
    mask: np.ndarray,
    lists: Lists,
    product: Product,
) -> None:
    """Compute one tile ``S_IJ`` into ``buf`` and seed (``I = J``) or fold it into ``lists``."""
    (i0, i1), (j0, j1) = tile
    s = buf[: (i1 - i0) * (j1 - j0)].reshape(i1 - i0, j1 - j0)
    product(x[i0:i1], x[j0:j1], s)
    if i0 == j0:
        seed_tile(s, i0, lists, mask)
    else:
        fold_tile(s, i0, j0, lists, mask)


def seed_tile(s: np.ndarray, i0: int, lists: Lists, mask: np.ndarray) -> None:
    """Merge the top entries of the diagonal tile ``s`` ``(b, b)`` into the lists of rows
    ``i0 : i0 + b`` (self excluded; ``s`` is overwritten on its diagonal).

    The maxima of disjoint column groups are distinct entries of the row, so the ``m``-th largest
    of ``4 m`` group maxima, ``lb``, is at most the row's ``m``-th largest value: the entries
    ``>= lb`` (little more than ``m``) contain the top ``m``, and merging those alone replaces a
    dense top-k of the tile.
    """
    b = s.shape[0]
    m = min(lists.v.shape[1], b - 1)
    if m < 1:
        return
    np.fill_diagonal(s, -np.inf)  # self is never a neighbour
    w = _SEED_GROUPS * m  # column groups per row
    if b < _SEED_GROUP_MIN * w:  # groups too narrow to bound anything: a dense top-k
        vals, idx = top(s, m)  # (b, m)
        r, j, vals = np.repeat(np.arange(b), m), idx.ravel(), vals.ravel()
    else:
        q = b // w  # group j holds columns j, j + w, ..., j + (q - 1) w: (b, q, w) max over q
        gmax = s[:, : q * w].reshape(b, q, w).max(axis=1)  # (b, w) maxima of disjoint groups
        lb = np.partition(gmax, w - m, axis=1)[:, w - m]  # (b,) their m-th largest
        flat = hit_positions(s, lb[:, None], mask, np.greater_equal)
        r, j = np.divmod(flat, b)
        vals = s.ravel()[flat]
    with lists.locks[i0]:
        merge_hits(lists.v, lists.i, i0, r, vals, j + i0)


def fold_tile(s: np.ndarray, i0: int, j0: int, lists: Lists, mask: np.ndarray) -> None:
    """Merge an off-diagonal tile ``s = S_IJ`` into the lists of its rows ``i0 + r`` (columns
    ``j0 + j``) and of its columns ``j0 + j`` (columns ``i0 + r``).

    An entry can enter a list only if it beats the list's current ``c``-th value: ``thr_r[r]``
    for its row, ``thr_c[j]`` for its column. One comparison per entry, against
    ``min(thr_c[j], min of thr_r over a strip of rows)``, finds every such entry (and a few that
    enter neither, which the merges drop).
    """
    b, w = s.shape
    thr_r = lists.v[i0 : i0 + b, -1].copy()  # (b,) current c-th values of the rows
    thr_c = lists.v[j0 : j0 + w, -1].copy()  # (w,) and of the columns
    flat = union_hits(s, thr_r, thr_c, mask, 0, b)
    if flat.size == 0:
        return
    r, j = np.divmod(flat, w)
    vals = s.ravel()[flat]
    by_row = vals > thr_r[r]
    by_col = vals > thr_c[j]
    with lists.locks[i0]:
        merge_hits(lists.v, lists.i, i0, r[by_row], vals[by_row], j[by_row] + j0)
    with lists.locks[j0]:
        merge_hits(lists.v, lists.i, j0, j[by_col], vals[by_col], r[by_col] + i0)


def union_hits(
    s: np.ndarray, thr_r: np.ndarray, thr_c: np.ndarray, mask: np.ndarray, r0: int, r1: int
) -> np.ndarray:
    """Flat positions in rows ``r0 : r1`` of ``s`` ``(b, w)`` of the entries above
    ``min(thr_r[i], thr_c[j])``, and some more: each strip of :data:`_STRIP` rows is compared
    once, with ``thr_r`` replaced by its minimum over the strip (a vector comparison, no
    ``(b, w)`` threshold matrix)."""
    w = s.shape[1]
    out = [np.zeros(0, dtype=np.int64)]
    for a in range(r0, r1, _STRIP):
        e = min(a + _STRIP, r1)
        t = np.minimum(thr_c, thr_r[a:e].min())  # (w,)
        flat = hit_positions(s[a:e], t[None, :], mask[a * w : e * w], np.greater)
        out.append(flat + a * w)
    return np.concatenate(out)


def hit_positions(s: np.ndarray, thr: np.ndarray, mask: np.ndarray, cmp) -> np.ndarray:
    """Flat positions (ascending) of the entries of ``s`` with ``cmp(s, thr)`` true: one pass of
    the comparison into the bool scratch ``mask`` (at least ``s.size``), one 1-D
    :func:`np.flatnonzero` (far faster than a 2-D ``nonzero``)."""
    m = mask[: s.size]
    cmp(s, thr, out=m.reshape(s.shape))
    return np.flatnonzero(m)


def merge_hits(
    best_v: np.ndarray,
    best_i: np.ndarray,
    row0: int,
    rows: np.ndarray,
    vals: np.ndarray,
    cols: np.ndarray,
) -> None:
    """Fold hits ``(row0 + rows, vals, cols)`` into the running top-``c`` lists (each list
    sorted descending, before and after)."""
    if rows.size == 0:
        return
    c = best_v.shape[1]
    seen = np.bincount(rows) > 0  # no sort: the hit rows, and each hit's rank among them
    hit = np.flatnonzero(seen)
    pos = (np.cumsum(seen) - 1)[rows]
    h, g = len(hit), row0 + hit
    # old lists of the hit rows and the new entries, as (row, value, column) triplets; the old
    # part is already in key order, so the stable sort (timsort) mostly merges runs
    rr = np.concatenate([np.repeat(np.arange(h), c), pos])
    vv = np.concatenate([best_v[g].ravel(), vals])
    ii = np.concatenate([best_i[g].ravel(), cols])
    order = np.argsort(row_value_key(rr, vv), kind="stable")  # by row, then value descending
    new = np.bincount(pos, minlength=h)  # (h,) hits per row
    start = np.arange(h) * c + np.cumsum(new) - new  # first triplet of each row in key order
    take = order[(start[:, None] + np.arange(c)).ravel()]  # (h * c,) the c best of each row
    best_v[g] = vv[take].reshape(h, c)
    best_i[g] = ii[take].reshape(h, c)


def row_value_key(rows: np.ndarray, vals: np.ndarray) -> np.ndarray:
    """int64 keys that sort by ``rows`` ascending, then float32 ``vals`` descending, exactly.

    The float32 bit pattern, its magnitude bits flipped for negatives, orders like the value
    (``-inf`` first, ``-0.0`` just below ``0.0``); one integer sort replaces a two-key lexsort.
    """
    b = np.ascontiguousarray(vals, dtype=np.float32).view(np.int32)
    ordered = b ^ ((b >> 31) & 0x7FFFFFFF)  # int32, increasing with the value
    return (rows.astype(np.int64) << 32) + (2**31 - 1 - ordered.astype(np.int64))


def top(s: np.ndarray, c: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``c`` largest entries of each row of ``s`` ``(b, N)``, sorted descending (any ties)."""
    if s.shape[1] > _TORCH_TOPK_MIN_N:  # torch.topk is one pass; argpartition slower on long rows
        try:
            import torch
        except ImportError:  # pragma: no cover - torch is an optional extra
            torch = None
        if torch is not None:
            vals, idx = torch.topk(torch.from_numpy(s), c, dim=1)
            return vals.numpy(), idx.numpy()
    idx = np.argpartition(-s, c - 1, axis=1)[:, :c]  # (b, c) unsorted
    vals = np.take_along_axis(s, idx, axis=1)
    order = np.argsort(-vals, axis=1, kind="stable")
    return np.take_along_axis(vals, order, axis=1), np.take_along_axis(idx, order, axis=1)
