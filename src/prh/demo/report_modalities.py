"""The report's modalities section and its summary entry (:mod:`prh.demo.modalities`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prh.demo.html_parts import (
    DASH,
    UNDEFINED,
    Cell,
    figure,
    interval,
    is_undefined,
    noted,
    num,
    render,
    strong,
    table,
)


def pair_rows(m: dict[str, Any], cc: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Every unordered pair of the matrix ``m``: mutual-kNN with its interval, CKA, the rotation
    scores and the orthonormal maps' held-out R^2 both ways, and (from the theory section's
    ``pairs``, ``cc``) the mean held-out canonical correlation with its interval."""
    names = m["names"]
    r2 = {(p["x"], p["y"]): (p.get("orthonormal") or {}).get("r2") for p in m.get("pairs", [])}
    cn = cc["names"] if cc else []
    rows = []
    for i, x in enumerate(names):
        for j in range(i + 1, len(names)):
            y = names[j]
            row = {
                "x": x,
                "y": y,
                "mutual_knn": m["mutual_knn"][i][j],
                "mutual_knn_ci": [m["mutual_knn_ci_low"][i][j], m["mutual_knn_ci_high"][i][j]],
                "cka": m["cka"][i][j],
                "rotation_x_to_y": m["rotation"][i][j],
                "rotation_y_to_x": m["rotation"][j][i],
                "r2_x_to_y": r2.get((x, y)),
                "r2_y_to_x": r2.get((y, x)),
            }
            if x in cn and y in cn:
                a, b = cn.index(x), cn.index(y)
                row["cc"] = cc["cc"][a][b]
                row["cc_ci"] = [cc["cc_ci_low"][a][b], cc["cc_ci_high"][a][b]]
                if cc.get("predicted"):  # the theory's prediction for perfect encoders
                    row["cc_predicted"] = cc["predicted"][a][b]
            rows.append(row)
    return rows


