"""What ``prh measure`` is asked to do: :class:`MeasureRequest`, one field per flag."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MeasureRequest:
    """One ``prh measure`` job, a field per flag with the command line's defaults: two files
    ``a``, ``b``, or the matrix of ``x`` against ``y`` (files, folders, or ``x_models`` /
    ``y_models`` lists in one folder each); statistics, preprocessing, outputs, compute."""

    a: str | None = None
    b: str | None = None
    x: tuple[str, ...] | None = None
    y: tuple[str, ...] | None = None
    x_models: str | None = None
    y_models: str | None = None
    pool: str = "auto"
    x_pool: str | None = None
    y_pool: str | None = None
    keep_going: bool = False
    metric: tuple[str, ...] = ("mutual_knn",)
    k: int = 10
    null: int = 0
    null_stop: str = "fixed"
    bootstrap: int = 0
    seed: int = 0
    no_progress: bool = False
    layers: tuple[int, int] | None = None
    clamp: str = "mean"
    eps: float = 0.0
    no_preprocess: bool = False
    ids_a: str | None = None
    ids_b: str | None = None
    json: str | None = None
    npy: str | None = None
    heatmap: str | None = None
    bpb_plot: str | None = None
    block_size: int | None = None
    backend: str = "numpy"
    device: str = "auto"
    kernel: str = "linear"
    rbf_sigma: float = 1.0
    cca_dim: int = 10
