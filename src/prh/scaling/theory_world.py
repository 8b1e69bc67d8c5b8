"""An exact finite-world learner for the scaling law: alignment after S sampled pairs at rho.

The world (docs/theory.md sec.s 1, 5): ``N`` states at random points of the unit square with a
Gaussian state kernel ``Pi`` projected to a uniform prior (symmetric Sinkhorn), and ``n_nuisance``
nuisance values per state and modality, uniform. An observation is ``x = (s, n)``, index ``s *
n_nuisance + n``.

Modality A (the model being trained, "text") learns from ``S`` positive pairs sampled from the
mixture policy: ``s ~ p``, ``s' ~ Pi(s, .) / p(s)``, ``n ~ q``, and ``n' ~ q`` fresh with
probability ``rho`` (a good view) or ``n' = n`` (a bad view: the pair shares its nuisance). Its
encoder is the closed-form whitened JEPA (:func:`prh.theory.jepa.solve_jepa`) on the EMPIRICAL pair
graph of those pairs (symmetrised counts), restricted to the observations that were seen; unseen
observations get the zero (mean) embedding, as an encoder that never saw an input has nothing to say
about it.

Modality B (the frozen reference, "vision") is fully trained with good views: its embedding is the
pure-state spectral embedding ``g*(s)`` of ``Pi`` (Theorem 1), independent of its nuisance.

Alignment is ``1 - e_cca`` (docs/theory.md sec. 3): both embeddings whitened under the population
law (``s ~ p``, nuisances independent given ``s``; directions of zero variance are dropped, so a
collapsed embedding counts as misaligned), ``C = E[f_A f_B^T]``, ``e_cca = 1 - ||C||_* / k``. As ``S
-> inf`` the empirical graph tends to the population one and ``e_cca -> m(rho) / k`` (section 5),
which :func:`population_e_cca` computes in closed form for checking.

"next-token" in this world is a leaky bad view: the continuation keeps the document's style (``n' =
n``) except with probability ``ntp_leak``, where it is resampled. Its nuisance kernel ``(1 - eps) I
+ eps q q^T`` is exactly the mixture kernel at ``rho = eps``, so here next-token *is* the mixture at
``rho = ntp_leak`` (documented; the cave backend trains a real causal LM instead).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from prh.errors import InputError
from prh.theory.generators import sinkhorn_symmetric
from prh.theory.jepa import solve_jepa, whiten


@dataclass(frozen=True)
class TheoryWorldConfig:
    """The finite world of the ``theory`` backend.

    Attributes
    ----------
    n_states : int
        ``N`` states.
    n_nuisance : int
        Nuisance values per state (observations of modality A: ``N * n_nuisance``).
    k : int
        Embedding dimension.
    bandwidth : float
        Gaussian kernel width on the unit square (sets the state spectrum, hence ``rho*``).
    world_seed : int
        Seeds the state positions (the world is fixed across cells; run seeds vary the samples).
    ntp_leak : float
        Probability that a next-token continuation resamples its style (see module docstring).
    """

    n_states: int = 96
    n_nuisance: int = 3
    k: int = 16
    bandwidth: float = 0.12
    world_seed: int = 0
    ntp_leak: float = 0.7

    def __post_init__(self) -> None:
        if self.n_states < self.k + 2:
            raise InputError(f"theory world: need n_states >= k + 2, got {self.n_states}, {self.k}")
        if self.n_nuisance < 1 or self.k < 1 or self.bandwidth <= 0:
            raise InputError("theory world: n_nuisance, k and bandwidth must be positive")
        if not 0.0 <= self.ntp_leak <= 1.0:
            raise InputError(f"theory world: ntp_leak must be in [0, 1], got {self.ntp_leak}")


@dataclass(frozen=True, eq=False)
class _World:
    p: np.ndarray  # (N,) state prior
    Pi: np.ndarray  # (N, N) state pair kernel, rows sum to p
    cond_cdf: np.ndarray  # (N, N) cumulative P(s' | s)
    g_ref: np.ndarray  # (N, k) reference embedding, white under p
    state_eigenvalues: np.ndarray  # (N,) spectrum of T_S, descending


@functools.lru_cache(maxsize=8)
def build_world(cfg: TheoryWorldConfig) -> _World:
    """The state kernel and the reference embedding of ``cfg`` (deterministic, cached)."""
    rng = np.random.default_rng(cfg.world_seed)
    z = rng.random((cfg.n_states, 2))  # (N, 2) state positions
    sq = ((z[:, None, :] - z[None, :, :]) ** 2).sum(-1)
    p = np.full(cfg.n_states, 1.0 / cfg.n_states)
    Pi = sinkhorn_symmetric(np.exp(-sq / (2 * cfg.bandwidth**2)), p)  # (N, N), Pi 1 = p
    sol = solve_jepa(Pi / Pi.sum(), cfg.k)
    cond = Pi / Pi.sum(axis=1, keepdims=True)
    cdf = np.cumsum(cond, axis=1)
    cdf[:, -1] = 1.0
    return _World(
        p, Pi, cdf, whiten(sol.embedding, p, drop_singular=True, rtol=1e-9), sol.eigenvalues
    )


def effective_rho(views: str, rho: float | None, cfg: TheoryWorldConfig) -> float:
    """The good-view fraction a view kind stands for in this world."""
    if views == "good":
        return 1.0
    if views == "bad":
        return 0.0
    if views == "next-token":
        return cfg.ntp_leak
    if views == "mixture":
        if rho is None or not 0.0 <= rho <= 1.0:
            raise InputError(f"theory backend: mixture needs rho in [0, 1], got {rho}")
        return float(rho)
    raise InputError(f"theory backend: unknown views {views!r}")


def sample_pairs(
    cfg: TheoryWorldConfig, rho: float, samples: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``samples`` positive pairs of modality-A observation indices, each ``(S,)`` int."""
    w = build_world(cfg)
    N, R = cfg.n_states, cfg.n_nuisance
    s = rng.integers(0, N, samples)  # uniform prior
    u = rng.random(samples)
    s2 = (w.cond_cdf[s] < u[:, None]).sum(axis=1)  # s' ~ Pi(s, .) / p(s)
    n = rng.integers(0, R, samples)
    fresh = rng.random(samples) < rho
    n2 = np.where(fresh, rng.integers(0, R, samples), n)
    return s * R + n, s2 * R + n2


