"""``prh match`` as a library call: :func:`match_files` matches two unpaired feature files
without any pairs, by the clouds' shapes (rows or class means, :mod:`prh.bridge.match`) or by each
modality's own positive pairs (``method="spectral"``, :mod:`prh.bridge.spectral`), and writes the
report (and a spectral map).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from prh.bridge.files import pick_layer

SPECTRAL_ONLY = ("pairs_x", "pairs_y", "out", "k", "allow_unpinned", "assign", "sign_from")


@dataclass(frozen=True)
class MatchRequest:
    """One ``prh match``, a field per flag: files ``x``, ``y`` (layers ``layer_x``,
    ``layer_y``), the report ``json``; ``method`` shape (optional class lists) or spectral
    (``pairs_x``, ``pairs_y``: two files each; the settings of :data:`SPECTRAL_ONLY`)."""

    x: str
    y: str
    json: str
    method: str = "shape"
    pairs_x: tuple[str, ...] | None = None
    pairs_y: tuple[str, ...] | None = None
    out: str | None = None
    k: int | None = None
    assign: str | None = None
    sign_from: str | None = None
    allow_unpinned: bool | None = None
    classes_x: str | None = None
    classes_y: str | None = None
    no_progress: bool = False
    layer_x: int = -1
    layer_y: int = -1
    kernel: str = "linear"
    polish: str = "none"
    class_max: int = 2000
    seed: int = 0


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


def match_files(req: MatchRequest) -> bool:
    """Match the two files of ``req``, write the report (and a spectral map) and print one line.

    Returns
    -------
    bool
        False when ``method="spectral"`` could not pin the rotation (the report is written, the
        map only with ``allow_unpinned``); True otherwise.
    """
    import numpy as np

    from prh.features import load_features, read_ids
    from prh.io import guard_outputs, write_json
    from prh.provenance import stamped

    if req.method == "spectral":
        return _spectral(req)
    _check_shape_flags(req)
    labels = [None, None]
    if req.classes_x is not None:  # small text files: read (and refused) before any work
        labels = [read_ids(req.classes_x, "--classes-x"), read_ids(req.classes_y, "--classes-y")]
    inputs = [req.x, req.y, req.classes_x, req.classes_y]
    guard_outputs({"--json": req.json}, inputs=inputs)
    fx, fy = load_features(req.x), load_features(req.y)
    x = pick_layer(fx, req.layer_x, "--layer-x").astype(np.float64)
    y = pick_layer(fy, req.layer_y, "--layer-y").astype(np.float64)
    if req.classes_x is not None:
        res, out = _match_class_means(req, fx, fy, x, y, labels)
    else:
        res, out = _match_rows(req, fx, fy, x, y)
    out = stamped("match", {**res.to_dict(), **out}, inputs=inputs, seed=req.seed,
                  options=asdict(req))  # fmt: skip
    write_json(req.json, out)
    acc = "unknown" if res.accuracy is None else f"{res.accuracy:.4f}"
    print(
        f"matched {len(res.permutation)} {'classes' if req.classes_x else 'rows'}: "
        f"accuracy {acc}, "
        f"objective {res.objective:.6f}, {res.seconds:.2f} s -> {req.json}"
    )
    return True


def _check_shape_flags(req: MatchRequest) -> None:
    """``method="shape"``: no spectral setting, both class lists or neither."""
    from prh.errors import InputError

    given = [f"--{name.replace('_', '-')}" for name in SPECTRAL_ONLY if getattr(req, name)]
    if given:
        raise InputError(f"{given[0]} needs --method spectral")
    if (req.classes_x is None) != (req.classes_y is None):
        raise InputError("--classes-x and --classes-y go together: give both or neither")


def _match_class_means(req, fx, fy, x, y, labels) -> tuple[Any, dict[str, object]]:
    """Class level: each side's class means, matched (a known answer when the names agree)."""
    import numpy as np

    from prh.bridge.match import match_classes
    from prh.errors import InputError

    out: dict[str, object] = {}
    lx = _check_labels(labels[0], req.classes_x, fx.n, "--classes-x", fx.path)
    ly = _check_labels(labels[1], req.classes_y, fy.n, "--classes-y", fy.path)
    x, names_x = _class_means(x, lx)
    y, names_y = _class_means(y, ly)
    if len(names_x) != len(names_y):
        raise InputError(
            f"class lists do not match: {req.classes_x} has {len(names_x)} classes, "
            f"{req.classes_y} has {len(names_y)}"
        )
    truth = None
    if names_x == names_y:
        truth = np.arange(len(names_x))
    res = match_classes(x, y, kernel=req.kernel, truth=truth, polish=req.polish, seed=req.seed)
    out["level"] = "class"
    out["classes_x"], out["classes_y"] = names_x, names_y
    out["pairs"] = [[names_x[i], names_y[j]] for i, j in enumerate(res.permutation)]
    return res, out


def _match_rows(req, fx, fy, x, y) -> tuple[Any, dict[str, object]]:
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
    if fx.n <= req.class_max:
        res = match_classes(x, y, kernel=req.kernel, truth=truth, polish=req.polish, seed=req.seed)
        out["level"] = "rows-qap"
    else:
        with Progress(None, "match", enabled=not req.no_progress, unit="stage") as bar:
            res = match_samples(x, y, truth=truth, seed=req.seed, progress=bar)
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


