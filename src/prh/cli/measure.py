"""Measure the alignment of feature files: the PRH benchmark's metrics, exact and calibrated.

Two forms. `prh measure A B` scores one pair; `prh measure --x A1 A2 ... --y B1 B2 ...` (files or
folders of feature files) scores every X against every Y, the benchmark's score matrix with the
best layer pair of each cell (--json, --npy in platonic-rep's {scores, indices} layout,
--heatmap PNG). Both forms write one JSON shape.

Rows of two files are paired (row i of each describes sample i), or joined by id when both files
carry ids (or --ids-a/--ids-b name id files). Inputs of shape (N, L, D) get the reference protocol's
maximum over layer pairs unless --layers fixes one. Reads prh feature files and platonic-rep's
.pt files ({"feats": (N, L, D) or a list of layers}). --null R shuffles the pairing R times and
recomputes the same statistic (layer search included) for a p-value and a calibrated score
(score minus the null's 95% quantile), --null-stop adaptive ending each cell's draws once its
p-value is decided (the matrix's cost is printed first); --bootstrap R gives a 95% interval.
Model lists: --pool picks one of a folder's poolings, --keep-going leaves out a model without a
usable file. Bad input: exit 2.
"""

from __future__ import annotations

import argparse
import re

from prh.cli._args import (
    DEVICE_HELP,
    as_request,
    device_name,
    nonnegative_float,
    nonnegative_int,
    positive_float,
    positive_int,
    seed,
)

METRIC_CHOICES = (
    "mutual_knn",
    "cycle_knn",
    "lcs_knn",
    "edit_distance_knn",
    "cka",
    "unbiased_cka",
    "cknna",
    "svcca",
    "all",
)
# argparse takes any word that starts with "-" and is not a plain negative number for an option,
# so `--layers -1,-1` (as the README and platonic-rep users type it) or `--eps -1e-6` would be
# refused as unknown options rather than read (and, for a bad value, named) as values.
_NEGATIVE_OR_PAIR = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-?\d+,-?\d+$")


def _metrics(text: str) -> tuple[str, ...]:
    """``NAME[,NAME...]`` of :data:`METRIC_CHOICES`, duplicates dropped; ``all`` alone."""
    names = tuple(dict.fromkeys(t.strip() for t in text.split(",")))
    bad = [n for n in names if n not in METRIC_CHOICES]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            f"unknown metric {bad[0] if bad else text!r}, expected one or more "
            f"(comma-separated) of {', '.join(METRIC_CHOICES)}"
        )
    return names


