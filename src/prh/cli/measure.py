"""Measure the alignment of two feature files: the PRH benchmark's metrics, exact and calibrated.

Rows of A and B are paired (row i of each describes sample i), or joined by id when both files carry
ids (or --ids-a/--ids-b name id files). Inputs of shape (N, L, D) get the reference protocol's
maximum over layer pairs unless --layers fixes one. --null R shuffles the pairing R times and
recomputes the same statistic (layer search included) for a p-value and a calibrated score
(score minus the null's 95% quantile); --bootstrap R gives a 95% interval. Bad input: exit 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from prh.cli._args import nonnegative_int, positive_float, positive_int

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
    parser.add_argument("a", metavar="A", help="feature file A (.npy/.npz/.safetensors/.pt)")
    parser.add_argument("b", metavar="B", help="feature file B, rows paired with A")
    parser.add_argument(
        "--metric", choices=METRIC_CHOICES, default="mutual_knn", help="metric (default mutual_knn)"
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
    parser.add_argument("--seed", type=int, default=0, help="seed of the null and the bootstrap")
    parser.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    parser.add_argument(
        "--layers", type=_layer_pair, default=None, help="fixed layer pair I,J (default: best pair)"
    )
    parser.add_argument(
        "--no-preprocess",
        action="store_true",
        help="skip the reference preprocessing (clamp at the 0.95 quantile of |x|, L2 rows)",
    )
    parser.add_argument("--ids-a", default=None, help="text file, one id per row of A")
    parser.add_argument("--ids-b", default=None, help="text file, one id per row of B")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the result here")
    parser.add_argument(
        "--block-size", type=positive_int, default=None, help="kNN tile side in rows (memory)"
    )
    parser.add_argument(
        "--backend", choices=("numpy", "faiss"), default="numpy", help="kNN candidate backend"
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


def _load(args: argparse.Namespace) -> tuple[Any, Any, Any, Any]:
    """Paired ``(N, L, D)`` arrays and each file's true layer widths (None when unpadded)."""
    from prh.features import join_by_ids, load_features

    fa = load_features(args.a, args.ids_a)
    fb = load_features(args.b, args.ids_b)
    if args.ids_a or args.ids_b or (fa.ids is not None and fb.ids is not None):
        a, b, _ = join_by_ids(fa, fb)
        return a, b, fa.layer_dims, fb.layer_dims
    return fa.features, fb.features, fa.layer_dims, fb.layer_dims


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.4f}"


def _print(r: Any, shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> None:
    k = f" (k = {r.k})" if r.k is not None else ""
    print(f"metric      {r.metric}{k}")
    print(f"samples     {r.n} paired rows; layers A {shape_a[1]}, B {shape_b[1]}")
    where = "fixed" if r.layer_search == "fixed" else f"best of {shape_a[1]} x {shape_b[1]}"
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


def run(args: argparse.Namespace) -> int:
    """Load, measure, print, and write JSON if asked."""
    from prh.io import check_writable, write_json
    from prh.metrics import METRICS, MetricOptions, measure
    from prh.provenance import stamped

    if args.json:
        check_writable(args.json, "--json")
    a, b, dims_a, dims_b = _load(args)
    options = MetricOptions(
        k=args.k,
        kernel=args.kernel,
        sigma=args.rbf_sigma,
        cca_dim=args.cca_dim,
        block_size=args.block_size,
        backend=args.backend,
    )
    names = METRICS if args.metric == "all" else (args.metric,)
    results = []
    for i, name in enumerate(names):
        r = measure(
            a,
            b,
            name,
            k=args.k,
            null=args.null,
            bootstrap=args.bootstrap,
            seed=args.seed,
            layers=args.layers,
            preprocess_features=not args.no_preprocess,
            options=options,
            name_a=args.a,
            name_b=args.b,
            layer_dims_a=dims_a,
            layer_dims_b=dims_b,
            progress=not args.no_progress,
        )
        if i:
            print()
        _print(r, a.shape, b.shape)  # (N, L, D) each
        sys.stdout.flush()
        results.append(r.to_dict())
    if args.json:
        payload = results[0] if args.metric != "all" else {"results": results}
        write_json(
            args.json,
            stamped("measure", payload, inputs=[args.a, args.b], seed=args.seed, options=args),
        )
    return 0
