"""Kernel alignment metrics: CKA (linear or RBF kernel, biased or unbiased HSIC) and CKNNA.

CKA [1]_ compares the two ``N x N`` kernel matrices ``K`` (of ``A``) and ``L`` (of ``B``):

    CKA = HSIC(K, L) / sqrt(HSIC(K, K) HSIC(L, L))

with the biased estimator ``HSIC_b = tr(K H L H)``, ``H = I - 11^T / N`` (the original CKA; the
``1/(N-1)^2`` factor cancels), or the unbiased estimator of Song et al. [2]_ (eq. 5), with ``~``
marking a zeroed diagonal:

    HSIC_u = [tr(K~ L~) + 1^T K~ 1 1^T L~ 1 / ((N-1)(N-2)) - 2 1^T K~ L~ 1 / (N-2)] / (N (N-3)).

Both need only ``S = sum_ij K_ij L_ij``, the row sums ``K 1``, the diagonals and the totals, so no
``N x N`` matrix is ever required: for the linear kernel ``S = ||A^T B||_F^2`` and
``K 1 = A (A^T 1)``; for the RBF kernel ``S`` is accumulated over row blocks. Under a permutation
``pi`` of ``B``'s rows only ``S`` changes (the row sums are permuted), which makes the permutation
null cheap. Small ``N`` caches the Gram matrices.

CKNNA (Huh et al. 2024 [3]_) restricts both kernels to the pairs ``(i, j)`` where ``j`` is among the
``k`` nearest neighbours of ``i`` in both ``A`` and ``B`` (``M = M_A * M_B``) and returns
``HSIC_u(M K, M L) / sqrt(HSIC_u(M_A K, M_A K) HSIC_u(M_B L, M_B L))``: ``O(N k)`` after the kNN.

Differences from ``minyoungg/platonic-rep``, on purpose: float64 accumulation (the reference uses
the input dtype, float32 or bf16); ``eps = 0`` in the denominator by default (the reference adds
1e-6; pass ``eps=1e-6`` for its numbers); CKNNA's neighbours are exact with index ties
(:mod:`prh.metrics.knn`).

References
----------
.. [1] S. Kornblith, M. Norouzi, H. Lee, G. Hinton, "Similarity of Neural Network Representations
   Revisited", ICML 2019.
.. [2] L. Song, A. Smola, A. Gretton, J. Bedo, K. Borgwardt, "Feature Selection via Dependence
   Maximization", JMLR 13, 2012.
.. [3] M. Huh, B. Cheung, T. Wang, P. Isola, "The Platonic Representation Hypothesis", ICML 2024.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from prh.errors import InputError
from prh.metrics.knn import knn
from prh.metrics.neighbors import permute_knn

KERNELS = ("linear", "rbf")
_GRAM_CACHE_MAX_N = 1448  # cache the N x N Gram (16 MiB float64) up to this N
_BLOCK = 1024


@dataclass(frozen=True)
class KernelSide:
    """Everything CKA needs from one representation; built once, reused for every permutation.

    Attributes
    ----------
    x : np.ndarray
        ``(N, D)`` float64 features.
    kernel : str
        ``"linear"`` or ``"rbf"``.
    sigma : float
        RBF bandwidth: ``K_ij = exp(-||x_i - x_j||^2 / (2 sigma^2))``.
    sq : np.ndarray
        ``(N,)`` squared row norms.
    diag : np.ndarray
        ``(N,)`` ``K_ii``.
    rowsum : np.ndarray
        ``(N,)`` ``K 1`` (diagonal included).
    gram : np.ndarray or None
        ``(N, N)`` ``K`` when ``N`` is small enough to cache.
    self_s : float
        ``sum_ij K_ij^2``.
    """

    x: np.ndarray
    kernel: str
    sigma: float
    sq: np.ndarray
    diag: np.ndarray
    rowsum: np.ndarray
    gram: np.ndarray | None
    self_s: float

    @property
    def n(self) -> int:
        return int(self.x.shape[0])


def _kernel_rows(x: np.ndarray, sq: np.ndarray, rows: slice, kernel: str, sigma: float):
    """Rows ``rows`` of the kernel matrix of ``x``: ``(b, N)`` float64."""
    g = x[rows] @ x.T  # (b, N)
    if kernel == "linear":
        return g
    d2 = np.maximum(sq[rows, None] + sq[None, :] - 2.0 * g, 0.0)  # (b, N) squared distances
    start = rows.start or 0
    b = g.shape[0]
    d2[np.arange(b), np.arange(start, start + b)] = 0.0  # exact zero self-distance
    return np.exp(-(d2 / sigma) / (2.0 * sigma))  # sigma**2 would overflow for sigma > 1e154


def kernel_side(x: np.ndarray, kernel: str = "linear", sigma: float = 1.0) -> KernelSide:
    """Precompute the kernel statistics of ``(N, D)`` features ``x`` for :func:`cka_from_sides`."""
    if kernel not in KERNELS:
        raise InputError(f"unknown CKA kernel {kernel!r}, expected one of {KERNELS}")
    if not sigma > 0:
        raise InputError(f"RBF sigma must be > 0, got {sigma}")
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    sq = np.square(x).sum(axis=1)  # (N,)
    gram = None
    if kernel == "linear":
        diag = sq
        rowsum = x @ x.sum(axis=0)  # (N,) K 1 = X (X^T 1)
        if n <= _GRAM_CACHE_MAX_N:
            gram = x @ x.T
            self_s = float(np.square(gram).sum())
        else:
            self_s = float(np.square(x.T @ x).sum())  # ||X^T X||_F^2
    else:
        diag = np.ones(n)
        rowsum = np.zeros(n)
        self_s = 0.0
        if n <= _GRAM_CACHE_MAX_N:
            gram = _kernel_rows(x, sq, slice(0, n), kernel, sigma)
            rowsum, self_s = gram.sum(axis=1), float(np.square(gram).sum())
        else:
            for s in range(0, n, _BLOCK):
                kb = _kernel_rows(x, sq, slice(s, s + _BLOCK), kernel, sigma)
                rowsum[s : s + _BLOCK] = kb.sum(axis=1)
                self_s += float(np.square(kb).sum())
    return KernelSide(x, kernel, float(sigma), sq, diag, rowsum, gram, self_s)


def kernel_matrix(side: KernelSide) -> np.ndarray:
    """``(N, N)`` float64 ``K`` of a side: its cached Gram, else computed whole."""
    if side.gram is not None:
        return side.gram
    return _kernel_rows(side.x, side.sq, slice(0, side.n), side.kernel, side.sigma)


def self_hsic(side: KernelSide, unbiased: bool) -> float:
    """``HSIC(K, K)`` of a side, NaN when it is zero up to rounding (no variance: CKA is then
    undefined)."""
    n = side.n
    h = _hsic(side.self_s, side.diag, side.diag, side.rowsum, side.rowsum, n, unbiased)
    return float("nan") if _no_variance(h, side.self_s, n, unbiased) else h


def _cross_sum(a: KernelSide, b: KernelSide, perm: np.ndarray | None) -> float:
    """``sum_ij K_ij L_{pi(i) pi(j)}``, the only term that a permutation of ``B`` changes."""
    if a.gram is not None and b.gram is not None:
        lb = b.gram if perm is None else b.gram[np.ix_(perm, perm)]  # (N, N)
        return float((a.gram * lb).sum())
    xb = b.x if perm is None else b.x[perm]
    if a.kernel == "linear":
        return float(np.square(a.x.T @ xb).sum())  # ||A^T B||_F^2
    sqb = b.sq if perm is None else b.sq[perm]
    total = 0.0
    for s in range(0, a.n, _BLOCK):
        rows = slice(s, s + _BLOCK)
        ka = _kernel_rows(a.x, a.sq, rows, a.kernel, a.sigma)
        kb = _kernel_rows(xb, sqb, rows, b.kernel, b.sigma)
        total += float((ka * kb).sum())
    return total


def _hsic(s, da, db, ra, rb, n: int, unbiased: bool) -> float:
    """HSIC from ``S``, diagonals and row sums (diagonals included); see the module docstring."""
    if not unbiased:
        return s - 2.0 / n * float(ra @ rb) + float(ra.sum()) * float(rb.sum()) / n**2
    s_t = s - float(da @ db)  # tr(K~ L~)
    ra_t, rb_t = ra - da, rb - db  # K~ 1, L~ 1
    return (
        s_t
        + float(ra_t.sum()) * float(rb_t.sum()) / ((n - 1) * (n - 2))
        - 2.0 * float(ra_t @ rb_t) / (n - 2)
    ) / (n * (n - 3))


def cka_from_sides(
    a: KernelSide,
    b: KernelSide,
    perm: np.ndarray | None = None,
    *,
    unbiased: bool = False,
    eps: float = 0.0,
) -> float:
    """CKA between two precomputed sides, with ``B``'s rows permuted by ``perm`` if given."""
    n = a.n
    if unbiased and n < 4:
        raise InputError(f"unbiased HSIC needs N >= 4 rows, got {n}")
    db = b.diag if perm is None else b.diag[perm]
    rb = b.rowsum if perm is None else b.rowsum[perm]
    kk, ll = self_hsic(a, unbiased), self_hsic(b, unbiased)
    if np.isnan(kk) or np.isnan(ll):
        return float("nan")
    kl = _hsic(_cross_sum(a, b, perm), a.diag, db, a.rowsum, rb, n, unbiased)
    return float(kl / (np.sqrt(kk * ll) + eps))


