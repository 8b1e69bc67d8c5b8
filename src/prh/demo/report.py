"""The demo's outputs: ``summary.json``, the PNG plots and ``report.html`` (self-contained).

The report opens with the three claims and whether they showed up on this machine, then the
tables, the plots (embedded as base64 PNG, so the file reads offline), and the caveats.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path
from typing import Any

from prh.demo.context import Context, cpu_seconds
from prh.demo.html_parts import (
    DASH,
    Cell,
    figure,
    interval,
    is_undefined,
    italic,
    num,
    render,
    strong,
    table,
)
from prh.demo.plots import plot_bars, plot_curves
from prh.demo.report_modalities import modalities_context, modalities_summary, pair_rows
from prh.demo.report_theory import theory_context
from prh.demo.summary import (
    DemoSummary,
    LiteralSummary,
    Machine,
    Protocol,
    WorldSummary,
    ci_bounds,
)
from prh.io import atomic_write, write_json
from prh.provenance import stamped
from prh.world.registry import world_title

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
    apart from anything (so a claim that needs intervals stays INCONCLUSIVE); an undefined score
    (``None``) is NaN."""
    lo, hi = ci_bounds(d)
    lo = -math.inf if lo is None else float(lo)
    hi = math.inf if hi is None else float(hi)
    score = math.nan if d["score"] is None else float(d["score"])
    return score, lo, hi


