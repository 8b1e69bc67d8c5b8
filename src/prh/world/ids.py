"""Scene ids: how feature files, corpora and cells name a world's scene (``"scene_<i>"``).

One writer (:func:`scene_id`) and one reader (:func:`parse_scene_id`, :func:`scene_ids_of`).

Layer: pure functions; no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from prh.errors import InputError

PREFIX = "scene_"


def scene_id(i: int) -> str:
    """The id of scene ``i``: ``"scene_{i}"``."""
    return f"{PREFIX}{int(i)}"


def parse_scene_id(s: object) -> int | None:
    """Scene index of id ``s`` (``"scene_12"`` -> 12); ``None`` when ``s`` is not a scene id."""
    s = str(s)
    rest = s[len(PREFIX) :]
    return int(rest) if s.startswith(PREFIX) and rest.isdigit() else None


def scene_ids_of(ids: Iterable[object], where: str = "") -> np.ndarray:
    """Scene indices ``(N,)`` int64 of ids ``"scene_{i}"``.

    Raises
    ------
    InputError
        The first id that is not a scene id, in one line (prefixed ``where: `` when given).
    """
    out = []
    for s in ids:
        i = parse_scene_id(s)
        if i is None:
            head = f"{where}: " if where else ""
            raise InputError(f"{head}id {s!r} is not a world scene id 'scene_<i>'")
        out.append(i)
    return np.asarray(out, dtype=np.int64)
