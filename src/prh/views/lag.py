"""Good views on a moving world: two observations of one trajectory ``D`` steps apart.

A good pair of the moving cave (:class:`~prh.world.moving.MovingWorld`) is two frames of one run
of its chain at the fixed lag ``D`` (the world's ``lag``): state pair law ``Pi = p Q^D``
(docs/theory.md sec. 8), each frame observed under its own, independent nuisance (wording
seed, render seed). A bad pair is two distortions of ONE observation of one state, as on the
still world. The lag is fixed, not drawn: the world's spectrum, its gap at ``k = 8`` and
:meth:`~prh.world.moving.MovingWorld.theory_embedding` are those of ``p Q^D`` for this one ``D``.
(A lag drawn from a law ``w`` would give ``p sum_d w_d Q^d``: the same eigenfunctions in the same
order, since every ``mu >= 0``, but other eigenvalues and another gap than the measured one.)

A run trains on a set of states (the train split): :class:`LagPairs` is ``Pi`` restricted to
them, ``Pi(s, s') 1[s, s' in the set]``, renormalised: still symmetric, a pair law whose first
frame has law ``m(s) ~ p(s) Q^D(s, set)``. Its top eigenfunctions are the theory's up to
round-off of the split (held-out CCA 0.999 against ``g*`` at the default world, 10% held out),
and no held-out state is ever observed in training.

Layer: pure numpy over a world's dense kernel.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from prh.errors import InputError
from prh.world.registry import SpectralWorld

SLOTS = 1 << 20  # items of a text source: first-frame states laid out by the law m


class LagPairs:
    """Lag-``D`` state pairs of a moving world restricted to ``scene_ids`` (see the module).

    Parameters
    ----------
    world : MovingWorld
        A world with ``pair_kernel(lag)`` (``p Q^D``, dense).
    scene_ids : sequence of int
        The states both frames are drawn from (at least 2, distinct).
    lag : int, optional
        ``D`` (default: the world's ``lag``).
    """

    def __init__(self, world, scene_ids: Sequence[int], lag: int | None = None) -> None:
        if not isinstance(world, SpectralWorld):
            raise InputError(f"lag pairs: world {type(world).__name__} has no chain (no lag)")
        ids = world.check_ids(scene_ids)
        if ids.size < 2 or np.unique(ids).size != ids.size:
            raise InputError(f"lag pairs: need >= 2 distinct states, got {ids.size}")
        K = world.pair_kernel(lag)[np.ix_(ids, ids)]  # (n, n) symmetric
        rows = K.sum(axis=1)
        if not np.all(rows > 0):
            raise InputError("lag pairs: a state has no partner inside the set at this lag")
        self.scene_ids = ids
        self.weights = rows / rows.sum()  # (n,) law m of the first frame
        self._first = np.cumsum(self.weights)
        self._cond = np.cumsum(K / rows[:, None], axis=1)  # (n, n) row CDFs of the second frame

    def __len__(self) -> int:
        return int(self.scene_ids.size)

    def first(self, u: np.ndarray) -> np.ndarray:
        """First-frame rows (indices into ``scene_ids``) of uniforms ``u`` in [0, 1)."""
        return search_cdf(self._first, np.asarray(u, dtype=np.float64))

    def second(self, rows: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Second-frame rows given first-frame ``rows``: ``s' ~ Q^D(s, .)`` inside the set."""
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        u = np.asarray(u, dtype=np.float64).reshape(-1)
        out = np.empty(rows.size, dtype=np.int64)
        for i, (r, x) in enumerate(zip(rows, u)):
            out[i] = search_cdf(self._cond[r], np.array([x]))[0]
        return out

    def slots(self, n: int = SLOTS) -> np.ndarray:
        """``n`` first-frame rows laid out by ``m`` (row ``r`` fills about ``n m_r`` of them,
        the stratified quantiles ``(i + 1/2) / n``): a uniform slot is a first frame."""
        return self.first((np.arange(n) + 0.5) / n)

    def draw(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``n`` pairs ``(s, s')`` as rows, from ``rng`` (two uniforms a pair)."""
        u = rng.random((2, n))
        first = self.first(u[0])
        return first, self.second(first, u[1])


def lag_rows(
    pairs: LagPairs | None, items: np.ndarray, seed: int, i: int
) -> tuple[np.ndarray, np.ndarray]:
    """An image batch's first and second frames (rows): ``items`` itself twice without
    ``pairs`` (the still world: one state); else ``(s, s')`` lag pairs drawn from their own
    stream of ``(seed, i)``, so a still world's draws are untouched."""
    if pairs is None:
        return items, items
    rng = np.random.default_rng([seed, int(i), 0x1A65])
    u = rng.random((2, items.size))
    first = pairs.first(u[0])
    return first, pairs.second(first, u[1])


def search_cdf(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse CDF: the first index whose cumulative weight exceeds ``u * total``."""
    idx = np.searchsorted(cdf, np.asarray(u, dtype=np.float64) * cdf[-1], side="right")
    return np.minimum(idx, cdf.size - 1).astype(np.int64)


class SlotSource:
    """The source protocol's item methods for a source whose items are slots laid out by a law
    over states: subclasses set ``world``, ``_slots`` (item -> row) and ``_scene_ids`` (row ->
    state) and define ``min_captions`` and ``draw``."""

    world: Any
    _slots: np.ndarray
    _scene_ids: np.ndarray

    @property
    def num_items(self) -> int:
        return int(self._slots.size)

    def item_id(self, j: int) -> str:
        return self.world.image_id(int(self.state_of(np.array([j]))[0]))

    def state_of(self, items: np.ndarray) -> np.ndarray:
        """The state of each item (a narration's first frame)."""
        return self._scene_ids[self._slots[np.asarray(items)]].astype(np.int64)


class MovingCaptionSource(SlotSource):
    """A caption source over lag pairs: item ``j`` is a first frame ``s_j`` (items laid out by
    the first-frame law, :meth:`LagPairs.slots`); a good draw (``n = 2``) is a caption of
    ``s_j`` and one of ``s' ~ Q^D(s_j, .)``, worded independently, so the good rows of a
    :class:`~prh.views.text.ViewDataset` are the world's pair kernel; a one-caption draw (bad,
    next-token) is a caption of ``s_j``. ``wordings``: ``None`` fresh wordings each draw, ``W``
    a fixed pool of ``W`` per state (``world.captions(s, W, seed=pool_seed)``, a corpus's)."""

    label = "moving source"

    def __init__(
        self, world, pairs: LagPairs, wordings: int | None = None, pool_seed: int = 0
    ) -> None:
        if wordings is not None and wordings < 1:
            raise InputError(f"{self.label}: wordings must be >= 1, got {wordings}")
        self.world = world
        self.pairs = pairs
        self.wordings = wordings
        self.pool_seed = pool_seed
        self._slots = pairs.slots()
        self._scene_ids = pairs.scene_ids

    def min_captions(self) -> int:
        return 2**31  # the two sides are two states: never more than one caption of each

    def draw(self, j: int, n: int, rng: np.random.Generator) -> tuple[list[str], list[int]]:
        """One caption of ``s_j`` (``n = 1``) or of ``s_j`` and its lag partner (``n = 2``)."""
        if n not in (1, 2):
            raise InputError(f"{self.label}: draws 1 or 2 captions, got {n}")
        row = int(self._slots[j])
        rows = [row] if n == 1 else [row, int(self.pairs.second([row], [rng.random()])[0])]
        out = [self._caption(int(self.pairs.scene_ids[r]), rng) for r in rows]
        return [c for c, _ in out], [w for _, w in out]

    def _caption(self, state: int, rng: np.random.Generator) -> tuple[str, int]:
        """A caption of ``state`` and its nuisance id (pool index or fresh wording seed)."""
        if self.wordings is None:
            w = int(rng.integers(0, 2**55))
            return self.world.captions(state, 1, seed=w)[0], w << 3
        k = int(rng.integers(self.wordings))
        pool = self.world.captions(state, self.wordings, seed=self.pool_seed)
        return pool[k], state * self.wordings + k
