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
import io
import math
import re
import sys
from pathlib import Path
from typing import Any

from prh.cli._args import (
    DEVICE_HELP,
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
    parser.add_argument(
        "a", metavar="A", nargs="?", help="feature file A (.npy/.npz/.safetensors/.pt)"
    )
    parser.add_argument("b", metavar="B", nargs="?", help="feature file B, rows paired with A")
    parser.add_argument(
        "--x", nargs="+", metavar="PATH", help="feature files or folders: the matrix's rows"
    )
    parser.add_argument(
        "--y", nargs="+", metavar="PATH", help="feature files or folders: the matrix's columns"
    )
    parser.add_argument(
        "--x-models",
        metavar="LIST",
        default=None,
        help="the matrix's rows are this model list's files in the one --x folder, in the list's"
        " order (a built-in set or a text file, as prh embed --models)",
    )
    parser.add_argument(
        "--y-models", metavar="LIST", default=None, help="the same for the columns and --y"
    )
    parser.add_argument(
        "--pool",
        choices=("auto", "avg", "none"),
        default="auto",
        help="which pooling's file a model list reads where a folder holds several"
        " (<model>_pool-avg.pt, <model>_pool-none.pt): auto takes a model's one file (default)",
    )
    parser.add_argument(
        "--x-pool", choices=("auto", "avg", "none"), default=None, help="--pool for --x-models"
    )
    parser.add_argument(
        "--y-pool", choices=("auto", "avg", "none"), default=None, help="--pool for --y-models"
    )
    parser.add_argument(
        "--keep-going",
        action="store_true",
        help="a model of --x-models/--y-models whose file is missing or unreadable is left out"
        " (listed on stderr and in the JSON's skipped) instead of stopping the matrix",
    )
    _statistics_flags(parser)
    _preprocess_flags(parser)
    _output_flags(parser)
    _compute_flags(parser)


def _statistics_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--metric",
        type=_metrics,
        default=("mutual_knn",),
        metavar="{" + ",".join(METRIC_CHOICES) + "}",
        help="metric, several comma-separated (e.g. mutual_knn,cka: one matrix each in one call) "
        "or all (default mutual_knn)",
    )
    parser.add_argument(
        "--k", type=positive_int, default=10, help="neighbours for kNN metrics (default 10)"
    )
    parser.add_argument(
        "--null",
        type=positive_int,
        default=0,
        help="permutations for the null, the cap with --null-stop adaptive (default: no null)",
    )
    parser.add_argument(
        "--null-stop",
        choices=("fixed", "adaptive"),
        default="fixed",
        help="fixed: all --null draws; adaptive: stop once the 99%% interval of the p-value is"
        " wholly below or above 0.05, checked every 25 draws (default fixed)",
    )
    parser.add_argument(
        "--bootstrap", type=nonnegative_int, default=0, help="bootstrap resamples (default 0)"
    )
    parser.add_argument("--seed", type=seed, default=0, help="seed of the null and the bootstrap")
    parser.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")


def _preprocess_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--layers", type=_layer_pair, default=None, help="fixed layer pair I,J (default: best pair)"
    )
    parser.add_argument(
        "--clamp",
        choices=("mean", "exact", "none"),
        default="mean",
        help="clamp threshold at the 0.95 quantile of |x|: mean of per-sample quantiles "
        "(platonic-rep's CLI default), exact (its --precise and Alignment.score), none "
        "(default mean)",
    )
    parser.add_argument(
        "--eps",
        type=nonnegative_float,
        default=0.0,
        help="added to CKA/CKNNA denominators (platonic-rep: 1e-6; default 0)",
    )
    parser.add_argument(
        "--no-preprocess",
        action="store_true",
        help="skip the reference preprocessing (clamp and L2 rows): features used as given",
    )


def _output_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ids-a", default=None, help="text file, one id per row of A")
    parser.add_argument("--ids-b", default=None, help="text file, one id per row of B")
    parser.add_argument("--json", default=None, metavar="PATH", help="write the results here")
    parser.add_argument(
        "--npy",
        default=None,
        metavar="PATH",
        help="score matrix as platonic-rep saves it: {scores, indices} (one file per metric)",
    )
    parser.add_argument("--heatmap", default=None, metavar="PNG", help="score matrix heatmap")
    parser.add_argument(
        "--bpb-plot",
        default=None,
        metavar="PNG",
        help="alignment against bits per byte: each X file's bpb (stored by prh embed or the"
        " reference) against its mean score over Y (first metric)",
    )


