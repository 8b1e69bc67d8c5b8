"""What ``prh measure`` shows and writes of a filled score matrix: the printed tables, the JSON
document, platonic-rep's ``{scores, indices}`` ``.npy`` blobs and the heatmap, each as bytes for
one all-or-none write.
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

from prh.metrics.matrix_request import MeasureRequest


def _fmt(v: float | None) -> str:
    return "-" if v is None else "undefined" if not math.isfinite(v) else f"{v:.4f}"


def print_result(r: Any, la: int, lb: int) -> None:
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


_HEADER = 12  # longest name printed as a column header; longer ones are numbered


def _print_matrix(title: str, table, names_x: list[str], names_y: list[str]) -> None:
    """One (X, Y) table of numbers: rows named, columns by name where short (else numbered,
    named once below the tables)."""
    print(title)
    width = max(len(n) for n in names_x)
    heads = [_header(j, y) for j, y in enumerate(names_y)]
    cols = [max(9, len(h)) for h in heads]
    print(" " * width + "  " + "  ".join(f"{h:>{c}}" for h, c in zip(heads, cols)))
    for name, row in zip(names_x, table):
        cells = "  ".join(f"{_fmt(float(v)):>{c}}" for v, c in zip(row, cols))
        print(f"{name:<{width}}  {cells}")


def _header(j: int, name: str) -> str:
    return name if len(name) <= _HEADER else str(j)


def _tables(acc: Any, name: str, req: MeasureRequest) -> list[tuple[str, Any]]:
    """(title, table) of everything measured for one metric, raw score first."""
    out = [("", acc.scores[name])]
    if req.null:
        out += [("calibrated (score - null 95% quantile)", acc.calibrated[name])]
        up_to = "up to " if req.null_stop == "adaptive" else ""
        out += [(f"p-value ({up_to}{req.null} shuffles)", acc.p_values[name])]
    if req.bootstrap:
        out += [("95% interval, low", acc.ci[name][..., 0])]
        out += [("95% interval, high", acc.ci[name][..., 1])]
    return out


def print_tables(req, acc: Any, names, x_names: list[str], y_names: list[str]) -> None:
    from prh.metrics.api import KNN_METRICS

    first = True
    for name in names:
        k = req.k if name in (*KNN_METRICS, "cknna") else None
        kk = f" (k = {k})" if k is not None else ""
        for what, table in _tables(acc, name, req):
            if not first:
                print()
            first = False
            title = f"{name}{kk}: rows X, columns Y, best layer pair each"
            _print_matrix(f"{name}{kk}: {what}" if what else title, table, x_names, y_names)
    long = [f"{j} = {y}" for j, y in enumerate(y_names) if _header(j, y) != y]
    if long:
        print("\ncolumns: " + ", ".join(long))


def json_file(req: MeasureRequest, acc: Any, results, names, sides, skipped: list[dict]) -> bytes:
    from prh.io import json_bytes, json_safe
    from prh.provenance import stamp

    xs, ys, x_names, y_names = sides
    doc = {
        **stamp("measure", inputs=[*xs, *ys], seed=req.seed, options=_options(req)),
        "x": [str(p) for p in xs],
        "y": [str(p) for p in ys],
        "x_names": list(x_names),
        "y_names": list(y_names),
        "skipped": list(skipped),
        "metrics": list(names),
        "matrices": {
            m: {
                "scores": acc.scores[m].tolist(),
                "layers": acc.layers[m].tolist(),
                "ci": acc.ci[m].tolist() if req.bootstrap else None,
                "calibrated": acc.calibrated[m].tolist() if req.null else None,
                "p_values": acc.p_values[m].tolist() if req.null else None,
                "null_critical": acc.null_critical[m].tolist() if req.null else None,
                "null_draws": _counts(acc.null_draws[m]) if req.null else None,
            }
            for m in names
        },
        "work": acc.work.to_dict(),
        "results": results,
    }
    return json_bytes(json_safe(doc))


def _counts(table: Any) -> list[list[int | None]]:
    """An (X, Y) float table of counts as integers (None where not measured)."""
    return [[None if v != v else int(v) for v in row] for row in table.tolist()]


def _blob(blob: dict[str, Any]) -> bytes:
    import numpy as np

    buf = io.BytesIO()
    np.save(buf, np.array(blob, dtype=object), allow_pickle=True)
    return buf.getvalue()


def npy_files(acc: Any, npy, stats, x_names: list[str], y_names: list[str]) -> dict:
    """platonic-rep's ``{scores, indices}`` per metric, model names added; the calibrated
    scores and the interval beside it, in the same layout (path -> bytes)."""
    import numpy as np

    names = {"x_names": list(x_names), "y_names": list(y_names)}
    out: dict[Path, bytes] = {}
    for name, path in npy.items():
        # platonic-rep's layout: np.save of a dict; indices[i, j] = (layer of Y_j, layer of X_i),
        # because its compute_alignment calls compute_score(y_feats, x_feats).
        indices = acc.layers[name][:, :, ::-1].astype(np.float64)
        out[path] = _blob({"scores": acc.scores[name], "indices": indices, **names})
        extra = stats.get(name, {})
        if "calibrated" in extra:
            blob = {
                "scores": acc.calibrated[name],
                "indices": indices,
                "p_values": acc.p_values[name],
                "null_critical": acc.null_critical[name],
                **names,
            }
            out[extra["calibrated"]] = _blob(blob)
        if "ci" in extra:
            blob = {"low": acc.ci[name][..., 0], "high": acc.ci[name][..., 1], **names}
            out[extra["ci"]] = _blob({**blob, "indices": indices})
    return out


def heatmap_file(req, acc: Any, names, x_names: list[str], y_names: list[str]) -> bytes:
    """Raw scores per metric; with --null the calibrated scores beside them; with --bootstrap
    each cell also gives its interval."""
    from prh.metrics.heatmap import heatmap_png

    panels, layers, notes = {}, {}, {}
    for m in names:
        panels[m], layers[m] = acc.scores[m], acc.layers[m]
        if req.bootstrap:
            notes[m] = acc.ci[m]
        if req.null:
            key = f"{m} calibrated"
            panels[key], layers[key] = acc.calibrated[m], acc.layers[m]
            if req.bootstrap:
                notes[key] = acc.ci[m] - acc.null_critical[m][..., None]
    return heatmap_png(panels, layers, list(x_names), list(y_names), intervals=notes)


def _options(req: MeasureRequest) -> dict[str, Any]:
    return {
        "k": req.k,
        "null": req.null,
        "null_stop": req.null_stop,
        "bootstrap": req.bootstrap,
        "layers": list(req.layers) if req.layers else None,
        "clamp": "none (no preprocessing)" if req.no_preprocess else req.clamp,
        "l2_normalize": not req.no_preprocess,
        "eps": req.eps,
        "kernel": req.kernel,
        "rbf_sigma": req.rbf_sigma,
        "cca_dim": req.cca_dim,
        "backend": req.backend,
    }
