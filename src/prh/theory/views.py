"""View policies as pair laws on a finite world (docs/theory.md sec. 1 and 5).

Every function returns a pair law in grid order ``s * K + n`` (shape (N K, N K), summing to 1)
from a state pair kernel ``pi`` (N, N) with marginal ``p`` and a nuisance law:

- good views: two observations of one scene, nuisances independent given the state;
- bad views: two distortions of one observation, sharing the nuisance (or a jittered copy of it);
- mixtures: a fraction ``rho`` of good views, ``K_rho = rho q q^T + (1 - rho) K_bad``, so
  ``T_X = T_S (x) T_N(rho)`` with nuisance eigenvalues ``(1 - rho) mu_j``;
- next-token: prefix and continuation of one document, whose nuisance is a (style, wording)
  pair: the wording is fresh per segment but the style persists through the document, so
  next-token prediction is a bad view on the style factor.
"""

from __future__ import annotations

import numpy as np

from prh.errors import InputError
from prh.theory.generators import sinkhorn_symmetric


def _check_rho(rho: float) -> float:
    if not 0.0 <= rho <= 1.0:
        raise InputError(f"rho: expected a fraction of good views in [0, 1], got {rho}")
    return float(rho)


def good_views(pi: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``P((s,n),(s',n')) = pi(s,s') q(n|s) q(n'|s')``; q shape (N, K) or (K,)."""
    pi = np.asarray(pi, dtype=np.float64)
    q = np.broadcast_to(np.asarray(q, dtype=np.float64), (pi.shape[0], np.shape(q)[-1]))
    N, K = q.shape
    W = pi[:, None, :, None] * q[:, :, None, None] * q[None, None, :, :]  # (N, K, N, K)
    return W.reshape(N * K, N * K)


def nuisance_kernel(
    q: np.ndarray, persistence: float = 1.0, seed: int | np.random.Generator = 0
) -> np.ndarray:
    """A bad-view nuisance kernel (K, K) with marginal ``q``.

    ``persistence * diag(q) + (1 - persistence) * J`` where ``J`` is a random symmetric kernel
    Sinkhorn-projected to ``q``: persistence 1 is ``n' = n`` (shared nuisance); below 1 the second
    view's nuisance is a jittered copy of the first, with generic distinct eigenvalues ``mu_j``.
    """
    q = np.asarray(q, dtype=np.float64)
    if not 0.0 <= persistence <= 1.0:
        raise InputError(f"persistence: expected a number in [0, 1], got {persistence}")
    J = np.zeros((q.size, q.size))
    if persistence < 1.0:
        rng = np.random.default_rng(seed)
        R = rng.random((q.size, q.size))
        J = sinkhorn_symmetric(R + R.T, q)
    return persistence * np.diag(q) + (1.0 - persistence) * J


def mixture_views(
    pi: np.ndarray, q: np.ndarray, rho: float, bad_kernel: np.ndarray | None = None
) -> np.ndarray:
    """A fraction ``rho`` of good views and ``1 - rho`` of bad views, shape (N K, N K).

    ``W = pi (x) (rho q q^T + (1 - rho) K_bad)``, ``q`` (K,) state-independent, ``K_bad``
    (K, K) with marginal ``q`` (default ``diag(q)``: the shared nuisance).
    """
    rho = _check_rho(rho)
    q = np.asarray(q, dtype=np.float64)
    if q.ndim != 1:
        raise InputError(
            f"mixture views: expected a state-independent nuisance law (K,), got shape {q.shape}"
        )
    Kb = np.diag(q) if bad_kernel is None else np.asarray(bad_kernel, dtype=np.float64)
    return np.kron(np.asarray(pi, dtype=np.float64), rho * np.outer(q, q) + (1.0 - rho) * Kb)


def bad_views(pi: np.ndarray, q: np.ndarray, bad_kernel: np.ndarray | None = None) -> np.ndarray:
    """Two distortions of one observation: ``pi (x) K_bad``, (N K, N K); see ``mixture_views``."""
    return mixture_views(pi, q, 0.0, bad_kernel)


def document_nuisance(
    style: np.ndarray, wording: np.ndarray, style_persistence: float = 0.9, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Nuisance of a document segment: ``n = (c, w)`` with style ``c`` and wording ``w``.

    Returns ``(q, K_next)``: the law ``q = style (x) wording`` (C W,) and the next-token pair
    kernel ``K_next = K_style (x) wording wording^T`` (C W, C W): the continuation keeps the
    document's style (up to a small drift, ``style_persistence``) and draws fresh wording.
    """
    style = np.asarray(style, dtype=np.float64)
    wording = np.asarray(wording, dtype=np.float64)
    K_style = nuisance_kernel(style, style_persistence, seed)
    return np.kron(style, wording), np.kron(K_style, np.outer(wording, wording))


def next_token_views(
    pi: np.ndarray,
    style: np.ndarray,
    wording: np.ndarray,
    rho: float = 0.0,
    style_persistence: float = 0.9,
    seed: int = 0,
) -> np.ndarray:
    """Prefix/continuation pairs over documents (N C W, N C W), mixed with ``rho`` good views.

    ``pi`` is the pair law of consecutive topics along a document (a reversible Markov chain
    with stationary law ``p``); the nuisance is ``(style, wording)`` (:func:`document_nuisance`).
    """
    q, K_next = document_nuisance(style, wording, style_persistence, seed)
    return mixture_views(pi, q, rho, K_next)


def nuisance_spectrum(q: np.ndarray, bad_kernel: np.ndarray | None = None) -> np.ndarray:
    """Eigenvalues ``mu`` (descending, ``mu_1 = 1``) of the bad-view nuisance operator, (K,)."""
    q = np.asarray(q, dtype=np.float64)
    Kb = np.diag(q) if bad_kernel is None else np.asarray(bad_kernel, dtype=np.float64)
    s = 1.0 / np.sqrt(q)
    return np.sort(np.linalg.eigvalsh(Kb * s[:, None] * s[None, :]))[::-1]


def predicted_nuisance_count(
    state_eigs: np.ndarray, nuisance_eigs: np.ndarray, rho: float, k: int
) -> int:
    """``m(rho)``: how many of the top-k nontrivial eigenvalues of ``T_S (x) T_N(rho)`` are not
    pure-state (docs/theory.md sec. 5).

    The spectrum is ``{l_i nu_j}`` with ``nu_1 = 1`` and ``nu_j = (1 - rho) mu_j``; pure-state
    eigenfunctions have ``j = 1``; the trivial ``(1, 1)`` is excluded.
    """
    rho = _check_rho(rho)
    l = np.asarray(state_eigs, dtype=np.float64)
    nu = np.concatenate([[1.0], (1.0 - rho) * np.asarray(nuisance_eigs)[1:]])
    prod = np.outer(l, nu)  # (N, K)
    is_nuis = np.zeros_like(prod, dtype=bool)
    is_nuis[:, 1:] = True
    vals, flags = prod.ravel()[1:], is_nuis.ravel()[1:]  # drop the trivial (1, 1)
    order = np.argsort(-vals, kind="stable")
    return int(flags[order[:k]].sum())


def rho_star(state_eigs: np.ndarray, mu2: float, k: int) -> float:
    """``rho* = 1 - l_{k+1} / mu_2``: the embedding is pure state iff ``rho > rho*``."""
    return float(1.0 - np.asarray(state_eigs)[k] / mu2)
