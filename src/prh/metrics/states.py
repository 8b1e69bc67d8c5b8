"""Per-side states of a score matrix, prepared once and shared by every metric and every cell.

A side's state (a layer's neighbour lists, its kernel statistics, its SVCCA basis) depends on that
layer alone, not on the other side of a cell, so one preparation serves every cell the layer
appears in and every metric of the same *state kind* (:attr:`prh.metrics.api.Metric.state`): the
four neighbour-list metrics share one search per layer, linear CKA and unbiased CKA one Gram per
layer. :class:`StateCache` keeps them by ``(key, layer)`` and counts the preparations, from which
:func:`work` tallies the matrix's searches and Gram products.

Kernel states hold the layer's float64 rows (and, up to ``N = 1448``, its ``N x N`` Gram), so a
cache may be given a byte budget: past it the least recently used states are dropped (and
prepared again if asked for), which costs time, never a different score.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, fields, is_dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Work:
    """What preparing a matrix's states cost.

    Attributes
    ----------
    searches : int
        Exact kNN searches (each one tiled half Gram ``X X^T`` of one layer).
    gemms : int
        Other per-layer Gram products: a kernel metric's ``X X^T`` (or ``X^T X``) of one layer.
        The cross products of CKA's layer pairs (``A^T B``, per pair and null draw) are not
        counted: no sharing removes them.
    """

    searches: int = 0
    gemms: int = 0

    def __add__(self, other: Work) -> Work:
        return Work(self.searches + other.searches, self.gemms + other.gemms)

    def scaled(self, times: int) -> Work:
        """This work done ``times`` times."""
        return Work(self.searches * times, self.gemms * times)

    def to_dict(self) -> dict[str, int]:
        return {"searches": self.searches, "gemms": self.gemms}


def nbytes(state: Any) -> int:
    """Bytes of the arrays a state holds (an array, a tuple of them, or a dataclass of them)."""
    if isinstance(state, np.ndarray):
        return state.nbytes
    if isinstance(state, (tuple, list)):
        return sum(nbytes(s) for s in state)
    if is_dataclass(state):
        return sum(nbytes(getattr(state, f.name)) for f in fields(state))
    return 0


class StateCache(dict):
    """States by ``(key, layer)``; counts each preparation stored and, with a ``budget`` in bytes,
    drops the least recently used states beyond it (never the one just stored).

    Attributes
    ----------
    prepared : int
        States stored so far (a state dropped and prepared again counts twice: it was made twice).
    """

    def __init__(self, budget: int | None = None) -> None:
        super().__init__()
        self.budget, self.used, self.prepared = budget, 0, 0

    def __getitem__(self, key: Hashable) -> Any:
        value = super().pop(key)
        super().__setitem__(key, value)  # most recently used last
        return value

    def __setitem__(self, key: Hashable, value: Any) -> None:
        if key in self:
            self.used -= nbytes(super().pop(key))
        super().__setitem__(key, value)
        self.prepared += 1
        self.used += nbytes(value)
        while self.budget is not None and self.used > self.budget and len(self) > 1:
            oldest = next(iter(self))
            self.used -= nbytes(super().pop(oldest))


def work(kinds: Iterable[tuple[Work, StateCache]]) -> Work:
    """The matrix's work: each cache's preparations times the work of one, summed."""
    total = Work()
    for one, cache in kinds:
        total = total + one.scaled(cache.prepared)
    return total
