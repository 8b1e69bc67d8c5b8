"""Fit or apply one linear map between two encoders' feature files (paired rows).

`prh bridge fit --x X --y Y --out MAP.safetensors` fits the map on rows paired by id (or by row
order when the files carry no ids) and prints its fit and retrieval on the training pairs;
`prh bridge apply MAP.safetensors --x X --out Y` maps new rows of X into Y's space (Y written by
its suffix: .safetensors with ids, .npz with ids, or a plain .npy array).
`prh bridge score --files A B ...` asks whether they are one rotation apart (prh.cli.bridge_score).
"""

from __future__ import annotations

import argparse

from prh.cli._args import nonnegative_float, positive_int

RETRIEVAL_ROWS = 5000  # rows used for the printed retrieval summary (it is O(N^2))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    fit = sub.add_parser("fit", help="fit a map X -> Y on paired feature files")
    fit.add_argument("--x", required=True, help="feature file of the source encoder (N, L, D_x)")
    fit.add_argument("--y", required=True, help="feature file of the target encoder (N, L, D_y)")
    fit.add_argument("--out", required=True, help="map file to write (.safetensors + .json)")
    fit.add_argument(
        "--kind",
        choices=("orthogonal", "semi-orthogonal", "ridge"),
        default="semi-orthogonal",
        help="orthogonal (d_x = d_y), semi-orthogonal (orthonormal rows) or ridge (baseline)",
    )
    fit.add_argument(
        "--rank", type=positive_int, default=None, help="rank of a semi-orthogonal map"
    )
    fit.add_argument("--whiten", action="store_true", help="whiten both sides before fitting")
    fit.add_argument(
        "--alpha",
        type=nonnegative_float,
        default=1e-3,
        help="ridge penalty, relative to the mean eigenvalue of X^T X (>= 0; default 1e-3)",
    )
    _layer_flags(fit)
    fit.add_argument(
        "--layer-y", type=int, default=-1, help="layer of Y to use (index, -1 = last; default -1)"
    )
    apply = sub.add_parser("apply", help="map rows of X into Y's space with a fitted map")
    apply.add_argument("map", help="map file written by `prh bridge fit`")
    apply.add_argument("--x", required=True, help="feature file to map (N, L, D_x)")
    apply.add_argument(
        "--out",
        required=True,
        help="feature file to write (N, D_y): .safetensors or .npz (with ids) or .npy",
    )
    _layer_flags(apply, default=None)
    from prh.cli import bridge_score

    bridge_score.add_parser(sub)


def _layer_flags(p: argparse.ArgumentParser, default: int | None = -1) -> None:
    p.add_argument(
        "--layer-x",
        type=int,
        default=default,
        help="layer of X to use (index, -1 = last; apply defaults to the layer the map was fit on)",
    )


def pick_layer(fs, layer: int, flag: str):
    """Rows of one layer, ``(N, D)``, refused (one line) when the index is out of range, the
    file has no rows, or the layer holds a NaN or an infinite value."""
    import numpy as np

    from prh.errors import InputError

    if not -fs.layers <= layer < fs.layers:
        raise InputError(
            f"{flag} {layer}: {fs.path} has {fs.layers} layers "
            f"(valid -{fs.layers}..{fs.layers - 1})"
        )
    if fs.n == 0:
        raise InputError(f"{fs.path}: no rows (shape {fs.features.shape})")
    x = fs.features[:, layer, :]
    bad = ~np.isfinite(x)
    if bad.any():
        row, col = (int(v) for v in np.argwhere(bad)[0])
        raise InputError(
            f"{fs.path}: {int(bad.sum())} NaN or infinite values in layer {layer} "
            f"(first at row {row}, column {col}: {x[row, col]})"
        )
    return x


def paired_rows(fx, fy):
    """Rows of X and Y paired by id when both files have ids, else by row order (equal N)."""
    import numpy as np

    from prh.errors import InputError
    from prh.features import join_by_ids

    if fx.ids is not None and fy.ids is not None:
        if len(fx.ids) != len(fy.ids):
            raise InputError(
                f"paired rows required: {fx.path} has {fx.n} rows, {fy.path} has {fy.n} rows"
            )
        a, b, _ = join_by_ids(fx, fy)
        return a, b
    if fx.n != fy.n:
        raise InputError(
            f"paired rows required: {fx.path} has {fx.n} rows, {fy.path} has {fy.n} rows"
        )
    return np.asarray(fx.features), np.asarray(fy.features)


