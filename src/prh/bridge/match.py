"""Pair-free matching: recover the correspondence (and the rotation) from two unmatched sets.

Class level: a quadratic assignment problem (QAP) over within-modality kernels, the
Gromov-Wasserstein style objective of Schnaus et al. [1]_,

    max_P  f(P) = tr(K_x P K_y P^T) = sum_ij K_x[i, j] K_y[p(i), p(j)],

solved by a heuristic: spectral initialisations (kernel eigenvectors with signs fixed by their
third moment, the ambiguous signs enumerated; Umeyama's ``|U|`` matching [2]_), each refined by
alternating Procrustes and linear assignment in the eigen-space, then a 2-opt local search on
``f`` itself with vectorised swap gains, and iterated-local-search restarts for small problems.

Sample level: k-means in each modality, the centroids matched by the class-level QAP, a Procrustes
rotation from the matched centroids (or from sign-fixed principal axes, whichever explains the
data better), then alternating nearest-neighbour assignment and Procrustes on mini-batches
(Wasserstein-Procrustes [3]_), and a final blocked exact assignment (Hungarian inside blocks of a
partition of the aligned space) that scales to 100k points.

References
----------
.. [1] D. Schnaus, N. Araslanov, D. Cremers, "It's a (Blind) Match! Towards Vision-Language
   Correspondence without Parallel Data", CVPR 2025.
.. [2] S. Umeyama, "An eigendecomposition approach to weighted graph matching problems",
   IEEE TPAMI 10(5), 1988.
.. [3] E. Grave, A. Joulin, Q. Berthet, "Unsupervised Alignment of Embeddings with Wasserstein
   Procrustes", AISTATS 2019.
.. [4] J. T. Vogelstein et al., "Fast Approximate Quadratic Programming for Graph Matching"
   (FAQ), PLOS ONE 2015.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import linear_sum_assignment

from prh.bridge.assign import blocked_assignment, kmeans
from prh.errors import InputError
from prh.linalg import procrustes_rotation

__all__ = [
    "MatchResult",
    "kernel_matrix",
    "match_classes",
    "match_kernels",
    "match_samples",
    "qap_objective",
    "swap_gains",
    "two_opt",
]


@dataclass(frozen=True)
class MatchResult:
    """Outcome of a pair-free match.

    Attributes
    ----------
    permutation : np.ndarray
        ``(N,)`` int64: row ``i`` of X is matched to row ``permutation[i]`` of Y.
    objective : float
        Normalised kernel alignment ``tr(K_x P K_y P^T) / (||K_x||_F ||K_y||_F)`` (1 is perfect).
    accuracy : float or None
        Fraction of rows matched to their true partner, when the truth is known.
    seconds : float
        Wall time of the match.
    rotation : np.ndarray or None
        ``(r, r)`` map between the two (PCA-reduced) spaces, sample level only.
    info : dict
        Diagnostics (initialisation chosen, iterations, ...).
    """

    permutation: np.ndarray
    objective: float
    accuracy: float | None
    seconds: float
    rotation: np.ndarray | None = None
    info: dict[str, object] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {
            "permutation": self.permutation.tolist(),
            "accuracy": self.accuracy,
            "objective": self.objective,
            "seconds": self.seconds,
        }


# ----------------------------------------------------------------------------- kernels, objective


def kernel_matrix(x: np.ndarray, kind: str = "linear") -> np.ndarray:
    """Within-modality kernel ``(N, N)`` of rows ``x (N, D)``.

    ``linear``: centred Gram ``X_c X_c^T``; ``cosine``: Gram of centred, L2-normalised rows;
    ``rbf``: ``exp(-||x_i - x_j||^2 / (2 h^2))`` with ``h`` the median pairwise distance.
    """
    x = np.asarray(x, dtype=np.float64)
    xc = x - x.mean(0)
    if kind == "linear":
        return xc @ xc.T
    if kind == "cosine":
        xn = xc / np.maximum(np.linalg.norm(xc, axis=1, keepdims=True), 1e-12)
        return xn @ xn.T
    if kind == "rbf":
        sq = (xc**2).sum(1)
        d2 = np.maximum(sq[:, None] + sq[None, :] - 2 * xc @ xc.T, 0.0)
        h2 = np.median(d2[np.triu_indices(len(x), 1)]) if len(x) > 1 else 1.0
        return np.exp(-d2 / max(h2, 1e-12))
    raise InputError(f"unknown kernel {kind!r}, expected linear, cosine or rbf")


def qap_objective(kx: np.ndarray, ky: np.ndarray, perm: np.ndarray) -> float:
    """``f(P) = sum_ij K_x[i, j] K_y[p(i), p(j)]`` (unnormalised)."""
    return float((kx * ky[np.ix_(perm, perm)]).sum())


def _normalised(kx: np.ndarray, ky: np.ndarray, value: float) -> float:
    return value / max(float(np.linalg.norm(kx) * np.linalg.norm(ky)), 1e-300)


def swap_gains(kx: np.ndarray, b: np.ndarray, m: np.ndarray | None = None) -> np.ndarray:
    """Change of ``f`` for every transposition ``(i, j)`` of the current assignment, ``(N, N)``.

    With ``B = K_y[p][:, p]`` (symmetric kernels) and ``M = K_x B``, swapping ``p(i)`` and ``p(j)``
    changes ``f`` by ``2 (S_ij - T_ij) - (K_x[i,i] - K_x[j,j]) (B[i,i] - B[j,j])`` where
    ``S_ij = M_ij + M_ji - M_ii - M_jj`` sums over all ``b`` and ``T_ij`` removes ``b in {i, j}``.
    """
    if m is None:
        m = kx @ b  # (N, N)
    md = np.diag(m)
    s = m + m.T - md[:, None] - md[None, :]
    kd, bd = np.diag(kx), np.diag(b)
    t = (kd[:, None] - kx) * (b - bd[:, None]) + (kx - kd[None, :]) * (bd[None, :] - b)
    return 2.0 * (s - t) - (kd[:, None] - kd[None, :]) * (bd[:, None] - bd[None, :])


def _pair_gain(kx: np.ndarray, ky: np.ndarray, perm: np.ndarray, i: int, j: int) -> float:
    """Exact gain of swapping ``p(i)`` and ``p(j)``, ``O(N)``."""
    bi, bj = ky[perm[i], perm], ky[perm[j], perm]  # rows i, j of B, (N,)
    dk = kx[i] - kx[j]
    db = bj - bi
    full = float(dk @ db)
    # remove b = i and b = j from the cross sum, then add the diagonal-block term
    full -= dk[i] * db[i] + dk[j] * db[j]
    return 2.0 * full - (kx[i, i] - kx[j, j]) * (bi[i] - bj[j])


def two_opt(
    kx: np.ndarray, ky: np.ndarray, perm: np.ndarray, max_rounds: int = 200, tol: float = 1e-12
) -> tuple[np.ndarray, float]:
    """Local search over transpositions until no swap improves ``f``.

    Each round scores all ``N (N - 1) / 2`` swaps at once (:func:`swap_gains`), then applies a
    greedy set of disjoint improving swaps, re-checking each exactly (:func:`_pair_gain`) so ``f``
    never decreases.

    Returns
    -------
    perm : np.ndarray
        ``(N,)`` a 2-opt local optimum (or the state after ``max_rounds``).
    value : float
        ``f(perm)``.
    """
    perm = np.array(perm, dtype=np.int64)
    n = len(perm)
    scale = max(float(np.abs(kx).max() * np.abs(ky).max()), 1e-300)
    for _ in range(max_rounds):
        b = ky[np.ix_(perm, perm)]
        gains = np.triu(swap_gains(kx, b), 1)
        cand = np.flatnonzero(gains > tol * scale)
        if len(cand) == 0:
            break
        cand = cand[np.argsort(-gains.ravel()[cand])][: 4 * n]
        used = np.zeros(n, dtype=bool)
        applied = 0
        for flat in cand:
            i, j = divmod(int(flat), n)
            if used[i] or used[j]:
                continue
            if _pair_gain(kx, ky, perm, i, j) > tol * scale:
                perm[i], perm[j] = perm[j], perm[i]
                used[i] = used[j] = True
                applied += 1
        if applied == 0:
            break
    return perm, qap_objective(kx, ky, perm)


# ----------------------------------------------------------------------------- spectral start


def _top_eigen(k: np.ndarray, r: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Top-``r`` eigenpairs of a symmetric ``(N, N)`` matrix (randomised range finder, large N)."""
    n = len(k)
    if n <= 400 or r >= n // 4:
        w, v = np.linalg.eigh(k)
        return w[::-1][:r], v[:, ::-1][:, :r]
    q = np.linalg.qr(k @ rng.standard_normal((n, r + 10)))[0]  # (N, r + 10)
    for _ in range(2):  # subspace iterations sharpen the range
        q = np.linalg.qr(k @ q)[0]
    w, v = np.linalg.eigh(q.T @ k @ q)
    return w[::-1][:r], (q @ v)[:, ::-1][:, :r]


