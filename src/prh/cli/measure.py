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
(score minus the null's 95% quantile); --bootstrap R gives a 95% interval. Bad input: exit 2.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path
from typing import Any

from prh.cli._args import nonnegative_float, nonnegative_int, positive_float, positive_int, seed

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
        "--null", type=nonnegative_int, default=0, help="permutations for the null (default 0)"
    )
    parser.add_argument(
        "--bootstrap", type=nonnegative_int, default=0, help="bootstrap resamples (default 0)"
    )
    parser.add_argument("--seed", type=seed, default=0, help="seed of the null and the bootstrap")
    parser.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
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
        choices=("auto", "cpu", "cuda"),
        default="auto",
        help="device of --backend torch (default auto: CUDA when present)",
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


def _inputs(args: argparse.Namespace) -> tuple[list[Path], list[Path]]:
    """The matrix's X files and Y files (one each for the two-positional form)."""
    from prh.errors import InputError

    if args.x is not None or args.y is not None:
        if args.a is not None:
            raise InputError("give either A B or --x ... --y ..., not both")
        if args.x is None or args.y is None:
            raise InputError(
                f"{'--y' if args.y is None else '--x'} is missing: --x and --y go together"
            )
        if args.ids_a or args.ids_b:
            raise InputError("--ids-a/--ids-b apply to the A B form; with --x/--y files carry ids")
        return _expand(args.x, "--x"), _expand(args.y, "--y")
    if args.a is None or args.b is None:
        raise InputError("expected two feature files A B, or --x FILES --y FILES")
    return [Path(args.a)], [Path(args.b)]


def _npy_paths(path: str | None, names: tuple[str, ...]) -> dict[str, Path]:
    if path is None:
        return {}
    p = Path(path)
    if len(names) == 1:
        return {names[0]: p}
    return {m: p.with_name(f"{p.stem}.{m}{p.suffix}") for m in names}


def _check_outputs(args, xs, ys, npy: dict[str, Path]) -> None:
    from prh.errors import InputError
    from prh.io import guard_outputs

    if args.npy and Path(args.npy).suffix.lower() != ".npy":
        raise InputError(f"--npy {args.npy}: expected a .npy file name")
    if args.heatmap and Path(args.heatmap).suffix.lower() != ".png":
        raise InputError(f"--heatmap {args.heatmap}: expected a .png file name")
    outputs = {"--json": args.json, "--heatmap": args.heatmap}
    outputs.update({"--npy" if len(npy) == 1 else f"--npy ({m})": p for m, p in npy.items()})
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


def _print_matrix(name: str, k: int | None, scores, xs: list[Path], ys: list[Path]) -> None:
    kk = f" (k = {k})" if k is not None else ""
    print(f"{name}{kk}: rows X, columns Y, best layer pair each")
    width = max(len(p.stem) for p in xs)
    print(" " * width + "  " + "  ".join(f"{j:>9}" for j in range(len(ys))))
    for i, x in enumerate(xs):
        cells = "  ".join(f"{_fmt(float(v)):>9}" for v in scores[i])
        print(f"{x.stem:<{width}}  {cells}")


def run(args: argparse.Namespace) -> int:
    """Load, measure every (X, Y) pair and metric, print, and write what was asked."""
    import numpy as np

    from prh.io import atomic_write, json_safe, write_json
    from prh.metrics import METRICS, MetricOptions, measure
    from prh.metrics.api import KNN_METRICS
    from prh.metrics.knn import torch_device
    from prh.provenance import stamp

    xs, ys = _inputs(args)
    names = METRICS if "all" in args.metric else args.metric
    npy = _npy_paths(args.npy, names)
    _check_outputs(args, xs, ys, npy)
    if args.backend == "torch":
        torch_device(args.device)  # refuse an absent CUDA before any work
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
    matrix = len(xs) * len(ys) > 1
    # Each file's neighbour lists (N x k) or SVCCA basis (N x cca_dim) serve every pair it is in
    # (X = Y included), the lists every kNN metric: a model's neighbours do not depend on the
    # other side. Kernel states (N x D float64, N x N Gram) are too large to keep for every file.
    lists: dict[Any, Any] = {}
    caches = {m: lists if m in KNN_METRICS else {} for m in names if m in (*KNN_METRICS, "svcca")}
    scores = {m: np.full((len(xs), len(ys)), np.nan) for m in names}  # (X, Y)
    best = {m: np.zeros((len(xs), len(ys), 2), dtype=np.int64) for m in names}  # (layer x, y)
    cis = {m: np.full((len(xs), len(ys), 2), np.nan) for m in names}  # (X, Y, low/high)
    results = []
    files = _Files(args)
    for i, x in enumerate(xs):
        fx, px = files.get(x, args.ids_a)  # x keeps its own row order, joined or not
        for j, y in enumerate(ys):
            fy, py = files.get(y, args.ids_b)
            py, order = _joined(fx, fy, py, args)
            key_y = str(y) if order is None else (str(y), order)
            for name in names:
                r = measure(
                    px,
                    py,
                    name,
                    k=args.k,
                    null=args.null,
                    bootstrap=args.bootstrap,
                    seed=args.seed,
                    layers=args.layers,
                    preprocess_features=False,  # done once per file above
                    options=options,
                    name_a=str(x),
                    name_b=str(y),
                    cache=caches.get(name),
                    cache_keys=(str(x), key_y),
                    progress=not args.no_progress,
                )
                scores[name][i, j], best[name][i, j] = r.score, r.layers
                if r.ci is not None:
                    cis[name][i, j] = r.ci
                if not matrix:
                    if results:
                        print()
                    _print(r, px.shape[1], py.shape[1])  # (N, L, D) each
                    sys.stdout.flush()
                results.append({"x": str(x), "y": str(y), "row": i, "col": j, **r.to_dict()})
    if matrix:
        for n, name in enumerate(names):
            if n:
                print()
            k = args.k if name in (*KNN_METRICS, "cknna") else None
            _print_matrix(name, k, scores[name], xs, ys)
        print("\ncolumns: " + ", ".join(f"{j} = {y}" for j, y in enumerate(ys)))
    if args.json:
        doc = {
            **stamp("measure", inputs=[*xs, *ys], seed=args.seed, options=_options(args)),
            "x": [str(p) for p in xs],
            "y": [str(p) for p in ys],
            "metrics": list(names),
            "matrices": {
                m: {
                    "scores": scores[m].tolist(),
                    "layers": best[m].tolist(),
                    "ci": cis[m].tolist() if args.bootstrap else None,
                }
                for m in names
            },
            "results": results,
        }
        write_json(args.json, json_safe(doc))
    for name, path in npy.items():
        # platonic-rep's layout: np.save of a dict; indices[i, j] = (layer of Y_j, layer of X_i),
        # because its compute_alignment calls compute_score(y_feats, x_feats).
        blob = {"scores": scores[name], "indices": best[name][:, :, ::-1].astype(np.float64)}
        with atomic_write(path, "wb") as f:
            np.save(f, np.array(blob, dtype=object), allow_pickle=True)
    if args.heatmap:
        from prh.metrics.heatmap import heatmap_png

        png = heatmap_png(scores, best, [p.stem for p in xs], [p.stem for p in ys])
        with atomic_write(args.heatmap, "wb") as f:
            f.write(png)
    return 0


def _options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "k": args.k,
        "null": args.null,
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
