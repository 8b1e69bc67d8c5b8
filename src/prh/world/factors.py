"""Known factors of cave-world scenes, as integer labels for probes.

Layer: pure functions of a world and scene indices; no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from prh.world.ids import scene_ids_of

__all__ = ["FACTOR_NAMES", "scene_factors", "scene_ids_of"]

FACTOR_NAMES: tuple[str, ...] = ("shape", "colour", "count")


def scene_factors(
    world, scene_ids: Sequence[int], ties: str = "undefined"
) -> dict[str, np.ndarray]:
    """``{"shape", "colour", "count"}`` labels ``(N,)`` of the given scenes.

    ``shape`` and ``colour`` are those of the scene's largest object; when several objects share
    the largest size, ``ties="undefined"`` (default) gives -1 (the probe leaves the scene out) and
    ``ties="first"`` takes the first in reading order (the convention of issue 12's text probes).
    ``count`` is the number of objects.
    """
    if ties not in ("undefined", "first"):
        raise ValueError(f"ties must be 'undefined' or 'first', got {ties!r}")
    shape, colour, count = [], [], []
    for i in scene_ids:
        objs = world.scene(int(i)).objects
        top = max(o.size for o in objs)
        largest = [o for o in objs if o.size == top]
        one = len(largest) == 1 or ties == "first"
        shape.append(int(largest[0].shape) if one else -1)
        colour.append(int(largest[0].colour) if one else -1)
        count.append(len(objs))
    return {
        "shape": np.array(shape, dtype=np.int64),
        "colour": np.array(colour, dtype=np.int64),
        "count": np.array(count, dtype=np.int64),
    }
