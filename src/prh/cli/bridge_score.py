"""`prh bridge score`: is it one rotation? The alignment matrix of feature files, held out.

`prh bridge score --files A B [C ...]` joins the files' rows by id (or row order when no file has
ids), splits them into training and held-out rows, and for every pair reports on the held-out
rows mutual-kNN@k (bootstrap interval), linear CKA and the rotation score: the whitened
orthonormal map's R@1 (and R^2) over the ridge map's, both fitted on the training rows
(:mod:`prh.bridge.rotation_score`). Two files: one pair, both directions.

Held-out rows: a seeded permutation (`--test-fraction`, `--seed`), or `--train-ids`/`--test-ids`
(one id per line), or `--test-files` (one per --files entry, same order: --files are then the
training rows). Writes `--json` (prh-bridge-score/1) and a `--heatmap` PNG.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

import numpy as np

from prh.cli._args import fraction, nonnegative_int, positive_int, seed


def add_parser(sub: Any) -> None:
    """Register ``score`` on the ``prh bridge`` sub-parsers."""
    p = sub.add_parser("score", help="alignment matrix and rotation score of feature files")
    p.add_argument(
        "--files", nargs="+", required=True, metavar="FILE", help="feature files (N, L, D), >= 2"
    )
    p.add_argument("--names", nargs="+", default=None, help="one name per --files entry")
    p.add_argument(
        "--test-files",
        nargs="+",
        default=None,
        metavar="FILE",
        help="held-out rows of each --files entry (same order); --files are then the train rows",
    )
    p.add_argument("--train-ids", default=None, help="ids of the training rows, one per line")
    p.add_argument("--test-ids", default=None, help="ids of the held-out rows, one per line")
    p.add_argument(
        "--test-fraction",
        type=fraction,
        default=None,
        help="held-out fraction of a seeded split (default 0.5 when no other split is given)",
    )
    _map_flags(p)
    _match_and_output_flags(p)


def _map_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=seed, default=0, help="seed of the split and the bootstrap")
    p.add_argument(
        "--dims", type=positive_int, default=256, help="principal dims per side of the maps"
    )
    p.add_argument(
        "--per-side-dims",
        action="store_true",
        help="each side keeps its own min(--dims, rank) principal dims (map of rank = the "
        "narrower side's) instead of one common k for both",
    )
    p.add_argument(
        "--layer", type=int, default=-1, help="layer of every file (index, -1 = last; default -1)"
    )
    p.add_argument(
        "--best-layers",
        action="store_true",
        help="mutual-kNN and CKA: best layer pair (benchmark protocol) instead of --layer",
    )
    p.add_argument("--k", type=positive_int, default=10, help="neighbours of mutual-kNN")
    p.add_argument(
        "--bootstrap",
        type=nonnegative_int,
        default=1000,
        help="bootstrap resamples of the mutual-kNN and rotation score intervals (default 1000)",
    )


def _match_and_output_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--pair-free",
        nargs="*",
        default=None,
        metavar="X:Y",
        help="also match these pairs of --names without pairs on the held-out rows (sample "
        "level; class level with --world-seed); no value: every pair",
    )
    p.add_argument(
        "--world-seed",
        type=seed,
        default=None,
        help="cave world whose scenes the ids (scene_<i>) name: its largest object's shape and "
        "colour label the pair-free class-level match",
    )
    p.add_argument(
        "--match-dims",
        type=positive_int,
        default=32,
        help="whitened principal dims per side before pair-free matching (default 32)",
    )
    p.add_argument("--json", default=None, metavar="PATH", help="write the matrix here (JSON)")
    p.add_argument("--heatmap", default=None, metavar="PNG", help="write the heatmap here")


def _check_options(args: argparse.Namespace) -> None:
    """Every option checked before any work; one line naming the problem."""
    from prh.errors import InputError
    from prh.io import guard_outputs

    if len(args.files) < 2:
        raise InputError(f"--files: need at least 2 feature files, got {len(args.files)}")
    if args.names is not None and len(args.names) != len(args.files):
        raise InputError(f"--names: {len(args.names)} names for {len(args.files)} --files")
    names = args.names or [Path(f).stem for f in args.files]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise InputError(f"two files are named {dup!r}; give --names")
    if (args.train_ids is None) != (args.test_ids is None):
        raise InputError("--train-ids and --test-ids go together")
    splits = [
        f
        for f, v in (
            ("--test-files", args.test_files),
            ("--train-ids/--test-ids", args.train_ids),
            ("--test-fraction", args.test_fraction),
        )
        if v is not None
    ]
    if len(splits) > 1:
        raise InputError(f"choose one way to hold rows out, got {' and '.join(splits)}")
    if args.test_files is not None and len(args.test_files) != len(args.files):
        raise InputError(
            f"--test-files: {len(args.test_files)} files for {len(args.files)} --files "
            "(one held-out file per --files entry, same order)"
        )
    if args.heatmap and Path(args.heatmap).suffix.lower() != ".png":
        raise InputError(f"--heatmap {args.heatmap}: expected a .png file name")
    if args.world_seed is not None and args.pair_free is None:
        raise InputError("--world-seed labels the pair-free match: give --pair-free too")
    for pair in args.pair_free or []:
        x, sep, y = pair.partition(":")
        if not sep or x == y or x not in names or y not in names:
            raise InputError(
                f"--pair-free {pair}: expected X:Y, two different names among {', '.join(names)}"
            )
    if args.json and args.heatmap and Path(args.json).resolve() == Path(args.heatmap).resolve():
        raise InputError("--json and --heatmap name the same file")
    guard_outputs({"--json": args.json, "--heatmap": args.heatmap}, inputs=_inputs(args))


def _inputs(args: argparse.Namespace) -> list[str]:
    return [*args.files, *(args.test_files or []), args.train_ids, args.test_ids]


def _joined(paths: list[str], flag: str) -> tuple[list[Any], list[np.ndarray], list[str] | None]:
    """Load ``paths``; rows of every file in the first file's order (by id, else row order)."""
    from prh.errors import InputError
    from prh.features import join_by_ids, load_features

    sets = [load_features(p) for p in paths]
    with_ids = [fs.ids is not None for fs in sets]
    if all(with_ids):
        return sets, [join_by_ids(sets[0], fs)[1] for fs in sets], list(sets[0].ids)
    if any(with_ids):
        bare = sets[with_ids.index(False)].path
        raise InputError(f"{flag} {bare}: no ids while other files have them; cannot pair rows")
    ns = {fs.path: fs.n for fs in sets}
    if len(set(ns.values())) != 1:
        raise InputError(f"{flag}: files without ids must have equal rows, got {ns}")
    return sets, [fs.features for fs in sets], None


