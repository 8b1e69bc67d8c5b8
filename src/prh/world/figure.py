"""A figure of sample scenes with their captions (the README picture).

Layer: orchestration (draws with matplotlib, writes one image atomically: PNG, JPEG, WebP, PDF
or SVG, by the file's extension).
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from prh.errors import InputError

# File extension -> the format matplotlib writes (the bytes always match the name).
FORMATS = {
    ".png": "png",
    ".jpg": "jpeg",
    ".jpeg": "jpeg",
    ".webp": "webp",
    ".pdf": "pdf",
    ".svg": "svg",
}


def figure_format(path: str | Path) -> str:
    """The image format a figure named ``path`` is written in, read from its extension.

    Raises
    ------
    InputError
        An extension that is not in :data:`FORMATS` (or none).
    """
    ext = Path(path).suffix.lower()
    if ext not in FORMATS:
        got = f"{ext!r}" if ext else "no extension"
        raise InputError(
            f"--out {path}: cannot tell the image format from {got}; "
            f"name the file with one of {', '.join(FORMATS)}"
        )
    return FORMATS[ext]


def save_figure(
    world,
    scenes: Sequence[int],
    out: str | Path,
    *,
    views: int = 2,
    captions: int = 3,
    size: int = 160,
    columns: int = 2,
) -> None:
    """Draw ``scenes`` (``views`` renders and a sketch each) over their captions; save the figure
    in the format its extension names (:func:`figure_format`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from prh.io import atomic_write

    fmt = figure_format(out)
    n = len(scenes)
    rows = (n + columns - 1) // columns
    fig = plt.figure(figsize=(6.2 * columns, 3.6 * rows), dpi=110)
    for k, i in enumerate(scenes):
        imgs = [world.render(i, nuisance_seed=j, size=size) for j in range(views)]
        imgs.append(world.sketch(i, nuisance_seed=0, size=size))
        gap = np.full((size, 4, 3), 255, dtype=np.uint8)
        strip = np.concatenate([x for img in imgs for x in (img, gap)][:-1], axis=1)
        ax = fig.add_axes(
            [
                (k % columns) / columns + 0.01,
                1 - (k // columns + 0.62) / rows,
                0.98 / columns,
                0.6 / rows,
            ]
        )
        ax.imshow(strip)
        ax.set_axis_off()
        caps = world.captions(i, captions, seed=0)
        text = "\n".join(textwrap.fill(f"\u2022 {c}", 78) for c in caps)
        fig.text(
            (k % columns) / columns + 0.015,
            1 - (k // columns + 0.64) / rows,
            f"scene {i}\n{text}",
            va="top",
            ha="left",
            fontsize=7.5,
            family="DejaVu Sans",
        )
    with atomic_write(out, "wb") as f:
        fig.savefig(f, format=fmt)
    plt.close(fig)
