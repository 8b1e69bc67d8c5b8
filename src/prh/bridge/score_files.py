"""``prh bridge score`` as a library call: is it one rotation? :func:`score_bridge_files` joins
the feature files' rows by id (or row order), holds rows out, and reports for every pair of files
the held-out mutual-kNN, CKA and rotation score (:mod:`prh.bridge.evidence`), printed and written
(``prh-bridge-score/1`` JSON, a heatmap PNG).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np


@dataclass(frozen=True)
class BridgeScoreRequest:
    """One ``prh bridge score``, a field per flag: the ``files`` (two or more, ``names``), how
    rows are held out (``test_files``, ``train_ids``/``test_ids`` or ``test_fraction``), the maps'
    dimensions and layer, the statistics, the pair-free matches and the outputs."""

    files: tuple[str, ...]
    names: tuple[str, ...] | None = None
    test_files: tuple[str, ...] | None = None
    train_ids: str | None = None
    test_ids: str | None = None
    test_fraction: float | None = None
    seed: int = 0
    dims: int = 256
    per_side_dims: bool = False
    layer: int = -1
    best_layers: bool = False
    k: int = 10
    bootstrap: int = 1000
    pair_free: tuple[str, ...] | None = None
    world_seed: int | None = None
    match_dims: int = 32
    json: str | None = None
    heatmap: str | None = None


def _check_options(req: BridgeScoreRequest) -> None:
    """Every option checked before any work; one line naming the problem."""
    from prh.errors import InputError
    from prh.io import guard_outputs

    if len(req.files) < 2:
        raise InputError(f"--files: need at least 2 feature files, got {len(req.files)}")
    if req.names is not None and len(req.names) != len(req.files):
        raise InputError(f"--names: {len(req.names)} names for {len(req.files)} --files")
    names = req.names or [Path(f).stem for f in req.files]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise InputError(f"two files are named {dup!r}; give --names")
    if (req.train_ids is None) != (req.test_ids is None):
        raise InputError("--train-ids and --test-ids go together")
    splits = [
        f
        for f, v in (
            ("--test-files", req.test_files),
            ("--train-ids/--test-ids", req.train_ids),
            ("--test-fraction", req.test_fraction),
        )
        if v is not None
    ]
    if len(splits) > 1:
        raise InputError(f"choose one way to hold rows out, got {' and '.join(splits)}")
    if req.test_files is not None and len(req.test_files) != len(req.files):
        raise InputError(
            f"--test-files: {len(req.test_files)} files for {len(req.files)} --files "
            "(one held-out file per --files entry, same order)"
        )
    if req.heatmap and Path(req.heatmap).suffix.lower() != ".png":
        raise InputError(f"--heatmap {req.heatmap}: expected a .png file name")
    if req.world_seed is not None and req.pair_free is None:
        raise InputError("--world-seed labels the pair-free match: give --pair-free too")
    for pair in req.pair_free or []:
        x, sep, y = pair.partition(":")
        if not sep or x == y or x not in names or y not in names:
            raise InputError(
                f"--pair-free {pair}: expected X:Y, two different names among {', '.join(names)}"
            )
    if req.json and req.heatmap and Path(req.json).resolve() == Path(req.heatmap).resolve():
        raise InputError("--json and --heatmap name the same file")
    guard_outputs({"--json": req.json, "--heatmap": req.heatmap}, inputs=_inputs(req))


def _inputs(req: BridgeScoreRequest) -> list[str]:
    return [*req.files, *(req.test_files or []), req.train_ids, req.test_ids]


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


def _split(req: BridgeScoreRequest) -> tuple[dict, dict, list[Any], list[str], list | None]:
    """Training and held-out rows per name, the loaded sets, the names and the held-out rows'
    ids (None when the files carry none)."""
    from prh.bridge.rotation_score import split_rows
    from prh.errors import InputError

    names = req.names or [Path(f).stem for f in req.files]
    sets, rows, ids = _joined(req.files, "--files")
    if req.test_files is not None:
        _, test_rows, test_ids = _joined(req.test_files, "--test-files")
        if ids is not None and test_ids is not None:
            shared = set(ids) & set(test_ids)
            if shared:
                raise InputError(
                    f"--test-files share {len(shared)} ids with --files (held-out rows must not "
                    f"be trained on), first {sorted(shared)[0]!r}"
                )
        return dict(zip(names, rows)), dict(zip(names, test_rows)), sets, names, test_ids
    if req.train_ids is not None:
        tr = _rows_of(ids, req.train_ids, "--train-ids")
        te = _rows_of(ids, req.test_ids, "--test-ids")
        both = set(tr.tolist()) & set(te.tolist())
        if both:
            raise InputError(
                f"--train-ids and --test-ids share {len(both)} ids, first {ids[min(both)]!r}"
            )
    else:
        frac = 0.5 if req.test_fraction is None else req.test_fraction
        tr, te = split_rows(len(rows[0]), frac, req.seed)
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


def score_bridge_files(req: BridgeScoreRequest) -> Any:
    """Check every option, load, compute the matrix, print, write what was asked; the
    :class:`~prh.bridge.evidence.ModalityEvidence` (the matrix and any pair-free matches)."""
    from prh.bridge.evidence import EvidenceConfig, modality_evidence
    from prh.io import atomic_write, write_json
    from prh.provenance import stamp

    _check_options(req)
    train, test, sets, names, test_ids = _split(req)
    pairs = None
    if req.pair_free is not None:
        pairs = [tuple(p.split(":", 1)) for p in req.pair_free] or "all"
    cfg = EvidenceConfig(
        k=req.k,
        bootstrap=req.bootstrap,
        seed=req.seed,
        dims=req.dims,
        common=not req.per_side_dims,
        layer=req.layer,
        best_layers=req.best_layers,
        match_dims=req.match_dims,
    )
    ev = modality_evidence(
        train,
        test,
        _labels(test_ids, req.world_seed),
        pair_free_pairs=pairs,
        config=cfg,
        layer_dims={n: fs.layer_dims for n, fs in zip(names, sets, strict=True)},
    )
    res = ev.matrix
    _print(res)
    _print_pair_free(ev)
    if req.json:
        head = stamp("bridge-score", inputs=_inputs(req), seed=req.seed,
                     options={"action": "score", **asdict(req)})  # fmt: skip
        body = res.to_dict()
        if pairs is not None:
            body["pair_free"] = ev.to_dict()["pair_free"]
        write_json(req.json, {**head, **body})
    if req.heatmap:
        with atomic_write(req.heatmap, "wb") as f:
            f.write(res.heatmap_png())
    return ev