def run(args: argparse.Namespace) -> int:
    if args.action == "score":
        from prh.cli import bridge_score

        return bridge_score.run(args)
    return _fit(args) if args.action == "fit" else _apply(args)


def _sidecar(path: str) -> str:
    from pathlib import Path

    return str(Path(path).with_suffix(".json"))


def _fit(args: argparse.Namespace) -> int:
    from dataclasses import replace
    from pathlib import Path

    from prh.bridge import make_map, retrieval, save_map
    from prh.bridge.procrustes import fit_memory_bytes
    from prh.errors import InputError
    from prh.features import load_features
    from prh.io import guard_outputs
    from prh.memory import check_fits

    outputs = {"--out": args.out, "--out (its .json sidecar)": _sidecar(args.out)}
    guard_outputs(outputs, inputs=[args.x, args.y])
    if Path(args.out).suffix != ".safetensors":
        raise InputError(f"--out {args.out}: a map file must end in .safetensors")
    fx, fy = load_features(args.x), load_features(args.y)
    a, b = paired_rows(fx, fy)
    x = pick_layer(replace(fx, features=a), args.layer_x, "--layer-x")
    y = pick_layer(replace(fy, features=b), args.layer_y, "--layer-y")
    for path, arr in ((args.x, x), (args.y, y)):
        if not (arr.std(0) > 1e-12).any():  # R^2 and any map to or from it are meaningless
            raise InputError(f"{path}: every row is the same (constant features); nothing to map")
    whiten = args.kind != "ridge" and args.whiten
    need = fit_memory_bytes(args.kind, len(x), x.shape[1], y.shape[1], whiten=whiten)
    check_fits(need, f"a {args.kind} map from d_x = {x.shape[1]:,} to d_y = {y.shape[1]:,}")
    if args.kind == "ridge":
        m = make_map("ridge", alpha=args.alpha)
    elif args.kind == "orthogonal":
        m = make_map("orthogonal", whiten=args.whiten)
    else:
        m = make_map("semi-orthogonal", rank=args.rank, whiten=args.whiten)
    m.fit(x, y)
    extra = {"x": str(args.x), "y": str(args.y), "layer_x": args.layer_x, "layer_y": args.layer_y}
    save_map(args.out, m, extra=extra)
    k = min(len(x), RETRIEVAL_ROWS)
    ret = retrieval(m.transform(x[:k]), y[:k])
    print(f"map: {m.kind}, d_x = {x.shape[1]}, d_y = {y.shape[1]}, pairs = {len(x)} -> {args.out}")
    print(f"fit R^2 = {m.score(x, y):.4f}")
    print(
        f"retrieval on {k} training pairs: X->Y R@1 {ret.x_to_y[1]:.3f} R@5 {ret.x_to_y[5]:.3f}"
        f" R@10 {ret.x_to_y[10]:.3f} | Y->X R@1 {ret.y_to_x[1]:.3f} R@5 {ret.y_to_x[5]:.3f}"
        f" R@10 {ret.y_to_x[10]:.3f}"
    )
    return 0


def _apply(args: argparse.Namespace) -> int:
    from pathlib import Path

    from prh.bridge import load_map
    from prh.errors import InputError
    from prh.features import check_feature_suffix, load_features, save_features
    from prh.io import guard_outputs

    check_feature_suffix(args.out, "--out")
    guard_outputs({"--out": args.out}, inputs=[args.map, _sidecar(args.map), args.x])
    m, config = load_map(args.map)
    fx = load_features(args.x)
    layer = args.layer_x if args.layer_x is not None else config.get("extra", {}).get("layer_x", -1)
    if not isinstance(layer, int) or isinstance(layer, bool):
        raise InputError(f"{args.map}: recorded layer_x {layer!r} is not an integer (--layer-x)")
    x = pick_layer(fx, layer, "--layer-x")
    y = m.transform(x)
    save_features(args.out, y, ids=fx.ids, metadata={"map": str(args.map), "source": str(args.x)})
    npy = Path(args.out).suffix.lower() == ".npy"
    note = " (a .npy holds no ids)" if fx.ids is not None and npy else ""
    print(f"mapped {len(y)} rows {x.shape[1]} -> {y.shape[1]} dims -> {args.out}{note}")
    return 0
