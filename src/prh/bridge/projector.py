"""Image features to a text encoder's space: PCA to ``k`` dims, then one fitted map.

Used by the captioner (:mod:`prh.caption`) and the demo's bridge. The map is one of the
estimators of :mod:`prh.bridge.procrustes` (ZCA-whitened semi-orthogonal by default).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from prh.bridge.procrustes import load_map, make_map, save_map
from prh.errors import CheckpointError, InputError
from prh.io import read_tensors, write_tensors
from prh.linalg import pca

__all__ = ["VisionProjector"]


class VisionProjector:
    """Image features ``(N, D_v)`` -> JEPA space ``(N, E)``: PCA to ``k`` dims, then a map.

    The PCA (fitted on image features alone) keeps the map's input covariance well estimated
    when ``D_v`` (1280 for EfficientNet-Lite0) is large against the number of pairs.

    Parameters
    ----------
    dims : int
        PCA dimensions ``k`` kept (at most ``min(N, D_v)``).
    map_kind : {"semi-orthogonal", "orthogonal", "ridge"}
        The :mod:`prh.bridge` estimator. The constrained maps whiten both sides.
    """

    def __init__(self, dims: int = 64, map_kind: str = "semi-orthogonal") -> None:
        self.dims = dims
        self.map_kind = map_kind

    def _make_map(self) -> Any:
        if self.map_kind == "ridge":
            return make_map("ridge", alpha=1e-2)
        return make_map(self.map_kind, whiten=True, eps=1e-3)

    def fit(self, x: np.ndarray, y: np.ndarray) -> VisionProjector:
        """Fit on paired image features ``x (N, D_v)`` and caption embeddings ``y (N, E)``."""
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or len(x) < 2:
            raise InputError(f"expected image features (N >= 2, D_v), got shape {x.shape}")
        k = min(int(self.dims), x.shape[0] - 1, x.shape[1])
        if k < 1:
            raise InputError(f"PCA dims must be >= 1, got {self.dims}")
        p = pca(x)
        self.mean_, self.components_ = p.mean, p.components[:k]  # (D_v,), (k, D_v)
        self.map_ = self._make_map().fit(self.reduce(x), y)
        return self

    def reduce(self, x: np.ndarray) -> np.ndarray:
        """PCA coordinates ``(N, k)`` of image features ``x (N, D_v)``."""
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.mean_.shape[0]:
            raise InputError(
                f"expected image features with {self.mean_.shape[0]} columns, got {x.shape}"
            )
        return (x - self.mean_) @ self.components_.T

    def transform(self, x: np.ndarray) -> np.ndarray:
        """Image features ``(N, D_v)`` -> predicted raw JEPA embeddings ``(N, E)``."""
        return self.map_.transform(self.reduce(x))

    def save(self, folder: Path) -> None:
        write_tensors(
            folder / "vision_pca.safetensors", {"mean": self.mean_, "components": self.components_}
        )
        save_map(folder / "map.safetensors", self.map_, extra={"input": "vision_pca"})

    @classmethod
    def load(cls, folder: Path) -> VisionProjector:
        pca = read_tensors(folder / "vision_pca.safetensors")
        m, config = load_map(folder / "map.safetensors")
        out = cls(dims=int(pca["components"].shape[0]), map_kind=str(config["kind"]))
        out.mean_ = pca["mean"].astype(np.float64)
        out.components_ = pca["components"].astype(np.float64)
        if out.components_.shape[0] != m.n_features_in_:
            raise CheckpointError(
                f"{folder}: PCA keeps {out.components_.shape[0]} dims but the map expects "
                f"{m.n_features_in_}"
            )
        out.map_ = m
        return out
