"""`prh bridge score`: is it one rotation? The alignment matrix of feature files, held out.

`prh bridge score --files A B [C ...]` joins the files' rows by id (or row order when no file has
ids), splits them into training and held-out rows, and for every pair reports on the held-out
rows mutual-kNN@k (bootstrap interval), linear CKA and the rotation score: the whitened
orthonormal map's R@1 (and R^2) over the ridge map's, both fitted on the training rows
(:mod:`prh.bridge.rotation_score`). Two files: one pair, both directions.

Held-out rows: a seeded permutation (`--test-fraction`, `--seed`), or `--train-ids`/`--test-ids`
(one id per line), or `--test-files` (one per --files entry, same order: --files are then the
training rows). Writes `--json` (prh-bridge-score/1) and a `--heatmap` PNG.
"""

from __future__ import annotations

import argparse
from typing import Any

from prh.cli._args import as_request, fraction, nonnegative_int, positive_int, seed


def add_parser(sub: Any) -> None:
    """Register ``score`` on the ``prh bridge`` sub-parsers."""
    p = sub.add_parser("score", help="alignment matrix and rotation score of feature files")
    p.add_argument("--files", nargs="+", required=True, metavar="FILE",
                   help="feature files (N, L, D), >= 2")  # fmt: skip
    p.add_argument("--names", nargs="+", default=None, help="one name per --files entry")
    p.add_argument("--test-files", nargs="+", default=None, metavar="FILE",
                   help="held-out rows of each --files entry (same order); --files are then the "
                   "train rows")  # fmt: skip
    p.add_argument("--train-ids", default=None, help="ids of the training rows, one per line")
    p.add_argument("--test-ids", default=None, help="ids of the held-out rows, one per line")
    p.add_argument("--test-fraction", type=fraction, default=None,
                   help="held-out fraction of a seeded split (default 0.5 when no other split is "
                   "given)")  # fmt: skip
    _map_flags(p)
    _match_and_output_flags(p)


def _map_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=seed, default=0, help="seed of the split and the bootstrap")
    p.add_argument("--dims", type=positive_int, default=256,
                   help="principal dims per side of the maps")  # fmt: skip
    p.add_argument("--per-side-dims", action="store_true",
                   help="each side keeps its own min(--dims, rank) principal dims (map of rank = "
                   "the narrower side's) instead of one common k for both")  # fmt: skip
    p.add_argument("--layer", type=int, default=-1,
                   help="layer of every file (index, -1 = last; default -1)")  # fmt: skip
    p.add_argument("--best-layers", action="store_true",
                   help="mutual-kNN and CKA: best layer pair (benchmark protocol) instead of "
                   "--layer")  # fmt: skip
    p.add_argument("--k", type=positive_int, default=10, help="neighbours of mutual-kNN")
    p.add_argument("--bootstrap", type=nonnegative_int, default=1000,
                   help="bootstrap resamples of the mutual-kNN and rotation score intervals "
                   "(default 1000)")  # fmt: skip


def _match_and_output_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pair-free", nargs="*", default=None, metavar="X:Y",
                   help="also match these pairs of --names without pairs on the held-out rows "
                   "(sample level; class level with --world-seed); no "
                   "value: every pair")  # fmt: skip
    p.add_argument("--world-seed", type=seed, default=None,
                   help="cave world whose scenes the ids (scene_<i>) name: its largest object's "
                   "shape and colour label the pair-free class-level match")  # fmt: skip
    p.add_argument("--match-dims", type=positive_int, default=32,
                   help="whitened principal dims per side before pair-free "
                   "matching (default 32)")  # fmt: skip
    p.add_argument("--json", default=None, metavar="PATH", help="write the matrix here (JSON)")
    p.add_argument("--heatmap", default=None, metavar="PNG", help="write the heatmap here")


def run(args: argparse.Namespace) -> int:
    """The flags as a :class:`~prh.bridge.score_files.BridgeScoreRequest`, scored by
    :func:`~prh.bridge.score_files.score_bridge_files`."""
    from prh.bridge.score_files import BridgeScoreRequest, score_bridge_files

    score_bridge_files(as_request(BridgeScoreRequest, args))
    return 0
