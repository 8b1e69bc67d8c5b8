"""Match two unpaired feature files without any pairs: recover the correspondence and rotation.

``--method shape`` (the default) aligns the two clouds by their shapes. Without class lists,
rows are matched one to one (class-level QAP for up to --class-max rows, sample-level
Wasserstein-Procrustes above). With --classes-x/--classes-y (one label per row), the class means
are matched (quadratic assignment over within-modality kernels). Accuracy is reported when the
truth is known: equal id sets (rows) or equal class names (classes).

``--method spectral`` finds the rotation from each modality's own positive pairs
(``--pairs-x A B``, ``--pairs-y A B``: two feature files per side, row i of A and of B one
positive pair; :mod:`prh.bridge.spectral`), then matches the rows of --x and --y through it. It
writes the report (--json) and, with --out, the map (a ``.safetensors`` map and its ``.json``
sidecar, as ``prh bridge fit`` writes them; ``prh bridge apply`` applies it). When the
eigenvalues are too close (or a sign unreadable) to pin the rotation it says so in one line and
exits 1, writing the report but no map, unless --allow-unpinned.
"""

from __future__ import annotations

import argparse
from typing import Any

from prh.cli._args import positive_int, seed

SPECTRAL_ONLY = ("pairs_x", "pairs_y", "out", "k", "allow_unpinned", "assign", "sign_from")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--method",
        choices=("shape", "spectral"),
        default="shape",
        help="shape: align the clouds' shapes (default); spectral: the rotation from each "
        "modality's own positive pairs (--pairs-x, --pairs-y)",
    )
    for side in ("x", "y"):
        parser.add_argument(
            f"--pairs-{side}",
            nargs=2,
            metavar=("A", "B"),
            default=None,
            help=f"spectral: two feature files of {side.upper()}'s own positive pairs (row i of "
            "A and of B: two observations of one trajectory at the world's lag)",
        )
    parser.add_argument(
        "--out", default=None, help="spectral: map file to write (.safetensors + .json sidecar)"
    )
    parser.add_argument(
        "--k",
        type=positive_int,
        default=None,
        help="spectral: components (default: the smaller numerical rank of the two sides' "
        "pairs, so a JEPA embedding zero-padded to a layer's width counts its own width)",
    )
    parser.add_argument(
        "--assign",
        choices=("auto", "hungarian", "nearest", "none"),
        default=None,
        help="spectral: how rows of --x are matched to rows of --y through the map (default "
        "auto: one to one when the counts agree, else each row's nearest)",
    )
    parser.add_argument(
        "--sign-from",
        choices=("all", "unpaired"),
        default=None,
        help="spectral: rows whose third moments fix the signs (default all: --x/--y and the "
        "first halves of the pairs; unpaired: --x/--y only)",
    )
    parser.add_argument(
        "--allow-unpinned",
        action="store_true",
        default=None,
        help="spectral: write the map and exit 0 even when the rotation cannot be pinned",
    )
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

    if args.method == "spectral":
        return _spectral(args)
    given = [f"--{name.replace('_', '-')}" for name in SPECTRAL_ONLY if getattr(args, name)]
    if given:
        raise InputError(f"{given[0]} needs --method spectral")
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


def _spectral_truth(fx, fy):
    """``(n_x,)`` the row of Y with each X row's id (-1: none), or None without shared ids."""
    import numpy as np

    if fx.ids is None or fy.ids is None:
        return None
    where = {key: j for j, key in enumerate(fy.ids)}
    truth = np.array([where.get(key, -1) for key in fx.ids], dtype=np.int64)
    return truth if (truth >= 0).any() else None


