"""The training run measured against the theory embedding while it trains (issue 23).

``TrainConfig.eval_theory`` names a feature file of the theory embedding ``g*`` of some states
of the run's world (``prh world spectrum --k 8 --scenes ... --out FILE``, ids
``scene_<i>``). Every ``eval_every`` steps the run embeds one caption (or render) per state, as
for ``eval_features``, and logs ``eval_theory_cc``: the mean held-out canonical correlation of
its last layer with ``g*``, width-fair (:func:`prh.metrics.theory_cca.width_fair_cc`: each side
read through its top ``k`` principal directions; the measure of the demo's theory step), and
``eval_theory_cc_raw`` (top 64 directions, the read-out before issue 31): canonical directions
fitted on the file's states of the world's *training* split, scored on its states of the *test*
split. The world's own split decides which is which, so one
file serves every run of one world.

Layer: glue between :mod:`prh.training.lifecycle` and :mod:`prh.metrics.theory_cca`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from prh.errors import InputError
from prh.features import last_layer
from prh.training.config import TrainConfig
from prh.training.distributed import DistInfo

N_BOOT = 1  # the curve needs the point only (its interval comes from seeds)


@dataclass(frozen=True)
class TheoryTarget:
    """The theory rows of one file and which of them fit the canonical directions.

    Attributes
    ----------
    g : ndarray, shape (N, k)
        ``g*`` of each state of the file.
    fit : ndarray of bool, shape (N,)
        True for a state of the world's training split (fitting), False for a test state
        (scored).
    items : sequence
        The task's input for each state (one caption or render).
    """

    g: np.ndarray
    fit: np.ndarray
    items: Sequence[Any]


def theory_target(task: Any, cfg: TrainConfig) -> TheoryTarget | None:
    """The :class:`TheoryTarget` of ``cfg.eval_theory`` (None without it).

    Raises
    ------
    InputError
        One line naming the file: a corpus run, ids that are not ``scene_<i>`` states of the
        world, non-finite rows, or too few states of either split.
    """
    if not cfg.eval_theory:
        return None
    from prh.features import load_features
    from prh.world import has_theory, make_world
    from prh.world.ids import parse_scene_id

    where = f"--eval-theory {cfg.eval_theory}"
    if cfg.world is None:
        raise InputError(f"{where}: needs a world run (--world), not a corpus")
    target = load_features(cfg.eval_theory)
    if target.ids is None:
        raise InputError(f"{where}: the file has no ids")
    g = np.asarray(target.features, dtype=np.float64)
    g = g[:, -1, :] if g.ndim == 3 else g
    bad = ~np.isfinite(g).all(1)
    if bad.any():
        raise InputError(f"{where}: row {int(bad.argmax())} holds NaN or infinity")
    world = make_world(cfg.world, seed=cfg.world_seed)
    if not has_theory(world):  # the still cave: Pi = diag(p), no gap at any k
        raise InputError(
            f"{where}: world {cfg.world} has no theory embedding (its pair kernel has no gap); "
            "--eval-theory needs a world that moves (--world moving or moving-literal)"
        )
    states = []
    for row, s in enumerate(target.ids):
        i = parse_scene_id(s)
        if i is None or i >= world.num_scenes:
            raise InputError(
                f"{where}: row {row} id {s!r} is not a state scene_<i> of world {cfg.world} "
                f"(0..{world.num_scenes - 1})"
            )
        states.append(i)
    fit = np.isin(np.asarray(states), np.asarray(world.split("train")))
    k = g.shape[1]
    if fit.sum() <= k + 1 or (~fit).sum() < 3:
        raise InputError(
            f"{where}: {int(fit.sum())} training-split and {int((~fit).sum())} test-split "
            f"states; expected more than {k + 1} and at least 3 (k = {k})"
        )
    return TheoryTarget(g, fit, task.eval_items(cfg, list(target.ids)))


def theory_point(features: np.ndarray, target: TheoryTarget, seed: int = 0) -> dict[str, float]:
    """``{"eval_theory_cc", "eval_theory_cc_raw"}`` of ``features`` (one row per state of
    ``target``) against ``g*``: the mean held-out canonical correlation, width-fair (each side
    read through its top ``k`` principal directions; the headline) and raw (top
    :data:`prh.metrics.theory_cca.RAW_DIM`) (module docstring)."""
    from prh.metrics.theory_cca import fair_and_raw_cc

    x, g, fit = last_layer(features), target.g, target.fit
    fair, raw = fair_and_raw_cc(x[fit], g[fit], x[~fit], g[~fit], components=g.shape[1],
                                n_boot=N_BOOT, seed=seed)  # fmt: skip
    return {"eval_theory_cc": float(fair.mean), "eval_theory_cc_raw": float(raw.mean)}


def theory_eval(
    encode: Callable[[Sequence[Any]], np.ndarray], target: TheoryTarget, info: DistInfo
) -> Callable[[int], dict[str, float]]:
    """``eval_theory_cc`` of ``encode(target.items)`` at each evaluation, on rank 0."""

    def evaluate(step: int) -> dict[str, float]:
        if not info.is_main:
            return {}
        return theory_point(encode(target.items), target)

    return evaluate
