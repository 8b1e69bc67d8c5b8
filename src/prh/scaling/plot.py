"""Figures for the scaling law (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

import os

import numpy as np

from prh.scaling.fit import LawData, LawFit, LawReport


def plot_predicted_vs_measured(
    report: LawReport,
    fit: LawFit,
    fit_data: LawData,
    heldout: LawData,
    path: str | os.PathLike[str],
) -> None:
    """Scatter predicted vs measured alignment for fit (grey) and held-out (colour by rho) runs.

    The diagonal is a perfect prediction; the band is +- the seed spread. Written as PNG,
    atomically.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from prh.io import atomic_write

    fig, ax = plt.subplots(figsize=(5.2, 4.6), dpi=120)
    pf = fit.predict(fit_data.rho, fit_data.S)
    ph = fit.predict(heldout.rho, heldout.S)
    ax.scatter(pf, fit_data.y, s=12, c="0.7", label=f"fit runs ({len(fit_data)})")
    sc = ax.scatter(ph, heldout.y, s=16, c=heldout.rho, cmap="viridis", vmin=0, vmax=1,
                    label=f"held-out runs ({len(heldout)})")  # fmt: skip
    lo = float(min(pf.min(), ph.min(), fit_data.y.min(), heldout.y.min())) - 0.02
    hi = float(max(pf.max(), ph.max(), fit_data.y.max(), heldout.y.max())) + 0.02
    grid = np.linspace(lo, hi, 2)
    ax.plot(grid, grid, "k-", lw=0.8)
    s = report.seed_spread
    if np.isfinite(s):
        ax.fill_between(grid, grid - s, grid + s, color="k", alpha=0.08, label="+- seed spread")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel(f"predicted alignment ({fit.form} law)")
    ax.set_ylabel("measured alignment")
    ax.set_title(
        f"held-out RMSE {report.form(fit.form).heldout_rmse:.4f}, seed spread {s:.4f}", fontsize=9
    )
    fig.colorbar(sc, ax=ax, label="rho (fraction of good views)")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    with atomic_write(path, "wb") as f:
        fig.savefig(f, format="png")
    plt.close(fig)