def _layer_pair(text: str) -> tuple[int, int]:
    parts = text.split(",")
    try:
        if len(parts) != 2:
            raise ValueError
        return int(parts[0]), int(parts[1])
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected two layer indices 'I,J' (negative counts from the end), got {text!r}"
        ) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of ``prh measure``."""
    parser._negative_number_matcher = _NEGATIVE_OR_PAIR  # `--layers -1,-1` is a value
    parser.add_argument("a", metavar="A", nargs="?",
                        help="feature file A (.npy/.npz/.safetensors/.pt)")  # fmt: skip
    parser.add_argument("b", metavar="B", nargs="?", help="feature file B, rows paired with A")
    parser.add_argument("--x", nargs="+", metavar="PATH",
                        help="feature files or folders: the matrix's rows")  # fmt: skip
    parser.add_argument("--y", nargs="+", metavar="PATH",
                        help="feature files or folders: the matrix's columns")  # fmt: skip
    parser.add_argument("--x-models", metavar="LIST", default=None,
                        help="the matrix's rows are this model list's files in the one --x "
                        "folder, in the list's order (a built-in set or a text file, as prh embed "
                        "--models)")  # fmt: skip
    parser.add_argument("--y-models", metavar="LIST", default=None,
                        help="the same for the columns and --y")  # fmt: skip
    parser.add_argument("--pool", choices=("auto", "avg", "none"), default="auto",
                        help="which pooling's file a model list reads where a folder holds "
                        "several (<model>_pool-avg.pt, <model>_pool-none.pt): auto takes a "
                        "model's one file (default)")  # fmt: skip
    parser.add_argument("--x-pool", choices=("auto", "avg", "none"), default=None,
                        help="--pool for --x-models")  # fmt: skip
    parser.add_argument("--y-pool", choices=("auto", "avg", "none"), default=None,
                        help="--pool for --y-models")  # fmt: skip
    parser.add_argument("--keep-going", action="store_true",
                        help="a model of --x-models/--y-models whose file is missing or "
                        "unreadable is left out (listed on stderr and in the JSON's skipped) "
                        "instead of stopping the matrix")  # fmt: skip
    _statistics_flags(parser)
    _preprocess_flags(parser)
    _output_flags(parser)
    _compute_flags(parser)


def _statistics_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--metric", type=_metrics, default=("mutual_knn",),
                        metavar="{" + ",".join(METRIC_CHOICES) + "}",
                        help="metric, several comma-separated (e.g. mutual_knn,cka: one matrix "
                        "each in one call) or all (default mutual_knn)")  # fmt: skip
    parser.add_argument("--k", type=positive_int, default=10,
                        help="neighbours for kNN metrics (default 10)")  # fmt: skip
    parser.add_argument("--null", type=positive_int, default=0,
                        help="permutations for the null, the cap with --null-stop adaptive "
                        "(default: no null)")  # fmt: skip
    parser.add_argument("--null-stop", choices=("fixed", "adaptive"), default="fixed",
                        help="fixed: all --null draws; adaptive: stop once the 99%% interval of "
                        "the p-value is wholly below or above 0.05, checked every 25 draws "
                        "(default fixed)")  # fmt: skip
    parser.add_argument("--bootstrap", type=nonnegative_int, default=0,
                        help="bootstrap resamples (default 0)")  # fmt: skip
    parser.add_argument("--seed", type=seed, default=0, help="seed of the null and the bootstrap")
    parser.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")


def _preprocess_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--layers", type=_layer_pair, default=None,
                        help="fixed layer pair I,J (default: best pair)")  # fmt: skip
    parser.add_argument("--clamp", choices=("mean", "exact", "none"), default="mean",
                        help="clamp threshold at the 0.95 quantile of |x|: mean of per-sample "
                        "quantiles (platonic-rep's CLI default), exact (its --precise and "
                        "Alignment.score), none (default mean)")  # fmt: skip
    parser.add_argument("--eps", type=nonnegative_float, default=0.0,
                        help="added to CKA/CKNNA denominators (platonic-rep: "
                        "1e-6; default 0)")  # fmt: skip
    parser.add_argument("--no-preprocess", action="store_true",
                        help="skip the reference preprocessing (clamp and L2 rows): features used "
                        "as given")  # fmt: skip


def _output_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ids-a", default=None, help="text file, one id per row of A")
    parser.add_argument("--ids-b", default=None, help="text file, one id per row of B")
    parser.add_argument("--json", default=None, metavar="PATH", help="write the results here")
    parser.add_argument("--npy", default=None, metavar="PATH",
                        help="score matrix as platonic-rep saves it: {scores, indices} (one file "
                        "per metric)")  # fmt: skip
    parser.add_argument("--heatmap", default=None, metavar="PNG", help="score matrix heatmap")
    parser.add_argument("--bpb-plot", default=None, metavar="PNG",
                        help="alignment against bits per byte: each X file's bpb (stored by prh "
                        "embed or the reference) against its mean score over Y "
                        "(first metric)")  # fmt: skip


def _compute_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--block-size", type=positive_int, default=None,
                        help="kNN tile side in rows (memory)")  # fmt: skip
    parser.add_argument("--backend", choices=("numpy", "torch", "faiss"), default="numpy",
                        help="kNN candidates (same lists on every backend); torch also batches "
                        "the null of cka, unbiased_cka, svcca, cknna (same p-values)")  # fmt: skip
    parser.add_argument("--device", type=device_name, default="auto",
                        help=f"device of --backend torch: {DEVICE_HELP}")  # fmt: skip
    parser.add_argument("--kernel", choices=("linear", "rbf"), default="linear",
                        help="CKA kernel (default linear)")  # fmt: skip
    parser.add_argument("--rbf-sigma", type=positive_float, default=1.0,
                        help="RBF bandwidth (feature units)")  # fmt: skip
    parser.add_argument("--cca-dim", type=positive_int, default=10,
                        help="SVCCA directions per side (default 10)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """The flags as a :class:`MeasureRequest`, measured by :func:`measure_files`."""
    from prh.metrics.matrix_files import measure_files
    from prh.metrics.matrix_request import MeasureRequest

    measure_files(as_request(MeasureRequest, args))
    return 0
