"""The demo's outputs: ``summary.json``, the PNG plots and ``report.html`` (self-contained).

The report opens with the three claims and whether they showed up on this machine, then the
tables, the plots (embedded as base64 PNG, so the file reads offline), and the caveats.
"""

from __future__ import annotations

import html
import math
import os
import platform
import time
from pathlib import Path
from typing import Any

from prh.demo.context import Context, cpu_seconds
from prh.demo.html_parts import cell, img_tag, table
from prh.demo.plots import plot_bars, plot_curves
from prh.demo.report_modalities import modalities_html, modalities_summary
from prh.io import atomic_write, write_json
from prh.provenance import stamped

NAMES = {
    "good": "good views (JEPA)",
    "bad": "bad views (JEPA)",
    "next-token": "next-token LM (mean pooling)",
    "next-token-last": "next-token LM (last-token pooling)",
    "minilm": "MiniLM-L6 (pretrained, 1B pairs)",
    "random-init": "random-init (control)",
}


CLAIM_TEXT = (
    "Good views align a text encoder with a frozen vision encoder better than bad views (equal "
    "samples) and next-token prediction (equal or more samples), and above an untrained encoder.",
    "Next-token prediction needs more samples than good views to reach the same alignment "
    "(42x in the paper).",
    "Alignment follows a law in (rho, samples) that predicts unseen runs about as well as a "
    "second seed does (held-out RMSE ~ seed spread).",
)


def _interval(d: dict[str, Any]) -> tuple[float, float, float]:
    """``(score, lo, hi)``; a score without an interval gets ``(-inf, inf)``, which is never
    apart from anything (so a claim that needs intervals stays INCONCLUSIVE)."""
    ci = d.get("ci") or [None, None]
    lo = -math.inf if ci[0] is None else float(ci[0])
    hi = math.inf if ci[1] is None else float(ci[1])
    return float(d["score"]), lo, hi


