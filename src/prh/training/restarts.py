"""Best of N restarts: one recipe under N seeds, the run kept whose embedding has the largest
held-out JEPA objective, chosen with no theory embedding and no labels.

A good-view JEPA's population objective on a ``k``-wide embedding is the sum of its cross-view
eigenvalues ``sum l_i`` (the whitened loss is ``2 (k - sum l_i)`` at its optimum's whitening);
the top-``k`` eigenspace of the pair kernel maximises it (Ky Fan), and a direction spent on a
mode below the cut lowers it by about the two modes' eigenvalue gap. So among restarts of one
recipe, the seed whose embedding reaches the largest ``sum l_i`` on fresh positive pairs of its
own training law is the one nearest the optimum by the loss's own measure. The logged batch
loss cannot make this choice: a batch moves it by more than seeds differ.

On the demo's image recipe this rule picked the seed with the highest theory cc in 3 of 3
choices: two pair draws over eight seeds at 25,600 pairs (its ranking: Spearman 0.62 with theory
cc) and ``prh train --restarts 4`` at 51,200 (docs/training.md, "Choosing a restart without the
theory"). It can do no better than the best seed it is given.

The pairs need a gap to choose by: a world that moves (a lag above 0). On a still world the
pair kernel is ``diag(p)``, every eigenvalue 1, and the objective cannot tell embeddings apart.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from prh.errors import InputError

RESTARTS_FILE = "restarts.json"
DRAW = 777  # the fresh pairs' seed: fixed, so a rerun chooses the same way
DEFAULT_PAIRS = 8192
MIN_PAIRS = 256


@dataclass(frozen=True)
class Restart:
    """One seed's run and its cross-view eigenvalues on the fresh pairs (largest first)."""

    seed: int
    run: Path
    eigenvalues: tuple[float, ...]

    @property
    def objective(self) -> float:
        """``sum l_i``, the JEPA's population objective on the fresh pairs."""
        return float(sum(self.eigenvalues))


@dataclass(frozen=True)
class RestartChoice:
    """Every restart's objective and the one chosen (the largest; a tie goes to the lower seed)."""

    restarts: tuple[Restart, ...]
    pairs: int
    draw: int

    @property
    def chosen(self) -> Restart:
        return max(self.restarts, key=lambda r: (r.objective, -r.seed))

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": "largest sum of cross-view eigenvalues on fresh positive pairs",
            "pairs": self.pairs,
            "draw": self.draw,
            "chosen": self.chosen.run.name,
            "restarts": [
                {
                    "seed": r.seed,
                    "run": r.run.name,
                    "objective": r.objective,
                    "eigenvalues": list(r.eigenvalues),
                }
                for r in self.restarts
            ],
        }


def seed_dir(out: str | Path, seed: int) -> Path:
    """Where restart ``seed`` trains: ``OUT/seed-<seed>``."""
    return Path(out) / f"seed-{seed}"


def check_restarts(cfg: Any, n: int, pairs: int) -> None:
    """Refuse a restarts request before any folder: fewer than 2 restarts, fewer than
    :data:`MIN_PAIRS` pairs, views other than good, a caption corpus or a world that does not
    move, or a ``torchrun`` launch (each line names the problem)."""
    import os

    from prh.training.data import build_world
    from prh.world.registry import moves

    if n < 2:
        raise InputError(f"--restarts {n}: give 2 or more (one seed is a plain run)")
    if pairs < MIN_PAIRS:
        raise InputError(
            f"--restart-pairs {pairs}: at least {MIN_PAIRS} fresh pairs are needed to estimate "
            "the cross-view eigenvalues"
        )
    if cfg.views != "good":
        raise InputError(
            f"--restarts chooses by the good views' own objective; --views {cfg.views} trains "
            "on other pairs"
        )
    if cfg.corpus:
        raise InputError(
            f"--restarts needs a world that moves: --corpus {cfg.corpus} has no pair kernel to "
            "choose by (train with --world moving)"
        )
    if not moves(build_world(cfg)):
        raise InputError(
            f"--restarts needs a world that moves: on {cfg.world or 'cave'!r} the pair kernel has "
            "no gap, so the objective cannot tell restarts apart (train with --world moving)"
        )
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise InputError(
            "--restarts trains its seeds one after another in one process; under torchrun, "
            "train each seed as its own run"
        )


def heldout_eigenvalues(run: Any, pairs: int, draw: int = DRAW) -> tuple[float, ...]:
    """The run's cross-view eigenvalues (all of its embedding's, largest first) on ``pairs``
    fresh positive pairs of its training law (:func:`prh.training.moving.run_positive_pairs`)."""
    from prh.bridge.spectral import cross_view_spectrum
    from prh.training.moving import run_positive_pairs

    a, b = run_positive_pairs(run, pairs, seed=draw).embedding()
    spec = cross_view_spectrum(np.asarray(a, np.float64), np.asarray(b, np.float64))
    return tuple(float(v) for v in spec.eigenvalues)


def choose(runs: Sequence[tuple[int, Path]], pairs: int, draw: int = DRAW) -> RestartChoice:
    """Score every ``(seed, run folder)`` on the same fresh pairs and choose."""
    restarts = tuple(Restart(s, Path(r), heldout_eigenvalues(r, pairs, draw)) for s, r in runs)
    return RestartChoice(restarts, pairs, draw)


def run_restarts(
    train_one: Callable[[int, Path], Path],
    seeds: Sequence[int],
    out: str | Path,
    pairs: int,
    report: Callable[[str], None] = lambda _: None,
) -> RestartChoice:
    """Train every seed with ``train_one(seed, folder)`` into ``OUT/seed-<seed>``, choose, and
    write ``OUT/restarts.json`` (atomically, last: its presence means the choice was made)."""
    from prh.io import write_json

    runs = [(s, Path(train_one(s, seed_dir(out, s)))) for s in seeds]
    choice = choose(runs, pairs)
    for r in choice.restarts:
        report(f"seed {r.seed}: sum l_i {r.objective:.4f} on {pairs} fresh pairs")
    write_json(Path(out) / RESTARTS_FILE, choice.to_dict())
    return choice


def same_recipe(stored: dict[str, Any], wanted: dict[str, Any]) -> str | None:
    """The first key where a seed folder's stored recipe differs from this command's (``None``
    when they agree), both as the flat keys ``--config`` and ``--set`` take (``lr``,
    ``model.embed_dim``): a rerun continues only the recipe it started."""
    return next((k for k in wanted if stored.get(k) != wanted[k]), None)