def _compute_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--block-size", type=positive_int, default=None, help="kNN tile side in rows (memory)"
    )
    parser.add_argument(
        "--backend",
        choices=("numpy", "torch", "faiss"),
        default="numpy",
        help="who computes kNN candidates (default numpy); every backend gives the same lists",
    )
    parser.add_argument(
        "--device",
        type=device_name,
        default="auto",
        help=f"device of --backend torch: {DEVICE_HELP}",
    )
    parser.add_argument(
        "--kernel", choices=("linear", "rbf"), default="linear", help="CKA kernel (default linear)"
    )
    parser.add_argument(
        "--rbf-sigma", type=positive_float, default=1.0, help="RBF bandwidth (feature units)"
    )
    parser.add_argument(
        "--cca-dim", type=positive_int, default=10, help="SVCCA directions per side (default 10)"
    )


def _expand(paths: list[str], flag: str) -> list[Path]:
    """Files as given; a folder stands for its feature files, sorted by name."""
    from prh.errors import InputError
    from prh.features import SUFFIXES

    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(f for f in p.iterdir() if f.is_file() and f.suffix.lower() in SUFFIXES)
            if not found:
                raise InputError(
                    f"{flag} {p}: folder holds no feature file ({', '.join(SUFFIXES)})"
                )
            out.extend(found)
        else:
            out.append(p)
    return out


def _inputs(args: argparse.Namespace) -> tuple[list[Path], list[Path], list[str], list[str]]:
    """The matrix's X files and Y files (one each for the two-positional form), and their names.

    A side with a model list (``--x-models``) is the list's files in its one folder, in the list's
    order, named by model; any other file is named by its stem.
    """
    from prh.errors import InputError

    no_folder = (args.x_models is not None and args.x is None) or (
        args.y_models is not None and args.y is None
    )
    if no_folder:
        raise InputError("--x-models/--y-models pick files in the folder of --x/--y: give it")
    if args.x is not None or args.y is not None:
        if args.a is not None:
            raise InputError("give either A B or --x ... --y ..., not both")
        if args.x is None or args.y is None:
            raise InputError(
                f"{'--y' if args.y is None else '--x'} is missing: --x and --y go together"
            )
        if args.ids_a or args.ids_b:
            raise InputError("--ids-a/--ids-b apply to the A B form; with --x/--y files carry ids")
        xs, x_names = _side(args.x, args.x_models, "--x", args)
        ys, y_names = _side(args.y, args.y_models, "--y", args)
        return xs, ys, x_names, y_names
    if args.a is None or args.b is None:
        raise InputError("expected two feature files A B, or --x FILES --y FILES")
    return [Path(args.a)], [Path(args.b)], [Path(args.a).stem], [Path(args.b).stem]


def _side(
    paths: list[str], models: str | None, flag: str, args: argparse.Namespace
) -> tuple[list[Path], list[str]]:
    """One side's files and names: expanded paths, or a model list's files in one folder, named
    as the reference names the models. With ``--keep-going`` a model without a usable file is
    left out and recorded in ``args.skipped``."""
    from prh.errors import InputError
    from prh.modelsets import find_feature_file, read_model_list, reference_name

    if models is None:
        files = _expand(paths, flag)
        return files, [p.stem for p in files]
    if len(paths) != 1 or not Path(paths[0]).is_dir():
        raise InputError(f"{flag}-models: {flag} must be one folder (the --out-dir of prh embed)")
    entries = read_model_list(models, f"{flag}-models")
    folder = Path(paths[0])
    pool = getattr(args, f"{flag[2:]}_pool") or args.pool
    files, names = [], []
    for e in entries:
        try:
            files.append(find_feature_file(folder, e, flag, pool))
        except InputError as err:
            if not args.keep_going:
                raise
            args.skipped.append({"side": flag[2:], "model": e.name, "reason": str(err)})
            continue
        names.append(reference_name(e.name))
    if not files:
        raise InputError(f"{flag}-models: no model of {models} has a usable file in {folder}")
    return files, names


