"""Sweep grids: which runs (views or rho, samples seen, seed) a sweep trains and measures.

A :class:`Grid` expands into :class:`Cell` s of four splits:

- ``fit``: every ``rho`` in ``rhos`` x every count in ``samples`` (the law's fit cells), with
  ``fit_seeds`` seeds each (``seed, seed + 1, ...``);
- ``heldout``: ``heldout`` points at random off-grid ``(rho, S)`` (rho uniform in ``[0, 1]``, ``log
  S`` uniform over the fit range, never equal to a grid value) with fresh seeds ``seed + 1000 + i``;
- ``repeat``: the same points again with seeds ``seed + 2000 + i``, for the seed spread;
- ``curve``: views in ``curve_views`` (good / bad / next-token) at ``curve_samples`` with
  ``curve_seeds`` seeds ``seed + 3000 + j``, for sample efficiency.

A grid may not ask for more held-out points than it has fit runs (``len(rhos) * len(samples) *
fit_seeds``): predicting more runs than the law was fitted on is refused with ``InputError``. The
published protocol (45 fit cells, 85 held-out runs) therefore runs each fit cell with 2 seeds (90
fit runs; the law is fitted on both, which also halves the noise per cell).

Every cell has a stable id: the first 16 hex digits of SHA-256 over the canonical JSON of what
determines its result (backend name and options, views, rho, samples, seed). A resumed sweep skips
cells whose id is already in ``results.jsonl``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

import numpy as np

from prh.errors import InputError

VIEWS = ("mixture", "good", "bad", "next-token")
SPLITS = ("fit", "heldout", "repeat", "curve")


@dataclass(frozen=True)
class Cell:
    """One run of a sweep.

    Attributes
    ----------
    split : str
        ``fit``, ``heldout``, ``repeat`` or ``curve``.
    views : str
        ``mixture`` (with ``rho``) or a pure kind: ``good``, ``bad``, ``next-token``.
    rho : float or None
        Fraction of good views (``mixture`` only).
    samples : int
        Positive pairs (or training sequences) seen.
    seed : int
        The run's seed.
    point : int or None
        Index of the held-out point (shared by ``heldout`` and ``repeat`` runs), else ``None``.
    """

    split: str
    views: str
    rho: float | None
    samples: int
    seed: int
    point: int | None = None

    def key(self, backend: str, options: dict) -> dict:
        """What determines the result: hashed into :meth:`cell_id`."""
        return {
            "backend": backend,
            "options": options,
            "views": self.views,
            "rho": None if self.rho is None else round(float(self.rho), 10),
            "samples": int(self.samples),
            "seed": int(self.seed),
        }

    def cell_id(self, backend: str, options: dict) -> str:
        blob = json.dumps(self.key(backend, options), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Grid:
    """A sweep grid (see the module docstring for the splits and seeds)."""

    name: str
    rhos: tuple[float, ...]
    samples: tuple[int, ...]
    fit_seeds: int = 1
    heldout: int = 0
    repeats: bool = True
    curve_views: tuple[str, ...] = ()
    curve_samples: tuple[int, ...] = ()
    curve_seeds: int = 0

    def __post_init__(self) -> None:
        if not self.rhos or not self.samples:
            raise InputError(f"grid {self.name}: needs at least one rho and one sample count")
        if any(not 0.0 <= r <= 1.0 for r in self.rhos):
            raise InputError(f"grid {self.name}: rho values must be in [0, 1], got {self.rhos}")
        if any(s < 1 for s in (*self.samples, *self.curve_samples)):
            raise InputError(f"grid {self.name}: sample counts must be >= 1")
        if self.fit_seeds < 1:
            raise InputError(f"grid {self.name}: fit_seeds must be >= 1, got {self.fit_seeds}")
        if self.heldout > self.n_fit:
            raise InputError(
                f"grid {self.name}: {self.heldout} held-out points but only {self.n_fit} fit runs "
                f"({len(self.rhos)} rho x {len(self.samples)} samples x {self.fit_seeds} seeds); "
                "a grid may not ask for more held-out points than fit runs"
            )
        if self.heldout >= 1000 or self.curve_seeds >= 1000 or self.fit_seeds >= 1000:
            raise InputError(f"grid {self.name}: at most 999 held-out points and seeds per split")
        if self.heldout and min(self.samples) == max(self.samples):
            raise InputError(f"grid {self.name}: held-out points need a range of sample counts")
        bad = [v for v in self.curve_views if v not in VIEWS[1:]]
        if bad:
            raise InputError(f"grid {self.name}: unknown curve views {bad}; expected {VIEWS[1:]}")
        if self.curve_views and (not self.curve_samples or self.curve_seeds < 1):
            raise InputError(f"grid {self.name}: curve views need curve_samples and curve_seeds")

    @property
    def n_fit(self) -> int:
        return len(self.rhos) * len(self.samples) * self.fit_seeds

    def cells(self, seed: int = 0) -> list[Cell]:
        """Every cell of the grid for base seed ``seed`` (deterministic)."""
        out = [
            Cell("fit", "mixture", float(r), int(s), seed + j)
            for j in range(self.fit_seeds)
            for r in self.rhos
            for s in self.samples
        ]
        for i, (r, s) in enumerate(self.heldout_points(seed)):
            out.append(Cell("heldout", "mixture", r, s, seed + 1000 + i, point=i))
            if self.repeats:
                out.append(Cell("repeat", "mixture", r, s, seed + 2000 + i, point=i))
        for v in self.curve_views:
            for j in range(self.curve_seeds):
                out.extend(
                    Cell("curve", v, None, int(s), seed + 3000 + j) for s in self.curve_samples
                )
        return out

    def heldout_points(self, seed: int = 0) -> list[tuple[float, int]]:
        """``heldout`` random off-grid ``(rho, S)`` points, from a generator seeded by ``seed``."""
        rng = np.random.default_rng([seed, 7919])
        lo, hi = np.log10(min(self.samples)), np.log10(max(self.samples))
        grid_r, grid_s = set(np.round(self.rhos, 6)), set(self.samples)
        points: list[tuple[float, int]] = []
        while len(points) < self.heldout:
            r = round(float(rng.uniform(0.0, 1.0)), 6)
            s = round(float(10 ** rng.uniform(lo, hi)))
            if r in grid_r or s in grid_s:
                continue  # off-grid in both coordinates
            points.append((r, s))
        return points

    def describe(self) -> dict:
        return {**asdict(self), "n_fit": self.n_fit, "n_cells": len(self.cells())}


# Sample ranges differ by backend: the exact finite world needs hundreds to tens of thousands of
# pairs; the cave world's text encoder needs thousands to hundreds of thousands of captions.
_SAMPLES = {
    "theory": {"demo": (300, 1000, 3000, 10000), "paper": (300, 1000, 3000, 10000, 30000)},
    "planted": {"demo": (300, 1000, 3000, 10000), "paper": (300, 1000, 3000, 10000, 30000)},
    "cave": {"demo": (2048, 8192, 32768), "paper": (4096, 16384, 65536, 262144, 1048576)},
}
# Curves for sample efficiency extend one step past the fit range, so slower objectives can reach
# the target inside the measured range instead of being extrapolated.
_CURVE_EXTRA = {"theory": 100000, "planted": 100000, "cave": None}


def preset_grid(name: str, backend: str = "theory") -> Grid:
    """The ``demo`` (small) or ``paper-grid`` (published protocol) grid for ``backend``."""
    if backend not in _SAMPLES:
        raise InputError(f"unknown backend {backend!r}; expected one of {sorted(_SAMPLES)}")
    extra = _CURVE_EXTRA[backend]
    if name == "demo":
        s = _SAMPLES[backend]["demo"]
        return Grid(
            name="demo",
            rhos=(0.0, 0.25, 0.5, 0.75, 1.0),
            samples=s,
            fit_seeds=1,
            heldout=8,
            curve_views=("good", "bad", "next-token"),
            curve_samples=s,
            curve_seeds=3,
        )
    if name == "paper-grid":
        s = _SAMPLES[backend]["paper"]
        return Grid(
            name="paper-grid",
            rhos=tuple(float(x) for x in np.linspace(0.0, 1.0, 9)),
            samples=s,
            fit_seeds=2,
            heldout=85,
            curve_views=("good", "bad", "next-token"),
            curve_samples=(*s, extra) if extra else s,
            curve_seeds=5,
        )
    raise InputError(f"unknown grid preset {name!r}; expected 'demo' or 'paper-grid'")
