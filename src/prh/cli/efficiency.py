"""Sample efficiency: samples each objective needs to reach a target alignment, and their ratio.

Reads a sweep's results.jsonl (its `curve` runs: alignment vs samples per seed for each view kind),
interpolates each seed-mean curve in log(samples) on its running maximum, and reports S_A, S_B and
S_B / S_A with a percentile bootstrap interval over seeds. A target never reached is reported as
such (no extrapolation). Default target: 0.95 x the lower of the two best seed-mean alignments.
"""

from __future__ import annotations

import argparse

from prh.cli._args import as_request, finite_float, old_spelling, positive_int, seed
from prh.scaling.commands import MAX_BOOT


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", help="results.jsonl written by `prh sweep`")
    parser.add_argument("--target", type=finite_float, default=None,
                        help="alignment to reach (default: 0.95 x min of the "
                        "two best means)")  # fmt: skip
    parser.add_argument("--x", default="good", help="reference views (default: good)")
    parser.add_argument("--y", default="next-token", help="compared views (default: next-token)")
    old_spelling(parser, "--a", "--x", "x")
    old_spelling(parser, "--b", "--y", "y")
    parser.add_argument("--metric", choices=["score", "calibrated"], default="score",
                        help="alignment column (default: score)")  # fmt: skip
    parser.add_argument("--bootstrap", type=positive_int, default=1000,
                        help=f"bootstrap resamples (1..{MAX_BOOT}; default: 1000)")  # fmt: skip
    old_spelling(parser, "--boot", "--bootstrap", "bootstrap", type=positive_int)
    parser.add_argument("--seed", type=seed, default=0,
                        help="bootstrap seed (in [0, 2**32 - 1]; default: 0)")  # fmt: skip
    parser.add_argument("--json", default=None, help="write the result as JSON here")


def run(args: argparse.Namespace) -> int:
    """The flags as a :class:`~prh.scaling.commands.EfficiencyRequest`, read by
    :func:`~prh.scaling.commands.efficiency_files`."""
    from prh.scaling.commands import EfficiencyRequest, efficiency_files

    efficiency_files(as_request(EfficiencyRequest, args))
    return 0