def _rows_of(ids: list[str] | None, wanted_path: str, flag: str) -> np.ndarray:
    from prh.errors import InputError
    from prh.features import read_ids

    if ids is None:
        raise InputError(f"{flag}: the feature files carry no ids to select")
    index = {i: r for r, i in enumerate(ids)}
    wanted = read_ids(wanted_path)
    if not wanted:
        raise InputError(f"{flag} {wanted_path}: holds no id")
    missing = [i for i in wanted if i not in index]
    if missing:
        raise InputError(
            f"{flag} {wanted_path}: {len(missing)} ids not in the feature files, "
            f"first {missing[0]!r}"
        )
    return np.array([index[i] for i in wanted], dtype=np.int64)


def _split(args: argparse.Namespace) -> tuple[dict, dict, list[Any], list[str], list | None]:
    """Training and held-out rows per name, the loaded sets, the names and the held-out rows'
    ids (None when the files carry none)."""
    from prh.bridge.rotation_score import split_rows
    from prh.errors import InputError

    names = args.names or [Path(f).stem for f in args.files]
    sets, rows, ids = _joined(args.files, "--files")
    if args.test_files is not None:
        _, test_rows, test_ids = _joined(args.test_files, "--test-files")
        if ids is not None and test_ids is not None:
            shared = set(ids) & set(test_ids)
            if shared:
                raise InputError(
                    f"--test-files share {len(shared)} ids with --files (held-out rows must not "
                    f"be trained on), first {sorted(shared)[0]!r}"
                )
        return dict(zip(names, rows)), dict(zip(names, test_rows)), sets, names, test_ids
    if args.train_ids is not None:
        tr = _rows_of(ids, args.train_ids, "--train-ids")
        te = _rows_of(ids, args.test_ids, "--test-ids")
        both = set(tr.tolist()) & set(te.tolist())
        if both:
            raise InputError(
                f"--train-ids and --test-ids share {len(both)} ids, first {ids[min(both)]!r}"
            )
    else:
        frac = 0.5 if args.test_fraction is None else args.test_fraction
        tr, te = split_rows(len(rows[0]), frac, args.seed)
    return (
        {n: r[tr] for n, r in zip(names, rows, strict=True)},
        {n: r[te] for n, r in zip(names, rows, strict=True)},
        sets,
        names,
        None if ids is None else [ids[i] for i in te],
    )


def _fmt(v: float) -> str:
    return "-" if not math.isfinite(v) else f"{v:.3f}"


