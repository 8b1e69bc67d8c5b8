"""A planted moving world for spectral pair-free alignment: a product of reversible path chains.

The state is a tuple of factors; each step changes factor ``j`` with probability ``w_j`` by a
reversible walk on a path (random conductances, random stationary law, so no reflection
symmetry and every eigenfunction is skewed). A positive pair is two states ``lag`` steps apart,
``Pi = p Q^D``; its top ``k`` non-constant eigenfunctions ``g*`` (white under ``p``) are what
a whitened JEPA of any modality learns up to a rotation (docs/theory.md sec. 8). Features of
modality ``m`` are ``g*(s) R_m + noise``: :func:`planted_features`.

:func:`probe_world` is the 960-state design of the probe ``probes/spectral_pair_free.py``
(the same draws from seed 101: 4 factors of 8, 4, 6 and 5 values, k = 8), with one knob,
``rate_scale``, that slows every factor's walk (``Q_j -> I + c (Q_j - I)``) and so moves the
top eigenvalues towards 1 and closer together. :func:`twin_world` has two identical factors,
so its top eigenvalues come in exactly equal pairs: no rotation inside them is identifiable.

Pure numpy (and :mod:`prh.theory.markov`); every function is a pure function of its seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from prh.errors import InputError
from prh.theory.markov import (
    ReversibleChain,
    dense_pair_kernel,
    pair_spectrum,
    reversible_chain,
    theory_embedding,
)

__all__ = [
    "PlantedWorld",
    "path_chain",
    "planted_features",
    "probe_world",
    "product_world",
    "twin_world",
]

PROBE_SIZES = (8, 4, 6, 5)  # colour, size, shape, position values of the probe's world
PROBE_SEED = 101  # the probe's design seed (rates, weights, lag, conductances, laws)


def path_chain(n: int, rate: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A reversible walk on a path of ``n`` values: ``(Q (n, n), pi (n,))``.

    Edge ``i - i+1`` carries flow ``pi_i Q_{i,i+1} = rate c_i min(pi_i, pi_{i+1})`` with
    conductances ``c ~ U(0.3, 1)`` and a stationary law ``pi ~ U(0.5, 1.5)`` normalised, so
    detailed balance holds by construction and no reflection maps the chain to itself.
    """
    if n < 2 or not 0.0 < rate <= 1.0:
        raise InputError(f"path chain: need n >= 2 and rate in (0, 1], got n={n}, rate={rate}")
    c = rng.uniform(0.3, 1.0, n - 1)
    pi = rng.uniform(0.5, 1.5, n)
    pi /= pi.sum()
    q = np.zeros((n, n))
    for i in range(n - 1):
        f = rate * c[i] * min(pi[i], pi[i + 1])
        q[i, i + 1], q[i + 1, i] = f / pi[i], f / pi[i + 1]
    q[np.diag_indices(n)] = 1.0 - q.sum(1)
    return q, pi


