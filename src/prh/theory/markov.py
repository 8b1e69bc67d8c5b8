"""Reversible Markov chains on finite states and the spectrum of their lag-D pair kernels
(docs/theory.md sec. 8).

A stationary chain ``Q`` reversible for ``p`` (``p(s) Q(s, s') = p(s') Q(s', s)``) makes two
observations ``D`` steps apart a good view with state kernel ``Pi(s, s') = p(s) Q^D(s, s')``.
Its normalized adjacency ``T_Pi = D_p^-1/2 Pi D_p^-1/2 = (D_p^1/2 Q D_p^-1/2)^D`` is a power of
one symmetric matrix ``S``, so its eigenvalues are ``mu_i^D`` (``mu_i``: eigenvalues of ``Q``)
and its eigenfunctions are ``Q``'s right eigenvectors ``g_i = u_i / sqrt(p)``, orthonormal in
``L2(p)``: the whitened JEPA's embedding ``g*`` (sec. 3) without forming ``Q^D``.

:func:`pair_spectrum` finds the top eigenpairs of ``S`` with a sparse Lanczos solver (dense
below :data:`DENSE_STATES` states); :func:`theory_embedding` refuses a ``k`` with no gap after
it, naming the eigenvalues. Pure numpy/scipy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from prh.errors import InputError

DENSE_STATES = 600  # below this many states a dense eigendecomposition is faster and exact
MAX_LAG = 100_000  # mu^D underflows long before; a lag beyond this is a typo
GAP_TOL = 1e-9  # a gap at or below this is no gap (equal eigenvalues up to round-off)


@dataclass(frozen=True, eq=False)
class ReversibleChain:
    """A row-stochastic ``Q`` (sparse, ``(N, N)``) reversible for its stationary law ``p``.

    Build with :func:`reversible_chain`, which checks every property.
    """

    Q: sp.csr_matrix
    p: np.ndarray

    @property
    def num_states(self) -> int:
        return int(self.p.size)

    def symmetric(self) -> sp.csr_matrix:
        """``S = D_p^1/2 Q D_p^-1/2`` (symmetric by detailed balance), symmetrised against
        round-off."""
        r = np.sqrt(self.p)
        S = sp.diags(r) @ self.Q @ sp.diags(1.0 / r)
        return sp.csr_matrix(0.5 * (S + S.T))


def reversible_chain(Q, p: np.ndarray, atol: float = 1e-12) -> ReversibleChain:
    """Check ``Q`` (dense or sparse) and ``p`` and return the chain.

    Raises
    ------
    InputError
        ``Q`` not square, negative, not row-stochastic; ``p`` not a positive law of the right
        size; or detailed balance broken (a chain that is not reversible), in one line.
    """
    Q = sp.csr_matrix(Q, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    n = Q.shape[0]
    if Q.shape != (n, n) or n < 2 or p.shape != (n,):
        raise InputError(
            f"chain: expected Q (N, N) and p (N,) with N >= 2, got {Q.shape}, {p.shape}"
        )
    if not (np.all(np.isfinite(Q.data)) and np.all(np.isfinite(p))):
        raise InputError("chain: Q or p contains NaN or inf")
    if Q.data.size and Q.data.min() < 0:
        raise InputError(f"chain: transition probabilities must be >= 0, got {Q.data.min():.3g}")
    rows = np.asarray(Q.sum(axis=1)).ravel()
    if np.abs(rows - 1).max() > 1e-9:
        s = int(np.argmax(np.abs(rows - 1)))
        raise InputError(f"chain: row {s} of Q sums to {rows[s]:.12g}, expected 1")
    if p.min() <= 0 or abs(p.sum() - 1) > 1e-9:
        raise InputError(f"chain: stationary law must be positive and sum to 1 (min {p.min():.3g})")
    flow = sp.diags(p) @ Q
    asym = abs(flow - flow.T).max() if flow.nnz else 0.0
    if asym > atol:
        raise InputError(
            f"chain: not reversible for p: max |p(s) Q(s,s') - p(s') Q(s',s)| = {asym:.3g} "
            f"(above {atol:.0e}); a good-view pair kernel p Q^D needs detailed balance"
        )
    return ReversibleChain(Q=Q, p=p)


def check_lag(lag: int) -> int:
    """``lag`` as an int in ``0..MAX_LAG`` (0: the still world, two views of one state)."""
    if isinstance(lag, bool) or not isinstance(lag, int | np.integer) or not 0 <= lag <= MAX_LAG:
        raise InputError(f"lag: expected an integer 0 to {MAX_LAG:,} steps, got {lag!r}")
    return int(lag)


@dataclass(frozen=True, eq=False)
class PairSpectrum:
    """Top of the spectrum of ``T_Pi`` for ``Pi = p Q^D``.

    Attributes
    ----------
    eigenvalues : ndarray, shape (m + 1,)
        ``1 = l_1 >= l_2 >= ...``: the constant first, then the ``m`` largest others.
    functions : ndarray, shape (N, m + 1) or None
        ``g_i = u_i / sqrt(p)`` in the same order (orthonormal in ``L2(p)``); None at lag 0,
        where every function is an eigenfunction.
    p : ndarray, shape (N,)
        Stationary law.
    lag : int
        ``D``.
    """

    eigenvalues: np.ndarray
    functions: np.ndarray | None
    p: np.ndarray
    lag: int

    def nontrivial(self) -> np.ndarray:
        """``l_2, l_3, ...`` (the constant one left out): the world's slow-feature spectrum."""
        return self.eigenvalues[1:]

    def gap(self, k: int) -> float:
        """``l_{k+1} - l_{k+2}``: the gap after the top ``k`` non-constant eigenvalues."""
        ev = self.nontrivial()
        if not 1 <= k < ev.size:
            raise InputError(f"k: expected 1 to {ev.size - 1} (eigenvalues computed), got {k}")
        return float(ev[k - 1] - ev[k])

    def separation(self, k: int) -> float:
        """The smallest distance between adjacent ones of the top ``k`` (inf at ``k = 1``)."""
        ev = self.nontrivial()[:k]
        return float((-np.diff(ev)).min()) if k > 1 else float("inf")


