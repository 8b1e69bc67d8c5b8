"""The report's theory section: the world's spectrum, every encoder against the theory, every
pair's held-out canonical correlation beside the other figures, the still-world control and
issue 21's targets (``templates/theory.html``; data from :func:`prh.demo.report.theory_summary`).
"""

from __future__ import annotations

from typing import Any

from prh.demo.html_parts import Cell, interval, num, strong, table
from prh.demo.report_modalities import targets_table
from prh.demo.theory_targets import BAD, TRAINED

SHOWN = (*TRAINED, "efficientnet-lite0", "minilm", "random-init", "next-token")


def theory_context(summary: dict[str, Any]) -> dict[str, Any] | None:
    """What ``templates/theory.html`` shows (``spectrum`` None for a world without one); None
    for a summary without the theory step (written before it)."""
    if "theory_cc" not in summary:
        return None
    world = summary.get("world") or {}
    control = summary.get("control") or {}
    return {
        "world": world.get("name"),
        "spectrum": _spectrum(world),
        "reason": world.get("reason"),
        "theory_cc": _theory_table(summary.get("theory_cc")),
        "pairs": _pairs_table((summary.get("modalities") or {}).get("pairs") or []),
        "control_world": control.get("world"),
        "control": _control_table(summary),
        "spectral": spectral_table(summary),
        "targets": targets_table(summary.get("theory_targets") or []),
        "literal": literal_context(summary.get("literal")),
    }


def _spectrum(world: dict[str, Any]) -> dict[str, Any] | None:
    ev = world.get("spectrum")
    if not ev:
        return None
    k = int(world["k"])
    rows: list[list[Cell]] = [
        [str(i + 1), num(v, 4), "top k" if i < k else ("first after the gap" if i == k else "")]
        for i, v in enumerate(ev)
    ]
    return {"table": table(["i", "eigenvalue", ""], rows), "k": str(k), "lag": str(world["lag"]),
            "gap": num(world["gap"], 4), "sep": num(world["min_separation"], 4)}  # fmt: skip


MODES_HEAD = "g* modes its k directions carry (held-out R^2 >= 0.5)"


def _modes(r: dict[str, Any]) -> str:
    """The encoder's mode profile in words (a summary from before the profile: blank)."""
    return (r.get("modes") or {}).get("describe", "")


def _theory_table(tc: dict[str, Any] | None) -> dict[str, Any] | None:
    if not tc or "skipped" in tc:
        return None
    rows: list[list[Cell]] = []
    for name, r in tc.items():
        corr = " ".join(num(c, 2) for c in r["correlations"])
        label: Cell = strong(name) if name.endswith("-good") else name
        raw = (r.get("raw") or {}).get("mean")
        own = r.get("own") or {}
        own_cell = f"{num(own.get('mean'))} {interval(*(own.get('ci') or (None, None)))}"
        rows.append([label, num(r["mean"]), interval(*r["ci"]), corr, num(raw),
                     r.get("modality") or "", own_cell, num(r.get("ceiling")),
                     _modes(r)])  # fmt: skip
    head = ["encoder", "mean cc (width-fair)", "95% interval", "the k held-out correlations",
            "raw cc (top 64)", "modality", "cc vs its own modality's theory",
            "its modality's ceiling vs g*", MODES_HEAD]  # fmt: skip
    return table(head, rows)


def _pair_cells(p: dict[str, Any]) -> list[Cell]:
    rot = [p.get("rotation_x_to_y"), p.get("rotation_y_to_x")]
    r2 = [p.get("r2_x_to_y"), p.get("r2_y_to_x")]
    return [
        f"{p['x']} ~ {p['y']}",
        f"{num(p.get('cc'))} {interval(*(p.get('cc_ci') or (None, None)))}",
        num(p.get("cc_predicted")),
        num(p["cka"]),
        f"{num(p['mutual_knn'], 4)} {interval(*p['mutual_knn_ci'], 4)}",
        " / ".join(num(v) for v in rot),
        " / ".join(num(v) for v in r2),
    ]


HEAD = ["pair", "cc (held-out)", "cc predicted (perfect encoders)", "CKA", "mutual-kNN@10",
        "rotation score x->y / y->x", "orthonormal R^2 x->y / y->x"]  # fmt: skip


def _cross_modal(p: dict[str, Any]) -> bool:
    return (
        all(n in SHOWN for n in (p["x"], p["y"])) and p["x"].split("-")[0] != p["y"].split("-")[0]
    )


def _pairs_table(pairs: list[dict[str, Any]]) -> dict[str, Any] | None:
    rows = [p for p in pairs if _cross_modal(p) and "cc" in p]
    if not rows:
        return None
    rows.sort(key=lambda p: (p["x"] in BAD or p["y"] in BAD, p["x"], p["y"]))
    return table(HEAD, [_pair_cells(p) for p in rows])


