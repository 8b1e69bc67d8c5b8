"""Sweep grids: which runs (views or rho, samples seen, seed) a sweep trains and measures.

A :class:`Grid` expands into :class:`Cell` s of four splits:

- ``fit``: every ``rho`` in ``rhos`` x every count in ``samples`` (the law's fit cells), with
  ``fit_seeds`` seeds each (``seed, seed + 1, ...``);
- ``heldout``: ``heldout`` points at random off-grid ``(rho, S)`` (rho uniform in ``[0, 1]``, ``log
  S`` uniform over the fit range, never equal to a grid value) with fresh seeds ``seed + 1000 + i``;
- ``repeat``: the same points again with seeds ``seed + 2000 + i``, for the seed spread;
- ``curve``: views in ``curve_views`` (good / bad / next-token) at ``curve_samples`` with
  ``curve_seeds`` seeds ``seed + curve_seed_offset + j`` (offset 3000 by default), for sample
  efficiency; or, when ``curve_runs`` is given, exactly its ``(views, samples, seeds)`` triples
  (a budget and a seed count per view: next-token may get a larger budget than good views).

A grid whose runs record their whole alignment curve (``heldout_rho_only``, used by ``prh demo``
through :func:`demo_grid`) reads every sample count off each run's curve, so its held-out points
vary rho only: ``heldout`` random rho at least ``RHO_MARGIN`` away from the fit rhos, 0 and 1 and
from each other, each run to the largest fit count.

A :class:`RunSet` is the other kind of sweep: independent runs with no law to fit (split ``run``),
e.g. the demo's image and sketch encoders (a cell of another ``modality`` than text).

A grid may not ask for more held-out points than it has fit runs (``len(rhos) * len(samples) *
fit_seeds``): predicting more runs than the law was fitted on is refused with ``InputError``. The
published protocol (45 fit cells, 85 held-out runs) therefore runs each fit cell with 2 seeds (90
fit runs; the law is fitted on both, which also halves the noise per cell).

Every cell has a stable id: the first 16 hex digits of SHA-256 over the canonical JSON of what
determines its result (backend name and options, views, rho, samples, seed; the modality when it is
not text). A resumed sweep skips cells whose id is already in ``results.jsonl``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Protocol

import numpy as np

from prh.errors import InputError

VIEWS = ("mixture", "good", "bad", "next-token")
SPLITS = ("fit", "heldout", "repeat", "curve", "run")
CELL_MODALITIES = ("text", "image", "sketch")
RHO_MARGIN = 0.05  # off-grid held-out rho of a curve grid: at least this far from any other rho


@dataclass(frozen=True)
class Cell:
    """One run of a sweep.

    Attributes
    ----------
    split : str
        ``fit``, ``heldout``, ``repeat``, ``curve`` (a :class:`Grid`) or ``run`` (a
        :class:`RunSet`).
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
    modality : str
        What the run's encoder reads: ``text`` (captions), ``image`` or ``sketch``.
    """

    split: str
    views: str
    rho: float | None
    samples: int
    seed: int
    point: int | None = None
    modality: str = "text"

    def key(self, backend: str, options: dict) -> dict:
        """What determines the result: hashed into :meth:`cell_id` (the modality only when it is
        not text, so that the ids of text cells stay those of sweeps that predate it)."""
        key = {
            "backend": backend,
            "options": options,
            "views": self.views,
            "rho": None if self.rho is None else round(float(self.rho), 10),
            "samples": int(self.samples),
            "seed": int(self.seed),
        }
        return key if self.modality == "text" else {**key, "modality": self.modality}

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
    curve_seed_offset: int = 3000
    heldout_rho_only: bool = False
    curve_runs: tuple[tuple[str, int, int], ...] = ()

    def __post_init__(self) -> None:
        if not self.rhos or not self.samples:
            raise InputError(f"grid {self.name}: needs at least one rho and one sample count")
        if any(not 0.0 <= r <= 1.0 for r in self.rhos):
            raise InputError(f"grid {self.name}: rho values must be in [0, 1], got {self.rhos}")
        if any(s < 1 for s in (*self.samples, *self.curve_samples)):
            raise InputError(f"grid {self.name}: sample counts must be >= 1")
        if self.fit_seeds < 1:
            raise InputError(f"grid {self.name}: fit_seeds must be >= 1, got {self.fit_seeds}")
        if self.heldout > self.n_fit and not self.heldout_rho_only:
            raise InputError(
                f"grid {self.name}: {self.heldout} held-out points but only {self.n_fit} fit runs "
                f"({len(self.rhos)} rho x {len(self.samples)} samples x {self.fit_seeds} seeds); "
                "a grid may not ask for more held-out points than fit runs"
            )
        if self.heldout >= 1000 or self.curve_seeds >= 1000 or self.fit_seeds >= 1000:
            raise InputError(f"grid {self.name}: at most 999 held-out points and seeds per split")
        if self.heldout and min(self.samples) == max(self.samples) and not self.heldout_rho_only:
            raise InputError(f"grid {self.name}: held-out points need a range of sample counts")
        bad = [v for v in self.curve_views if v not in VIEWS[1:]]
        if bad:
            raise InputError(f"grid {self.name}: unknown curve views {bad}; expected {VIEWS[1:]}")
        if self.curve_views and (not self.curve_samples or self.curve_seeds < 1):
            raise InputError(f"grid {self.name}: curve views need curve_samples and curve_seeds")
        for v, s, n in self.curve_runs:
            if v not in VIEWS[1:] or s < 1 or not 1 <= n < 1000:
                raise InputError(
                    f"grid {self.name}: curve run ({v!r}, {s}, {n}) needs views in {VIEWS[1:]},"
                    " samples >= 1 and 1..999 seeds"
                )
        if self.curve_runs and self.curve_views:
            raise InputError(f"grid {self.name}: give curve_runs or curve_views, not both")

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
                    Cell("curve", v, None, int(s), seed + self.curve_seed_offset + j)
                    for s in self.curve_samples
                )
        for v, s, n in self.curve_runs:
            out.extend(
                Cell("curve", v, None, int(s), seed + self.curve_seed_offset + j) for j in range(n)
            )
        return out

    def heldout_points(self, seed: int = 0) -> list[tuple[float, int]]:
        """``heldout`` random off-grid ``(rho, S)`` points, from a generator seeded by ``seed``."""
        if self.heldout_rho_only:
            s_max = max(self.samples)
            return [(r, s_max) for r in off_grid_rhos(self.heldout, self.rhos, seed)]
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
        d = asdict(self)
        # newer fields: at their defaults, left out so that the sweep.json of an older sweep
        for k in ("curve_seed_offset", "heldout_rho_only", "curve_runs"):  # still matches and
            if d[k] == Grid.__dataclass_fields__[k].default:  # it resumes
                del d[k]
        return {**d, "n_fit": self.n_fit, "n_cells": len(self.cells())}


class CellSource(Protocol):
    """What :func:`prh.scaling.sweep.run_sweep` runs: a :class:`Grid` or a :class:`RunSet`."""

    name: str

    def cells(self, seed: int = 0) -> list[Cell]: ...

    def describe(self) -> dict: ...


@dataclass(frozen=True)
class RunSet:
    """Independent runs, each at ``seeds`` seeds from the base seed: cells of split ``run``, no
    law to fit.

    Attributes
    ----------
    name : str
        The family of runs (recorded in ``sweep.json``).
    runs : tuple of (str, str, int)
        ``(modality, views, samples)`` of each run: ``modality`` in :data:`CELL_MODALITIES`,
        ``views`` a pure kind (``good``, ``bad``, ``next-token``).
    seeds : int
        Seeds of every run (``seed .. seed + seeds - 1``); 1: the base seed alone.

    :meth:`describe` names the family, not the runs chosen: cells are independent (each id says
    all that determines it), so a sweep folder keeps every run it ever finished and a later set
    with more (or fewer) runs of the same runner resumes there, retraining none of them.
    """

    name: str
    runs: tuple[tuple[str, str, int], ...]
    seeds: int = 1

    def __post_init__(self) -> None:
        if self.seeds < 1:
            raise InputError(f"run set {self.name}: seeds must be >= 1, got {self.seeds}")
        for m, v, s in self.runs:
            if m not in CELL_MODALITIES or v not in VIEWS[1:] or s < 1:
                raise InputError(
                    f"run set {self.name}: run ({m!r}, {v!r}, {s}) needs a modality in "
                    f"{CELL_MODALITIES}, views in {VIEWS[1:]} and samples >= 1"
                )
        if len(set(self.runs)) != len(self.runs):
            raise InputError(f"run set {self.name}: a run is listed twice")

    def cells(self, seed: int = 0) -> list[Cell]:
        """One ``run`` cell per run and seed (``seed``, ``seed + 1``, ...), in the listed order,
        the seeds of one run together."""
        return [
            Cell("run", v, None, int(s), int(seed) + j, modality=m)
            for m, v, s in self.runs
            for j in range(self.seeds)
        ]

    def describe(self) -> dict:
        return {"name": self.name, "kind": "run-set"}


def off_grid_rhos(n: int, rhos: tuple[float, ...], seed: int = 0) -> list[float]:
    """``n`` seeded rho in ``[0.05, 0.95]`` (3 decimals), each at least :data:`RHO_MARGIN` from
    ``rhos``, from 0 and 1 (the pure bad and good views) and from the others drawn.

    Raises
    ------
    InputError
        When ``n`` such values cannot be found (too many for the margin).
    """
    rng = np.random.default_rng([seed, 4243])
    taken = [0.0, 1.0, *(float(r) for r in rhos)]
    out: list[float] = []
    for _ in range(10_000):
        if len(out) == n:
            return out
        r = round(float(rng.uniform(0.05, 0.95)), 3)
        if all(abs(r - g) > RHO_MARGIN for g in (*taken, *out)):
            out.append(r)
    if len(out) == n:
        return out
    raise InputError(f"cannot place {n} held-out rho values {RHO_MARGIN} apart off the grid {rhos}")


def demo_grid(
    name: str,
    *,
    samples: int,
    law_rhos: tuple[float, ...],
    law_run_samples: int,
    heldout_runs: int,
    curve_views: tuple[str, ...] = ("good", "next-token", "bad"),
    curve_seeds: int = 1,
    next_token_samples: int | None = None,
) -> Grid:
    """The runs of ``prh demo``: curves per view and the law's mixture runs, curves recorded.

    - ``curve``: ``curve_views`` (good, next-token, bad) at the budget ``samples`` (next-token at
      ``next_token_samples`` when given), seeds ``seed .. seed + curve_seeds - 1`` for good and
      next-token (the sample-efficiency ratio's seeds) and the base seed for bad (their base-seed
      curves are the sample-efficiency comparison; good and bad are also the law's rho = 1 and
      rho = 0 runs);
    - ``fit``: mixtures at ``law_rhos`` run to ``law_run_samples``, base seed;
    - ``heldout`` / ``repeat``: ``heldout_runs`` mixtures at off-grid rho (:func:`off_grid_rhos`)
      run to ``law_run_samples``, seeds ``seed + 1000 + i`` and ``seed + 2000 + i``.

    Every run is read at several sample counts off its recorded curve (the runner evaluates it
    every few samples), so one run gives many law points.
    """
    return Grid(
        name=name,
        rhos=tuple(float(r) for r in law_rhos),
        samples=(int(law_run_samples),),
        fit_seeds=1,
        heldout=int(heldout_runs),
        repeats=True,
        curve_runs=tuple(
            (
                v,
                int(next_token_samples or samples) if v == "next-token" else int(samples),
                int(curve_seeds) if v in ("good", "next-token") else 1,
            )
            for v in curve_views
        ),
        curve_seed_offset=0,
        heldout_rho_only=True,
    )


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