def modalities_summary(
    section: dict[str, Any] | None, cc: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """What ``summary.json`` keeps of the step: runs, probes, every pair (:func:`pair_rows`),
    pair-free results, targets, captioners (the full matrices stay in ``OUT/steps/``)."""
    if not section or section.get("skipped"):
        return section
    pairs = pair_rows(section["evidence"]["matrix"], cc)
    cap = section.get("captioners")
    return {
        "runs": section["runs"],
        "probe": {
            n: {f: v["embedding"] for f, v in p.items()} if n != "chance" else p
            for n, p in section["probe"].items()
        },
        "pairs": pairs,
        "pair_free": section["evidence"]["pair_free"],
        "targets": section["targets"],
        "readout": section.get("readout"),
        "captioners": None
        if not cap
        else {
            k: cap[k]
            for k in (
                "metric",
                "paired",
                "zero_pair",
                "nearest_caption",
                "ratio",
                "paired_beats_nearest",
                "n",
                "match",
            )
        },
    }


def modalities_html(section: dict[str, Any] | None, out: Path) -> str:
    """The report's section: probes, the heatmap, the table against text-good, pair-free,
    the targets, the captioners."""
    return render("modalities.html", mod=modalities_context(section, out))


def modalities_context(section: dict[str, Any] | None, out: Path) -> dict[str, Any]:
    """What ``templates/modalities.html`` shows of the step (``{"skipped": why}`` when it did not
    run)."""
    if not section or section.get("skipped"):
        return {"skipped": (section or {}).get("skipped", "not run")}
    heat = out / section.get("heatmap", "modalities.png")
    ev = section["evidence"]
    return {
        "skipped": None,
        "probe": _probe_table(section["probe"]),
        "heatmap": figure(heat, "alignment matrix") if heat.is_file() else None,
        "text_good": _text_good_table(ev["matrix"]),
        "pair_free": _pair_free_table(ev["pair_free"]) if ev["pair_free"] else None,
        "targets": targets_table(section["targets"]),
        "captioners": _captioners(section.get("captioners")),
        "readout": _readout(section.get("readout")),
    }


def _readout(r: dict[str, Any] | None) -> dict[str, Any] | None:
    """The wide runs' read-out (``image_embed_dim``): widths and each run's top eigenvalues."""
    if not r:
        return None
    k = r["k"]
    runs = {n: " ".join(f"{v:.3f}" for v in ev[:k]) + (f" | {ev[k]:.3f}" if len(ev) > k else "")
            for n, ev in r["eigenvalues"].items()}  # fmt: skip
    return {"width": r["width"], "k": k, "runs": runs}


def _probe_table(probe: dict[str, Any]) -> dict[str, Any]:
    """kNN@10 accuracy of each image encoder (embedding, best layer) and chance."""
    factors = ("shape", "colour", "count")
    rows: list[list[Cell]] = [
        [n] + [noted(num(p[f]["embedding"]), f"(best layer {num(p[f]['best'])})") for f in factors]
        for n, p in probe.items()
        if n != "chance"
    ]
    rows.append(["chance"] + [num(probe["chance"][f]) for f in factors])
    return table(["encoder", "shape", "colour", "object count"], rows)


def _text_good_table(m: dict[str, Any]) -> dict[str, Any] | None:
    """Every encoder against the good-view text JEPA (``None`` without one)."""
    names = m["names"]
    if "text-good" not in names:
        return None
    t = names.index("text-good")
    ci = m["mutual_knn_ci_low"], m["mutual_knn_ci_high"]
    rows: list[list[Cell]] = [
        [
            n,
            f"{num(m['mutual_knn'][i][t], 4)} {interval(ci[0][i][t], ci[1][i][t], 4)}",
            num(m["cka"][i][t]),
            _rotation_cell(m, i, t),
            _rotation_cell(m, t, i),
        ]
        for i, n in enumerate(names)
        if i != t
    ]
    head = [
        "encoder",
        "mutual-kNN@10 [95% CI]",
        "linear CKA",
        "rotation score (-> text)",
        "rotation score (text ->)",
    ]
    return table(head, rows)


def _rotation_cell(m: dict[str, Any], i: int, j: int) -> str:
    """The rotation score of the map from encoder ``i`` to ``j``; undefined with the reason the
    pair's record gives (a ridge map no better than chance has no ratio to report)."""
    x, y = m["names"][i], m["names"][j]
    pair = next((p for p in m.get("pairs", []) if (p["x"], p["y"]) == (x, y)), {})
    why = "ridge map not above chance" if pair.get("ridge_above_chance") is False else None
    return num(m["rotation"][i][j], why=why)


def _classes_cell(classes: dict[str, Any], factor: str) -> str:
    """Pair-free class-level accuracy of one factor, ``(exact)`` when every class matched."""
    if factor not in classes:
        return DASH
    c = classes[factor]
    return f"{num(c['accuracy'], 2)}{' (exact)' if c['exact'] else ''}"


def _samples_cell(s: dict[str, Any] | None) -> str:
    """Pair-free sample-level accuracy and its multiple of chance."""
    if not s:
        return DASH
    return f"{num(s.get('accuracy'), 4)} ({num(s.get('times_chance'), 1)}x chance)"


def _pair_free_table(pair_free: list[dict[str, Any]]) -> dict[str, Any]:
    """The pairs matched with no pairs at all."""
    rows: list[list[Cell]] = [
        [
            f"{pf['x']} ~ {pf['y']}",
            *(_classes_cell(pf.get("classes") or {}, f) for f in ("shape", "colour")),
            _samples_cell(pf.get("samples")),
        ]
        for pf in pair_free
    ]
    return table(["pair", "shape classes", "colour classes", "samples"], rows)


def targets_table(targets: list[dict[str, Any]]) -> dict[str, Any]:
    """Issue 13's targets: what each measured, met or missed."""
    label: dict[bool | None, Cell] = {True: "met", False: strong("missed"), None: "undefined"}
    rows = [[r["target"], r["figure"], label[r["met"]]] for r in targets]
    return table(["target", "measured", ""], rows)


def _captioners(cap: dict[str, Any] | None) -> dict[str, Any] | None:
    """The zero-pair captioner against the paired one and the nearest caption."""
    if not cap:
        return None
    match = cap.get("match") or {}
    rows: list[list[Cell]] = [
        ["paired map + text-only decoder", _x100(cap["paired"], 1)],
        ["zero-pair map + text-only decoder", _x100(cap["zero_pair"], 1)],
        ["nearest caption (paired map)", _x100(cap["nearest_caption"], 1)],
    ]
    ratio = cap["ratio"]
    beats = {True: "beats", False: "does not beat"}
    return {
        "table": table(["captioner", f"{cap['metric']} (x100)"], rows),
        "ratio": UNDEFINED if is_undefined(ratio) else f"{100 * ratio:.0f}%",
        "n": str(cap["n"]),
        "match": num(match.get("accuracy")),
        "chance": num(match.get("chance")),
        "beats": beats.get(cap["paired_beats_nearest"], "cannot be compared with (undefined)"),
    }


def _x100(x: Any, nd: int) -> str:
    """``100 x``, by :func:`num` (undefined stays undefined)."""
    return num(x if is_undefined(x) else 100 * x, nd)
