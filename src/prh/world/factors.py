"""Known factors of cave-world scenes, as integer labels for probes.

Layer: pure functions of a world and scene indices; no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

FACTOR_NAMES: tuple[str, ...] = ("shape", "colour", "count")


def scene_factors(world, scene_ids: Sequence[int]) -> dict[str, np.ndarray]:
    """``{"shape", "colour", "count"}`` labels ``(N,)`` of the given scenes.

    ``shape`` and ``colour`` are those of the scene's largest object (the first in reading order
    among equally large ones); ``count`` is the number of objects.
    """
    scenes = [world.scene(int(i)) for i in scene_ids]
    largest = [max(s.objects, key=lambda o: o.size) for s in scenes]
    return {
        "shape": np.array([o.shape for o in largest], dtype=np.int64),
        "colour": np.array([o.colour for o in largest], dtype=np.int64),
        "count": np.array([len(s.objects) for s in scenes], dtype=np.int64),
    }


def scene_ids_of(ids: Sequence[str]) -> np.ndarray:
    """Scene indices of feature-file ids ``"scene_{i}"``."""
    from prh.errors import InputError

    out = []
    for s in ids:
        if not str(s).startswith("scene_") or not str(s)[6:].isdigit():
            raise InputError(f"id {s!r} is not a world scene id 'scene_<i>'")
        out.append(int(str(s)[6:]))
    return np.asarray(out, dtype=np.int64)
