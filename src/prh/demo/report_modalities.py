"""The report's modalities section and its summary entry (:mod:`prh.demo.modalities`)."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from prh.demo.html_parts import cell, img_tag, table


def _probe_cell(p: dict[str, Any]) -> str:
    return f"{cell(p['embedding'])} <span class=muted>(best layer {cell(p['best'])})</span>"


def _samples_cell(s: dict[str, Any]) -> str:
    if not s:
        return "&ndash;"
    return f"{cell(s.get('accuracy'), 4)} ({cell(s.get('times_chance'), 1)}x chance)"


def modalities_summary(section: dict[str, Any] | None) -> dict[str, Any] | None:
    """What ``summary.json`` keeps of the step: runs, probes, the pairs against the good-view
    text JEPA, pair-free results, targets, captioners (the full matrices stay in
    ``OUT/steps/``)."""
    if not section or section.get("skipped"):
        return section
    m = section["evidence"]["matrix"]
    names = m["names"]
    pairs = []
    for i, x in enumerate(names):
        for j in range(i + 1, len(names)):
            pairs.append(
                {
                    "x": x,
                    "y": names[j],
                    "mutual_knn": m["mutual_knn"][i][j],
                    "mutual_knn_ci": [m["mutual_knn_ci_low"][i][j], m["mutual_knn_ci_high"][i][j]],
                    "cka": m["cka"][i][j],
                    "rotation_x_to_y": m["rotation"][i][j],
                    "rotation_y_to_x": m["rotation"][j][i],
                }
            )
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
    e = html.escape
    parts = ["<h2>Three modalities trained apart: one rotation, found without pairs?</h2>"]
    if not section or section.get("skipped"):
        why = (section or {}).get("skipped", "not run")
        parts.append(
            f"<p class=muted>Not run in this preset ({e(why)}); <code>prh demo</code> "
            "trains an image encoder, <code>prh demo --full</code> three.</p>"
        )
        return "\n".join(parts)
    parts.append(
        "<p>Each image or sketch encoder is trained alone on its own views of the training scenes "
        "(EfficientNet-Lite0's early blocks frozen, later blocks and a whitened-JEPA head "
        "fine-tuned): <b>good</b> views are two renders of one scene under independent nuisance, "
        "<b>bad</b> views two crops / colour jitters of one render. Everything below is measured "
        "on the held-out scenes; maps are fitted on the bridge scenes.</p>"
    )
    parts.append(
        "<p class=muted>What the theorem predicts here. Its good views have the state kernel "
        "Pi = diag(p) (two observations of the <i>same</i> scene), so T_Pi is the identity: every "
        "eigenvalue is 1, there is no gap after the k-th, and by its own statement minimisers "
        "exist that are misaligned by e_cca >= 1/k. Which k scene features each encoder keeps "
        "is then left to its architecture and data, not fixed by the views; a rotation between "
        "two modalities is what the theorem guarantees only for a kernel with a gap.</p>"
    )
    probe = section["probe"]
    ch = probe["chance"]
    rows = [
        [e(n)] + [_probe_cell(p[f]) for f in ("shape", "colour", "count")]
        for n, p in probe.items()
        if n != "chance"
    ]
    rows.append(["chance"] + [cell(ch[f]) for f in ("shape", "colour", "count")])
    parts.append("<h3>What each image encoder sees (kNN@10 accuracy, largest object)</h3>")
    parts.append(table(["encoder", "shape", "colour", "object count"], rows))
    heat = out / section.get("heatmap", "modalities.png")
    if heat.is_file():
        parts.append(img_tag(heat, "alignment matrix"))
    m = section["evidence"]["matrix"]
    names = m["names"]
    if "text-good" in names:
        t = names.index("text-good")
        rows = []
        for i, n in enumerate(names):
            if i == t:
                continue
            rows.append(
                [
                    e(n),
                    f"{cell(m['mutual_knn'][i][t], 4)} [{cell(m['mutual_knn_ci_low'][i][t], 4)}, "
                    f"{cell(m['mutual_knn_ci_high'][i][t], 4)}]",
                    cell(m["cka"][i][t]),
                    cell(m["rotation"][i][t]),
                    cell(m["rotation"][t][i]),
                ]
            )
        parts.append("<h3>Against the good-view text JEPA</h3>")
        parts.append(
            table(
                [
                    "encoder",
                    "mutual-kNN@10 [95% CI]",
                    "linear CKA",
                    "rotation score (-> text)",
                    "rotation score (text ->)",
                ],
                rows,
            )
        )
        parts.append(
            "<p class=muted>Rotation score: held-out retrieval R@1 of the whitened orthonormal map "
            "over the ridge map's, embeddings (last layer); the theorem predicts about 1 for two "
            "good-view encoders.</p>"
        )
    if section["evidence"]["pair_free"]:
        rows = []
        for pf in section["evidence"]["pair_free"]:
            cl = pf.get("classes") or {}
            s = pf.get("samples") or {}
            rows.append(
                [
                    e(f"{pf['x']} ~ {pf['y']}"),
                    *[
                        f"{cell(cl[f]['accuracy'], 2)}{' (exact)' if cl[f]['exact'] else ''}"
                        if f in cl
                        else "&ndash;"
                        for f in ("shape", "colour")
                    ],
                    _samples_cell(s),
                ]
            )
        parts.append("<h3>Matched with no pairs at all</h3>")
        parts.append(table(["pair", "shape classes", "colour classes", "samples"], rows))
    label = {True: "met", False: "<b>missed</b>", None: "not run"}
    rows = [[e(r["target"]), e(r["figure"]), label[r["met"]]] for r in section["targets"]]
    parts.append("<h3>Issue 13's targets</h3>")
    parts.append(table(["target", "measured", ""], rows))
    cap = section.get("captioners")
    if cap:
        parts.append("<h3>A captioner built with zero image-caption pairs</h3>")
        parts.append(
            table(
                ["captioner", f"{cap['metric']} (x100)"],
                [
                    ["paired map + text-only decoder", cell(100 * cap["paired"], 1)],
                    ["zero-pair map + text-only decoder", cell(100 * cap["zero_pair"], 1)],
                    ["nearest caption (paired map)", cell(100 * cap["nearest_caption"], 1)],
                ],
            )
        )
        parts.append(
            f"<p>Zero-pair / paired: {100 * cap['ratio']:.0f}% on {cap['n']} held-out scenes. "
            f"The pair-free match of the bridge scenes that the zero-pair map was fitted on "
            f"recovered {cell((cap.get('match') or {}).get('accuracy'))} of the true pairs (chance "
            f"{cell((cap.get('match') or {}).get('chance'))}); the paired captioner "
            f"{'beats' if cap['paired_beats_nearest'] else 'does not beat'} the nearest "
            "caption.</p>"
        )
    return "\n".join(parts)
