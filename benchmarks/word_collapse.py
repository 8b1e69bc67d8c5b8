"""Do a run's content words stay distinct? Mean centred cosine among the cave world's shape words
and among its colour words in each run's token-embedding table (first word piece of each word).

Usage: ``.venv/bin/python benchmarks/word_collapse.py RUN [RUN ...]``. A next-token model trained
on a world where every shape word occurs in the same contexts merges them (cosine near 1); a
good-view JEPA keeps them apart (near 0). See docs/demo.md, "Fair next-token protocol".
"""

from __future__ import annotations

import sys

import numpy as np

from prh.metrics.probe import mean_pairwise_cosine
from prh.training.api import load_run
from prh.world.scenes import COLOURS, SHAPES


def first_piece(run, word: str) -> int | None:
    ids = run.tokenizer.encode_batch([word], max_len=8)[0][0].tolist()
    pieces = [i for i in ids if i > 4]  # past the special tokens ([PAD] .. [MASK])
    return pieces[0] if pieces else None


def word_cosines(run_dir: str) -> tuple[float, float]:
    run = load_run(run_dir, device="cpu")
    table = run.model.trunk.tok.weight.detach().numpy()  # (V, D)
    centre = table.mean(0)
    out = []
    for words in (SHAPES, COLOURS):
        ids = [i for i in (first_piece(run, w) for w in words) if i is not None]
        out.append(mean_pairwise_cosine(table[ids], centre))
    return out[0], out[1]


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