def _check_rows(
    cache: _Files, files: list[Path], names: list[str], flag: str, args: argparse.Namespace
) -> tuple[list[Path], list[str]]:
    """A model list's files hold one data set: refuse, before any score, an unreadable file or
    one of other rows (with ``--keep-going``: leave it out, recorded in ``args.skipped``)."""
    from prh.errors import InputError

    kept: list[Path] = []
    kept_names: list[str] = []
    for f, name in zip(files, names):
        try:
            n = cache.get(f, None)[1].shape[0]
            if kept and n != cache.get(kept[0], None)[1].shape[0]:
                raise InputError(
                    f"{flag}-models: {f.name} has {n} rows, {kept[0].name} has"
                    f" {cache.get(kept[0], None)[1].shape[0]}: the list's files must embed the"
                    " same rows"
                )
        except InputError as err:
            if not args.keep_going:
                raise
            args.skipped.append({"side": flag[2:], "model": name, "reason": str(err)})
            continue
        kept.append(f)
        kept_names.append(name)
    if not kept:
        raise InputError(f"{flag}-models: no model of the list has a usable file")
    return kept, kept_names


def _npy_paths(path: str | None, names: tuple[str, ...]) -> dict[str, Path]:
    if path is None:
        return {}
    p = Path(path)
    if len(names) == 1:
        return {names[0]: p}
    return {m: p.with_name(f"{p.stem}.{m}{p.suffix}") for m in names}


def _stat_paths(npy: dict[str, Path], args: argparse.Namespace) -> dict[str, dict[str, Path]]:
    """Beside each raw ``.npy``: ``<stem>.calibrated.npy`` (with --null), ``<stem>.ci.npy``
    (with --bootstrap)."""
    kinds = [k for k, on in (("calibrated", args.null), ("ci", args.bootstrap)) if on]
    return {
        m: {kind: p.with_name(f"{p.stem}.{kind}{p.suffix}") for kind in kinds}
        for m, p in npy.items()
    }


def _check_outputs(args, xs, ys, npy: dict[str, Path], stats=None) -> None:
    from prh.errors import InputError
    from prh.io import guard_outputs

    if args.npy and Path(args.npy).suffix.lower() != ".npy":
        raise InputError(f"--npy {args.npy}: expected a .npy file name")
    if args.heatmap and Path(args.heatmap).suffix.lower() != ".png":
        raise InputError(f"--heatmap {args.heatmap}: expected a .png file name")
    if args.bpb_plot and Path(args.bpb_plot).suffix.lower() != ".png":
        raise InputError(f"--bpb-plot {args.bpb_plot}: expected a .png file name")
    outputs = {"--json": args.json, "--heatmap": args.heatmap, "--bpb-plot": args.bpb_plot}
    outputs.update({"--npy" if len(npy) == 1 else f"--npy ({m})": p for m, p in npy.items()})
    for m, kinds in (stats or {}).items():
        outputs.update({f"--npy ({m}, {kind})": p for kind, p in kinds.items()})
    named = [Path(p).resolve() for p in outputs.values() if p is not None]
    if len(set(named)) != len(named):
        raise InputError("two outputs (--json, --npy, --heatmap) name the same file")
    for folder in (Path(f) for f in [*(args.x or []), *(args.y or [])] if Path(f).is_dir()):
        for what, out in outputs.items():
            if out is not None and Path(out).resolve().is_relative_to(folder.resolve()):
                raise InputError(
                    f"{what} {out}: inside the input folder {folder}, whose files are all read; "
                    "choose another folder"
                )
    inputs = [*xs, *ys, args.ids_a, args.ids_b, *(args.x or []), *(args.y or [])]
    guard_outputs(outputs, inputs=inputs)


def _prepare(fs: Any, features: Any, args: argparse.Namespace) -> Any:
    """A file's rows checked and preprocessed as :func:`prh.metrics.measure` would do it."""
    from prh.metrics.preprocess import as_layers, preprocess

    x = as_layers(features, fs.path)  # (N, L, D) float32, finite
    if args.no_preprocess:
        return x
    q = 1.0 if args.clamp == "none" else 0.95
    return preprocess(x, q, args.clamp == "exact", fs.path, fs.layer_dims, fs.per_layer)


