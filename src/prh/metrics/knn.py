"""Exact k-nearest neighbours by cosine similarity, blockwise, never holding an ``N x N`` matrix.

The neighbour list of row ``i`` is the ``k`` rows ``j != i`` with the largest similarity
``s_ij = <x_i, x_j>`` (rows L2-normalised first, so this is cosine similarity), ordered by
``(-s_ij, j)``: equal similarities are broken by the lower index. This is the reference protocol's
``compute_nearest_neighbors`` (Huh et al. 2024, ``minyoungg/platonic-rep``: Gram matrix, diagonal
set to ``-1e8``, full descending argsort) with two deliberate differences: ties are broken by index
(the reference inherits whatever order its GPU sort gives), and results are exact in the following
sense, independent of the block size and of the backend.

Exactness
---------
Float32 matrix products round differently for different block shapes, so the float32 Gram alone
cannot give block-independent (let alone exact) neighbour lists. We therefore use it only to find
candidates. For unit rows, any float32 dot product, in any summation order, is within
``g = gamma_D = D u / (1 - D u)`` (``u = 2^-24``) of the true value [1]_. The *canonical* similarity
of a pair is the float64 sum (numpy pairwise summation, fixed order) of the float32 products, which
are exact in float64; it depends only on the two rows. If ``t`` is the k-th largest float32 value of
a row, every member of the canonical top-k has float32 value at least ``t - 2 g'`` (``g'`` adds the
float64 error), so re-scoring every candidate above that threshold canonically and sorting by
``(-score, index)`` gives the exact canonical top-k. Identical rows give identical canonical scores,
so ties from duplicated rows are resolved by index, exactly. Rows whose ``k + margin`` float32
candidates do not reach below the threshold (heavy near-ties) are re-scored over all their
candidates.

Each tile ``(I, J)``, ``J >= I``, of the symmetric ``X X^T`` is computed once
(:mod:`prh.metrics.knn_tiles`): a diagonal tile seeds the running float32 top candidates of its
rows, an off-diagonal tile updates those of both its row block and its column block (the few
entries above a row's current ``c``-th value, merged sparsely): about half the multiply-adds of
two full Gram products. Only candidates in a *cluster* (float32 values closer than the error bound
to a neighbour in the list) get the float64 canonical score; the others are already in canonical
order. Memory: ``N (k + 6)`` candidates plus one ``block x block`` float32 tile and one boolean
mask.

Backends only differ in who computes the float32 candidates: ``numpy`` (the symmetric tile sweep
above, BLAS), ``torch`` (on the CPU the same sweep with torch's products; on CUDA row blocks
``X_b X^T`` and ``torch.topk`` on the device; full float32 products, no TF32, so the error bound
holds) and ``faiss`` (``IndexFlatIP``). The exact float64 re-scoring is the same numpy code for
all three, so their neighbour lists are identical.

References
----------
.. [1] N. J. Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., SIAM 2002, ch. 3.
.. [2] M. Huh, B. Cheung, T. Wang, P. Isola, "The Platonic Representation Hypothesis", ICML 2024.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from prh.errors import InputError
from prh.linalg import l2_normalize, row_norms
from prh.metrics.knn_tiles import numpy_product, sweep, tile_side, top

BACKENDS = ("numpy", "torch", "faiss")
_U32 = 2.0**-24
_U64 = 2.0**-53
_MARGIN = 6  # extra float32 candidates per row beyond k
_BLOCK_BYTES = 256 * 2**20  # default budget for one (block, N) float32 similarity block
_RESCORE_BYTES = 2**18  # float64 re-scoring buffer: small, so reused (4 MiB ones cost page faults)


def default_block_size(n: int) -> int:
    """Rows per block so that one ``(block, N)`` float32 block takes about 256 MiB."""
    return int(np.clip(_BLOCK_BYTES // (4 * max(n, 1)), 16, 8192))


def knn(
    x: np.ndarray,
    k: int = 10,
    *,
    normalize: bool = True,
    block_size: int | None = None,
    backend: str = "numpy",
    device: str = "auto",
    name: str = "features",
) -> np.ndarray:
    """Exact k nearest neighbours of every row, self excluded, ties broken by lower index.

    Parameters
    ----------
    x : np.ndarray
        ``(N, D)`` finite features.
    k : int
        Neighbours per row, ``1 <= k < N``.
    normalize : bool
        L2-normalise rows first (cosine similarity, the reference protocol). ``False`` ranks by the
        raw inner product.
    block_size : int, optional
        Side of the square tiles of ``X X^T`` (default :func:`tile_side`: about ``N / 4``, 256 to
        2048); memory is about ``5 T block_size^2 + 12 N (k + 6)`` bytes with ``T`` the BLAS
        threads (one tile and one mask per thread). The result does not depend on it.
    backend : {"numpy", "torch", "faiss"}
        Who computes the float32 candidate similarities; ``"torch"`` runs on ``device``,
        ``"faiss"`` uses ``faiss.IndexFlatIP`` (needs ``faiss-cpu``). The exact re-scoring makes
        every backend give the same result.
    device : {"auto", "cpu", "cuda"}
        Device of the ``"torch"`` backend; ``"auto"`` is CUDA when present, else the CPU.
    name : str
        How to name ``x`` in error messages.

    Returns
    -------
    np.ndarray
        ``(N, k)`` int64; row ``i`` lists its neighbours by decreasing similarity, ties by index.
    """
    x = np.ascontiguousarray(x, dtype=np.float32)
    if x.ndim != 2:
        raise InputError(f"{name}: expected (N, D) features, got shape {x.shape}")
    n = x.shape[0]
    check_k(k, n, name)
    if backend not in BACKENDS:
        raise InputError(f"unknown kNN backend {backend!r}, expected one of {BACKENDS}")
    if normalize:
        x = l2_normalize(x, name)
    slack = _slack(x)
    c = min(k + _MARGIN, n - 1)
    if backend == "faiss":
        return _knn_faiss(x, k, c, slack, block_size)
    if backend == "torch":
        return _knn_torch(x, k, c, slack, block_size, device)
    return _knn_symmetric(x, k, c, slack, block_size)


def _gamma(d: int) -> float:
    """Error bound of a float32 dot product of length ``d`` plus its float64 re-scoring, relative
    to the product of the two norms (the module docstring's ``g'``)."""
    return d * _U32 / (1 - d * _U32) + d * _U64 / (1 - d * _U64)


def _slack(x: np.ndarray) -> np.ndarray:
    """``(N,)`` per-row threshold slack of float32 rows ``x``: twice the error bound."""
    norms = row_norms(x)  # (N,)
    return 2.0 * _gamma(x.shape[1]) * norms * norms.max() * 1.0001 + 1e-300


def knn_both(
    x: np.ndarray,
    k: int = 10,
    *,
    block_size: int | None = None,
    backend: str = "numpy",
    device: str = "auto",
    name: str = "features",
) -> tuple[np.ndarray, np.ndarray, int]:
    """``knn(x, k)`` and ``knn(x, k, normalize=False)`` from one tile sweep where they can share it.

    The cosine lists rank the rows ``x_n`` of ``x`` L2-normalised in float32, the inner-product
    lists the rows ``x`` themselves. When the rows are nearly unit (features already
    L2-normalised, as the reference preprocessing leaves them), the float32 candidates of
    ``x x^T`` serve both: with ``r_i = ||x_n,i - x_i||``, ``|<x_n,i, x_n,j> - <x_i, x_j>| <=
    delta_i = r_i max_j ||x_n,j|| + ||x_i|| max_j r_j``, so widening the slack by ``2 delta_i``
    (and taking the larger norms) keeps every bound of the module docstring, and the cosine lists
    are the exact canonical ones, as :func:`knn` gives them. It shares when the widening is at
    most the slack itself, and for the numpy backend or torch on the CPU (the tile sweep); else it
    runs two searches.

    Returns
    -------
    (np.ndarray, np.ndarray, int)
        ``(N, k)`` cosine lists, ``(N, k)`` inner-product lists, searches made (1 or 2).
    """
    opts = {"block_size": block_size, "backend": backend, "device": device, "name": name}
    xp = np.ascontiguousarray(x, dtype=np.float32)
    if xp.ndim != 2:
        raise InputError(f"{name}: expected (N, D) features, got shape {xp.shape}")
    check_k(k, xp.shape[0], name)
    xn = l2_normalize(xp, name)
    slack_p, (slack_n, close) = _slack(xp), _cosine_slack(xp, xn)
    sweeps = backend == "numpy" or (backend == "torch" and not device_topk(torch_device(device)))
    if not (close and sweeps):
        return knn(xp, k, **opts), knn(xp, k, normalize=False, **opts), 2
    c = min(k + _MARGIN, xp.shape[0] - 1)
    best_v, best_i = _candidates(xp, c, block_size, backend)
    ip = _select_all(xp, k, slack_p, best_v, best_i)
    return _select_all(xn, k, slack_n, best_v, best_i), ip, 1


def _cosine_slack(xp: np.ndarray, xn: np.ndarray) -> tuple[np.ndarray, bool]:
    """``(slack, close)``: the slack of the cosine lists of ``xn`` on candidates of ``xp``
    (:func:`knn_both`), and whether its widening is at most the plain slack."""
    r = row_norms(xn.astype(np.float64) - xp) * 1.0001  # (N,) exact differences, then norms
    np_, nn = row_norms(xp), row_norms(xn)  # (N,) each
    norms = np.maximum(np_, nn)
    base = 2.0 * _gamma(xp.shape[1]) * norms * norms.max() * 1.0001 + 1e-300
    delta = (r * nn.max() + np_ * r.max()) * 1.0001  # (N,) bound on the change of any dot product
    return base + 2.0 * delta, bool(2.0 * delta.max() <= base.min())


def _candidates(x: np.ndarray, c: int, block_size: int | None, backend: str) -> tuple:
    """The float32 top-``c`` of every row of ``x x^T`` by the tile sweep, numpy's products or
    torch's on the CPU (full float32, one thread per product, torch's threads as the workers)."""
    bs = block_size or tile_side(x.shape[0])
    if backend != "torch":
        return sweep(x, c, bs, numpy_product)
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with _full_float32():
            return sweep(x, c, bs, torch_product, threads)
    finally:
        torch.set_num_threads(threads)


def _select_all(x: np.ndarray, k: int, slack: np.ndarray, best_v, best_i) -> np.ndarray:
    """Exact top-k of every row of ``x`` from candidates ``(best_v, best_i)`` ``(N, c)``."""
    n = x.shape[0]
    out = np.empty((n, k), dtype=np.int64)
    step = 1 << 14
    for s0 in range(0, n, step):
        q = np.arange(s0, min(s0 + step, n))
        out[q] = _select(x, q, best_v[q], best_i[q], k, slack, None, n)
    return out


def check_k(k: int, n: int, name: str = "features") -> None:
    """Raise :class:`InputError` unless ``N >= 2`` and ``1 <= k < N``."""
    if n < 2:
        raise InputError(f"{name}: need at least 2 rows for nearest neighbours, got {n}")
    if not 1 <= k < n:
        raise InputError(f"{name}: k must satisfy 1 <= k < N = {n}, got k = {k}")


def _knn_blocks(
    x: np.ndarray,
    k: int,
    c: int,
    slack: np.ndarray,
    rows: np.ndarray,
    block_size: int | None,
) -> np.ndarray:
    """Exact top-k for the query ``rows`` of ``x`` against all of ``x``; ``(len(rows), k)``."""
    n = x.shape[0]
    bs = block_size or default_block_size(n)
    out = np.empty((len(rows), k), dtype=np.int64)
    for start in range(0, len(rows), bs):
        q = rows[start : start + bs]  # (b,)
        s = x[q] @ x.T  # (b, N) float32 (BLAS sgemm)
        s[np.arange(len(q)), q] = -np.inf  # self is never a neighbour
        vals, idx = top(s, c)  # (b, c) sorted descending
        out[start : start + len(q)] = _select(x, q, vals, idx, k, slack, s, n)
    return out


def _knn_symmetric(
    x: np.ndarray,
    k: int,
    c: int,
    slack: np.ndarray,
    block_size: int | None,
    product=None,
    workers: int | None = None,
) -> np.ndarray:
    """Exact top-k of every row from the float32 candidates of the symmetric tile sweep
    (:func:`prh.metrics.knn_tiles.sweep`: each tile of ``X X^T`` on or above the diagonal once,
    ``workers`` threads, default as many as BLAS has)."""
    n = x.shape[0]
    best_v, best_i = sweep(x, c, block_size or tile_side(n), product or numpy_product, workers)
    return _select_all(x, k, slack, best_v, best_i)


def _knn_faiss(
    x: np.ndarray,
    k: int,
    c: int,
    slack: np.ndarray,
    block_size: int | None,
) -> np.ndarray:
    """Float32 candidates from ``faiss.IndexFlatIP``; rows faiss cannot settle get a full block."""
    try:
        import faiss
    except ImportError as e:  # pragma: no cover - faiss-cpu is an optional extra
        raise InputError(
            "backend 'faiss' needs the faiss-cpu package (pip install faiss-cpu)"
        ) from e
    n = x.shape[0]
    index = faiss.IndexFlatIP(x.shape[1])
    index.add(x)
    vals, idx = index.search(x, c + 1)  # (N, c+1); self usually first, duplicates may displace it
    self_pos = idx == np.arange(n)[:, None]
    drop = np.where(self_pos.any(axis=1), self_pos.argmax(axis=1), c)  # drop self, else the last
    keep = np.ones_like(self_pos)
    keep[np.arange(n), drop] = False
    vals = vals[keep].reshape(n, c).astype(np.float32)
    idx = idx[keep].reshape(n, c).astype(np.int64)
    thr = vals[:, k - 1].astype(np.float64) - slack
    settled = (vals[:, -1] < thr) | (c == n - 1)
    settled &= (idx >= 0).all(axis=1)
    out = np.empty((n, k), dtype=np.int64)
    ok = np.flatnonzero(settled)
    out[ok] = _rescore(x, ok, idx[ok], k)
    bad = np.flatnonzero(~settled)
    if bad.size:
        out[bad] = _knn_blocks(x, k, c, slack, bad, block_size)
    return out


def torch_device(device: str = "auto"):
    """The ``torch.device`` for ``device`` (``"auto"``: CUDA when present); refuse an absent one
    (:func:`prh.device.resolve_device`)."""
    from prh.device import resolve_device

    return resolve_device(device)


def _knn_torch(
    x: np.ndarray,
    k: int,
    c: int,
    slack: np.ndarray,
    block_size: int | None,
    device: str,
) -> np.ndarray:
    """Float32 candidates from torch: on the CPU the symmetric tile sweep with torch's products
    (:func:`torch_product`); on an accelerator (:func:`device_topk`) row blocks ``X_b X^T`` and
    ``torch.topk`` on the device, where only ``(b, c)`` candidates per block come back.

    :func:`_select` re-scores them exactly on the CPU (the rare unsettled row is recomputed there
    in full), so every path gives the numpy path's lists.
    """
    dev = torch_device(device)
    with _full_float32():
        if not device_topk(dev):
            return _knn_torch_sweep(x, k, c, slack, block_size)
        return _knn_torch_rows(x, k, c, slack, block_size, dev)


def _knn_torch_sweep(
    x: np.ndarray, k: int, c: int, slack: np.ndarray, block_size: int | None
) -> np.ndarray:
    """The symmetric tile sweep with torch's CPU products, torch's threads as its workers (each
    product then on one thread, restored after)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _knn_symmetric(x, k, c, slack, block_size, torch_product, threads)
    finally:
        torch.set_num_threads(threads)