def empirical_embedding(xa: np.ndarray, xb: np.ndarray, M: int, k: int) -> np.ndarray:
    """Closed-form whitened JEPA on the empirical pair graph of ``(xa, xb)``, shape ``(M, k)``.

    ``W = (counts + counts^T) / (2 S)`` restricted to seen observations; unseen rows are zero.
    """
    counts = np.bincount(xa * M + xb, minlength=M * M).reshape(M, M).astype(float)
    W = counts + counts.T
    seen = np.flatnonzero(W.sum(axis=1) > 0)
    F = np.zeros((M, k))
    if seen.size < k + 1:
        return F
    Ws = W[np.ix_(seen, seen)]
    F[seen] = solve_jepa(Ws / Ws.sum(), k).embedding
    return F


def e_cca_to_reference(F: np.ndarray, cfg: TheoryWorldConfig) -> float:
    """``e_cca = 1 - ||C||_* / k`` between modality A's table ``F`` (M, k) and the reference."""
    w = build_world(cfg)
    R = cfg.n_nuisance
    q = np.repeat(w.p / R, R)  # population law of A observations: p(s) q(n | s), (M,)
    Fw = whiten(F, q, drop_singular=True, rtol=1e-9)  # (M, k), null directions at 0
    state_mean = Fw.reshape(cfg.n_states, R, -1).mean(axis=1)  # E_n f_A(s, n), (N, k)
    C = state_mean.T @ (w.p[:, None] * w.g_ref)  # (k, k) = E[f_A f_B^T]
    return float(1.0 - np.linalg.svd(C, compute_uv=False).sum() / cfg.k)


def alignment_after(
    cfg: TheoryWorldConfig, rho: float, samples: int, seed: int
) -> dict[str, float]:
    """Train modality A on ``samples`` pairs at good-view fraction ``rho``; measure it.

    Returns
    -------
    dict
        ``score = 1 - e_cca``, ``e_cca``, ``seen`` (fraction of A's observations seen at least
        once).
    """
    if samples < 1:
        raise InputError(f"theory backend: samples must be >= 1, got {samples}")
    rng = np.random.default_rng(seed)
    xa, xb = sample_pairs(cfg, rho, int(samples), rng)
    M = cfg.n_states * cfg.n_nuisance
    F = empirical_embedding(xa, xb, M, cfg.k)
    e = e_cca_to_reference(F, cfg)
    seen = np.unique(np.concatenate([xa, xb])).size / M
    return {"score": 1.0 - e, "e_cca": e, "seen": seen}


def population_pair_law(cfg: TheoryWorldConfig, rho: float) -> np.ndarray:
    """Exact pair law of the mixture policy, ``Pi (x) K_rho`` with ``K_rho = rho q q^T + (1-rho)
    I/R``.

    Shape ``(M, M)``; sums to 1.
    """
    w = build_world(cfg)
    R = cfg.n_nuisance
    K = rho * np.full((R, R), 1.0 / R**2) + (1.0 - rho) * np.eye(R) / R
    return np.kron(w.Pi, K)


def population_e_cca(cfg: TheoryWorldConfig, rho: float) -> float:
    """``e_cca`` of the closed-form JEPA on the exact (infinite-sample) pair law at ``rho``."""
    sol = solve_jepa(population_pair_law(cfg, rho), cfg.k)
    return e_cca_to_reference(sol.embedding, cfg)


def predicted_e_cca(cfg: TheoryWorldConfig, rho: float) -> float:
    """docs/theory.md sec. 5: ``m(rho) / k``, ``m`` = nuisance eigenvalues ``(1 - rho) l_i`` in the
    top k.

    Pure-state eigenvalues are ``l_2..l_N`` (the constant one excluded); with ``n' = n`` the
    bad-view
    nuisance eigenvalues are ``mu_j = 1`` (multiplicity ``R - 1``), giving ``(1 - rho) l_i`` for
    every ``i`` including ``l_1 = 1``. Ties are broken in favour of pure state.
    """
    lam = build_world(cfg).state_eigenvalues
    R = cfg.n_nuisance
    pure = [(v, 0) for v in lam[1:]]
    nuis = [((1.0 - rho) * v, 1) for v in lam for _ in range(R - 1)]
    top = sorted(pure + nuis, key=lambda t: (-t[0], t[1]))[: cfg.k]
    return sum(t[1] for t in top) / cfg.k
