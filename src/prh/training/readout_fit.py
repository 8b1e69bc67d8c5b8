"""Measuring a JEPA run's read-out on its own pairs (:mod:`prh.training.readout` stores and
applies it): the refusals first, then the spectrum of fresh positive pairs of its training law."""

from __future__ import annotations

from typing import Any

from prh.errors import InputError
from prh.training.readout import DRAW, MIN_PAIRS_PER_DIM, PAIRS, Readout, readout_of_pairs


def check_readout(run: Any, k: int, pairs: int) -> None:
    """Refuse, in one line, a read-out that cannot be measured: ``k`` not in ``1..w``, too few
    pairs, a next-token run (no JEPA embedding), a run on a still world or a caption corpus (no
    lag pairs: two views of one state have a flat spectrum)."""
    from prh.training.data import build_world
    from prh.world.registry import moves

    w = int(run.model_config.embed_dim)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= w:
        raise InputError(f"--k {k!r}: expected an integer in 1..{w} (the run's embedding width)")
    least = MIN_PAIRS_PER_DIM * w
    if isinstance(pairs, bool) or not isinstance(pairs, int) or pairs < least:
        raise InputError(f"--pairs {pairs!r}: need at least {least} ({MIN_PAIRS_PER_DIM} per "
                         f"embedding direction of a {w}-wide run)")  # fmt: skip
    if run.config.is_lm:
        raise InputError(f"{run.path}: a next-token run has no JEPA embedding to read out")
    if run.config.corpus is not None or not moves(build_world(run.config)):
        raise InputError(f"{run.path}: a read-out needs a moving world's lag pairs; this run's "
                         f"world ({run.config.world or 'a corpus'}) has none")  # fmt: skip


def fit_readout(run: Any, k: int, pairs: int = PAIRS, draw: int = DRAW) -> Readout:
    """The top-``k`` cross-view read-out of a JEPA ``run`` (loaded without a read-out), measured
    on ``pairs`` fresh positive pairs of its training law drawn with seed ``draw``."""
    from prh.training.moving import run_positive_pairs

    check_readout(run, k, pairs)
    a, b = run_positive_pairs(run, pairs, seed=draw).embedding()
    return readout_of_pairs(a, b, k, draw)