@dataclass(frozen=True, eq=False)
class PlantedWorld:
    """A finite world with a reversible chain, its lag and the theory's embedding.

    Attributes
    ----------
    chain : ReversibleChain
        The ``D``-step chain ``Q^D`` and its stationary law ``p`` (one step of it is one
        positive pair).
    lag : int
        ``D``: steps between the two halves of a positive pair.
    k : int
        Components of the embedding.
    eigenvalues : np.ndarray
        ``(k + 1,)`` the top ``k + 1`` non-constant eigenvalues of ``T_Pi`` (``l_2 ..``).
    embedding : np.ndarray
        ``(N, k)`` ``g*`` of every state, orthonormal in ``L2(p)``.
    cond_cdf : np.ndarray
        ``(N, N)`` row CDFs of ``Q^D`` (the second half given the first).
    """

    chain: ReversibleChain
    lag: int
    k: int
    eigenvalues: np.ndarray
    embedding: np.ndarray
    cond_cdf: np.ndarray

    @property
    def num_states(self) -> int:
        return self.chain.num_states

    def separation(self) -> float:
        """Smallest distance between adjacent ones of the top ``k`` eigenvalues."""
        return float((-np.diff(self.eigenvalues[: self.k])).min()) if self.k > 1 else np.inf

    def gap(self) -> float:
        """``l_{k+1} - l_{k+2}``: the gap after the top ``k``."""
        return float(self.eigenvalues[self.k - 1] - self.eigenvalues[self.k])

    def states(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` states drawn from ``p``, ``(n,)`` int64."""
        cdf = np.cumsum(self.chain.p)
        return np.minimum(np.searchsorted(cdf, rng.random(n) * cdf[-1], side="right"),
                          self.num_states - 1).astype(np.int64)  # fmt: skip

    def pairs(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``n`` positive pairs ``s ~ p``, ``s' ~ Q^D(s, .)``, ``(n,)`` each."""
        s = self.states(n, rng)
        u = rng.random(n)
        t = np.empty(n, dtype=np.int64)
        for lo in range(0, n, 4096):  # (block, N) CDF rows at a time: bounded memory
            cdf = self.cond_cdf[s[lo : lo + 4096]]
            t[lo : lo + 4096] = (cdf < u[lo : lo + 4096, None] * cdf[:, -1:]).sum(1)
        return s, np.minimum(t, self.num_states - 1)


def product_world(
    factors: Sequence[tuple[np.ndarray, np.ndarray]],
    weights: Sequence[float],
    lag: int,
    k: int,
) -> PlantedWorld:
    """The product chain ``Q = sum_j w_j Q_j (x) I_rest`` of reversible factor chains.

    Parameters
    ----------
    factors : sequence of (Q_j, pi_j)
        Each factor's dense chain and stationary law.
    weights : sequence of float
        ``w_j``, the probability that a step moves factor ``j`` (summing to 1).
    lag : int
        ``D``.
    k : int
        Components kept; refused (one line) when no gap follows them.

    The one-step ``Q`` may have small negative diagonal entries (the probe's rates let a factor
    leave a value with probability above 1 when both neighbours pull); its ``D``-step power is
    checked to be a proper chain, and the world is that chain, with the same pair law ``p Q^D``
    and spectrum ``mu^D``.
    """
    if len(factors) != len(weights) or not factors:
        raise InputError(f"product world: {len(factors)} factors but {len(weights)} weights")
    sizes = [len(p) for _, p in factors]
    total = int(np.prod(sizes))
    q = np.zeros((total, total))
    for j, ((qj, _), wj) in enumerate(zip(factors, weights)):
        left, right = int(np.prod(sizes[:j])), int(np.prod(sizes[j + 1 :]))
        q += wj * np.kron(np.kron(np.eye(left), qj), np.eye(right))
    p = factors[0][1]
    for _, pj in factors[1:]:
        p = np.kron(p, pj)
    qd = np.linalg.matrix_power(q, int(lag))  # the D-step matrix: a chain even where q is not
    if qd.min() < -1e-12:
        raise InputError(
            f"product world: the {lag}-step matrix has a negative entry ({qd.min():.3g}); "
            "it is no chain (lower the rates)"
        )
    chain = reversible_chain(np.maximum(qd, 0.0), p / p.sum())
    spec = pair_spectrum(chain, 1, k + 1)  # T_Pi of Pi = p Q^D: one step of the D-step chain
    g = theory_embedding(spec, k)
    pi = dense_pair_kernel(chain, 1)  # (N, N) = p Q^D, symmetrised
    cond = np.cumsum(pi / pi.sum(1, keepdims=True), axis=1)
    return PlantedWorld(chain, lag, k, spec.nontrivial()[: k + 1].copy(), g, cond)


def _probe_design() -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray, int]:
    """The probe's factor chains, weights and lag, drawn from :data:`PROBE_SEED` in its order."""
    rng = np.random.default_rng(PROBE_SEED)
    rates = rng.uniform(0.2, 1.0, len(PROBE_SIZES))
    w = rng.dirichlet(np.ones(len(PROBE_SIZES)))
    lag = int(rng.integers(1, 30))
    factors = [path_chain(n, r, rng) for n, r in zip(PROBE_SIZES, rates)]
    return factors, w, lag


def probe_world(rate_scale: float = 1.0, k: int = 8) -> PlantedWorld:
    """The probe's 960-state world; ``rate_scale`` in (0, 1] slows every factor's walk.

    At ``rate_scale = 1`` the top 8 eigenvalues are at least 0.033 apart and the gap after them
    is 0.087 (the probe's figures); smaller scales push them towards 1 and together.
    """
    if not 0.0 < rate_scale <= 1.0:
        raise InputError(f"probe world: rate_scale must be in (0, 1], got {rate_scale}")
    factors, w, lag = _probe_design()
    slowed = [(np.eye(len(pi)) + rate_scale * (q - np.eye(len(pi))), pi) for q, pi in factors]
    return product_world(slowed, w, lag, k)


def twin_world(
    n: int = 12, rate: float = 0.4, lag: int = 3, k: int = 3, seed: int = 0
) -> PlantedWorld:
    """Two identical path-chain factors moved with equal weight: ``n^2`` states whose
    single-factor eigenvalues come in exactly equal pairs (``v_i (x) 1`` and ``1 (x) v_i``), so
    the rotation inside each pair is not identifiable from any positive pairs. At the defaults
    the top 3 are ``l_1 = l_2`` (the slowest eigenvector of either factor) and ``l_3`` (their
    product), then a gap."""
    q, pi = path_chain(n, rate, np.random.default_rng(seed))
    return product_world([(q, pi), (q, pi)], [0.5, 0.5], lag, k)


def planted_features(
    world: PlantedWorld,
    states: np.ndarray,
    rotation: np.ndarray,
    noise: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Features ``g*(s) R + noise * N(0, I)`` of ``states``: ``(n, k)`` for ``R (k, k)``."""
    g = world.embedding[np.asarray(states)]
    return g @ rotation + noise * rng.standard_normal((len(g), rotation.shape[1]))
