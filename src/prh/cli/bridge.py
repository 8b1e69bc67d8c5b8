"""Fit or apply one linear map between two encoders' feature files (paired rows).

`prh bridge fit --x X --y Y --out MAP.safetensors` fits the map on rows paired by id (or by row
order when the files carry no ids) and prints its fit and retrieval on the training pairs;
`prh bridge apply MAP.safetensors --x X --out Y` maps new rows of X into Y's space (Y written by
its suffix: .safetensors with ids, .npz with ids, or a plain .npy array).
`prh bridge score --files A B ...` asks whether they are one rotation apart (prh.cli.bridge_score).
"""

from __future__ import annotations

import argparse

from prh.cli._args import as_request, nonnegative_float, positive_int


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    fit = sub.add_parser("fit", help="fit a map X -> Y on paired feature files")
    fit.add_argument("--x", required=True, help="feature file of the source encoder (N, L, D_x)")
    fit.add_argument("--y", required=True, help="feature file of the target encoder (N, L, D_y)")
    fit.add_argument("--out", required=True, help="map file to write (.safetensors + .json)")
    fit.add_argument("--kind", choices=("orthogonal", "semi-orthogonal", "ridge"),
                     default="semi-orthogonal",
                     help="orthogonal (d_x = d_y), semi-orthogonal (orthonormal rows) or ridge "
                     "(baseline)")  # fmt: skip
    fit.add_argument("--rank", type=positive_int, default=None,
                     help="rank of a semi-orthogonal map")  # fmt: skip
    fit.add_argument("--whiten", action="store_true", help="whiten both sides before fitting")
    fit.add_argument("--alpha", type=nonnegative_float, default=0.001,
                     help="ridge penalty, relative to the mean eigenvalue of X^T X (>= 0; default "
                     "1e-3)")  # fmt: skip
    _layer_flags(fit)
    fit.add_argument("--layer-y", type=int, default=-1,
                     help="layer of Y to use (index, -1 = last; default -1)")  # fmt: skip
    apply = sub.add_parser("apply", help="map rows of X into Y's space with a fitted map")
    apply.add_argument("map", help="map file written by `prh bridge fit`")
    apply.add_argument("--x", required=True, help="feature file to map (N, L, D_x)")
    apply.add_argument("--out", required=True,
                       help="feature file to write (N, D_y): .safetensors or .npz (with ids) or "
                       ".npy")  # fmt: skip
    _layer_flags(apply, default=None)
    from prh.cli import bridge_score

    bridge_score.add_parser(sub)


def _layer_flags(p: argparse.ArgumentParser, default: int | None = -1) -> None:
    p.add_argument("--layer-x", type=int, default=default,
                   help="layer of X to use (index, -1 = last; apply defaults to the layer the map "
                   "was fit on)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """``fit``, ``apply`` or ``score``: the flags as a request, handed to its library call."""
    if args.action == "score":
        from prh.cli import bridge_score

        return bridge_score.run(args)
    from prh.bridge.files import MapApplyRequest, MapFitRequest, apply_map_file, fit_map_files

    if args.action == "fit":
        fit_map_files(as_request(MapFitRequest, args))
    else:
        apply_map_file(as_request(MapApplyRequest, args))
    return 0
