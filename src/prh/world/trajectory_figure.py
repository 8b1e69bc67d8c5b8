"""A figure of one moving-world trajectory: a strip of frames (render over sketch) with captions.

Layer: orchestration (draws with matplotlib, writes one image atomically by its extension).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np

from prh.world.figure import figure_format


def save_trajectory_figure(
    world, states: np.ndarray, times: np.ndarray, out: str | Path, size: int = 128
) -> None:
    """Draw each frame ``states[i]`` (at step ``times[i]``) as a render over a sketch, with one
    caption; frames use independent nuisance seeds (their time step)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from prh.io import atomic_write

    n = len(states)
    fig, axes = plt.subplots(2, n, figsize=(1.9 * n, 4.6), squeeze=False)
    for j, (s, t) in enumerate(zip(states, times, strict=True)):
        axes[0, j].imshow(world.render(int(s), nuisance_seed=int(t), size=size))
        axes[1, j].imshow(world.sketch(int(s), nuisance_seed=int(t), size=size))
        cap = world.captions(int(s), 1, seed=int(t))[0]
        axes[1, j].set_xlabel(textwrap.fill(cap, 22), fontsize=7)
        axes[0, j].set_title(f"t = {int(t)}", fontsize=8)
        for ax in axes[:, j]:
            ax.set_xticks([])
            ax.set_yticks([])
    fig.tight_layout()
    fmt = figure_format(out)
    with atomic_write(Path(out), "wb") as f:
        fig.savefig(f, format=fmt, dpi=110)
    plt.close(fig)


def save_spectrum_plot(eigenvalues: np.ndarray, k: int, out: str | Path) -> None:
    """Bar plot of the non-constant eigenvalues ``l_2, l_3, ...`` with the cut after ``k``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from prh.io import atomic_write

    ev = np.asarray(eigenvalues)
    fig, ax = plt.subplots(figsize=(6, 3))
    idx = np.arange(1, ev.size + 1)
    ax.bar(idx, ev, color=["C0" if i <= k else "C7" for i in idx])
    ax.axvline(k + 0.5, color="C3", ls="--", lw=1)
    ax.set_xlabel("eigenvalue index (constant left out)")
    ax.set_ylabel("eigenvalue of p Q^D")
    ax.set_title(f"top-{k} cut; gap {ev[k - 1] - ev[k]:.3f}" if k < ev.size else "spectrum")
    fig.tight_layout()
    with atomic_write(Path(out), "wb") as f:
        fig.savefig(f, format=figure_format(out), dpi=110)
    plt.close(fig)
