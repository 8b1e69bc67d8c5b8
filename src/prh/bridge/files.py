"""``prh bridge fit`` and ``prh bridge apply`` as library calls on feature files: one linear map
fitted on paired rows (:func:`fit_map_files`) and applied to new rows (:func:`apply_map_file`), and
the two row helpers every file command shares (:func:`pick_layer`, :func:`paired_rows`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

RETRIEVAL_ROWS = 5000  # rows used for the printed retrieval summary (it is O(N^2))


@dataclass(frozen=True)
class MapFitRequest:
    """One ``prh bridge fit``: a map X -> Y of ``kind`` on layers ``layer_x``, ``layer_y`` of
    two feature files with paired rows, written to ``out`` (``.safetensors``)."""

    x: str
    y: str
    out: str
    kind: str = "semi-orthogonal"
    rank: int | None = None
    whiten: bool = False
    alpha: float = 0.001
    layer_x: int = -1
    layer_y: int = -1


@dataclass(frozen=True)
class MapApplyRequest:
    """One ``prh bridge apply``: the rows of ``x`` (layer ``layer_x``, default the one the map
    was fitted on) mapped through ``map`` into ``out``."""

    map: str
    x: str
    out: str
    layer_x: int | None = None


def sidecar(path: str) -> str:
    """The ``.json`` sidecar of a map file."""
    return str(Path(path).with_suffix(".json"))


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


def fit_map_files(req: MapFitRequest) -> Any:
    """Fit the map of ``req`` on the paired rows of its two files, write it (with its ``.json``
    sidecar) and print its fit and retrieval on the training pairs; the fitted map."""
    from dataclasses import replace

    from prh.bridge import make_map, retrieval, save_map
    from prh.bridge.procrustes import fit_memory_bytes
    from prh.errors import InputError
    from prh.features import load_features
    from prh.io import guard_outputs
    from prh.memory import check_fits

    outputs = {"--out": req.out, "--out (its .json sidecar)": sidecar(req.out)}
    guard_outputs(outputs, inputs=[req.x, req.y])
    if Path(req.out).suffix != ".safetensors":
        raise InputError(f"--out {req.out}: a map file must end in .safetensors")
    fx, fy = load_features(req.x), load_features(req.y)
    a, b = paired_rows(fx, fy)
    x = pick_layer(replace(fx, features=a), req.layer_x, "--layer-x")
    y = pick_layer(replace(fy, features=b), req.layer_y, "--layer-y")
    for path, arr in ((req.x, x), (req.y, y)):
        if not (arr.std(0) > 1e-12).any():  # R^2 and any map to or from it are meaningless
            raise InputError(f"{path}: every row is the same (constant features); nothing to map")
    whiten = req.kind != "ridge" and req.whiten
    need = fit_memory_bytes(req.kind, len(x), x.shape[1], y.shape[1], whiten=whiten)
    check_fits(need, f"a {req.kind} map from d_x = {x.shape[1]:,} to d_y = {y.shape[1]:,}")
    if req.kind == "ridge":
        m = make_map("ridge", alpha=req.alpha)
    elif req.kind == "orthogonal":
        m = make_map("orthogonal", whiten=req.whiten)
    else:
        m = make_map("semi-orthogonal", rank=req.rank, whiten=req.whiten)
    m.fit(x, y)
    extra = {"x": str(req.x), "y": str(req.y), "layer_x": req.layer_x, "layer_y": req.layer_y}
    save_map(req.out, m, extra=extra)
    k = min(len(x), RETRIEVAL_ROWS)
    ret = retrieval(m.transform(x[:k]), y[:k])
    print(f"map: {m.kind}, d_x = {x.shape[1]}, d_y = {y.shape[1]}, pairs = {len(x)} -> {req.out}")
    print(f"fit R^2 = {m.score(x, y):.4f}")
    print(
        f"retrieval on {k} training pairs: X->Y R@1 {ret.x_to_y[1]:.3f} R@5 {ret.x_to_y[5]:.3f}"
        f" R@10 {ret.x_to_y[10]:.3f} | Y->X R@1 {ret.y_to_x[1]:.3f} R@5 {ret.y_to_x[5]:.3f}"
        f" R@10 {ret.y_to_x[10]:.3f}"
    )
    return m


def apply_map_file(req: MapApplyRequest) -> Path:
    """Map the rows of ``req.x`` through a fitted map into Y's space and write them; the file
    written."""
    from prh.bridge import load_map
    from prh.errors import InputError
    from prh.features import check_feature_suffix, load_features, save_features
    from prh.io import guard_outputs

    check_feature_suffix(req.out, "--out")
    guard_outputs({"--out": req.out}, inputs=[req.map, sidecar(req.map), req.x])
    m, config = load_map(req.map)
    fx = load_features(req.x)
    layer = req.layer_x if req.layer_x is not None else config.get("extra", {}).get("layer_x", -1)
    if not isinstance(layer, int) or isinstance(layer, bool):
        raise InputError(f"{req.map}: recorded layer_x {layer!r} is not an integer (--layer-x)")
    x = pick_layer(fx, layer, "--layer-x")
    y = m.transform(x)
    save_features(req.out, y, ids=fx.ids, metadata={"map": str(req.map), "source": str(req.x)})
    npy = Path(req.out).suffix.lower() == ".npy"
    note = " (a .npy holds no ids)" if fx.ids is not None and npy else ""
    print(f"mapped {len(y)} rows {x.shape[1]} -> {y.shape[1]} dims -> {req.out}{note}")
    return Path(req.out)