def claims(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The paper's three claims, each judged by its pre-registered rule (:mod:`prh.scaling.claims`).

    Each entry has ``label`` (SHOWN, NOT SHOWN or INCONCLUSIVE), the rule's ``reason`` and
    ``rule`` text, the ``figures`` it read, and a one-line ``evidence`` with the demo's numbers.
    """
    from prh.scaling.claims import judge_claim1

    m = summary["alignment_detail"]
    nt = next_token_key(m)
    iv = {k: _interval(m[k]) for k in ("good", "bad", "random-init")}
    iv["next-token"] = _interval(m[nt])
    verdicts = (judge_claim1(iv), _claim2(summary, iv), _claim3(summary["law"]))
    evidence = (
        _evidence1(summary["config"], iv, nt),
        _evidence2(summary["sample_efficiency"]),
        _evidence3(summary["law"]),
    )
    return [
        {
            "claim": text,
            "label": verdict.label,
            "reason": verdict.reason,
            "rule": verdict.rule,
            "figures": verdict.figures,
            "evidence": f"{ev}: {verdict.reason}",
        }
        for text, verdict, ev in zip(CLAIM_TEXT, verdicts, evidence)
    ]


THEORY_CLAIM_TEXT = (
    "Against the theory embedding g*: good views carry more of it than bad views (equal samples)"
    " and next-token prediction (equal or more samples), and more than an untrained encoder.",
    "Against g*: next-token prediction needs more samples than good views to reach the same "
    "held-out canonical correlation (42x in the paper).",
    "Against g*: the canonical correlation follows a law in (rho, samples) that predicts unseen "
    "runs about as well as a second seed does.",
)
THEORY_NAMES = {"good": "text-good", "bad": "text-bad", "next-token": "next-token",
                "random-init": "random-init"}  # fmt: skip


def theory_claims(summary: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The three claims again against the theory embedding (issue 23), by the same rules:
    claim 1 on the theory step's held-out canonical correlations (``theory_cc``: text-good,
    text-bad, next-token mean-pooled, random-init, bootstrap intervals over held-out states),
    claims 2 and 3 on the runs' curves against ``g*`` (``theory_curves``). None on a world
    without a theory."""
    from prh.scaling.claims import judge_claim1

    tc, cur = summary.get("theory_cc") or {}, summary.get("theory_curves")
    if not cur or "skipped" in tc or any(n not in tc for n in THEORY_NAMES.values()):
        return None
    iv = {k: (tc[n]["mean"], *tc[n]["ci"]) for k, n in THEORY_NAMES.items()}
    part = {"sample_efficiency": cur["efficiency"], "config": summary["config"]}
    verdicts = (judge_claim1(iv), _claim2(part, iv), _claim3(cur["law"]))
    g, b, n, r = (iv[k][0] for k in ("good", "bad", "next-token", "random-init"))
    evidence = (
        f"theory cc good {num(g)} vs bad {num(b)} vs next-token {num(n)} vs random-init {num(r)}",
        _evidence2(cur["efficiency"]) + f" (random-init on this measure {num(cur['control'])})",
        _evidence3(cur["law"]),
    )
    keys = ("claim", "label", "reason", "rule", "figures", "evidence")
    return [
        dict(zip(keys, (text, v.label, v.reason, v.rule, v.figures, f"{ev}: {v.reason}")))
        for text, v, ev in zip(THEORY_CLAIM_TEXT, verdicts, evidence)
    ]


def _origins(origins: dict[str, dict[str, float]] | None) -> str:
    """The curves' points at 0 samples as one sentence (empty without them)."""
    if not origins:
        return ""
    return "; ".join(
        f"{v}: g* {num(o.get('theory'))}, EfficientNet-Lite0 {num(o.get('vision'))}"
        for v, o in origins.items()
    )


def theory_curves_summary(tcur: dict[str, Any] | None) -> dict[str, Any] | None:
    """The theory curves' control, efficiency and law (its rows left out, as ``law``'s)."""
    if not tcur:
        return None
    law = {k: v for k, v in tcur["law"].items() if k != "rows"}
    return {"control": tcur["control"], "origins": tcur.get("origins"),
            "efficiency": tcur["efficiency"], "law": law}  # fmt: skip


def _claim2(summary: dict[str, Any], iv: dict[str, tuple[float, float, float]]) -> Any:
    """Claim 2's verdict from the sample-efficiency result and the final intervals ``iv``."""
    from prh.scaling.claims import judge_claim2

    e = summary["sample_efficiency"]
    curve = (e.get("curves") or {}).get("next-token") or {"samples": [], "mean": []}
    lo_hi = ci_bounds(e)
    return judge_claim2(
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


def _claim3(law: dict[str, Any]) -> Any:
    """Claim 3's verdict from the law fit."""
    from prh.scaling.claims import judge_claim3

    return judge_claim3(
        n_heldout=int(law.get("n_heldout") or 0),
        n_repeat_pairs=int(law.get("n_pairs") or 0),
        heldout_rmse=float(law.get("heldout_rmse") or math.nan),
        seed_spread=float(law.get("seed_spread") or math.nan),
    )


def _evidence1(cfg: dict[str, Any], iv: dict[str, tuple[float, float, float]], nt: str) -> str:
    """Claim 1's numbers: the four scores and the budgets behind them."""
    g, b, n, r = (iv[k][0] for k in ("good", "bad", "next-token", "random-init"))
    return (
        f"mutual-kNN good {num(g)} vs bad {num(b)} vs next-token {num(n)} ({_POOL[nt]}) vs "
        f"random-init {num(r)}; good and bad after {cfg['samples']:,} samples, next-token after "
        f"{_next_token_samples(cfg):,} documents"
    )


def _evidence2(e: dict[str, Any]) -> str:
    """Claim 2's numbers: samples to the target and their ratio."""
    from prh.demo.analysis import ratio_text

    seeds = f" over {int(e['n_seeds'])} seeds" if int(e.get("n_seeds") or 1) > 1 else ""
    return (
        f"to reach {num(e['target'])}: good views {_n(e.get('samples_good'))} samples, "
        f"next-token {_n(e.get('samples_next_token'))}; ratio {ratio_text(e)}{seeds}"
    )


def _evidence3(law: dict[str, Any]) -> str:
    """Claim 3's numbers: the chosen law's held-out error against the seed spread."""
    if not law.get("form"):
        return "no law converged"
    return (
        f"{law['form']} law: held-out RMSE {num(law['heldout_rmse'], 4)} vs seed spread "
        f"{num(law['seed_spread'], 4)} ({law['n_fit']} fit points, {law['n_heldout']} held-out)"
    )


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
    """Samples to the target: ``None`` is never reaching it, NaN undefined."""
    if x is None:
        return "never (within the budget)"
    return num(x) if is_undefined(x) else f"{x:,.0f}"


def _next_token_samples(cfg: dict[str, Any]) -> int:
    """Next-token's budget from a summary's config (:attr:`DemoConfig.nt_samples`; summaries
    from before ``next_token_factor`` existed gave it ``samples``)."""
    return int(cfg["samples"]) * int(cfg.get("next_token_factor", 1))


def budgets(cfg: dict[str, Any], tokens: dict[str, float] | None = None) -> list[dict[str, Any]]:
    """Rows, captions and (with ``tokens``: mean tokens a row of each method's run read) tokens
    each curve method read (:func:`prh.views.documents.budget_accounting`): the budget unit is
    the row; a next-token document of ``doc_captions`` captions reads more text than a good
    pair when ``doc_captions > 2``."""
    from dataclasses import asdict

    from prh.views.documents import budget_accounting

    tokens = tokens or {}
    nt = _next_token_samples(cfg)
    docs = int(cfg.get("doc_captions", 1))
    rows = (("good", cfg["samples"], 1), ("bad", cfg["samples"], 1), ("next-token", nt, docs))
    return [
        asdict(budget_accounting(v, n, doc_captions=d, tokens_per_row=tokens.get(v)))
        for v, n, d in rows
    ]


def build_summary(ctx: Context, results: dict[str, Any]) -> DemoSummary:
    """The summary of a finished demo (claims not yet judged: :func:`write_outputs` does)."""
    m = results["measure"]
    cfg = results["config"]
    prove = results["prove"]
    theory = results.get("theory") or {}
    level = next((d["level"] for d in m.values() if "level" in d), 0.95)
    return DemoSummary(
        alignment={k: m[k]["score"] for k in m},
        alignment_calibrated={k: m[k]["calibrated"] for k in m},
        alignment_detail=m,
        sample_efficiency=results["sample_efficiency"],
        theory_curves=theory_curves_summary(results.get("theory_curves")),
        word_order=results.get("word_order", {}).get("summary", {}),
        word_collapse=results.get("word_collapse"),
        budget=budgets(cfg, results.get("tokens_per_row")),
        law={k: v for k, v in results["law"].items() if k != "rows"},
        prove={k: prove.get(k) for k in ("passed", "n", "n_passed", "skipped") if k in prove},
        bridge={k: v for k, v in results["bridge"].items() if k != "samples"},
        modalities=modalities_summary(results.get("modalities"), theory.get("pairs")),
        **theory_summary(results),
        literal=LiteralSummary.from_dict(results["literal"]) if results.get("literal") else None,
        runs=[dict(r) for r in results["runs"]],
        config=cfg,
        timings=ctx.timings,
        compute_cost=ctx.costs,
        seconds=round(time.perf_counter() - ctx.t0, 1),
        cpu_seconds=round(cpu_seconds() - ctx.cpu0, 1),
        machine=Machine.here(),
        protocol=Protocol.of(cfg, level),
    )


def theory_summary(results: dict[str, Any]) -> dict[str, Any]:
    """``world`` (name, seed, ``spectrum`` and its gap), ``theory_cc`` per encoder,
    ``theory_targets`` and ``control`` (its world, spectrum and pairs): issue 21's figures."""
    cfg, th = results["config"], results.get("theory") or {}
    world = WorldSummary.of(cfg["world"], cfg["world_seed"], th.get("spectrum"))
    control = results.get("control") or {"skipped": "no control world"}
    if "theory" in control:
        cth = control["theory"]
        control = {
            "world": control["world"],
            "runs": control["runs"],
            "spectrum": cth["spectrum"].get("eigenvalues"),
            "reason": cth["spectrum"].get("reason"),
            "pairs": pair_rows(control["evidence"]["matrix"], cth["pairs"]),
            "spectral": cth.get("spectral"),
        }
    return {
        "world": world,
        "theory_cc": th.get("theory_cc"),
        "spectral": th.get("spectral"),
        "theory_targets": th.get("targets", []),
        "control": control,
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
        title=f"{cfg['world']} world, tiny text encoders, {cfg['eval_scenes']} held-out scenes",
    )
    plot_bars(results["measure"], out / "alignment_bars.png")
    tcur = results.get("theory_curves")
    if tcur:
        plot_curves(
            results["runs"], {"random-init": {"score": tcur["control"]}}, tcur["efficiency"],
            out / "theory_curves.png", key="theory_evals",
            ylabel="held-out canonical correlation with g*",
            title=f"{cfg['world']} world: the same runs against the theory embedding",
        )  # fmt: skip
    s = build_summary(ctx, results)
    judged = s.to_dict()
    s = dataclasses.replace(s, claims=claims(judged), theory_claims=theory_claims(judged))
    summary = s.to_dict()
    write_json(
        out / "summary.json", stamped("demo-summary", summary, seed=cfg.get("seed"), options=cfg)
    )
    with atomic_write(out / "report.html", "w") as f:
        f.write(render_html(summary, results, out))
    ctx.log(f"  wrote {out / 'report.html'} and {out / 'summary.json'}")
    return summary


# ----------------------------------------------------------------------------- HTML
# The report is templates/report.html; the functions below prepare its values (plain text,
# escaped by the template) from the summary and the steps' results.


def render_html(summary: dict[str, Any], results: dict[str, Any], out: Path) -> str:
    """``report.html``: the summary, the bridge's scene samples, the modalities section and the
    theorem checks of ``results``, the figures in ``out`` inlined."""
    return render("report.html", **report_context(summary, results, out))


def report_context(summary: dict[str, Any], results: dict[str, Any], out: Path) -> dict[str, Any]:
    """Every value ``templates/report.html`` shows, section by section."""
    cfg = summary["config"]
    return {
        "header": _header(summary),
        "claims": [_claim_box(c) for c in summary["claims"]],
        "theory_claims": [_claim_box(c) for c in summary.get("theory_claims") or []],
        "theory_curves": figure(out / "theory_curves.png", "theory cc vs samples")
        if summary.get("theory_claims")
        else None,
        "origins": _origins((summary.get("theory_curves") or {}).get("origins")),
        "theory_law": figure(out / "law_fit_theory.png", "the law against g*"),
        "curves": _curves(cfg, out),
        "alignment": _alignment(summary, out),
        "efficiency": _efficiency(summary["sample_efficiency"]),
        "word_order": _word_order_table(summary.get("word_order") or {}),
        "word_collapse": _word_collapse_table(summary.get("word_collapse")),
        "law": _law(summary["law"], cfg, out),
        "bridge": _bridge(summary["bridge"], results["bridge"].get("samples", [])),
        "modalities": modalities_context(results.get("modalities"), out),
        "theory": theory_context(summary),
        "prove": _prove_table(results["prove"]),
        "caveats": _caveats(cfg),
        "timings": _timings_table(summary),
        "quick": cfg["name"] == "quick",
    }


def _header(summary: dict[str, Any]) -> dict[str, str]:
    """The line under the title: preset, world, encoders, cost, machine."""
    cfg = summary["config"]
    return {
        "name": str(cfg["name"]),
        "world_seed": str(cfg["world_seed"]),
        "world": world_title(cfg.get("world")),
        "corpus": str(cfg.get("corpus") or ""),
        "preset": str(cfg["preset"]),
        "vision": str(cfg["vision"]),
        "cost": _cost_text(summary),
        "cpus": str(summary["machine"]["cpus"]),
    }


def _claim_box(c: dict[str, Any]) -> dict[str, str]:
    """One claim: its label (and the box's class), the claim, the evidence, the rule."""
    cls = {"SHOWN": "yes", "NOT SHOWN": "no"}.get(c["label"], "na")
    return {
        "cls": cls,
        "label": c["label"],
        "claim": c["claim"],
        "evidence": c["evidence"],
        "rule": c["rule"],
    }


def _curves(cfg: dict[str, Any], out: Path) -> dict[str, Any]:
    """The alignment-vs-samples figure and what its note says about the evaluations."""
    return {
        "figure": figure(out / "alignment_curves.png", "alignment vs samples"),
        "eval_every": f"{cfg['eval_every']:,}",
        "eval_scenes": str(cfg["eval_scenes"]),
    }


def _alignment(summary: dict[str, Any], out: Path) -> dict[str, Any]:
    """The end-of-run alignment table, its bars and what each method read."""
    cfg = summary["config"]
    rows: list[list[Cell]] = []
    for k, d in summary["alignment_detail"].items():
        ci = ci_bounds(d)
        rows.append(
            [
                NAMES.get(k, k),
                num(d["score"], 4),
                num(d["calibrated"], 4),
                interval(ci[0], ci[1], 4),
                num(d.get("p_value"), 3),
                num(d.get("layers")),
            ]
        )
    head = [
        "text encoder",
        "mutual-kNN@10",
        "calibrated",
        "95% CI (bootstrap)",
        "p (permutation)",
        "best layers (text, image)",
    ]
    read = "; ".join(
        f"{b['views']} {b['rows']:,} rows = {b['captions']:,.0f} captions"
        + (f" = {b['tokens']:,.0f} tokens" if b.get("tokens") else "")
        for b in summary.get("budget", [])
    )
    return {
        "table": table(head, rows),
        "figure": figure(out / "alignment_bars.png", "alignment bars"),
        "null": str(cfg["null"]),
        "train_scenes": f"{cfg['train_scenes']:,}",
        "read": read,
    }


def _efficiency(s: dict[str, Any]) -> dict[str, Any]:
    """The sample-efficiency table and its note (target rule, seeds, notes)."""
    ratio = num(s.get("ratio"), 2)
    if s.get("ratio") is None and not is_undefined(s.get("ratio_lower_bound")):
        ratio = f">= {num(s['ratio_lower_bound'], 1)}"
    ci = ci_bounds(s)
    row: list[Cell] = [
        num(s["target"], 4),
        _n(s["samples_good"]),
        _n(s["samples_next_token"]),
        ratio,
        interval(ci[0], ci[1], 2),
        str(s.get("n_seeds", 1)),
    ]
    head = [
        "target alignment",
        "samples (good views)",
        "samples (next-token)",
        "ratio",
        "95% interval (bootstrap over seeds)",
        "seeds",
    ]
    return {
        "table": table(head, [row]),
        "target_rule": str(s.get("target_rule", "")),
        "one_seed": int(s.get("n_seeds", 1)) < 2,
        "n_seeds": str(s.get("n_seeds")),
        "notes": "; ".join(s.get("notes") or []),
    }


def _word_order_table(w: dict[str, Any]) -> dict[str, Any] | None:
    """The word-order test's table (``summary["word_order"]``), ``None`` when absent."""
    if not w:
        return None
    rows: list[list[Cell]] = [
        [
            name,
            num(r["best_layer"]),
            num(r["best_mutual_knn"], 4),
            num(r["last_mutual_knn"], 4),
            num(r.get("shape_max"), 2),
            num(r.get("colour_max"), 2),
        ]
        for name, r in w.items()
    ]
    head = [
        "text features",
        "best layer",
        "mutual-kNN@10 (best layer)",
        "last layer",
        "largest object's shape (kNN@10)",
        "its colour",
    ]
    return table(head, rows)


def _word_collapse_table(wc: dict[str, Any] | None) -> dict[str, Any] | None:
    """Issue 23's check (``summary["word_collapse"]``), ``None`` when absent."""
    if not wc:
        return None
    rows: list[list[Cell]] = [[n, num(r["shape"], 2), num(r["colour"], 2)] for n, r in wc.items()]
    return table(["run", "shape words", "colour words"], rows)


def _law(law: dict[str, Any], cfg: dict[str, Any], out: Path) -> dict[str, Any]:
    """The law forms' table, the seed spread, the grid the law was fitted on, its figure."""
    rows: list[list[Cell]] = [
        [
            f["form"] + (" (chosen)" if f["form"] == law.get("form") else ""),
            "yes" if f.get("converged") else "no",
            num(f.get("train_rmse"), 4),
            num(f.get("heldout_rmse"), 4),
        ]
        for f in law.get("forms", [])
    ]
    return {
        "table": table(["form", "converged", "train RMSE", "held-out RMSE"], rows),
        "seed_spread": num(law.get("seed_spread"), 4),
        "n_pairs": num(law.get("n_pairs")),
        "ratio": num(law.get("ratio"), 2),
        "rhos": ", ".join(f"{r:g}" for r in cfg["law_rhos"]),
        "law_samples": str(tuple(cfg["law_samples"])),
        "heldout_samples": str(tuple(cfg["heldout_samples"])),
        "figure": figure(out / "law_fit.png", "law predicted vs measured"),
        "notes": "; ".join(law.get("notes") or []),
    }


def _bridge_table(b: dict[str, Any]) -> dict[str, Any]:
    """Retrieval, zero-shot and pair-free results of each text encoder through the one map,
    and chance."""
    rows: list[list[Cell]] = []
    absent = b.get("classes_absent")  # a world without scene classes: those columns say why
    for k, d in b["encoders"].items():
        r, z, p = d["retrieval"], d["zero_shot"], d["pair_free"]
        rows.append(
            [NAMES.get(k, k)]
            + [num(r["img_to_txt"][f"R@{j}"]) for j in (1, 5, 10)]
            + [num(r["txt_to_img"][f"R@{j}"]) for j in (1, 5, 10)]
            + (
                [num(None, why=absent)] * 4
                if z is None
                else [
                    num(z["shape"]["top1"]),
                    num(z["colour"]["top1"]),
                    num(p["shape"]["accuracy"], 2),
                    num(p["colour"]["accuracy"], 2),
                ]
            )
        )
    ch = b["chance"]
    rows.append(
        [italic("chance")]
        + [num(ch["retrieval"][f"R@{j}"]) for j in (1, 5, 10)] * 2
        + [num(ch["shape"]), num(ch["colour"]), num(ch["shape"], 2), num(ch["colour"], 2)]
    )
    head = [
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
    ]
    return table(head, rows)


def _scene_card(s: dict[str, Any]) -> dict[str, Any]:
    """One held-out scene: its render, a reference caption, the captioner's caption (and, for a
    decoder, the nearest training caption)."""
    kind = None
    if s.get("caption") is not None:
        kind = "nearest" if s.get("captioner") == "nearest" else "decoder"
    return {
        "src": f"data:image/png;base64,{s['png']}",
        "reference": s["reference"],
        "kind": kind,
        "caption": "" if kind is None else s["caption"],
        "nearest": str(s.get("nearest")),
    }


def _bridge(b: dict[str, Any], samples: list[dict[str, Any]]) -> dict[str, Any]:
    """The bridge section: its table, the map, the scene cards and the captioner's kind."""
    captioner = None
    if samples and samples[0].get("captioner") == "nearest":
        captioner = "nearest"
    elif samples and samples[0].get("caption") is not None:
        captioner = "decoder"
    return {
        "table": _bridge_table(b),
        "map": str(b["map"]),
        "n_train": str(b["n_train"]),
        "n_test": str(b["n_test"]),
        "cards": [_scene_card(s) for s in samples],
        "captioner": captioner,
    }


def _prove_table(p: dict[str, Any]) -> dict[str, Any] | None:
    """The theorem checks (``None`` when skipped)."""
    if p.get("skipped"):
        return None
    rows: list[list[Cell]] = [
        [c["name"], "PASS" if c["passed"] else strong("FAIL"), c["statement"], num(c["seconds"], 1)]
        for c in p["checks"]
    ]
    return table(["check", "result", "statement", "seconds"], rows)


def _caveats(cfg: dict[str, Any]) -> dict[str, str]:
    """The figures the caveats quote: image model, text preset, budget, seeds."""
    return {
        "vision": str(cfg["vision"]),
        "preset": str(cfg["preset"]),
        "samples": f"{cfg['samples']:,}",
        "curve_seeds": str(cfg.get("curve_seeds", 1)),
    }


def _timings_table(summary: dict[str, Any]) -> dict[str, Any]:
    """Wall and CPU seconds of each step: this run's and the costliest invocation's."""
    cost = summary.get("compute_cost") or {}
    rows: list[list[Cell]] = [
        [
            k,
            num(v["wall_s"], 1),
            num(v["cpu_s"], 1),
            *(num(cost[k].get(f), 1) if k in cost else DASH for f in ("wall_s", "cpu_s")),
        ]
        for k, v in summary["timings"].items()
    ]
    head = [
        "step",
        "wall s (this run)",
        "CPU s (this run)",
        "wall s (computing it)",
        "CPU s (computing it)",
    ]
    return table(head, rows)
