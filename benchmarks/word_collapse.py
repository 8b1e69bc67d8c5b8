"""Do a run's content words stay distinct? Mean centred cosine among the cave world's shape words
and among its colour words in each run's token-embedding table (first word piece of each word).

Usage: ``.venv/bin/python benchmarks/word_collapse.py RUN [RUN ...]``. A next-token model trained
on a world where every shape word occurs in the same contexts merges them (cosine near 1); a
good-view JEPA keeps them apart (near 0). See docs/demo.md, "Fair next-token protocol".
"""

from __future__ import annotations

import sys

import numpy as np

from prh.metrics.word_collapse import word_collapse_of
from prh.training.api import load_run
from prh.world.scenes import COLOURS, SHAPES


def word_cosines(run_dir: str) -> tuple[float, float]:
    """The centred cosines of a run's shape and colour words (``prh word-collapse`` prints them
    too; :mod:`prh.metrics.word_collapse`)."""
    r = word_collapse_of(load_run(run_dir, device="cpu"), SHAPES, COLOURS)
    return r.shape, r.colour


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    print(f"{'run':<40} {'shape words':>12} {'colour words':>13}")
    for run_dir in argv:
        s, c = word_cosines(run_dir)
        print(f"{run_dir:<40} {s:>12.2f} {c:>13.2f}")
    return 0


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    sys.exit(main(sys.argv[1:]))