def _spectral(args: argparse.Namespace) -> int:
    """``--method spectral``: checks, the map from each side's own pairs, the report (and map)."""
    from pathlib import Path

    import numpy as np

    from prh.bridge.procrustes import map_files
    from prh.bridge.spectral import spectral_align
    from prh.cli.bridge import pick_layer
    from prh.errors import InputError
    from prh.features import load_features
    from prh.io import guard_outputs, json_bytes, write_all
    from prh.provenance import stamped

    if args.classes_x is not None or args.classes_y is not None:
        flag = "--classes-x" if args.classes_x is not None else "--classes-y"
        raise InputError(f"{flag} works with --method shape only (spectral matches rows)")
    for flag, value in (("--pairs-x", args.pairs_x), ("--pairs-y", args.pairs_y)):
        if value is None:
            raise InputError(f"--method spectral needs {flag} A B (that side's positive pairs)")
    if args.out is not None and Path(args.out).suffix != ".safetensors":
        raise InputError(f"--out {args.out}: a map file must end in .safetensors")
    inputs = [args.x, args.y, *args.pairs_x, *args.pairs_y]
    outputs = {"--json": args.json}
    if args.out is not None:
        outputs["--out"] = args.out
        outputs["--out (its .json sidecar)"] = str(Path(args.out).with_suffix(".json"))
        if Path(args.json).resolve() == Path(outputs["--out (its .json sidecar)"]).resolve():
            raise InputError(f"--json {args.json}: is --out's .json sidecar; choose another path")
    guard_outputs(outputs, inputs=inputs)
    files = {"x": [args.x], "y": [args.y], "pairs_x": args.pairs_x, "pairs_y": args.pairs_y}
    loaded = {role: [load_features(p) for p in paths] for role, paths in files.items()}
    rows = {  # (N, D) of the chosen layer, refused (one line) when not finite
        role: [pick_layer(fs, args.layer_y if role.endswith("y") else args.layer_x,
                          "--layer-y" if role.endswith("y") else "--layer-x").astype(np.float64)
               for fs in sets]
        for role, sets in loaded.items()
    }  # fmt: skip
    names = {
        "x": str(args.x),
        "y": str(args.y),
        "pairs_x": f"--pairs-x {args.pairs_x[0]} {args.pairs_x[1]}",
        "pairs_y": f"--pairs-y {args.pairs_y[0]} {args.pairs_y[1]}",
    }
    truth = _spectral_truth(loaded["x"][0], loaded["y"][0])
    res = spectral_align(
        tuple(rows["pairs_x"]),
        tuple(rows["pairs_y"]),
        rows["x"][0],
        rows["y"][0],
        args.k,
        assignment=args.assign or "auto",
        truth=truth,
        sign_from=args.sign_from or "all",
        seed=args.seed,
        names=names,
    )
    write_map = args.out is not None and (res.pinned or args.allow_unpinned)
    out = {**res.to_dict(), "level": "rows-spectral", "map": args.out if write_map else None}
    out = stamped("match", out, inputs=inputs, seed=args.seed, options=args)
    blobs = {Path(args.json): json_bytes(out)}
    if write_map:
        extra = {"method": "spectral", "pinned": res.pinned, "reason": res.reason,
                 "x": str(args.x), "y": str(args.y), "pairs_x": list(args.pairs_x),
                 "pairs_y": list(args.pairs_y), "layer_x": args.layer_x,
                 "layer_y": args.layer_y, "k": res.k}  # fmt: skip
        blobs.update(map_files(args.out, res.as_map(), extra=extra))
    write_all(blobs)  # the report and the map (with its sidecar) together, or none
    ev = " ".join(f"{v:.3f}" for v in res.eigenvalues_x)
    acc = "unknown" if res.accuracy is None else f"{res.accuracy:.4f}"
    matched = "no rows matched" if res.assignment is None else (
        f"matched {len(res.assignment)} rows ({res.assignment_method}): accuracy {acc}"
    )  # fmt: skip
    where = f" -> {args.json}" + (f", map -> {args.out}" if write_map else "")
    state = "pinned" if res.pinned else "NOT pinned"
    print(f"spectral map, k = {res.k}, {state} (x eigenvalues {ev}); {matched}{where}")
    if not res.pinned:
        import sys

        note = "" if args.allow_unpinned else " (no map written; --allow-unpinned writes it)"
        print(f"prh match: {res.reason}{note}", file=sys.stderr)
        return 0 if args.allow_unpinned else 1
    return 0