# HSIC(K, K) below this fraction of sum(K_ij^2) is rounding, not variance. The centred kernel of
# constant features is exactly 0, but HSIC here is a difference of sums of the raw kernel (float64),
# which leaves +-1e-16 of sum(K_ij^2), either sign. Features whose columns vary by a relative spread
# r around their mean give HSIC(K, K) / sum(K_ij^2) ~ r^4: the threshold 1e-13 (a thousand times the
# rounding) calls a spread below ~6e-4 undefined, and keeps, say, a LayerNorm'd block whose columns
# vary by 1e-3 around 0.8 (ratio ~1e-12, a real signal that 1e-10 once called undefined; the demo's
# text JEPA on the moving world). Float32 inputs themselves resolve a spread of ~6e-8.
_VARIANCE_RTOL = 1e-13


def _no_variance(h: float, s: float, n: int, unbiased: bool) -> bool:
    """True when ``HSIC(K, K) = h`` is zero up to rounding (``s = sum_ij K_ij^2``): CKA is then
    undefined, for the biased and the unbiased estimator alike."""
    scale = s / (n * (n - 3)) if unbiased else s
    return not h > _VARIANCE_RTOL * scale


def cka(
    a: np.ndarray,
    b: np.ndarray,
    *,
    kernel: str = "linear",
    sigma: float = 1.0,
    unbiased: bool = False,
    eps: float = 0.0,
) -> float:
    """Centered kernel alignment of ``(N, D_a)`` and ``(N, D_b)`` features (rows paired).

    Parameters
    ----------
    a, b : np.ndarray
        Features; row ``i`` of each describes sample ``i``.
    kernel : {"linear", "rbf"}
        ``K = A A^T`` or ``K_ij = exp(-||a_i - a_j||^2 / (2 sigma^2))``.
    sigma : float
        RBF bandwidth (the reference's ``rbf_sigma``, default 1).
    unbiased : bool
        Unbiased HSIC (Song et al.); the reference's ``unbiased_cka``. Needs ``N >= 4``.
    eps : float
        Added to the denominator; ``1e-6`` reproduces the reference.

    Returns
    -------
    float
        In ``[0, 1]`` for the biased estimator; 1 for representations equal up to rotation and
        isotropic scaling (linear kernel). NaN when a side has zero kernel variance.
    """
    return cka_from_sides(
        kernel_side(a, kernel, sigma), kernel_side(b, kernel, sigma), unbiased=unbiased, eps=eps
    )


