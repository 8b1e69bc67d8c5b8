"""Fit candidate scaling laws of alignment in (rho, samples) and judge them on held-out runs.

Reads a sweep's results.jsonl; fits every form on the `fit` runs by multi-start least squares,
predicts the `heldout` runs, chooses the converged form with the lowest held-out RMSE, and compares
it with the seed spread sqrt(mean((y - y_repeat)^2) / 2) over the held-out/repeat pairs. Prints a
table, writes OUT/law.json and the predicted-vs-measured plot OUT/law_fit.png. A form that does not
converge is listed with scipy's message, not hidden.
"""

from __future__ import annotations

import argparse

from prh.cli._args import as_request, positive_int, seed
from prh.scaling.commands import MAX_STARTS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from prh.scaling.laws import LAWS

    parser.add_argument("results", help="results.jsonl written by `prh sweep`")
    parser.add_argument("--out", default=None,
                        help="folder for law.json and law_fit.png (default: "
                        "beside RESULTS)")  # fmt: skip
    parser.add_argument("--forms", nargs="+", choices=sorted(LAWS), default=None,
                        help="law forms to fit (default: all)")  # fmt: skip
    parser.add_argument("--metric", choices=["score", "calibrated"], default="score",
                        help="which alignment column to fit (default: score)")  # fmt: skip
    parser.add_argument("--starts", type=positive_int, default=8,
                        help=f"fits per form (1..{MAX_STARTS}; default: 8)")  # fmt: skip
    parser.add_argument("--seed", type=seed, default=0,
                        help="seed of the random starts (0..2**32-1; default: 0)")  # fmt: skip
    parser.add_argument("--json", default=None, help="also write law.json's content here")


def run(args: argparse.Namespace) -> int:
    """The flags as a :class:`~prh.scaling.commands.FitLawRequest`, fitted by
    :func:`~prh.scaling.commands.fit_law_files`; exit 1 when no form converged."""
    from prh.scaling.commands import FitLawRequest, fit_law_files

    return 0 if fit_law_files(as_request(FitLawRequest, args)) else 1
