"""A score matrix as a heatmap: one panel per metric, rows X, columns Y, best layer pair per cell.

Returns PNG bytes (matplotlib, Agg backend: no display); the caller writes them.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

import numpy as np


def heatmap_png(
    scores: Mapping[str, np.ndarray],
    layers: Mapping[str, np.ndarray],
    x_labels: Sequence[str],
    y_labels: Sequence[str],
    intervals: Mapping[str, np.ndarray] | None = None,
) -> bytes:
    """Draw ``scores[panel]`` ``(X, Y)`` with ``layers[panel]`` ``(X, Y, 2)`` in each cell.

    Undefined (NaN) cells are left blank. Cells are annotated when the matrix has at most 400:
    the score, the layer pair, and ``[low, high]`` where ``intervals[panel]`` ``(X, Y, 2)`` is
    given (the bootstrap's interval).
    """
    intervals = intervals or {}
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(scores)
    nx, ny = len(x_labels), len(y_labels)
    w, h = 2.5 + 0.6 * ny, 1.8 + 0.45 * nx
    cols = min(4, len(names))
    rows = -(-len(names) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(w * cols, h * rows), squeeze=False)
    for ax in axes.ravel()[len(names) :]:
        ax.axis("off")
    for ax, name in zip(axes.ravel(), names, strict=False):
        s = np.asarray(scores[name], dtype=np.float64)  # (X, Y)
        im = ax.imshow(np.ma.masked_invalid(s), cmap="viridis", aspect="auto")
        ax.set_title(name)
        ax.set_xticks(range(ny), [str(y) for y in y_labels], rotation=60, ha="right", fontsize=7)
        ax.set_yticks(range(nx), [str(x) for x in x_labels], fontsize=7)
        ax.set_xlabel("Y")
        ax.set_ylabel("X")
        if nx * ny <= 400:
            lo, hi = np.nanmin(s, initial=0.0), np.nanmax(s, initial=1.0)
            for i, j in np.ndindex(nx, ny):
                if np.isfinite(s[i, j]):
                    lx, ly = (int(v) for v in layers[name][i, j])
                    dark = s[i, j] < (lo + hi) / 2
                    text = f"{s[i, j]:.3f}\n({lx},{ly})"
                    if name in intervals and np.isfinite(intervals[name][i, j]).all():
                        text += "\n[{:.3f}, {:.3f}]".format(*intervals[name][i, j])
                    ax.text(j, i, text, ha="center", va="center",
                            fontsize=6, color="white" if dark else "black")  # fmt: skip
        fig.colorbar(im, ax=ax, shrink=0.8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()