def _print(res: Any) -> None:
    names = res.names
    width = max(len(n) for n in names)
    for title, mat in res.score_matrices().items():
        print(f"{title}: rows X, columns Y ({res.n_test} held-out rows)")
        print(" " * width + "  " + "  ".join(f"{j:>7}" for j in range(len(names))))
        for i, n in enumerate(names):
            print(f"{n:<{width}}  " + "  ".join(f"{_fmt(float(v)):>7}" for v in mat[i]))
        print()
    print("columns: " + ", ".join(f"{j} = {n}" for j, n in enumerate(names)))
    print(f"\nrotation score per pair (maps fitted on {res.n_train} rows, k <= {res.dims}):")
    for i, j in ((i, j) for i in range(len(names)) for j in range(len(names)) if i != j):
        if (i, j) not in res.pairs:
            print(f"  {names[i]} -> {names[j]}: undefined (a side is constant on training rows)")
            continue
        r = res.pairs[i, j]
        note = "" if r.ridge_above_chance else "  (ridge at chance: undefined)"
        ci = f" [{_fmt(r.score_ci[0])}, {_fmt(r.score_ci[1])}]" if r.score_ci else ""
        print(
            f"  {names[i]} -> {names[j]}: score {_fmt(r.score)}{ci} (R@1 orthonormal "
            f"{r.orthonormal.r1:.3f} / ridge {r.ridge.r1:.3f}; chance {r.chance_r1:.3f}), "
            f"R^2 {r.orthonormal.r2:.3f} / {r.ridge.r2:.3f} = {_fmt(r.r2_ratio)}, "
            f"k {r.k_x}x{r.k_y}{note}"
        )
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            lo, hi = res.mutual_knn_ci[i, j]
            ci = f" [{_fmt(lo)}, {_fmt(hi)}]" if math.isfinite(lo) else ""
            print(
                f"  {names[i]} ~ {names[j]}: mutual-kNN@{res.k} {_fmt(res.mutual_knn[i, j])}{ci}"
                f", CKA {_fmt(res.cka[i, j])}"
            )


def _labels(ids: list | None, world_seed: int | None) -> dict[str, np.ndarray] | None:
    """Shape and colour of each held-out scene's largest object (ties: undefined), from ids."""
    if world_seed is None:
        return None
    from prh.errors import InputError
    from prh.world import make_world
    from prh.world.factors import scene_factors, scene_ids_of

    if ids is None:
        raise InputError("--world-seed: the held-out rows carry no ids (scene_<i>) to label")
    world = make_world("cave", seed=world_seed)
    scenes = scene_ids_of(ids)
    if scenes.max() >= world.num_scenes:
        raise InputError(f"--world-seed {world_seed}: the world has no scene {scenes.max()}")
    f = scene_factors(world, scenes)
    return {"shape": f["shape"], "colour": f["colour"]}


def _print_pair_free(ev: Any) -> None:
    for (x, y), r in ev.pair_free.items():
        parts = [
            f"{f} {m.accuracy:.2f} of {len(m.classes)}{' (exact)' if m.exact else ''}"
            for f, m in r.classes.items()
        ]
        s = r.samples
        if s is not None:
            parts.append(
                f"samples {s.accuracy:.3f} (chance {s.chance:.4f}, {s.times_chance:.1f}x; "
                f"start {s.start})"
            )
        print(f"  pair-free {x} ~ {y}: " + ", ".join(parts))


def run(args: argparse.Namespace) -> int:
    """Check every option, load, compute the matrix, print, write what was asked."""
    from prh.bridge.evidence import EvidenceConfig, modality_evidence
    from prh.io import atomic_write, write_json
    from prh.provenance import stamp

    _check_options(args)
    train, test, sets, names, test_ids = _split(args)
    pairs = None
    if args.pair_free is not None:
        pairs = [tuple(p.split(":", 1)) for p in args.pair_free] or "all"
    cfg = EvidenceConfig(
        k=args.k,
        bootstrap=args.bootstrap,
        seed=args.seed,
        dims=args.dims,
        common=not args.per_side_dims,
        layer=args.layer,
        best_layers=args.best_layers,
        match_dims=args.match_dims,
    )
    ev = modality_evidence(
        train,
        test,
        _labels(test_ids, args.world_seed),
        pair_free_pairs=pairs,
        config=cfg,
        layer_dims={n: fs.layer_dims for n, fs in zip(names, sets, strict=True)},
    )
    res = ev.matrix
    _print(res)
    _print_pair_free(ev)
    if args.json:
        head = stamp("bridge-score", inputs=_inputs(args), seed=args.seed, options=args)
        body = res.to_dict()
        if pairs is not None:
            body["pair_free"] = ev.to_dict()["pair_free"]
        write_json(args.json, {**head, **body})
    if args.heatmap:
        with atomic_write(args.heatmap, "wb") as f:
            f.write(res.heatmap_png())
    return 0
