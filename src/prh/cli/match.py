"""Match two unpaired feature files without any pairs: recover the correspondence and rotation.

Without class lists, rows are matched one to one (class-level QAP for up to --class-max rows,
sample-level Wasserstein-Procrustes above). With --classes-x/--classes-y (one label per row), the
class means are matched (quadratic assignment over within-modality kernels). Accuracy is reported
when the truth is known: equal id sets (rows) or equal class names (classes).
"""

from __future__ import annotations

import argparse
from typing import Any

from prh.cli._args import positive_int, seed


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--x", required=True, help="feature file of modality X (N, L, D_x)")
    parser.add_argument("--y", required=True, help="feature file of modality Y (N, L, D_y)")
    parser.add_argument("--classes-x", help="text file, one class label per row of X")
    parser.add_argument("--classes-y", help="text file, one class label per row of Y")
    parser.add_argument("--json", required=True, help="where to write the result (JSON)")
    parser.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    parser.add_argument(
        "--layer-x", type=int, default=-1, help="layer of X (index, default -1 = last)"
    )
    parser.add_argument(
        "--layer-y", type=int, default=-1, help="layer of Y (index, default -1 = last)"
    )
    parser.add_argument(
        "--kernel",
        choices=("linear", "cosine", "rbf"),
        default="linear",
        help="within-modality kernel",
    )
    parser.add_argument(
        "--polish",
        choices=("none", "2opt"),
        default="none",
        help="2-opt on the QAP objective at the end",
    )
    parser.add_argument(
        "--class-max",
        type=positive_int,
        default=2000,
        help="largest row count matched by the class-level solver (rows); above: sample level",
    )
    parser.add_argument(
        "--seed", type=seed, default=0, help="random seed (integer in [0, 2**32 - 1]; default 0)"
    )


def _check_labels(labels: list[str], path: str, n: int, what: str, features_path: str) -> list[str]:
    """One non-empty label per row of the feature file, or one line saying what is wrong."""
    from prh.errors import InputError

    if len(labels) != n:
        raise InputError(f"{what} {path}: {len(labels)} labels for {n} rows of {features_path}")
    if any(not lab for lab in labels):
        raise InputError(f"{what} {path}: empty label on line {labels.index('') + 1}")
    return labels


def _class_means(x, labels):
    import numpy as np

    names = sorted(set(labels))
    index = {c: i for i, c in enumerate(names)}
    lab = np.array([index[c] for c in labels])
    counts = np.bincount(lab, minlength=len(names))[:, None]
    sums = np.zeros((len(names), x.shape[1]))
    np.add.at(sums, lab, x)
    return sums / counts, names


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from prh.cli.bridge import pick_layer
    from prh.errors import InputError
    from prh.features import load_features, read_ids
    from prh.io import guard_outputs, write_json
    from prh.provenance import stamped

    if (args.classes_x is None) != (args.classes_y is None):
        raise InputError("--classes-x and --classes-y go together: give both or neither")
    labels = [None, None]
    if args.classes_x is not None:  # small text files: read (and refused) before any work
        labels = [read_ids(args.classes_x, "--classes-x"), read_ids(args.classes_y, "--classes-y")]
    inputs = [args.x, args.y, args.classes_x, args.classes_y]
    guard_outputs({"--json": args.json}, inputs=inputs)
    fx, fy = load_features(args.x), load_features(args.y)
    x = pick_layer(fx, args.layer_x, "--layer-x").astype(np.float64)
    y = pick_layer(fy, args.layer_y, "--layer-y").astype(np.float64)
    if args.classes_x is not None:
        res, out = _match_class_means(args, fx, fy, x, y, labels)
    else:
        res, out = _match_rows(args, fx, fy, x, y)
    inputs = [args.x, args.y, args.classes_x, args.classes_y]
    out = stamped("match", {**res.to_dict(), **out}, inputs=inputs, seed=args.seed, options=args)
    write_json(args.json, out)
    acc = "unknown" if res.accuracy is None else f"{res.accuracy:.4f}"
    print(
        f"matched {len(res.permutation)} {'classes' if args.classes_x else 'rows'}: "
        f"accuracy {acc}, "
        f"objective {res.objective:.6f}, {res.seconds:.2f} s -> {args.json}"
    )
    return 0


def _match_class_means(args, fx, fy, x, y, labels) -> tuple[Any, dict[str, object]]:
    """Class level: each side's class means, matched (a known answer when the names agree)."""
    import numpy as np

    from prh.bridge.match import match_classes
    from prh.errors import InputError

    out: dict[str, object] = {}
    lx = _check_labels(labels[0], args.classes_x, fx.n, "--classes-x", fx.path)
    ly = _check_labels(labels[1], args.classes_y, fy.n, "--classes-y", fy.path)
    x, names_x = _class_means(x, lx)
    y, names_y = _class_means(y, ly)
    if len(names_x) != len(names_y):
        raise InputError(
            f"class lists do not match: {args.classes_x} has {len(names_x)} classes, "
            f"{args.classes_y} has {len(names_y)}"
        )
    truth = None
    if names_x == names_y:
        truth = np.arange(len(names_x))
    res = match_classes(x, y, kernel=args.kernel, truth=truth, polish=args.polish, seed=args.seed)
    out["level"] = "class"
    out["classes_x"], out["classes_y"] = names_x, names_y
    out["pairs"] = [[names_x[i], names_y[j]] for i, j in enumerate(res.permutation)]
    return res, out


def _match_rows(args, fx, fy, x, y) -> tuple[Any, dict[str, object]]:
    """Row level: a one-to-one match of the rows (QAP up to --class-max rows, else sampled);
    the truth is known when both files carry the same ids."""
    import numpy as np

    from prh.bridge.match import match_classes, match_samples
    from prh.errors import InputError
    from prh.progress import Progress

    out: dict[str, object] = {}
    if fx.n != fy.n:
        raise InputError(
            f"a one-to-one match needs equal row counts: {fx.path} has {fx.n}, {fy.path} has {fy.n}"
        )
    truth = None
    if fx.ids is not None and fy.ids is not None and set(fx.ids) == set(fy.ids):
        where = {k: j for j, k in enumerate(fy.ids)}
        truth = np.array([where[k] for k in fx.ids])
    if fx.n <= args.class_max:
        res = match_classes(
            x, y, kernel=args.kernel, truth=truth, polish=args.polish, seed=args.seed
        )
        out["level"] = "rows-qap"
    else:
        with Progress(None, "match", enabled=not args.no_progress, unit="stage") as bar:
            res = match_samples(x, y, truth=truth, seed=args.seed, progress=bar)
        out["level"] = "rows-sample"
    return res, out