class _Files:
    """Feature files and their preprocessed rows, each loaded and preprocessed once, and kept while
    they fit in ``budget`` bytes (the matrix reads every Y file once per X file)."""

    def __init__(self, args: argparse.Namespace, budget: int = 2 * 2**30) -> None:
        self.args, self.budget, self.used = args, budget, 0
        self.kept: dict[tuple[str, str | None], tuple[Any, Any]] = {}

    def get(self, path: Path, ids_path: str | None) -> tuple[Any, Any]:
        from prh.features import load_features

        key = (str(path), ids_path)
        if key in self.kept:
            return self.kept[key]
        fs = load_features(path, ids_path)
        prepared = _prepare(fs, fs.features, self.args)
        size = fs.features.nbytes + prepared.nbytes
        if self.used + size <= self.budget:
            self.kept[key], self.used = (fs, prepared), self.used + size
        return fs, prepared


def _joined(fx: Any, fy: Any, py: Any, args: argparse.Namespace) -> tuple[Any, str | None]:
    """``y``'s rows in ``x``'s order when the files are joined by id, and that order's digest.

    The clamp sees exactly the paired rows, so a join that is not the identity gives ``y`` new
    preprocessed rows (digest: how to key their states); an identity join, or none, keeps the
    file's own rows (digest None).
    """
    import hashlib

    import numpy as np

    from prh.features import join_rows

    if not (args.ids_a or args.ids_b or (fx.ids is not None and fy.ids is not None)):
        return py, None
    rows = join_rows(fx, fy)  # (N_x,) row of y for each row of x
    if len(rows) == len(fy.features) and np.array_equal(rows, np.arange(len(rows))):
        return py, None
    return _prepare(fy, fy.features[rows], args), hashlib.sha256(rows.tobytes()).hexdigest()


def _fmt(v: float | None) -> str:
    return "-" if v is None else "undefined" if not math.isfinite(v) else f"{v:.4f}"


def _print(r: Any, la: int, lb: int) -> None:
    k = f" (k = {r.k})" if r.k is not None else ""
    print(f"metric      {r.metric}{k}")
    print(f"samples     {r.n} paired rows; layers A {la}, B {lb}")
    where = "fixed" if r.layer_search == "fixed" else f"best of {la} x {lb}"
    print(f"score       {_fmt(r.score)}  (layer pair A {r.layers[0]}, B {r.layers[1]}: {where})")
    pct = f"{round(100 * r.level)}%"
    if r.ci is not None:
        print(
            f"{pct} CI      [{_fmt(r.ci[0])}, {_fmt(r.ci[1])}]  "
            f"(bootstrap, {r.n_bootstrap} resamples, {r.bootstrap_kind})"
        )
    if r.p_value is not None:
        print(f"p-value     {r.p_value:.4g}  (permutation null, {r.n_null} shuffles)")
        crit = _fmt(r.null_critical)
        print(f"calibrated  {_fmt(r.calibrated)}  (score - null {pct} quantile {crit})")


_HEADER = 12  # longest name printed as a column header; longer ones are numbered


def _print_matrix(title: str, table, names_x: list[str], names_y: list[str]) -> None:
    """One (X, Y) table of numbers: rows named, columns by name where short (else numbered,
    named once below the tables)."""
    print(title)
    width = max(len(n) for n in names_x)
    heads = [_header(j, y) for j, y in enumerate(names_y)]
    cols = [max(9, len(h)) for h in heads]
    print(" " * width + "  " + "  ".join(f"{h:>{c}}" for h, c in zip(heads, cols)))
    for name, row in zip(names_x, table):
        cells = "  ".join(f"{_fmt(float(v)):>{c}}" for v, c in zip(row, cols))
        print(f"{name:<{width}}  {cells}")


def _header(j: int, name: str) -> str:
    return name if len(name) <= _HEADER else str(j)