@contextmanager
def _full_float32():
    """Full float32 products inside (no TF32 on CUDA, no reduced-precision float32 matmul
    anywhere: the error bound assumes IEEE float32 products); the caller's settings after."""
    import torch

    tf32, precision = torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.set_float32_matmul_precision(precision)


def device_topk(dev) -> bool:
    """Whether the torch backend selects candidates on ``dev`` (row blocks and ``torch.topk``:
    CUDA) rather than sweeping the symmetric tiles on the CPU."""
    return dev.type != "cpu"


def torch_product(xi: np.ndarray, xj: np.ndarray, out: np.ndarray) -> None:
    """``out = xi xj^T`` by torch's CPU matrix multiply, in place on the numpy buffers."""
    import torch

    torch.matmul(torch.from_numpy(xi), torch.from_numpy(xj).T, out=torch.from_numpy(out))


def _knn_torch_rows(
    x: np.ndarray, k: int, c: int, slack: np.ndarray, block_size: int | None, dev
) -> np.ndarray:
    """Candidates from row blocks ``X_b X^T`` (``(b, N)`` float32, TF32 off) and ``torch.topk``
    on the torch device ``dev``; exact selection on the CPU (TF32 off: :func:`_full_float32`)."""
    import torch

    n = x.shape[0]
    bs = block_size or default_block_size(n)
    out = np.empty((n, k), dtype=np.int64)
    xt = torch.from_numpy(x).to(dev)  # (N, D) float32
    for start in range(0, n, bs):
        q = np.arange(start, min(start + bs, n))
        s = xt[start : start + len(q)] @ xt.T  # (b, N) float32
        s[
            torch.arange(len(q), device=dev), torch.arange(start, start + len(q), device=dev)
        ] = -torch.inf  # self is never a neighbour
        vals, idx = torch.topk(s, c, dim=1)  # (b, c) sorted descending
        del s
        out[q] = _select(x, q, vals.cpu().numpy(), idx.cpu().numpy(), k, slack, None, n)
    return out


