"""Finite worlds: states, a prior, and any number of modalities (docs/theory.md sec. 1).

A modality renders an observation ``x = r_m(s, n)`` from a state ``s`` and a nuisance
``n ~ q_m(. | s)``; ``r_m`` is injective on ``(s, n)`` (nothing is lost), here a random
permutation of the ``N * K_m`` pairs. View policies (``prh.theory.views``) build pair laws in the
canonical "grid" order ``s * K + n``; :meth:`Modality.to_observations` moves them to observation
order and :meth:`Modality.to_grid` moves an embedding back, so that every check goes through
the renderings instead of assuming them away.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from prh.errors import InputError


@dataclass(frozen=True, eq=False)
class Modality:
    """One way of observing the world.

    Attributes
    ----------
    name : str
    nuisance : ndarray, shape (N, K)
        ``q(n | s)``, rows sum to 1, entries positive.
    render : ndarray of int, shape (N, K)
        ``render[s, n]``: the observation index of ``(s, n)``; a permutation of ``range(N * K)``.
    """

    name: str
    nuisance: np.ndarray
    render: np.ndarray

    @property
    def num_observations(self) -> int:
        """``M = N * K``."""
        return int(self.render.size)

    def to_observations(self, W_grid: np.ndarray) -> np.ndarray:
        """Move a pair law (M, M) from grid order ``s * K + n`` to observation order."""
        r = self.render.ravel()
        W = np.empty_like(W_grid)
        W[np.ix_(r, r)] = W_grid
        return W

    def to_grid(self, F: np.ndarray) -> np.ndarray:
        """Embedding in observation order (M, k) -> by state and nuisance (N, K, k)."""
        return np.asarray(F)[self.render]


@dataclass(frozen=True, eq=False)
class FiniteWorld:
    """States with a prior and a tuple of modalities."""

    prior: np.ndarray  # (N,)
    modalities: tuple[Modality, ...]

    @property
    def num_states(self) -> int:
        return int(self.prior.size)


def random_nuisance(
    num_states: int,
    size: int,
    rng: np.random.Generator,
    state_dependent: bool = True,
    concentration: float = 2.0,
) -> np.ndarray:
    """A nuisance law ``q(n | s)``, shape (N, K), entries positive, rows summing to 1."""
    rows = num_states if state_dependent else 1
    q = rng.dirichlet(np.full(size, concentration), size=rows)
    q = np.maximum(q, 1e-3 / size)
    q = q / q.sum(axis=1, keepdims=True)
    return np.broadcast_to(q, (num_states, size)).copy()


def random_world(
    prior: np.ndarray,
    nuisance_sizes: Sequence[int],
    seed: int | np.random.Generator = 0,
    state_dependent: bool = True,
) -> FiniteWorld:
    """A world with one modality per entry of ``nuisance_sizes``.

    Each modality has its own random nuisance law (state-dependent unless told otherwise) and a
    random injective rendering.
    """
    rng = np.random.default_rng(seed)
    prior = np.asarray(prior, dtype=np.float64)
    if prior.ndim != 1 or prior.min() <= 0 or abs(prior.sum() - 1) > 1e-9:
        raise InputError("prior: expected a positive vector summing to 1")
    if len(nuisance_sizes) < 1 or min(nuisance_sizes) < 1:
        raise InputError(f"nuisance sizes: expected positive integers, got {list(nuisance_sizes)}")
    N = prior.size
    mods = []
    for i, K in enumerate(nuisance_sizes):
        q = random_nuisance(N, int(K), rng, state_dependent=state_dependent)
        render = rng.permutation(N * int(K)).reshape(N, int(K))
        mods.append(Modality(name=f"m{i}", nuisance=q, render=render))
    return FiniteWorld(prior=prior, modalities=tuple(mods))