def _tables(acc: Any, name: str, args: argparse.Namespace) -> list[tuple[str, Any]]:
    """(title, table) of everything measured for one metric, raw score first."""
    out = [("", acc.scores[name])]
    if args.null:
        out += [("calibrated (score - null 95% quantile)", acc.calibrated[name])]
        up_to = "up to " if args.null_stop == "adaptive" else ""
        out += [(f"p-value ({up_to}{args.null} shuffles)", acc.p_values[name])]
    if args.bootstrap:
        out += [("95% interval, low", acc.ci[name][..., 0])]
        out += [("95% interval, high", acc.ci[name][..., 1])]
    return out


def _measure_all(args, xs, ys, x_names, y_names, names, options, files, lists):
    """Every (X, Y) cell and metric (:func:`prh.metrics.matrix.measure_matrix` on the files):
    the filled :class:`~prh.metrics.matrix.MatrixResult` and the per-cell results."""
    from prh.metrics.matrix import Cell, measure_matrix

    def rows(i: int, j: int) -> Cell:
        fx, px = files.get(xs[i], args.ids_a)  # x keeps its own row order, joined or not
        fy, py = files.get(ys[j], args.ids_b)
        py, order = _joined(fx, fy, py, args)
        key_y = str(ys[j]) if order is None else (str(ys[j]), order)
        return Cell(px, py, str(xs[i]), key_y, str(xs[i]), str(ys[j]))

    shown: list[Any] = []

    def show(i: int, j: int, r: Any) -> None:  # the two-file form prints each metric's result
        if shown:
            print()
        shown.append(r)
        _print(r, *r.layer_scores.shape)  # (L_A, L_B)
        sys.stdout.flush()

    acc = measure_matrix(
        xs, ys, names, k=args.k, null=args.null, bootstrap=args.bootstrap, seed=args.seed,
        layers=args.layers, null_stop=args.null_stop, options=options, x_names=x_names,
        y_names=y_names, progress=not args.no_progress, rows=rows,
        on_cell=show if len(xs) * len(ys) == 1 else None, lists=lists,
    )  # fmt: skip
    results = [{"x": str(xs[e["row"]]), "y": str(ys[e["col"]]), **e} for e in acc.results]
    return acc, results


def run(args: argparse.Namespace) -> int:
    """Load, measure every (X, Y) pair and metric, print, and write what was asked."""
    from prh.metrics import METRICS, MetricOptions

    args.skipped = []  # models --keep-going leaves out: {side, model, reason}
    xs, ys, x_names, y_names = _inputs(args)
    names = METRICS if "all" in args.metric else args.metric
    npy = _npy_paths(args.npy, names)
    stats = _stat_paths(npy, args) if len(xs) * len(ys) > 1 else {}
    _check_outputs(args, xs, ys, npy, stats)
    if args.backend == "torch" or str(args.device).strip().lower().startswith("cuda"):
        from prh.metrics.knn import torch_device

        torch_device(args.device)  # refuse an absent CUDA before any work, whatever the backend
    options = MetricOptions(
        k=args.k,
        kernel=args.kernel,
        sigma=args.rbf_sigma,
        cca_dim=args.cca_dim,
        eps=args.eps,
        block_size=args.block_size,
        backend=args.backend,
        device=args.device,
    )
    files = _Files(args)
    if args.x_models is not None:
        xs, x_names = _check_rows(files, xs, x_names, "--x", args)
    if args.y_models is not None:
        ys, y_names = _check_rows(files, ys, y_names, "--y", args)
    for skip in args.skipped:  # the summary of what --keep-going left out, before any score
        print(f"prh measure: left out {skip['model']} ({skip['side']}): {skip['reason']}",
              file=sys.stderr)  # fmt: skip
    bpb = _bpb_of(files, xs) if args.bpb_plot else []
    lists: dict[Any, Any] = {}  # every kNN metric's neighbour lists, by (file, layer)
    if len(xs) * len(ys) > 1 and args.null and not args.no_progress:
        _print_cost(args, files, (xs, ys), names, options, lists)
    acc, results = _measure_all(args, xs, ys, x_names, y_names, names, options, files, lists)
    if len(xs) * len(ys) > 1:
        _print_all(args, acc, names, x_names, y_names)
    out: dict[Any, bytes] = {}
    if args.json:
        out[args.json] = _json_file(args, acc, results, names, (xs, ys, x_names, y_names))
    out.update(_npy_files(acc, npy, stats, x_names, y_names))
    if args.heatmap:
        out[args.heatmap] = _heatmap_file(args, acc, names, x_names, y_names)
    if args.bpb_plot:
        from prh.metrics.quality_plot import alignment_vs_bpb_png

        out[args.bpb_plot] = alignment_vs_bpb_png(bpb, acc.scores[names[0]], x_names, names[0])
    from prh.io import write_all

    write_all(out)  # the outputs are one result: all written, or none (a full disk names one)
    return 0


