"""The demo's figures (matplotlib, Agg backend), written as PNG atomically."""

from __future__ import annotations

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


def plot_curves(
    runs: Sequence[dict[str, Any]],
    measure: dict[str, dict[str, Any]],
    efficiency: dict[str, Any],
    path: str | os.PathLike[str],
    title: str = "",
) -> None:
    """Alignment vs samples seen: good / bad / next-token curves, mixture runs faint, MiniLM and
    random-init as horizontal references, the sample-efficiency target and its crossings."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.2, 4.4), dpi=130)
    cmap = plt.get_cmap("viridis")
    for r in runs:
        if not r["evals"] or r["name"] in ("good", "bad", "next-token"):
            continue
        s, y = zip(*r["evals"])
        if r["role"] == "curve":  # another seed of a curve: thin, in its view's colour
            ax.plot(s, y, color=COLOURS[r["views"]], lw=0.8, alpha=0.5)
        else:
            ax.plot(s, y, color=cmap(float(r["rho"])), lw=0.8, alpha=0.45)
    for name in ("good", "bad", "next-token"):
        r = next((r for r in runs if r["name"] == name), None)
        if r is None or not r["evals"]:
            continue
        s, y = zip(*r["evals"])
        label = {
            "good": "good views (JEPA)",
            "bad": "bad views (JEPA)",
            "next-token": "next-token LM",
        }[name]
        ax.plot(s, y, "-o", ms=2.5, color=COLOURS[name], lw=1.8, label=label)
    for name, ls in (("minilm", "--"), ("random-init", ":")):
        if name in measure:
            ax.axhline(
                measure[name]["score"],
                color=COLOURS[name],
                ls=ls,
                lw=1.2,
                label=f"{'MiniLM-L6 (pretrained)' if name == 'minilm' else 'random-init'}",
            )
    t = efficiency.get("target")
    if t is not None:
        ax.axhline(t, color="k", lw=0.6, alpha=0.5)
        for key, name in (("samples_good", "good"), ("samples_next_token", "next-token")):
            if efficiency.get(key):
                ax.plot([efficiency[key]], [t], "v", color=COLOURS[name], ms=7)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("samples seen (pairs or sequences)")
    ax.set_ylabel("mutual-kNN@10 with EfficientNet-Lite0")
    ax.grid(alpha=0.25)
    ax.legend(fontsize=8, loc="upper left", frameon=False)
    if title:
        ax.set_title(title, fontsize=10)
    sm = plt.cm.ScalarMappable(cmap=cmap, norm=plt.Normalize(0, 1))
    cb = fig.colorbar(sm, ax=ax, pad=0.01, fraction=0.04)
    cb.set_label("rho of mixture runs (faint)", fontsize=8)
    _save(fig, path)


def plot_bars(measure: dict[str, dict[str, Any]], path: str | os.PathLike[str]) -> None:
    """Final alignment of each text encoder with its bootstrap interval and the null's 95%
    quantile (a score below the grey tick is indistinguishable from chance)."""
    plt = _plt()
    names = list(measure)
    fig, ax = plt.subplots(figsize=(7.2, 3.6), dpi=130)
    for i, n in enumerate(names):
        d = measure[n]
        lo, hi = d["ci"] if d.get("ci") else (d["score"], d["score"])
        ax.bar(i, d["score"], color=COLOURS.get(n, "0.5"), width=0.6)
        # a percentile interval of a max-over-layers statistic need not contain the estimate
        err = [[max(0.0, d["score"] - lo)], [max(0.0, hi - d["score"])]]
        ax.errorbar(i, d["score"], yerr=err, color="k", capsize=3, lw=1)
        if d.get("calibrated") is not None:
            q = d["score"] - d["calibrated"]
            ax.plot([i - 0.3, i + 0.3], [q, q], color="0.4", lw=2)
        ax.text(
            i,
            max(hi, d["score"]) + 0.002,
            f"{d['score']:.3f}",
            ha="center",
            va="bottom",
            fontsize=8,
        )
    ax.set_xticks(range(len(names)), names, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("mutual-kNN@10")
    ax.grid(axis="y", alpha=0.25)
    _save(fig, path)