def _embedding(w: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rows of ``U_r sqrt(lambda_r)``, the best rank-``r`` factor, signs set by third moments."""
    e = v * np.sqrt(np.clip(w, 0.0, None))  # (N, r)
    m3 = (e**3).sum(0)
    return e * np.where(m3 < 0, -1.0, 1.0)


def _sqdist(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(N, M)`` squared Euclidean distances between rows of ``a`` and ``b``."""
    d2 = (a**2).sum(1)[:, None] + (b**2).sum(1)[None, :] - 2.0 * a @ b.T
    return np.maximum(d2, 0.0)


def _assign(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Permutation maximising ``sum_i <a_i, b_p(i)>``, i.e. minimising ``sum_i ||a_i - b_p(i)||^2``.

    The two are equal up to a constant over permutations; the Hungarian solver is many times
    faster on the distance form (its costs are better separated).
    """
    _, cols = linear_sum_assignment(_sqdist(a, b))
    return cols.astype(np.int64)


def _nearest(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Index of the nearest row of ``b`` for each row of ``a`` (many-to-one), ``(N,)``."""
    return ((b**2).sum(1)[None, :] - 2.0 * a @ b.T).argmin(1)  # |a|^2 is constant per row


def _refine_embedding(ex: np.ndarray, ey: np.ndarray, match: np.ndarray, iters: int) -> np.ndarray:
    """Alternate ``Q = Procrustes(E_x, E_y[m])`` and ``m = nearest(E_x Q^T, E_y)``.

    The cheap many-to-one nearest-neighbour step stands in for the assignment while the rotation
    settles (Wasserstein-Procrustes with a relaxed coupling); callers finish with one Hungarian
    assignment.
    """
    for _ in range(iters):
        q = procrustes_rotation(ex, ey[match])  # (r, r): ex @ q.T ~ ey[match]
        new = _nearest(ex @ q.T, ey)
        if np.array_equal(new, match):
            break
        match = new
    return match


def _sign_candidates(ex: np.ndarray, ey: np.ndarray, max_flips: int) -> list[np.ndarray]:
    """Sign patterns of ``E_y``'s columns, ranked by a cheap proxy (sum of best row similarity).

    The ``max_flips`` columns with the least decisive third moment are enumerated; the others keep
    the sign the third moment gave them.
    """
    r = ex.shape[1]
    skew = np.minimum(
        np.abs((ex**3).sum(0)) / np.maximum((ex**2).sum(0) ** 1.5, 1e-300),
        np.abs((ey**3).sum(0)) / np.maximum((ey**2).sum(0) ** 1.5, 1e-300),
    )
    weak = np.argsort(skew)[: min(max_flips, r)]
    patterns = []
    for bits in itertools.product((1.0, -1.0), repeat=len(weak)):
        s = np.ones(r)
        s[weak] = bits
        patterns.append(s)
    if len(patterns) <= 2:
        return patterns
    rows = ex[:: max(1, len(ex) // 256)]  # a subsample of rows keeps the proxy O(256 N r)
    score = [float((rows @ (ey * s).T).max(1).sum()) for s in patterns]
    return [patterns[i] for i in np.argsort(score)[::-1]]


def _wp_score(ex: np.ndarray, ey: np.ndarray, perm: np.ndarray) -> float:
    """Wasserstein-Procrustes fit ``max_Q tr(Q^T E_x^T E_y[p]) = ||E_x^T E_y[p]||_*``."""
    return float(np.linalg.svd(ex.T @ ey[perm], compute_uv=False).sum())


def match_kernels(
    kx: np.ndarray,
    ky: np.ndarray,
    *,
    rank: int | None = None,
    max_flips: int = 4,
    starts: int = 4,
    refine_iters: int = 20,
    polish: str = "auto",
    restarts: int | None = None,
    truth: np.ndarray | None = None,
    seed: int = 0,
) -> MatchResult:
    """Class-level pair-free matching of two kernels ``K_x``, ``K_y`` (rows and columns unmatched).

    Each kernel is factored as ``K ≈ E E^T`` (top-``r`` eigenpairs, ``E = U sqrt(lambda)``), so a
    match is a permutation ``P`` and a rotation ``Q`` with ``E_x Q^T ≈ P E_y``. Starts: eigenvector
    signs fixed by third moments with the least decisive ``max_flips`` enumerated (the best
    ``starts`` patterns by a cheap proxy), and Umeyama's ``|U|`` match. Each start is refined by
    alternating Procrustes and Hungarian assignment (Wasserstein-Procrustes); the start with the
    best fit ``||E_x^T P E_y||_*`` wins. For linear kernels this is the least-squares estimate
    ``min_{P, Q} ||X Q^T - P Y||_F``, which tolerates noise better than the quadratic objective.

    ``polish="2opt"`` then climbs the QAP objective ``tr(K_x P K_y P^T)`` itself with 2-opt and
    iterated-local-search restarts: a higher QAP objective, but under noise often a lower
    accuracy (the QAP optimum over-fits the noise; see ``docs/benchmarks.md``).

    Parameters
    ----------
    kx, ky : np.ndarray
        ``(N, N)`` symmetric within-modality kernels (for example :func:`kernel_matrix`).
    rank : int, optional
        Eigen-space dimension; default: eigenvalues above 1e-6 of the largest, at most 32.
    max_flips : int
        Eigenvector signs enumerated (``2^max_flips`` patterns ranked by a cheap proxy).
    starts : int
        How many of the best-ranked sign patterns are refined (plus Umeyama's start).
    refine_iters : int
        Procrustes/assignment alternations per start.
    polish : {"auto", "none", "2opt"}
        Whether to finish with 2-opt on the QAP objective; ``auto``: only for ``N <= 32``, where
        a few points leave the spectral start ambiguous and the QAP optimum is the better guess.
    restarts : int, optional
        Iterated-local-search restarts of the 2-opt polish; default 30 for ``N <= 100``, 5 for
        ``N <= 400``, else 0.
    truth : np.ndarray, optional
        ``(N,)`` true partner of each row, to report accuracy.
    seed : int
        Seeds the randomised eigensolver and the restarts; same seed, same result.

    Returns
    -------
    MatchResult
    """
    t0 = time.perf_counter()
    kx, ky = _check_kernels(kx, ky, polish)
    n = len(kx)
    rng = np.random.default_rng(seed)
    if n == 1:
        perm = np.zeros(1, dtype=np.int64)
        return _result(kx, ky, perm, qap_objective(kx, ky, perm), truth, t0, {})
    ex, ey, rank = _kernel_embeddings(kx, ky, rank, rng)
    if polish == "auto":
        polish = "2opt" if n <= 32 else "none"
    best_name, eys, best_perm = _best_start(ex, ey, max_flips, starts)
    best_perm = _finish_wasserstein_procrustes(ex, eys, best_perm, refine_iters)
    info: dict[str, object] = {"start": best_name, "rank": rank, "polish": polish}
    if polish == "none":
        return _result(kx, ky, best_perm, qap_objective(kx, ky, best_perm), truth, t0, info)
    if restarts is None:
        restarts = 30 if n <= 100 else (5 if n <= 400 else 0)
    best_perm, best_val, improved = _polish_two_opt(kx, ky, best_perm, restarts, rng)
    info |= {"restarts": restarts, "restart_improvements": improved}
    return _result(kx, ky, best_perm, best_val, truth, t0, info)


def _check_kernels(kx: np.ndarray, ky: np.ndarray, polish: str) -> tuple[np.ndarray, np.ndarray]:
    """Both kernels as float64, square and of one size; ``polish`` one of the known modes."""
    kx = np.asarray(kx, dtype=np.float64)
    ky = np.asarray(ky, dtype=np.float64)
    n = len(kx)
    if kx.shape != (n, n) or ky.shape != (n, n):
        raise InputError(f"kernels must be square and of one size, got {kx.shape} and {ky.shape}")
    if polish not in ("auto", "none", "2opt"):
        raise InputError(f"polish must be 'auto', 'none' or '2opt', got {polish!r}")
    return kx, ky


def _kernel_embeddings(
    kx: np.ndarray, ky: np.ndarray, rank: int | None, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, int]:
    """``E = U sqrt(lambda)`` of each kernel's top eigenpairs, and the rank used."""
    r_max = min(len(kx), 32 if rank is None else rank)
    wx, vx = _top_eigen(kx, r_max, rng)
    wy, vy = _top_eigen(ky, r_max, rng)
    if rank is None:
        rank = int(max(1, (wx > 1e-6 * max(wx.max(), 1e-300)).sum()))
    rank = min(rank, r_max)
    ex, ey = _embedding(wx[:rank], vx[:, :rank]), _embedding(wy[:rank], vy[:, :rank])
    return ex, ey, rank


def _best_start(
    ex: np.ndarray, ey: np.ndarray, max_flips: int, starts: int
) -> tuple[str, np.ndarray, np.ndarray]:
    """The start (name, signed ``E_y``, assignment) whose short refinement fits best."""
    starts_list: list[tuple[str, np.ndarray, np.ndarray]] = []
    for s in _sign_candidates(ex, ey, max_flips)[:starts]:
        starts_list.append(("spectral", ey * s, _nearest(ex, ey * s)))
    starts_list.append(("umeyama", ey, _nearest(np.abs(ex), np.abs(ey))))
    best, best_fit, seen = None, -np.inf, set()
    for name, eys, perm in starts_list:
        key = perm.tobytes()
        if key in seen:
            continue
        seen.add(key)
        perm = _refine_embedding(ex, eys, perm, 2)
        fit = _wp_score(ex, eys, perm)
        if fit > best_fit * (1 + 1e-12):
            best, best_fit = (name, eys, perm), fit
    assert best is not None
    return best


def _finish_wasserstein_procrustes(
    ex: np.ndarray, eys: np.ndarray, perm: np.ndarray, iters: int
) -> np.ndarray:
    """The full refinement of the best start, then exact Procrustes/assignment steps."""
    match = _refine_embedding(ex, eys, perm, iters)
    q = procrustes_rotation(ex, eys[match])
    perm = _assign(ex @ q.T, eys)
    for _ in range(iters):
        q = procrustes_rotation(ex, eys[perm])
        new = _assign(ex @ q.T, eys)
        if np.array_equal(new, perm):
            break
        perm = new
    return perm


def _polish_two_opt(
    kx: np.ndarray, ky: np.ndarray, perm: np.ndarray, restarts: int, rng: np.random.Generator
) -> tuple[np.ndarray, float, int]:
    """2-opt on the QAP objective with iterated-local-search restarts (random kicks)."""
    n = len(kx)
    best_perm, best_val = two_opt(kx, ky, perm)
    improved = 0
    for _ in range(restarts):
        trial = best_perm.copy()
        for _ in range(max(2, n // 10)):  # a random kick of a few transpositions
            i, j = rng.choice(n, 2, replace=False)
            trial[i], trial[j] = trial[j], trial[i]
        trial, val = two_opt(kx, ky, trial)
        if val > best_val * (1 + 1e-12):
            best_perm, best_val = trial, val
            improved += 1
    return best_perm, best_val, improved


def _result(kx, ky, perm, value, truth, t0, info, rotation=None) -> MatchResult:
    acc = None if truth is None else float((np.asarray(perm) == np.asarray(truth)).mean())
    return MatchResult(
        permutation=np.asarray(perm, dtype=np.int64),
        objective=_normalised(kx, ky, value),
        accuracy=acc,
        seconds=time.perf_counter() - t0,
        rotation=rotation,
        info=info,
    )


def _paired_rows(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both sides as float64 ``(N, d)`` with equal ``N``; anything else one line."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or y.ndim != 2 or len(x) != len(y):
        raise InputError(
            f"matching needs X (N, d_x) and Y (N, d_y) with equal N, got {x.shape} and {y.shape}"
        )
    return x, y


def match_classes(
    x: np.ndarray, y: np.ndarray, kernel: str = "linear", truth: np.ndarray | None = None, **kw
) -> MatchResult:
    """Match rows of ``x (N, d_x)`` to rows of ``y (N, d_y)``: :func:`match_kernels` on kernels."""
    x, y = _paired_rows(x, y)
    return match_kernels(kernel_matrix(x, kernel), kernel_matrix(y, kernel), truth=truth, **kw)


# ----------------------------------------------------------------------------- sample level


def _pca(x: np.ndarray, r: int) -> np.ndarray:
    """Scores on the top-``r`` principal axes, ``(N, r)``, with third-moment signs."""
    xc = x - x.mean(0)
    _, v = np.linalg.eigh(xc.T @ xc)  # (D, D) eigenvectors, ascending
    z = xc @ v[:, ::-1][:, :r]  # (N, r)
    return z * np.where((z**3).sum(0) < 0, -1.0, 1.0)


def _chamfer(a: np.ndarray, b: np.ndarray) -> float:
    """Mean squared distance from each row of ``a`` to its nearest row of ``b``."""
    d2 = (a**2).sum(1)[:, None] + (b**2).sum(1)[None, :] - 2.0 * a @ b.T
    return float(np.maximum(d2.min(1), 0.0).mean())


def _refine_rotation(a: np.ndarray, b: np.ndarray, q: np.ndarray, iters: int) -> np.ndarray:
    """Procrustes on mutual nearest neighbours of ``a Q^T`` and ``b`` (unpaired subsamples)."""
    for _ in range(iters):
        aq = a @ q.T
        d2 = (aq**2).sum(1)[:, None] + (b**2).sum(1)[None, :] - 2.0 * aq @ b.T
        ab, ba = d2.argmin(1), d2.argmin(0)
        mutual = ba[ab] == np.arange(len(a))
        if mutual.sum() < a.shape[1] + 1:
            mutual[:] = True
        new = procrustes_rotation(a[mutual], b[ab[mutual]])
        if np.allclose(new, q, atol=1e-10):
            break
        q = new
    return q


def match_samples(
    x: np.ndarray,
    y: np.ndarray,
    *,
    rank: int | None = None,
    clusters: int | None = None,
    max_flips: int = 4,
    subsample: int = 3000,
    iters: int = 30,
    block: int = 1024,
    rounds: int = 2,
    truth: np.ndarray | None = None,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> MatchResult:
    """Sample-level pair-free matching of ``x (N, d_x)`` to ``y (N, d_y)`` (scales to 100k rows).

    1. Centre and project both sides on their top ``r = min(d_x, d_y, rank)`` principal axes.
    2. Candidate rotations: sign patterns of the principal axes (third moments, the least decisive
       ``max_flips`` enumerated), and the cluster route: k-means in each modality, centroids
       matched by :func:`match_kernels`, Procrustes on the matched centroids.
    3. Each candidate is refined by Procrustes on mutual nearest neighbours between unpaired
       subsamples (Wasserstein-Procrustes on mini-batches [3]_); the one with the smallest chamfer
       distance wins.
    4. ``rounds`` of: :func:`~prh.bridge.assign.blocked_assignment` on all rows (exact Hungarian
       inside cells), then Procrustes on the assigned pairs.

    ``progress(done, total)``, when given, is called after each refined candidate and each round.

    Returns
    -------
    MatchResult
        ``rotation`` is ``(r, r)`` between the two principal-axis coordinates; ``objective`` is
        the normalised linear-kernel alignment
        ``||X_c^T P Y_c||_F^2 / (||X_c^T X_c||_F ||Y_c^T Y_c||_F)``.
    """
    t0 = time.perf_counter()
    x, y = _paired_rows(x, y)
    n = len(x)
    r = min(x.shape[1], y.shape[1], rank or 32, n)
    rng = np.random.default_rng(seed)
    px, py = _pca(x, r), _pca(y, r)  # (N, r) each
    sx = px[rng.choice(n, min(n, subsample), replace=False)]
    sy = py[rng.choice(n, min(n, subsample), replace=False)]

    cands, k = _rotation_candidates(px, py, sx, sy, max_flips, clusters, seed)
    say = progress or (lambda done, total: None)
    stages = len(cands) + max(1, rounds)
    best_q, best_c, best_name = None, np.inf, ""
    for i, (name, q) in enumerate(cands):
        q = _refine_rotation(sx, sy, q, iters)
        c = _chamfer(sx @ q.T, sy)
        if c < best_c:
            best_q, best_c, best_name = q, c, name
        say(i + 1, stages)
    assert best_q is not None
    done = len(cands) + 1
    perm = _assignment_rounds(px, py, best_q, block, rounds, seed, lambda j: say(done + j, stages))
    say(stages, stages)
    acc = None if truth is None else float((perm == np.asarray(truth)).mean())
    return MatchResult(
        permutation=perm,
        objective=_linear_alignment(x, y, perm),
        accuracy=acc,
        seconds=time.perf_counter() - t0,
        rotation=procrustes_rotation(px, py[perm]),
        info={"start": best_name, "rank": r, "clusters": k, "chamfer": best_c},
    )


def _rotation_candidates(
    px: np.ndarray,
    py: np.ndarray,
    sx: np.ndarray,
    sy: np.ndarray,
    max_flips: int,
    clusters: int | None,
    seed: int,
) -> tuple[list[tuple[str, np.ndarray]], int]:
    """Sign patterns of the principal axes and the matched k-means centroids' rotation."""
    cands: list[tuple[str, np.ndarray]] = [
        ("pca-signs", np.diag(s)) for s in _sign_candidates(sx, sy, max_flips)[:4]
    ]
    n = len(px)
    k = clusters if clusters is not None else int(np.clip(n // 100, 4, 64))
    if k >= 3 and n >= 2 * k:
        cx, lx = kmeans(px, k, seed=seed)
        cy, _ = kmeans(py, k, seed=seed + 1)
        cm = match_kernels(cx @ cx.T, cy @ cy.T, seed=seed).permutation
        wx = np.sqrt(np.bincount(lx, minlength=k))[:, None]
        cands.append(("clusters", procrustes_rotation(wx * cx, wx * cy[cm])))
    return cands, k


def _assignment_rounds(
    px: np.ndarray,
    py: np.ndarray,
    q: np.ndarray,
    block: int,
    rounds: int,
    seed: int,
    say: Callable[[int], None],
) -> np.ndarray:
    """Blocked assignment of all rows, then ``rounds - 1`` Procrustes/assignment alternations."""
    perm = blocked_assignment(px @ q.T, py, block=block, seed=seed)
    say(0)  # ``say(j)``: the j-th assignment round is done
    for j in range(rounds - 1):
        q = procrustes_rotation(px, py[perm])
        new = blocked_assignment(px @ q.T, py, block=block, seed=seed)
        say(1 + j)
        if np.array_equal(new, perm):
            break
        perm = new
    return perm


def _linear_alignment(x: np.ndarray, y: np.ndarray, perm: np.ndarray) -> float:
    """``||X_c^T P Y_c||_F^2 / (||X_c^T X_c||_F ||Y_c^T Y_c||_F)``."""
    xc, yc = x - x.mean(0), y - y.mean(0)
    num = float(np.linalg.norm(xc.T @ yc[perm]) ** 2)
    den = float(np.linalg.norm(xc.T @ xc) * np.linalg.norm(yc.T @ yc))
    return num / max(den, 1e-300)