def pair_spectrum(chain: ReversibleChain, lag: int, m: int) -> PairSpectrum:
    """The constant and the ``m`` largest other eigenpairs of ``T_Pi`` for ``Pi = p Q^lag``.

    Eigenvalues are ``mu^lag``; for an even lag the most negative ``mu`` of ``Q`` compete too,
    so both ends are solved for and merged. Eigenvector signs are fixed (largest-magnitude
    entry positive), so results are deterministic.
    """
    lag = check_lag(lag)
    n = chain.num_states
    if not 1 <= m <= n - 1:
        raise InputError(f"eigenvalues: expected 1 to N - 1 = {n - 1}, got {m}")
    if lag == 0:
        return PairSpectrum(np.ones(m + 1), None, chain.p, 0)
    mu, U = _top_both_ends(chain.symmetric(), m + 1, need_low=lag % 2 == 0)
    lam = mu**lag
    order = np.argsort(-lam, kind="stable")[: m + 1]
    lam, U = lam[order], U[:, order]
    U = U * np.sign(U[np.argmax(np.abs(U), axis=0), np.arange(U.shape[1])])[None, :]
    G = U / np.sqrt(chain.p)[:, None]
    G[:, 0] = 1.0  # the constant eigenfunction, exactly (its eigenvalue mu = 1)
    lam[0] = 1.0
    return PairSpectrum(lam, G, chain.p, lag)


def _top_both_ends(S: sp.csr_matrix, m: int, need_low: bool) -> tuple[np.ndarray, np.ndarray]:
    """The ``m`` largest eigenpairs of symmetric ``S`` (and the ``m`` smallest: ``need_low``)."""
    n = S.shape[0]
    if n <= DENSE_STATES or m + 2 >= n // 2:
        mu, U = np.linalg.eigh(S.toarray())
        keep = (
            np.r_[np.arange(n - m, n), np.arange(min(m, n - m))]
            if need_low
            else np.arange(n - m, n)
        )
        keep = np.unique(keep)
        return mu[keep], U[:, keep]
    from scipy.sparse.linalg import eigsh

    v0 = np.random.default_rng(0).standard_normal(n)  # a fixed start: deterministic Lanczos
    mu, U = eigsh(S, k=m, which="LA", v0=v0, tol=1e-13, ncv=min(n, max(2 * m + 1, 40)))
    if need_low:
        lo, V = eigsh(S, k=m, which="SA", v0=v0, tol=1e-13, ncv=min(n, max(2 * m + 1, 40)))
        mu, U = np.r_[mu, lo], np.c_[U, V]
    return mu, U


def theory_embedding(spec: PairSpectrum, k: int, tol: float = GAP_TOL) -> np.ndarray:
    """``g*``: the top ``k`` non-constant eigenfunctions, ``(N, k)``, white under ``p``.

    Raises
    ------
    InputError
        No gap after ``k`` (``l_{k+1} - l_{k+2} <= tol``; the still world at lag 0 has none):
        the embedding is not unique, and the message names the eigenvalues around ``k``.
    """
    ev = spec.nontrivial()
    if not 1 <= k < ev.size:
        raise InputError(f"k: expected 1 to {ev.size - 1} (eigenvalues computed), got {k}")
    gap = spec.gap(k)
    if gap <= tol or spec.functions is None:
        lo, hi = max(0, k - 2), min(ev.size, k + 2)
        shown = ", ".join(f"{v:.6g}" for v in ev[lo:hi])
        raise InputError(
            f"theory embedding at k={k}: no gap after eigenvalue {k} (l_{k + 1} - l_{k + 2} = "
            f"{gap:.3g}; non-constant eigenvalues {lo + 1}..{hi}: {shown}), so it is "
            "not unique; choose a k followed by a gap, or a lag > 0"
        )
    return spec.functions[:, 1 : k + 1].copy()


def dense_pair_kernel(chain: ReversibleChain, lag: int) -> np.ndarray:
    """``Pi = diag(p) Q^lag`` as a dense ``(N, N)`` pair law (a reference for small chains)."""
    lag = check_lag(lag)
    QD = np.linalg.matrix_power(chain.Q.toarray(), lag)
    W = chain.p[:, None] * QD
    return 0.5 * (W + W.T)


def spectral_pair_kernel(chain: ReversibleChain, lag: int) -> np.ndarray:
    """``Pi = diag(p) Q^lag`` as a dense ``(N, N)`` pair law, from one eigendecomposition of
    ``S``: ``Pi = D_p^1/2 U diag(mu^lag) U^T D_p^1/2`` (a few seconds at 2,160 states, where
    :func:`dense_pair_kernel`'s matrix powers take several; equal to it up to round-off).
    Entries are clipped at 0 and the result symmetrised. One BLAS thread: the same bits
    whatever the machine's thread count (and no slow-down on a shared, busy machine)."""
    from threadpoolctl import threadpool_limits

    lag = check_lag(lag)
    r = np.sqrt(chain.p)
    with threadpool_limits(limits=1):
        mu, U = np.linalg.eigh(chain.symmetric().toarray())
        V = U * r[:, None]
        W = (V * mu[None, :] ** lag) @ V.T
    return np.maximum(0.5 * (W + W.T), 0.0)