def claims(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The paper's three claims, each judged by its pre-registered rule (:mod:`prh.scaling.claims`).

    Each entry has ``label`` (SHOWN, NOT SHOWN or INCONCLUSIVE), the rule's ``reason`` and
    ``rule`` text, the ``figures`` it read, and a one-line ``evidence`` with the demo's numbers.
    """
    from prh.demo.analysis import ratio_text
    from prh.scaling.claims import judge_claim1, judge_claim2, judge_claim3

    m = summary["alignment_detail"]
    nt = next_token_key(m)
    iv = {k: _interval(m[k]) for k in ("good", "bad", "random-init")}
    iv["next-token"] = _interval(m[nt])
    g, b, n, r = (iv[k][0] for k in ("good", "bad", "next-token", "random-init"))
    c1 = judge_claim1(iv)
    e = summary["sample_efficiency"]
    curve = (e.get("curves") or {}).get("next-token") or {"samples": [], "mean": []}
    lo_hi = tuple(e.get("ci") or (None, None))
    c2 = judge_claim2(
        target=e["target"],
        samples_good=e.get("samples_good"),
        samples_next_token=e.get("samples_next_token"),
        ratio=e.get("ratio"),
        ratio_ci=(lo_hi[0], lo_hi[1]),
        n_seeds=int(e.get("n_seeds") or 1),
        largest_budget=float(e.get("largest_budget") or summary["config"]["samples"]),
        next_token_curve=(curve["samples"], curve["mean"]),
        next_token_final=iv["next-token"],
        control=iv["random-init"],
    )
    law = summary["law"]
    c3 = judge_claim3(
        n_heldout=int(law.get("n_heldout") or 0),
        n_repeat_pairs=int(law.get("n_pairs") or 0),
        heldout_rmse=float(law.get("heldout_rmse") or math.nan),
        seed_spread=float(law.get("seed_spread") or math.nan),
    )
    cfg = summary["config"]
    evidence = (
        f"mutual-kNN good {g:.3f} vs bad {b:.3f} vs next-token {n:.3f} ({_POOL[nt]}) vs "
        f"random-init {r:.3f}; good and bad after {cfg['samples']:,} samples, next-token after "
        f"{_next_token_samples(cfg):,} documents",
        f"to reach {e['target']:.3f}: good views {_n(e.get('samples_good'))} samples, "
        f"next-token {_n(e.get('samples_next_token'))}; ratio {ratio_text(e)}"
        + (f" over {int(e['n_seeds'])} seeds" if int(e.get("n_seeds") or 1) > 1 else ""),
        f"{law['form']} law: held-out RMSE {law['heldout_rmse']:.4f} vs seed spread "
        f"{law['seed_spread']:.4f} ({law['n_fit']} fit points, {law['n_heldout']} held-out)"
        if law.get("form")
        else "no law converged",
    )
    out = []
    for text, verdict, ev in zip(CLAIM_TEXT, (c1, c2, c3), evidence):
        out.append(
            {
                "claim": text,
                "label": verdict.label,
                "reason": verdict.reason,
                "rule": verdict.rule,
                "figures": verdict.figures,
                "evidence": f"{ev}: {verdict.reason}",
            }
        )
    return out


_POOL = {"next-token": "mean pooling", "next-token-last": "last-token pooling"}


def next_token_key(alignment: dict[str, Any]) -> str:
    """``next-token`` or ``next-token-last``: the next-token pooling with the higher score (the
    one claim 1 and claim 2 read; rule 1 says so). Summaries without a last-token entry give
    ``next-token``."""
    keys = [k for k in ("next-token", "next-token-last") if k in alignment]
    return max(keys, key=lambda k: float(alignment[k]["score"]))


def _cost_text(summary: dict[str, Any]) -> str:
    """The steps' computing cost (kept across resumed runs), and this invocation's when it differs
    (a rerun of a finished demo only rewrites the report)."""
    cost = summary.get("compute_cost") or {}
    wall = sum(float(c.get("wall_s", 0.0)) for c in cost.values())
    cpu = sum(float(c.get("cpu_s", 0.0)) for c in cost.values())
    text = f"steps {wall:.0f} s wall, {cpu:.0f} s CPU"
    if abs(wall - float(summary["seconds"])) > 1.0:
        text += f" (this invocation {summary['seconds']:.0f} s)"
    return text


def _n(x: float | None) -> str:
    return "never (within the budget)" if x is None else f"{x:,.0f}"


def _next_token_samples(cfg: dict[str, Any]) -> int:
    """Next-token's budget from a summary's config (:attr:`DemoConfig.nt_samples`; summaries
    from before ``next_token_factor`` existed gave it ``samples``)."""
    return int(cfg["samples"]) * int(cfg.get("next_token_factor", 1))


def budgets(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows and captions each curve method read (:func:`prh.views.documents.budget_accounting`):
    the budget unit is the row; a next-token document of ``doc_captions`` captions reads more
    text than a good pair when ``doc_captions > 2``."""
    from dataclasses import asdict

    from prh.views.documents import budget_accounting

    nt = _next_token_samples(cfg)
    return [
        asdict(budget_accounting("good", cfg["samples"])),
        asdict(budget_accounting("bad", cfg["samples"])),
        asdict(budget_accounting("next-token", nt, doc_captions=int(cfg.get("doc_captions", 1)))),
    ]


def build_summary(ctx: Context, results: dict[str, Any]) -> dict[str, Any]:
    m = results["measure"]
    law = {k: v for k, v in results["law"].items() if k != "rows"}
    bridge = {k: v for k, v in results["bridge"].items() if k != "samples"}
    prove = results["prove"]
    return {
        "alignment": {k: m[k]["score"] for k in m},
        "alignment_calibrated": {k: m[k]["calibrated"] for k in m},
        "alignment_detail": m,
        "sample_efficiency": results["sample_efficiency"],
        "word_order": results.get("word_order", {}).get("summary", {}),
        "budget": budgets(results["config"]),
        "law": law,
        "prove": {k: prove.get(k) for k in ("passed", "n", "n_passed", "skipped") if k in prove},
        "bridge": bridge,
        "modalities": modalities_summary(results.get("modalities")),
        "runs": [{k: v for k, v in r.items()} for r in results["runs"]],
        "config": results["config"],
        "timings": ctx.timings,
        "compute_cost": ctx.state.get("costs", {}),
        "seconds": round(time.perf_counter() - ctx.t0, 1),
        "cpu_seconds": round(cpu_seconds() - ctx.cpu0, 1),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "protocol": {
            "vision": results["config"]["vision"] + " (frozen, ImageNet-1k; not DINOv2)",
            "metric": "mutual-kNN, k = 10, L2-normalised, max over layer pairs; calibrated = "
            "score - 95% quantile of a permutation null",
            "captions": "one seeded caption per held-out scene (wording seed world_seed + 1)",
            "next_token": (
                f"documents of {results['config']['doc_captions']} captions of one training scene"
                f" (<= {results['config']['doc_max_len']} tokens), "
                f"{results['config'].get('next_token_factor', 1)}x the good-view budget in "
                "documents; measured on single held-out captions, every layer, mean-pooled "
                "(next-token) and last-token-pooled (next-token-last)"
            ),
        },
    }


def write_outputs(ctx: Context, results: dict[str, Any]) -> dict[str, Any]:
    """Plots, ``summary.json`` and ``report.html`` into ``ctx.out``; returns the summary."""
    out: Path = ctx.out
    cfg = results["config"]
    plot_curves(
        results["runs"],
        results["measure"],
        results["sample_efficiency"],
        out / "alignment_curves.png",
        title=f"cave world, tiny text encoders, {cfg['eval_scenes']} held-out scenes",
    )
    plot_bars(results["measure"], out / "alignment_bars.png")
    summary = build_summary(ctx, results)
    summary["claims"] = claims(summary)
    write_json(
        out / "summary.json", stamped("demo-summary", summary, seed=cfg.get("seed"), options=cfg)
    )
    with atomic_write(out / "report.html", "w") as f:
        f.write(render_html(summary, results, out))
    ctx.log(f"  wrote {out / 'report.html'} and {out / 'summary.json'}")
    return summary


# ----------------------------------------------------------------------------- HTML
CSS = """
body{font:15px/1.5 system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:980px;
margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em;margin-bottom:.1em} h2{margin-top:1.8em;border-bottom:1px solid #ddd}
.sub{color:#666;margin-top:0} table{border-collapse:collapse;margin:.6em 0 1em}
td,th{padding:.25em .7em;border-bottom:1px solid #eee;text-align:right}
td:first-child,th:first-child{text-align:left} th{background:#f6f6f6}
.claim{border-left:5px solid #999;padding:.4em .9em;margin:.7em 0;background:#fafafa}
.yes{border-color:#1b7837} .no{border-color:#c51b7d} .na{border-color:#999}
.tag{font-weight:bold;font-size:.85em;padding:.1em .5em;border-radius:3px;color:#fff}
.yes .tag{background:#1b7837} .no .tag{background:#c51b7d} .na .tag{background:#999}
img.plot{max-width:100%;border:1px solid #eee} .grid{display:flex;flex-wrap:wrap;gap:1em}
.card{width:290px;font-size:.85em} .card img{width:160px;display:block} .muted{color:#777}
code{background:#f3f3f3;padding:0 .25em}
"""


def render_html(summary: dict[str, Any], results: dict[str, Any], out: Path) -> str:
    cfg = summary["config"]
    e = html.escape
    parts = [
        f"<!doctype html><html><head><meta charset=utf-8><title>prh demo report</title>"
        f"<style>{CSS}</style></head><body>"
    ]
    parts.append("<h1>The Platonic Representation Hypothesis, on this machine</h1>")
    parts.append(
        f"<p class=sub>prh demo ({e(cfg['name'])}) &middot; cave world seed {cfg['world_seed']} "
        f"&middot; {cfg['preset']} text encoders &middot; frozen {e(cfg['vision'])} &middot; "
        f"{_cost_text(summary)} on {summary['machine']['cpus']} cores</p>"
    )
    parts.append("<h2>Headline</h2>")
    for c in summary["claims"]:
        tag = c["label"]
        cls = {"SHOWN": "yes", "NOT SHOWN": "no"}.get(tag, "na")
        parts.append(
            f"<div class='claim {cls}'><span class=tag>{tag}</span> {e(c['claim'])}<br>"
            f"<span class=muted>{e(c['evidence'])}</span><br>"
            f"<span class=muted>rule (fixed before the run): {e(c['rule'])}</span></div>"
        )
    parts.append(img_tag(out / "alignment_curves.png", "alignment vs samples"))
    parts.append(
        "<p class=muted>Each curve is one run evaluated every "
        f"{cfg['eval_every']:,} samples against the frozen image features of "
        f"{cfg['eval_scenes']} held-out scenes (constant learning rate after warm-up, so a point "
        "is what a run stopped there would give). Faint lines: mixture runs (colour = rho). "
        "Triangles: where good views and next-token reach the efficiency target (black line).</p>"
    )

    # alignment table
    parts.append("<h2>Alignment at the end of each run</h2>")
    rows = []
    for k, d in summary["alignment_detail"].items():
        ci = d.get("ci") or [None, None]
        rows.append(
            [
                e(NAMES.get(k, k)),
                cell(d["score"], 4),
                cell(d["calibrated"], 4),
                f"[{cell(ci[0], 4)}, {cell(ci[1], 4)}]",
                cell(d.get("p_value"), 3),
                e(str(d.get("layers"))),
            ]
        )
    parts.append(
        table(
            [
                "text encoder",
                "mutual-kNN@10",
                "calibrated",
                "95% CI (bootstrap)",
                "p (permutation)",
                "best layers (text, image)",
            ],
            rows,
        )
    )
    parts.append(img_tag(out / "alignment_bars.png", "alignment bars"))
    read = "; ".join(
        f"{b['views']} {b['rows']:,} rows = {b['captions']:,.0f} captions"
        for b in summary.get("budget", [])
    )
    parts.append(
        f"<p class=muted>Calibrated = score minus the 95% quantile of {cfg['null']} permutations "
        "(grey ticks); the interval is a bootstrap over scenes. Trained encoders saw "
        f"captions of {cfg['train_scenes']:,} training scenes: {e(read)} (a row is a pair for a "
        "JEPA, a document for the LM).</p>"
    )

    # efficiency
    s = summary["sample_efficiency"]
    parts.append("<h2>Sample efficiency</h2>")
    parts.append(
        table(
            [
                "target alignment",
                "samples (good views)",
                "samples (next-token)",
                "ratio",
                "95% interval (bootstrap over seeds)",
                "seeds",
            ],
            [
                [
                    cell(s["target"], 4),
                    _n(s["samples_good"]),
                    _n(s["samples_next_token"]),
                    cell(s.get("ratio"), 2)
                    if s.get("ratio") is not None
                    else f">= {cell(s.get('ratio_lower_bound'), 1)}",
                    "[{}, {}]".format(*(cell(x, 2) for x in (s.get("ci") or [None, None]))),
                    str(s.get("n_seeds", 1)),
                ]
            ],
        )
    )
    notes = s.get("notes") or []
    parts.append(
        "<p class=muted>Samples to reach the target are read off the running maximum of each "
        f"curve, interpolated in log samples (<code>prh.scaling.efficiency</code>). Target rule: "
        f"{e(s.get('target_rule', ''))}. "
        + (
            "One seed per method here, so no interval (<code>prh demo --full</code> runs 3)."
            if int(s.get("n_seeds", 1)) < 2
            else f"{s.get('n_seeds')} seeds per method; the interval resamples seeds."
        )
        + (" Notes: " + e("; ".join(notes)) if notes else "")
        + "</p>"
    )

    parts.append(_word_order_html(summary.get("word_order") or {}))

    # law
    law = summary["law"]
    parts.append("<h2>Scaling law in (rho, samples)</h2>")
    rows = [
        [
            e(f["form"]) + (" (chosen)" if f["form"] == law.get("form") else ""),
            "yes" if f.get("converged") else "no",
            cell(f.get("train_rmse"), 4),
            cell(f.get("heldout_rmse"), 4),
        ]
        for f in law.get("forms", [])
    ]
    parts.append(table(["form", "converged", "train RMSE", "held-out RMSE"], rows))
    parts.append(
        f"<p>Seed spread {cell(law.get('seed_spread'), 4)} over {law.get('n_pairs')} repeat pairs; "
        f"held-out RMSE / spread = {cell(law.get('ratio'), 2)}. Backend: the cave world (real "
        f"training runs): fit points are rho in {{0, {', '.join(f'{r:g}' for r in cfg['law_rhos'])}"
        f", 1}} x samples {cfg['law_samples']}; held-out runs at random off-grid rho with fresh "
        f"seeds, read at samples {cfg['heldout_samples']}, each with a repeat seed. The rho = 0 "
        "and rho = 1 points are the bad and good runs above.</p>"
    )
    parts.append(img_tag(out / "law_fit.png", "law predicted vs measured"))

    # bridge
    parts.append(_bridge_html(summary["bridge"], results["bridge"].get("samples", [])))

    parts.append(modalities_html(results.get("modalities"), out))

    # prove
    p = results["prove"]
    parts.append("<h2>Theorem checks (prh prove --quick)</h2>")
    if p.get("skipped"):
        parts.append("<p class=muted>skipped</p>")
    else:
        rows = [
            [
                e(c["name"]),
                "PASS" if c["passed"] else "<b>FAIL</b>",
                e(c["statement"]),
                cell(c["seconds"], 1),
            ]
            for c in p["checks"]
        ]
        parts.append(table(["check", "result", "statement", "seconds"], rows))

    parts.append(_caveats(summary))
    cost = summary.get("compute_cost") or {}
    rows = [
        [
            e(k),
            cell(v["wall_s"], 1),
            cell(v["cpu_s"], 1),
            cell(cost.get(k, {}).get("wall_s"), 1),
            cell(cost.get(k, {}).get("cpu_s"), 1),
        ]
        for k, v in summary["timings"].items()
    ]
    parts.append("<h2>Where the time went</h2>")
    parts.append(
        table(
            [
                "step",
                "wall s (this run)",
                "CPU s (this run)",
                "wall s (computing it)",
                "CPU s (computing it)",
            ],
            rows,
        )
    )
    parts.append(
        "<p class=muted>A rerun reuses finished steps; the last two columns are the "
        "costliest invocation of each step in this folder.</p>"
    )
    parts.append(
        "<p class=muted>Reproduce: <code>prh demo"
        + (" --quick" if cfg["name"] == "quick" else "")
        + "</code>; every number is in <code>summary.json</code> next to this file; "
        "docs/reproduce.md lists expected values and tolerances.</p></body></html>"
    )
    return "\n".join(parts)


def _bridge_html(b: dict[str, Any], samples: list[dict]) -> str:
    e = html.escape
    parts = ["<h2>One map between frozen encoders</h2>"]
    ch = b["chance"]
    rows = []
    for k, d in b["encoders"].items():
        r, z, p = d["retrieval"], d["zero_shot"], d["pair_free"]
        rows.append(
            [e(NAMES.get(k, k))]
            + [cell(r["img_to_txt"][f"R@{j}"]) for j in (1, 5, 10)]
            + [cell(r["txt_to_img"][f"R@{j}"]) for j in (1, 5, 10)]
            + [
                cell(z["shape"]["top1"]),
                cell(z["colour"]["top1"]),
                cell(p["shape"]["accuracy"], 2),
                cell(p["colour"]["accuracy"], 2),
            ]
        )
    rows.append(
        ["<i>chance</i>"]
        + [cell(ch["retrieval"][f"R@{j}"]) for j in (1, 5, 10)] * 2
        + [cell(ch["shape"]), cell(ch["colour"]), cell(ch["shape"], 2), cell(ch["colour"], 2)]
    )
    parts.append(
        table(
            [
                "text encoder",
                "img→txt R@1",
                "R@5",
                "R@10",
                "txt→img R@1",
                "R@5",
                "R@10",
                "zero-shot shape",
                "zero-shot colour",
                "pair-free shape",
                "pair-free colour",
            ],
            rows,
        )
    )
    parts.append(
        f"<p class=muted>Map: {e(b['map'])}, fitted on {b['n_train']} training scenes (render, "
        f"mean of 5 captions); tested on {b['n_test']} held-out scenes. Zero-shot: the largest "
        "object's shape (8) or colour (10) from 4 prompts per class, images mapped into the text "
        "space. Pair-free: class centroids of images and of captions matched with no pairs "
        "(<code>prh.bridge.match_classes</code>); accuracy = classes matched to the right class."
        "</p>"
    )
    if samples:
        parts.append("<h3>Held-out scenes</h3><div class=grid>")
        for s in samples:
            extra = ""
            if s.get("caption") is not None and s.get("captioner") == "nearest":
                extra = f"<br><b>nearest-caption captioner:</b> {e(s['caption'])}"
            elif s.get("caption") is not None:
                extra = (
                    f"<br><b>captioner:</b> {e(s['caption'])}"
                    f"<br><b>nearest caption:</b> {e(str(s.get('nearest')))}"
                )
            parts.append(
                f"<div class=card><img src='data:image/png;base64,{s['png']}'>"
                f"<b>a reference caption:</b> {e(s['reference'])}{extra}</div>"
            )
        parts.append("</div>")
        if samples and samples[0].get("captioner") == "nearest":
            parts.append(
                "<p class=muted>Captioner: image &rarr; EfficientNet-Lite0 &rarr; one map &rarr; "
                "the nearest training caption (retrieval, no decoder; the full demo trains a "
                "decoder; <code>prh caption --run OUT</code>).</p>"
            )
        elif samples and samples[0].get("caption") is not None:
            parts.append(
                "<p class=muted>Captioner: image &rarr; EfficientNet-Lite0 &rarr; one map &rarr; a "
                "decoder trained on text only (<code>prh caption --run OUT</code>).</p>"
            )
    return "\n".join(parts)


def _word_order_html(w: dict[str, Any]) -> str:
    """The word-order test's table (``summary["word_order"]``), empty when absent."""
    if not w:
        return ""
    rows = [
        [
            html.escape(name),
            str(r["best_layer"]),
            cell(r["best_mutual_knn"], 4),
            cell(r["last_mutual_knn"], 4),
            cell(r.get("shape_max"), 2),
            cell(r.get("colour_max"), 2),
        ]
        for name, r in w.items()
    ]
    return (
        "<h2>Does the world reward context? (word-order test)</h2>"
        + table(
            [
                "text features",
                "best layer",
                "mutual-kNN@10 (best layer)",
                "last layer",
                "largest object's shape (kNN@10)",
                "its colour",
            ],
            rows,
        )
        + "<p class=muted>Each encoder on the held-out captions as written and with each "
        "caption's words shuffled, beside a bag of words (no context at all). Word order is what "
        "says which object is the largest; a layer that uses context loses that when the words "
        "are shuffled. Probes: leave-one-out kNN@10 accuracy at the probe's best layer (scenes "
        "whose largest object is tied left out).</p>"
    )


def _caveats(summary: dict[str, Any]) -> str:
    cfg = summary["config"]
    items = [
        f"The frozen image model is {cfg['vision']} (4.7M parameters, ImageNet-1k supervised), not "
        "DINOv2 as in the paper. On this world a perfect content description of each scene reaches "
        "only about 0.12 mutual-kNN@10 against its features (random features: about 0.016), so "
        "that is the ceiling any text encoder can reach here.",
        f"The text encoders are tiny ({cfg['preset']} preset: 2 layers, width 128) and see "
        f"{cfg['samples']:,} samples; the paper's models and budgets are orders of magnitude "
        "larger. "
        "Absolute numbers are small; the orderings are what the demo tests.",
        f"{cfg.get('curve_seeds', 1)} seed(s) per method for the efficiency curves (the law's "
        "repeat runs give the seed spread); <code>prh demo --full</code> runs 3 seeds, a 4x "
        "next-token budget and 12 held-out law points; the published protocol is "
        "<code>prh sweep --preset paper-grid --backend cave</code>.",
        "MiniLM was trained on about a billion real sentence pairs, not on this world's captions: "
        "it is the 'pretrained text model' reference, not an equal-budget competitor.",
        "Numbers are from this machine (timings under its load); scores are deterministic given "
        "the "
        "seeds up to floating-point summation order.",
    ]
    return "<h2>Caveats</h2><ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>"