@dataclass(frozen=True)
class KnnKernelSide:
    """One CKNNA side: neighbours ``nbrs`` ``(N, k)``, their kernel values ``sims`` ``(N, k)``
    (``K_ij`` for ``j = nbrs[i, p]``, float64) and the self ``HSIC_u``.

    The masked HSIC only reads ``K`` at pairs ``(i, j)`` with ``j`` a neighbour of ``i`` on both
    sides, so each side's values at its own neighbours, computed once per layer, serve every
    pair of layers and every permutation of the null: ``O(N k)`` per score, not ``O(N k D)``.
    """

    nbrs: np.ndarray
    sims: np.ndarray
    self_hsic: float


def _pair_dots(x: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """``<x_i, x_j>`` for index pairs, float64, in chunks (each pair's float64 sum along ``D``,
    the same number whatever the chunk)."""
    out = np.empty(len(i))
    step = 1 << 16
    for s in range(0, len(i), step):
        out[s : s + step] = (x[i[s : s + step]] * x[j[s : s + step]]).sum(axis=1)
    return out


def _neighbour_sims(x: np.ndarray, nbrs: np.ndarray) -> np.ndarray:
    """``(N, k)`` ``<x_i, x_j>`` for ``j = nbrs[i, p]``, float64."""
    n, k = nbrs.shape
    rows = np.repeat(np.arange(n), k)  # (N k,) i of each pair, row-major like nbrs
    return _pair_dots(x, rows, nbrs.reshape(-1)).reshape(n, k)


def _masked_hsic(a: tuple, b: tuple) -> float:
    """Unbiased HSIC of ``M * K`` and ``M * L`` with ``M_ij = [j in nbrs_a(i)][j in nbrs_b(i)]``,
    from each side's ``(nbrs, sims)``.

    The reference computes ``sum(K~ * L~.T)`` for the first term; with masked (non-symmetric)
    matrices that is the sum of ``K_ij L_ij`` over pairs kept in both directions.
    """
    (nbrs_a, sims_a), (nbrs_b, sims_b) = a, b
    n, k = nbrs_a.shape
    keep = np.zeros((n, k), dtype=bool)
    at_b = np.zeros((n, k), dtype=np.int64)  # position in nbrs_b(i) of nbrs_a[i, p]
    for s in range(0, n, 1 << 14):
        ra, rb = nbrs_a[s : s + (1 << 14)], nbrs_b[s : s + (1 << 14)]
        eq = ra[:, :, None] == rb[:, None, :]  # (n', k, k)
        keep[s : s + (1 << 14)], at_b[s : s + (1 << 14)] = eq.any(axis=2), eq.argmax(axis=2)
    i = np.broadcast_to(np.arange(n)[:, None], (n, k))[keep]  # (P,) pairs (i, j) kept
    j = nbrs_a[keep]
    kv, lv = sims_a[keep], sims_b[i, at_b[keep]]  # (P,) K_ij, L_ij
    keys = np.sort(i * n + j)
    rev = j * n + i
    pos = np.minimum(np.searchsorted(keys, rev), max(len(keys) - 1, 0))
    both = keys[pos] == rev if len(keys) else np.zeros(0, dtype=bool)  # (j, i) also kept
    t1 = float((kv * lv)[both].sum())
    col_k = np.bincount(j, weights=kv, minlength=n)  # 1^T (M K)
    row_l = np.bincount(i, weights=lv, minlength=n)  # (M L) 1
    t3 = float(col_k @ row_l)
    return (t1 + kv.sum() * lv.sum() / ((n - 1) * (n - 2)) - 2.0 * t3 / (n - 2)) / (n * (n - 3))


def knn_kernel_side(
    x: np.ndarray,
    k: int = 10,
    *,
    block_size: int | None = None,
    backend: str = "numpy",
    device: str = "auto",
    nbrs: np.ndarray | None = None,
) -> KnnKernelSide:
    """Precompute one CKNNA side: neighbours by the inner product ``K`` itself, as the reference
    (``nbrs``: those lists, ``knn(x, k, normalize=False)``, already searched), and ``K`` at them."""
    if k < 2:
        raise InputError(f"CKNNA needs k >= 2, got k = {k}")
    if x.shape[0] < 4:
        raise InputError(f"CKNNA (unbiased HSIC) needs N >= 4 rows, got {x.shape[0]}")
    if nbrs is None:
        nbrs = knn(x, k, normalize=False, block_size=block_size, backend=backend, device=device)
    sims = _neighbour_sims(np.asarray(x, dtype=np.float64), nbrs)
    return KnnKernelSide(nbrs, sims, _masked_hsic((nbrs, sims), (nbrs, sims)))


def cknna_from_sides(
    a: KnnKernelSide, b: KnnKernelSide, perm: np.ndarray | None = None, *, eps: float = 0.0
) -> float:
    """CKNNA between two precomputed sides, with ``B``'s rows permuted by ``perm`` if given."""
    nb, sb = (b.nbrs, b.sims) if perm is None else (permute_knn(b.nbrs, perm), b.sims[perm])
    kl = _masked_hsic((a.nbrs, a.sims), (nb, sb))
    prod = a.self_hsic * b.self_hsic
    return float(kl / (np.sqrt(prod) + eps)) if prod > 0 else float("nan")


def cknna(
    a: np.ndarray,
    b: np.ndarray,
    k: int = 10,
    *,
    eps: float = 0.0,
    block_size: int | None = None,
    backend: str = "numpy",
    device: str = "auto",
) -> float:
    """CKNNA: CKA restricted to mutual ``k``-nearest-neighbour pairs (Huh et al. 2024).

    Parameters
    ----------
    a, b : np.ndarray
        ``(N, D_a)``, ``(N, D_b)``, rows paired, ``N >= 4``; L2-normalise them first for the
        reference protocol (then ``K`` is the cosine similarity).
    k : int
        Neighbours, ``2 <= k < N``.
    eps : float
        Added to the denominator; ``1e-6`` reproduces the reference.
    """
    sa = knn_kernel_side(a, k, block_size=block_size, backend=backend, device=device)
    sb = knn_kernel_side(b, k, block_size=block_size, backend=backend, device=device)
    return cknna_from_sides(sa, sb, eps=eps)
