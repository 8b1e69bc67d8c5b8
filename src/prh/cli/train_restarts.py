"""``prh train --restarts N``: train seeds ``SEED .. SEED+N-1`` into ``OUT/seed-S`` and keep the
one with the largest held-out JEPA objective (:mod:`prh.training.restarts`).

Text and image/sketch runs share it: each passes its own ``train_one(cfg, folder, resume)``,
``stored(folder)`` (a seed folder's configs) and ``recipe(configs)`` (configs as the flat keys
``--config`` reads back: ``flat_config``, ``flat_image_config``). A rerun of the same command
continues the seeds it finds (finished ones are loaded, started ones resume from their
checkpoint), so a stopped N-seed job loses at most one seed's unsaved steps; a seed folder of
another recipe is refused.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from prh.cli._args import positive_int
from prh.errors import InputError

TrainOne = Callable[[Any, Path, str], Path]


def add_restart_arguments(g: argparse._ArgumentGroup) -> None:
    from prh.training.restarts import DEFAULT_PAIRS, MIN_PAIRS

    g.add_argument("--restarts", type=positive_int, metavar="N", help="train seeds SEED .. "
                   "SEED+N-1 into OUT/seed-S and keep the one whose embedding has the largest "
                   "held-out JEPA objective (sum of cross-view eigenvalues on fresh pairs; good "
                   "views on a moving world); prints the chosen run")  # fmt: skip
    g.add_argument("--restart-pairs", type=positive_int, metavar="N", help="fresh positive "
                   f"pairs the objective is measured on (default {DEFAULT_PAIRS}, at least "
                   f"{MIN_PAIRS})")  # fmt: skip


def check_restart_flags(args: argparse.Namespace) -> None:
    """``--restart-pairs`` needs ``--restarts``; ``--resume``, ``--print-config`` take neither."""
    if args.restart_pairs is not None and args.restarts is None:
        raise InputError("--restart-pairs applies to --restarts N")
    if args.restarts is not None and (args.resume or args.print_config):
        flag = "--resume" if args.resume else "--print-config"
        raise InputError(f"--restarts starts new runs; {flag} takes one run (rerun the same "
                         "--restarts command to continue its seeds)")  # fmt: skip


def run_restarts(
    args: argparse.Namespace,
    configs: Sequence[Any],
    train_one: TrainOne,
    stored: Callable[[Path], Sequence[Any]],
    recipe: Callable[[Sequence[Any]], dict[str, Any]],
) -> int:
    """Train, choose and print the chosen run. ``configs``: the run's configs, the
    :class:`~prh.training.TrainConfig` first (its seed is the first restart's)."""
    from prh.training import restarts

    cfg, n = configs[0], args.restarts
    pairs = args.restart_pairs or restarts.DEFAULT_PAIRS
    restarts.check_restarts(cfg, n, pairs)
    seeds = list(range(cfg.seed, cfg.seed + n))

    def seeded(seed: int) -> list[Any]:
        return [dataclasses.replace(cfg, seed=seed), *configs[1:]]

    modes = plan(Path(args.out), seeds, lambda s: recipe(seeded(s)), lambda f: recipe(stored(f)))

    def one(seed: int, folder: Path) -> Path:
        return train_one(seeded(seed)[0], folder, modes[seed])

    choice = restarts.run_restarts(one, seeds, args.out, pairs, report=_say)
    _say(f"chose seed {choice.chosen.seed} (OUT/{restarts.RESTARTS_FILE} lists every seed)")
    print(choice.chosen.run)
    return 0


def plan(
    out: Path,
    seeds: list[int],
    wanted: Callable[[int], dict[str, Any]],
    stored: Callable[[Path], dict[str, Any]],
) -> dict[int, str]:
    """Each seed's resume mode: ``"never"`` for a new folder, ``"auto"`` for one this command
    started before; refuses ``out`` holding anything else, or a seed folder whose ``stored``
    recipe is not the ``wanted`` one of its seed (both flat keys)."""
    from prh.locks import SUFFIX
    from prh.training.restarts import RESTARTS_FILE, same_recipe, seed_dir
    from prh.training.rundir import run_state

    names = {seed_dir(out, s).name for s in seeds}
    allowed = names | {RESTARTS_FILE} | {f".{n}{SUFFIX}" for n in names}
    if out.is_dir():
        foreign = sorted(e.name for e in out.iterdir() if e.name not in allowed)
        if foreign:
            raise InputError(f"--out {out}: holds {foreign[0]}, not this command's restarts; "
                             "--restarts writes a new folder (or continues its own)")  # fmt: skip
    modes = {}
    for s in seeds:
        folder = seed_dir(out, s)
        if run_state(folder) not in ("started", "finished"):
            modes[s] = "never"
            continue
        key = same_recipe(stored(folder), wanted(s))
        if key is not None:
            raise InputError(f"{folder}: started with another {key} than this command's; "
                             "give a new --out")  # fmt: skip
        modes[s] = "auto"
    return modes


def _say(message: str) -> None:
    print(f"prh train: {message}", file=sys.stderr)