def _spectral(req: MatchRequest) -> bool:
    """``method="spectral"``: checks, the map from each side's own pairs, the report (and map);
    whether the rotation was pinned."""
    import sys

    from prh.bridge.spectral import spectral_align
    from prh.features import load_features
    from prh.io import guard_outputs

    inputs, outputs = _spectral_paths(req)
    guard_outputs(outputs, inputs=inputs)
    files = {"x": [req.x], "y": [req.y], "pairs_x": req.pairs_x, "pairs_y": req.pairs_y}
    loaded = {role: [load_features(p) for p in paths] for role, paths in files.items()}
    rows = _spectral_rows(req, loaded)
    names = {
        "x": str(req.x),
        "y": str(req.y),
        "pairs_x": f"--pairs-x {req.pairs_x[0]} {req.pairs_x[1]}",
        "pairs_y": f"--pairs-y {req.pairs_y[0]} {req.pairs_y[1]}",
    }
    truth = _spectral_truth(loaded["x"][0], loaded["y"][0])
    res = spectral_align(
        tuple(rows["pairs_x"]),
        tuple(rows["pairs_y"]),
        rows["x"][0],
        rows["y"][0],
        req.k,
        assignment=req.assign or "auto",
        truth=truth,
        sign_from=req.sign_from or "all",
        seed=req.seed,
        names=names,
    )
    write_map = req.out is not None and (res.pinned or bool(req.allow_unpinned))
    _write_spectral(req, res, inputs, write_map)
    ev = " ".join(f"{v:.3f}" for v in res.eigenvalues_x)
    acc = "unknown" if res.accuracy is None else f"{res.accuracy:.4f}"
    matched = "no rows matched" if res.assignment is None else (
        f"matched {len(res.assignment)} rows ({res.assignment_method}): accuracy {acc}"
    )  # fmt: skip
    where = f" -> {req.json}" + (f", map -> {req.out}" if write_map else "")
    state = "pinned" if res.pinned else "NOT pinned"
    print(f"spectral map, k = {res.k}, {state} (x eigenvalues {ev}); {matched}{where}")
    if not res.pinned:
        note = "" if req.allow_unpinned else " (no map written; --allow-unpinned writes it)"
        print(f"prh match: {res.reason}{note}", file=sys.stderr)
    return res.pinned


def _spectral_paths(req: MatchRequest) -> tuple[list[str], dict[str, str]]:
    """The spectral method's input files and named outputs, refused (one line) before any read:
    class lists, a missing side's pairs, a map name, the report on the map's sidecar."""
    from pathlib import Path

    from prh.errors import InputError

    if req.classes_x is not None or req.classes_y is not None:
        flag = "--classes-x" if req.classes_x is not None else "--classes-y"
        raise InputError(f"{flag} works with --method shape only (spectral matches rows)")
    for flag, value in (("--pairs-x", req.pairs_x), ("--pairs-y", req.pairs_y)):
        if value is None:
            raise InputError(f"--method spectral needs {flag} A B (that side's positive pairs)")
    if req.out is not None and Path(req.out).suffix != ".safetensors":
        raise InputError(f"--out {req.out}: a map file must end in .safetensors")
    inputs = [req.x, req.y, *req.pairs_x, *req.pairs_y]
    outputs = {"--json": req.json}
    if req.out is not None:
        outputs["--out"] = req.out
        outputs["--out (its .json sidecar)"] = str(Path(req.out).with_suffix(".json"))
        if Path(req.json).resolve() == Path(outputs["--out (its .json sidecar)"]).resolve():
            raise InputError(f"--json {req.json}: is --out's .json sidecar; choose another path")
    return inputs, outputs


def _spectral_rows(req: MatchRequest, loaded: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """Each role's files as ``(N, D)`` float64 rows of the chosen layer (Y's layer for ``y`` and
    ``pairs_y``), refused (one line) when not finite."""
    import numpy as np

    def rows(fs: Any, role: str) -> np.ndarray:
        side_y = role.endswith("y")
        layer, flag = (req.layer_y, "--layer-y") if side_y else (req.layer_x, "--layer-x")
        return pick_layer(fs, layer, flag).astype(np.float64)

    return {role: [rows(fs, role) for fs in sets] for role, sets in loaded.items()}


def _write_spectral(req: MatchRequest, res: Any, inputs: list[str], write_map: bool) -> None:
    """The report and the map (with its sidecar) together, or none."""
    from pathlib import Path

    from prh.bridge.procrustes import map_files
    from prh.io import json_bytes, write_all
    from prh.provenance import stamped

    out = {**res.to_dict(), "level": "rows-spectral", "map": req.out if write_map else None}
    out = stamped("match", out, inputs=inputs, seed=req.seed, options=asdict(req))
    blobs = {Path(req.json): json_bytes(out)}
    if write_map:
        extra = {"method": "spectral", "pinned": res.pinned, "reason": res.reason,
                 "x": str(req.x), "y": str(req.y), "pairs_x": list(req.pairs_x),
                 "pairs_y": list(req.pairs_y), "layer_x": req.layer_x,
                 "layer_y": req.layer_y, "k": res.k}  # fmt: skip
        blobs.update(map_files(req.out, res.as_map(), extra=extra))
    write_all(blobs)