def _select(
    x: np.ndarray,
    q: np.ndarray,
    vals: np.ndarray,
    idx: np.ndarray,
    k: int,
    slack: np.ndarray,
    s: np.ndarray | None,
    n: int,
) -> np.ndarray:
    """Exact top-k of query rows ``q`` from their float32 top-``c`` (and rows ``s``, if kept)."""
    c = idx.shape[1]
    v = vals.astype(np.float64)  # (b, c)
    thr = v[:, k - 1] - slack[q]  # (b,) every canonical top-k member reaches thr in float32
    settled = v[:, -1] < thr if c < n - 1 else np.ones(len(q), dtype=bool)
    out = np.empty((len(q), k), dtype=np.int64)
    ok = np.flatnonzero(settled)
    out[ok] = _order(x, q[ok], v[ok], idx[ok], k, slack[q[ok]])
    for r in np.flatnonzero(~settled):  # heavy near-ties: every row above the threshold
        row = x[q[r]] @ x.T if s is None else s[r]  # (N,) float32, same error bound
        if s is None:
            row[q[r]] = -np.inf
        cand = np.flatnonzero(row >= thr[r])  # ascending indices
        out[r] = _rescore(x, q[r : r + 1], cand[None, :], k)[0]
    return out


def _order(
    x: np.ndarray, q: np.ndarray, v: np.ndarray, idx: np.ndarray, k: int, slack: np.ndarray
) -> np.ndarray:
    """Exact top-k of settled rows ``q`` from float32 candidates ``(v, idx)`` sorted descending.

    Candidates below ``v[k-1] - slack`` cannot be in the top k. Among the others, float32 values
    further apart than the slack are in canonical order; runs of values closer than that
    (clusters) are the only places where the order can differ, so only their members get the
    canonical float64 score, and each row is sorted by (cluster, -score, index): the order that
    re-scoring every candidate would give.
    """
    b, c = v.shape
    sl = slack[:, None]
    live = v >= v[:, k - 1 : k] - sl  # (b, c) a prefix of each row
    new = np.ones((b, c), dtype=bool)
    new[:, 1:] = v[:, :-1] - v[:, 1:] > sl  # a gap wider than the slack starts a cluster
    join = ~new[:, 1:] & live[:, 1:]  # (b, c - 1) positions p, p + 1 live and in one cluster
    need = np.zeros((b, c), dtype=bool)
    need[:, :-1] |= join
    need[:, 1:] |= join
    out = idx[:, :k].copy()
    rows = np.flatnonzero(need[:, :k].any(axis=1))
    if rows.size == 0:
        return out
    score = np.zeros((rows.size, c))
    pr, pc = np.nonzero(need[rows])
    score[pr, pc] = _pair_scores(x, q[rows[pr]], idx[rows[pr], pc])
    cluster = np.where(live[rows], np.cumsum(new[rows], axis=1), c + 1)  # dead ones last
    cand = idx[rows]
    order = np.lexsort((cand, -score, cluster), axis=-1)[:, :k]
    out[rows] = np.take_along_axis(cand, order, axis=-1)
    return out


