"""The demo's figures (matplotlib, Agg backend), written as PNG atomically."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

COLOURS = {
    "good": "#1b7837",
    "bad": "#c51b7d",
    "next-token": "#2166ac",
    "next-token-last": "#67a9cf",
    "minilm": "#e08214",
    "random-init": "#777777",
}


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: str | os.PathLike[str]) -> None:
    from prh.io import atomic_write

    with atomic_write(path, "wb") as f:
        fig.savefig(f, format="png", bbox_inches="tight")
    _plt().close(fig)


def _undefined(x: Any) -> bool:
    """``None`` or NaN: a figure that could not be computed."""
    return x is None or (isinstance(x, float) and math.isnan(x))


def _xy(evals: Sequence[Sequence[Any]]) -> tuple[tuple[Any, ...], list[float]]:
    """Samples and scores of a curve, an undefined score as NaN (a gap in the line)."""
    s, y = zip(*evals)
    return s, [math.nan if _undefined(v) else v for v in y]


LABELS = {"good": "good views (JEPA)", "bad": "bad views (JEPA)", "next-token": "next-token LM"}
REFERENCES = {"minilm": ("--", "MiniLM-L6 (pretrained)"), "random-init": (":", "random-init")}


def plot_curves(
    runs: Sequence[dict[str, Any]],
    measure: dict[str, dict[str, Any]],
    efficiency: dict[str, Any],
    path: str | os.PathLike[str],
    title: str = "",
    key: str = "evals",
    ylabel: str = "mutual-kNN@10 with EfficientNet-Lite0",
) -> None:
    """Alignment vs samples seen: good / bad / next-token curves, mixture runs faint, MiniLM and
    random-init as horizontal references (those of ``measure``: ``{name: {"score"}}``), the
    sample-efficiency target and its crossings. ``key``: the runs' curve drawn (``evals``, or
    ``theory_evals`` against the theory embedding). Undefined scores leave gaps; an undefined
    reference or target is named in the legend."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.2, 4.4), dpi=130)
    cmap = plt.get_cmap("viridis")
    _faint_runs(ax, runs, cmap, key)
    for name in ("good", "bad", "next-token"):
        r = next((r for r in runs if r["name"] == name), None)
        if r is None or not r.get(key):
            continue
        ax.plot(*_xy(r[key]), "-o", ms=2.5, color=COLOURS[name], lw=1.8, label=LABELS[name])
    _references(ax, measure)
    _target(ax, efficiency)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("samples seen (pairs or sequences)")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.25)
    ax.legend(fontsize=8, loc="upper left", frameon=False)
    if title:
        ax.set_title(title, fontsize=10)
    sm = plt.cm.ScalarMappable(cmap=cmap, norm=plt.Normalize(0, 1))
    cb = fig.colorbar(sm, ax=ax, pad=0.01, fraction=0.04)
    cb.set_label("rho of mixture runs (faint)", fontsize=8)
    _save(fig, path)


def _faint_runs(ax: Any, runs: Sequence[dict[str, Any]], cmap: Any, key: str = "evals") -> None:
    """Every run but the three headline curves: other seeds in their view's colour, mixture
    runs coloured by rho."""
    for r in runs:
        if not r.get(key) or r["name"] in ("good", "bad", "next-token"):
            continue
        s, y = _xy(r[key])
        if r["role"] == "curve":  # another seed of a curve: thin, in its view's colour
            ax.plot(s, y, color=COLOURS[r["views"]], lw=0.8, alpha=0.5)
        else:
            ax.plot(s, y, color=cmap(float(r["rho"])), lw=0.8, alpha=0.45)


def _references(ax: Any, measure: dict[str, dict[str, Any]]) -> None:
    """MiniLM and random-init as horizontal lines (an undefined score: a legend entry only)."""
    for name, (ls, label) in REFERENCES.items():
        if name not in measure:
            continue
        score = measure[name]["score"]
        if _undefined(score):
            ax.plot([], [], color=COLOURS[name], ls=ls, lw=1.2, label=f"{label}: undefined")
            continue
        ax.axhline(score, color=COLOURS[name], ls=ls, lw=1.2, label=label)


def _target(ax: Any, efficiency: dict[str, Any]) -> None:
    """The efficiency target (black line) and where good views and next-token reach it."""
    t = efficiency.get("target")
    if t is None:
        return
    if _undefined(t):
        ax.plot([], [], color="k", lw=0.6, alpha=0.5, label="efficiency target: undefined")
        return
    ax.axhline(t, color="k", lw=0.6, alpha=0.5)
    for key, name in (("samples_good", "good"), ("samples_next_token", "next-token")):
        if efficiency.get(key) and not _undefined(efficiency[key]):
            ax.plot([efficiency[key]], [t], "v", color=COLOURS[name], ms=7)


def plot_bars(measure: dict[str, dict[str, Any]], path: str | os.PathLike[str]) -> None:
    """Final alignment of each text encoder with its bootstrap interval and the null's 95%
    quantile (a score below the grey tick is indistinguishable from chance); an undefined score
    is written as such, with no bar."""
    plt = _plt()
    names = list(measure)
    fig, ax = plt.subplots(figsize=(7.2, 3.6), dpi=130)
    for i, n in enumerate(names):
        d = measure[n]
        if _undefined(d["score"]):
            ax.text(i, 0.0, "undefined", ha="center", va="bottom", fontsize=8)
            continue
        _bar(ax, i, d, COLOURS.get(n, "0.5"))
    ax.set_xticks(range(len(names)), names, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("mutual-kNN@10")
    ax.grid(axis="y", alpha=0.25)
    _save(fig, path)


def _bar(ax: Any, i: int, d: dict[str, Any], colour: str) -> None:
    """One encoder's bar, interval (an undefined bound: none that side) and null tick."""
    score = d["score"]
    lo, hi = d["ci"] if d.get("ci") else (score, score)
    lo, hi = (score if _undefined(v) else v for v in (lo, hi))
    ax.bar(i, score, color=colour, width=0.6)
    # a percentile interval of a max-over-layers statistic need not contain the estimate
    err = [[max(0.0, score - lo)], [max(0.0, hi - score)]]
    ax.errorbar(i, score, yerr=err, color="k", capsize=3, lw=1)
    if not _undefined(d.get("calibrated")):
        q = score - d["calibrated"]
        ax.plot([i - 0.3, i + 0.3], [q, q], color="0.4", lw=2)
    ax.text(i, max(hi, score) + 0.002, f"{score:.3f}", ha="center", va="bottom", fontsize=8)