def _print_cost(args, files: _Files, sides, names, options, lists: dict) -> None:
    """The matrix's work and estimated time, on stderr, before the first cell. A batched null is
    timed on the first cell's neighbour lists, which ``lists`` keeps for the matrix."""
    from prh.metrics.api import get_metric
    from prh.metrics.cost import describe, estimate_matrix

    xs, ys = sides
    shapes = {p: files.get(p, None)[1].shape for p in [*xs, *ys]}  # (N, L, D) each
    n, width = shapes[xs[0]][0], max(s[2] for s in shapes.values())
    lx, ly = [shapes[x][1] for x in xs], [shapes[y][1] for y in ys]
    costs = []
    for m in names:
        sample = None
        if get_metric(m, options).null is not None:
            sample = tuple(_first_lists(files, f, options, lists) for f in (xs[0], ys[0]))
        costs.append(
            estimate_matrix(
                m, n, width, lx, ly, args.null, options, distinct_files=len(shapes), sample=sample
            )
        )
    text = describe(costs, len(xs) * len(ys), args.null, args.null_stop == "adaptive")
    print(f"prh measure: {text}", file=sys.stderr, flush=True)


def _first_lists(files: _Files, path: Path, options, lists: dict) -> list:
    """Each layer's neighbour lists of one file, kept in ``lists`` as the matrix keys them."""
    from prh.metrics.api import get_metric

    prepare = get_metric("mutual_knn", options).prepare
    x = files.get(path, None)[1]  # (N, L, D) preprocessed
    for layer in range(x.shape[1]):
        if (str(path), layer) not in lists:
            lists[str(path), layer] = prepare(x[:, layer])
    return [lists[str(path), layer] for layer in range(x.shape[1])]


def _bpb_of(files: _Files, xs: list[Path]) -> list[float]:
    """Each X file's stored bits per byte; a file without one is refused before any score."""
    from prh.errors import InputError

    out = []
    for x in xs:
        value = files.get(x, None)[0].metadata.get("bpb")
        if value is None:
            raise InputError(
                f"--bpb-plot: {x} stores no bpb (embed a causal language model with prh embed,"
                " or use the reference's language feature files)"
            )
        out.append(_bpb_value(value, x))
    return out


MAX_BPB = 1000.0  # bits per byte: 8 is a uniform guess over bytes; far above any real model


def _bpb_value(value: object, x: Path) -> float:
    """A stored bpb as a number in ``(0, MAX_BPB]`` (NaN, infinity, <= 0 or a huge value drew
    an empty, a wrong or no plot: issue 36)."""
    import math

    from prh.errors import InputError

    try:
        bpb = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        bpb = math.nan
    if not (0 < bpb <= MAX_BPB):  # NaN fails too
        raise InputError(
            f"--bpb-plot: {x} stores bpb {value!r}; expected a finite number in (0, {MAX_BPB:g}]"
        )
    return bpb


def _print_all(args, acc: Any, names, x_names: list[str], y_names: list[str]) -> None:
    from prh.metrics.api import KNN_METRICS

    first = True
    for name in names:
        k = args.k if name in (*KNN_METRICS, "cknna") else None
        kk = f" (k = {k})" if k is not None else ""
        for what, table in _tables(acc, name, args):
            if not first:
                print()
            first = False
            title = f"{name}{kk}: rows X, columns Y, best layer pair each"
            _print_matrix(f"{name}{kk}: {what}" if what else title, table, x_names, y_names)
    long = [f"{j} = {y}" for j, y in enumerate(y_names) if _header(j, y) != y]
    if long:
        print("\ncolumns: " + ", ".join(long))