def _pair_scores(x: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Canonical float64 scores of the row pairs ``(a[p], b[p])``: the float32 products (exact in
    float64) summed along the contiguous last axis, numpy's pairwise summation, whatever the
    pair's block: the same number as :func:`_rescore` gives."""
    out = np.empty(len(a))
    step = max(1, _RESCORE_BYTES // (8 * x.shape[1]))
    for s0 in range(0, len(a), step):
        xa = x[a[s0 : s0 + step]].astype(np.float64)  # (p, D)
        out[s0 : s0 + step] = (xa * x[b[s0 : s0 + step]].astype(np.float64)).sum(axis=-1)
    return out


def _rescore(x: np.ndarray, q: np.ndarray, cand: np.ndarray, k: int) -> np.ndarray:
    """Sort candidates ``(b, c)`` of rows ``q`` by ``(-canonical score, index)``; keep ``k``."""
    b, c = cand.shape
    d = x.shape[1]
    out = np.empty((b, k), dtype=np.int64)
    step = max(1, _RESCORE_BYTES // (8 * c * d))
    for s0 in range(0, b, step):
        cq = cand[s0 : s0 + step]  # (b', c)
        # float32 products are exact in float64; the sum over the contiguous last axis is numpy's
        # pairwise summation, the same for every pair whatever the block: the canonical score.
        xq = x[q[s0 : s0 + step], None, :].astype(np.float64)  # (b', 1, D)
        score = (xq * x[cq].astype(np.float64)).sum(axis=-1)  # (b', c)
        order = np.lexsort((cq, -score), axis=-1)[:, :k]  # (b', k)
        out[s0 : s0 + step] = np.take_along_axis(cq, order, axis=-1)
    return out
