"""Pairs for backbone runs: cached views, and the frozen trunk's maps of each, computed once.

A backbone run (:class:`prh.models.BackboneEncoder`) trains only the layers after the frozen trunk,
whose output is a pure function of the image: so every cached view goes through the trunk once,
its map is stored (float16) next to the render cache, and a training step runs only the tail.

Bad views (two crops / colour jitters of ONE render) are then a fixed pool too: view ``v`` of
scene row ``j`` is :func:`prh.views.image.crop_and_jitter` of the scene's render 0 with a
generator seeded by ``(j, v)``; a bad pair is two distinct crops of that pool, a good pair two
distinct renders (independent nuisance).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from prh.io import write_json
from prh.views.image import crop_and_jitter
from prh.views.render_cache import CachedViewDataset


def bad_view_pool(cache: np.ndarray) -> np.ndarray:
    """``(N, V, S, S, 3)`` uint8: ``V`` crops / colour jitters of each scene's view 0."""
    out = np.empty_like(cache)
    for j in range(cache.shape[0]):
        for v in range(cache.shape[1]):
            rng = np.random.default_rng([j, v, 0xBAD])
            out[j, v] = (crop_and_jitter(cache[j, 0], rng) * 255.0 + 0.5).astype(np.uint8)
    return out


def to_tensor(images: np.ndarray) -> torch.Tensor:
    """``(B, S, S, 3)`` uint8 -> ``(B, 3, S, S)`` float32 in [0, 1]."""
    x = torch.from_numpy(np.array(images, dtype=np.float32)) / 255.0  # a copy: caches are mmaps
    return x.permute(0, 3, 1, 2).contiguous()


@torch.no_grad()
def trunk_maps(trunk: nn.Module, views: np.ndarray, batch_size: int = 64) -> np.ndarray:
    """The trunk's output for every view: ``(N, V, C, h, w)`` float16 from ``(N, V, S, S, 3)``."""
    N, V = views.shape[:2]
    flat = views.reshape(N * V, *views.shape[2:])
    trunk.eval()
    parts = [
        trunk(to_tensor(flat[i : i + batch_size])).half().numpy()
        for i in range(0, N * V, batch_size)
    ]
    maps = np.concatenate(parts)  # (N V, C, h, w)
    return maps.reshape(N, V, *maps.shape[1:])


def load_or_build_maps(path: Path, trunk: nn.Module, views: np.ndarray, build: bool) -> np.ndarray:
    """The trunk maps stored at ``path`` (memory-mapped), computing and saving them first when
    absent and ``build`` (rank 0); written to a temporary name and renamed."""
    if build and not path.is_file():
        maps = trunk_maps(trunk, views)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            np.save(f, maps)
        os.replace(tmp, path)
        write_json(path.with_suffix(".json"), {"shape": list(maps.shape), "views": views.shape[:2]})
    return np.load(path, mmap_mode="r")


class MapCachedDataset:
    """Pairs of cached views with their trunk maps: ``batch(i)`` is
    :meth:`CachedViewDataset.batch` (good pairs: two distinct cached views; with ``pairs``, a
    :class:`~prh.views.lag.LagPairs` of a moving world, views of two states the lag apart) plus
    ``ma``, ``mb`` ``(b, C, h, w)`` float32 maps of ``a`` and ``b``; a pure function of
    ``(seed, i)``."""

    def __init__(
        self,
        views: np.ndarray,
        maps: np.ndarray,
        scene_ids: Sequence[int],
        batch_size: int,
        seed: int,
        *,
        rank: int = 0,
        world_size: int = 1,
        pairs: Any = None,
    ) -> None:
        self.pairs = CachedViewDataset(
            views, scene_ids, "good", batch_size, seed, rank=rank, world_size=world_size,
            pairs=pairs,
        )  # fmt: skip
        self.maps = maps
        self.row = {int(s): j for j, s in enumerate(scene_ids)}

    def batch(self, i: int) -> dict:
        out = self.pairs.batch(i)
        for side, key in (("a", "ma"), ("b", "mb")):
            states = out["state_b"] if side == "b" and "state_b" in out else out["state"]
            rows = np.array([self.row[int(s)] for s in states])
            cols = out[f"nuisance_{side}"].numpy()
            out[key] = torch.from_numpy(np.asarray(self.maps[rows, cols], dtype=np.float32))
        return out
