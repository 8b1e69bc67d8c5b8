"""Generated cave-world scenes for visitors who have no image at hand (``GET /api/scene?seed=S``).

Seed ``S`` picks held-out scene ``test[S mod n_test]`` and renders it with nuisance seed ``S``, so
the same seed always gives the same PNG, and the scene was never seen in training.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import Any

from prh.errors import InputError
from prh.imageio import encode_png

MAX_SEED = 2**31 - 1


def parse_seed(text: str | None) -> int:
    """Parse a ``seed`` query value: an integer in ``[0, 2^31 - 1]``.

    Raises
    ------
    InputError
        With the offending value.
    """
    if text is None or text == "":
        raise InputError("seed is required: /api/scene?seed=S with S an integer in [0, 2147483647]")
    t = text.strip()
    if not (t.isascii() and t.isdigit()) or len(t) > 10:  # '²' is a Unicode digit int() refuses
        raise InputError(f"seed must be an integer in [0, {MAX_SEED}], got {text[:40]!r}")
    value = int(t)
    if value > MAX_SEED:
        raise InputError(f"seed must be an integer in [0, {MAX_SEED}], got {value}")
    return value


class SceneSource:
    """Render world scenes as PNG bytes; the world is built on first use and then kept.

    Parameters
    ----------
    world_seed : int
        ``WorldConfig.seed`` of the world to draw from (the run's world when known).
    world : str
        The world's registry name (:func:`prh.world.make_world`; the run's when known).
    size : int
        Rendered side in pixels.
    options : dict, optional
        The world's options beyond its seed (a corpus world's ``{"spec": PATH}``: its test
        photos are the scenes shown).
    """

    def __init__(
        self, world_seed: int = 0, size: int = 224, world: str = "cave", options: Any = None
    ) -> None:
        self.world_seed = world_seed
        self.world_name = world
        self.options = dict(options or {})
        self.size = size
        self._world: Any = None
        self._test: Any = None
        self._lock = threading.Lock()
        self.png = lru_cache(maxsize=256)(self._png)

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._world is None:
                from prh.world import make_world

                world = make_world(self.world_name, seed=self.world_seed, **self.options)
                self._test = world.split("test")
                self._world = world
        return self._world, self._test

    def index(self, seed: int) -> int:
        """The scene index that ``seed`` shows."""
        _, test = self._load()
        return int(test[seed % len(test)])

    def _png(self, seed: int) -> bytes:
        world, _ = self._load()
        image = world.render(self.index(seed), seed, self.size)  # (H, W, 3) uint8
        return encode_png(image)

    def info(self, seed: int, n_captions: int = 3) -> dict[str, Any]:
        """``{"seed", "scene", "captions"}``: reference captions of the scene ``seed`` shows."""
        world, _ = self._load()
        i = self.index(seed)
        return {"seed": seed, "scene": i, "captions": list(world.captions(i, n_captions, seed))}