def _control_table(summary: dict[str, Any]) -> dict[str, Any] | None:
    control = summary.get("control") or {}
    if "pairs" not in control:
        return None
    main = {(p["x"], p["y"]): p for p in (summary.get("modalities") or {}).get("pairs") or []}
    rows: list[list[Cell]] = []
    for p in control["pairs"]:
        if not _cross_modal(p) or "cc" not in p:
            continue
        m = main.get((p["x"], p["y"]))
        moving = f"{num(m.get('cc'))} {interval(*(m.get('cc_ci') or (None, None)))}" if m else ""
        rows.append([*_pair_cells(p), moving])
    if not rows:
        return None
    return table([*HEAD, f"cc on {summary['world']['name']}"], rows)


def spectral_table(summary: dict[str, Any]) -> dict[str, Any] | None:
    """The spectral pair-free maps of the main world, of the control and of the literal twin,
    against the paired orthonormal map (:mod:`prh.demo.spectral`)."""
    rows: list[list[Cell]] = []
    control, literal = summary.get("control") or {}, summary.get("literal") or {}
    for where, sec in ((summary["world"]["name"], summary.get("spectral")),
                       (control.get("world"), control.get("spectral")),
                       (literal.get("world"), literal.get("spectral"))):  # fmt: skip
        for pair, m in ((sec or {}).get("maps") or {}).items():
            if m.get("error"):
                rows.append([where, pair, m["reason"], "", "", ""])
                continue
            pinned: Cell = "pinned" if m["pinned"] else strong("not pinned")
            rows.append([
                where, pair, pinned,
                f"{num(m['spectral']['r2'])} / {num(m['paired']['r2'])}",
                f"{num(m['spectral']['r1'])} / {num(m['paired']['r1'])} (chance "
                f"{num(m['chance_r1'])})",
                num(m["accuracy"]),
            ])  # fmt: skip
    if not rows:
        return None
    head = ["world", "pair", "eigenvalues", "held-out R^2 spectral / paired",
            "R@1 spectral / paired", "assignment accuracy"]  # fmt: skip
    return table(head, rows)


def literal_context(lit: dict[str, Any] | None) -> dict[str, Any] | None:
    """The literal-caption twin's tables and verdict (:mod:`prh.demo.literal`); None when the
    demo did not run it (or skipped it: ``skipped`` then says why)."""
    if not lit:
        return None
    if "skipped" in lit:
        return {"skipped": lit["skipped"]}
    v = lit["verdict"]
    single = v["basis"].startswith("single seed")
    return {
        "skipped": None,
        "world": lit["world"],
        "image": lit["image"],
        "label": v["label"] + (" (single seed)" if single else ""),
        "reason": v["reason"],
        "basis": v["basis"],
        "rule": v["rule"],
        "pairs": literal_pairs_table(lit),
        "theory": _literal_theory_table(lit["theory_cc"]),
        "captioners": targets_table(lit["captioners"]["targets"]) if lit.get("captioners")
        else None,
    }  # fmt: skip


def literal_pairs_table(lit: dict[str, Any]) -> dict[str, Any]:
    """Per caption kind: the image~text pair's cc seed by seed, its interval, the k held-out
    correlations (seed means, descending) beside the k predicted, and the largest deviation."""
    figs = lit["verdict"].get("figures") or {}
    rows: list[list[Cell]] = []
    for kind, p in lit["pairs"].items():
        seeds = p["seeds"]
        k = len(p["predicted"])
        mean = sorted((sum(s["correlations"][i] for s in seeds) / len(seeds) for i in range(k)),
                      reverse=True)  # fmt: skip
        f = figs.get(kind) or {}
        rows.append([
            strong(p["pair"]), kind, " ".join(num(s["mean"]) for s in seeds), num(f.get("cc")),
            interval(*(f.get("interval") or (None, None))), " ".join(num(c, 2) for c in mean),
            " ".join(num(c, 2) for c in p["predicted"]), num(f.get("predicted_mean")),
            num(f.get("largest_deviation")),
        ])  # fmt: skip
    head = ["pair", "captions", "cc per seed", "cc (seed mean)", "interval",
            "the k held-out correlations (descending)", "the k predicted (perfect encoders)",
            "predicted mean", "largest deviation"]  # fmt: skip
    return table(head, rows)


def _literal_theory_table(tc: dict[str, Any]) -> dict[str, Any]:
    rows: list[list[Cell]] = []
    for name, r in tc.items():
        own = r.get("own") or {}
        rows.append([name, f"{num(r['mean'])} {interval(*r['ci'])}",
                     " ".join(num(c, 2) for c in r["correlations"]),
                     f"{num(own.get('mean'))} {interval(*(own.get('ci') or (None, None)))}",
                     num(r.get("ceiling")), _modes(r)])  # fmt: skip
    head = ["encoder", "cc vs g* (width-fair)", "the k held-out correlations",
            "cc vs its own modality's theory", "its modality's ceiling vs g*",
            MODES_HEAD]  # fmt: skip
    return table(head, rows)
