"""Layer search: the reference protocol's maximum over all (layer of A, layer of B) pairs.

Huh et al. report, for two models, the best score over every pair of layers. Each layer's
per-side state (neighbour lists, kernel statistics, SVCCA basis) is computed once, so the search
costs ``L_A + L_B`` preparations and ``L_A * L_B`` cheap pair scores, and the permutation null can
redo the whole search for every permutation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

Score = Callable[[Any, Any, np.ndarray | None], float]


def layer_scores(
    score: Score,
    states_a: Sequence[Any],
    states_b: Sequence[Any],
    perm: np.ndarray | None = None,
    pair: tuple[int, int] | None = None,
) -> np.ndarray:
    """``(L_A, L_B)`` scores of every layer pair (NaN outside ``pair`` when one is fixed)."""
    out = np.full((len(states_a), len(states_b)), np.nan)
    pairs = [pair] if pair is not None else np.ndindex(*out.shape)
    for i, j in pairs:
        out[i, j] = score(states_a[i], states_b[j], perm)
    return out


def best_pair(scores: np.ndarray) -> tuple[float, tuple[int, int]]:
    """The maximum score and its ``(i, j)``; ties go to the first pair in row-major order.

    NaN scores are skipped. (The reference starts from 0 and keeps strict improvements, so it
    returns no pair when every score is <= 0; we return the true maximum.)
    """
    if np.isnan(scores).all():
        return float("nan"), (0, 0)
    flat = int(np.nanargmax(scores))
    i, j = np.unravel_index(flat, scores.shape)
    return float(scores[i, j]), (int(i), int(j))


def resolve_pair(layers: tuple[int, int], shape: tuple[int, int]) -> tuple[int, int]:
    """A possibly negative ``(i, j)`` as indices into ``(L_A, L_B)``; raise if out of range."""
    from prh.errors import InputError

    out = []
    for side, idx, size in zip("AB", layers, shape, strict=True):
        if not -size <= idx < size:
            raise InputError(f"layer {idx} of {side} is out of range: it has {size} layers")
        out.append(idx % size)
    return out[0], out[1]