def _json_file(args, acc: Any, results, names, sides) -> bytes:
    from prh.io import json_bytes, json_safe
    from prh.provenance import stamp

    xs, ys, x_names, y_names = sides
    doc = {
        **stamp("measure", inputs=[*xs, *ys], seed=args.seed, options=_options(args)),
        "x": [str(p) for p in xs],
        "y": [str(p) for p in ys],
        "x_names": list(x_names),
        "y_names": list(y_names),
        "skipped": list(args.skipped),
        "metrics": list(names),
        "matrices": {
            m: {
                "scores": acc.scores[m].tolist(),
                "layers": acc.layers[m].tolist(),
                "ci": acc.ci[m].tolist() if args.bootstrap else None,
                "calibrated": acc.calibrated[m].tolist() if args.null else None,
                "p_values": acc.p_values[m].tolist() if args.null else None,
                "null_critical": acc.null_critical[m].tolist() if args.null else None,
                "null_draws": _counts(acc.null_draws[m]) if args.null else None,
            }
            for m in names
        },
        "results": results,
    }
    return json_bytes(json_safe(doc))


def _counts(table: Any) -> list[list[int | None]]:
    """An (X, Y) float table of counts as integers (None where not measured)."""
    return [[None if v != v else int(v) for v in row] for row in table.tolist()]


def _blob(blob: dict[str, Any]) -> bytes:
    import numpy as np

    buf = io.BytesIO()
    np.save(buf, np.array(blob, dtype=object), allow_pickle=True)
    return buf.getvalue()


def _npy_files(acc: Any, npy, stats, x_names: list[str], y_names: list[str]) -> dict:
    """platonic-rep's ``{scores, indices}`` per metric, model names added; the calibrated
    scores and the interval beside it, in the same layout (path -> bytes)."""
    import numpy as np

    names = {"x_names": list(x_names), "y_names": list(y_names)}
    out: dict[Path, bytes] = {}
    for name, path in npy.items():
        # platonic-rep's layout: np.save of a dict; indices[i, j] = (layer of Y_j, layer of X_i),
        # because its compute_alignment calls compute_score(y_feats, x_feats).
        indices = acc.layers[name][:, :, ::-1].astype(np.float64)
        out[path] = _blob({"scores": acc.scores[name], "indices": indices, **names})
        extra = stats.get(name, {})
        if "calibrated" in extra:
            blob = {
                "scores": acc.calibrated[name],
                "indices": indices,
                "p_values": acc.p_values[name],
                "null_critical": acc.null_critical[name],
                **names,
            }
            out[extra["calibrated"]] = _blob(blob)
        if "ci" in extra:
            blob = {"low": acc.ci[name][..., 0], "high": acc.ci[name][..., 1], **names}
            out[extra["ci"]] = _blob({**blob, "indices": indices})
    return out


def _heatmap_file(args, acc: Any, names, x_names: list[str], y_names: list[str]) -> bytes:
    """Raw scores per metric; with --null the calibrated scores beside them; with --bootstrap
    each cell also gives its interval."""
    from prh.metrics.heatmap import heatmap_png

    panels, layers, notes = {}, {}, {}
    for m in names:
        panels[m], layers[m] = acc.scores[m], acc.layers[m]
        if args.bootstrap:
            notes[m] = acc.ci[m]
        if args.null:
            key = f"{m} calibrated"
            panels[key], layers[key] = acc.calibrated[m], acc.layers[m]
            if args.bootstrap:
                notes[key] = acc.ci[m] - acc.null_critical[m][..., None]
    return heatmap_png(panels, layers, list(x_names), list(y_names), intervals=notes)


def _options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "k": args.k,
        "null": args.null,
        "null_stop": args.null_stop,
        "bootstrap": args.bootstrap,
        "layers": list(args.layers) if args.layers else None,
        "clamp": "none (no preprocessing)" if args.no_preprocess else args.clamp,
        "l2_normalize": not args.no_preprocess,
        "eps": args.eps,
        "kernel": args.kernel,
        "rbf_sigma": args.rbf_sigma,
        "cca_dim": args.cca_dim,
        "backend": args.backend,
    }
