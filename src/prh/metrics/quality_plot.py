"""Alignment against language-model quality: the PRH paper's alignment-vs-bits-per-byte plot.

Returns PNG bytes (matplotlib, Agg backend); the caller writes them.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np


def alignment_vs_bpb_png(
    bpb: Sequence[float], scores: np.ndarray, names: Sequence[str], metric: str
) -> bytes:
    """One point per language model: its bits per byte against its mean score over the columns.

    Parameters
    ----------
    bpb : sequence of float
        ``X`` bits per byte, one per row model.
    scores : np.ndarray
        ``(X, Y)`` alignment of each row model to each column model (NaN cells are skipped).
    names : sequence of str
        The row models, written beside their points.
    metric : str
        The y-axis label.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = np.asarray(scores, dtype=np.float64)
    y = np.array([np.nanmean(r) if np.isfinite(r).any() else np.nan for r in s])
    x = np.asarray(bpb, dtype=np.float64)
    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.scatter(x, y, color="tab:blue")
    for xi, yi, name in zip(x, y, names):
        if np.isfinite(xi) and np.isfinite(yi):
            ax.annotate(str(name).split("/")[-1], (xi, yi), fontsize=6, xytext=(3, 3),
                        textcoords="offset points")  # fmt: skip
    ax.set_xlabel("bits per byte (lower: better language model)")
    ax.set_ylabel(f"{metric}, mean over the {s.shape[1]} column model(s)")
    ax.invert_xaxis()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()
