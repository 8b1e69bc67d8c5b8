"""Cell runners: what trains and measures one sweep cell.

A runner is a picklable object (a frozen dataclass) with

- ``name`` (str) and ``options() -> dict``: JSON-able settings that, with the cell, determine the
  result (they enter the cell id, so changing them re-runs cells instead of mixing results);
- ``prepare(out_dir) -> None``: one-off work in the parent process before any cell runs (e.g.
  caching the frozen vision encoder's features once per sweep);
- ``__call__(cell, out_dir) -> dict`` with at least ``score`` (alignment, higher is better) and
  ``calibrated`` (a null-calibrated score or ``None``), plus any extra JSON-able fields.

The sweep injects the runner, so the expensive part can be swapped (tests use ``planted``).

Backends:

- ``theory`` (:class:`TheoryBackend`): the exact finite-world learner of
  :mod:`prh.scaling.theory_world`; ``score = 1 - e_cca``; sub-second per cell. ``calibrated`` is
  ``None`` (the exact measure has no sampling null).
- ``planted`` (:class:`PlantedBackend`): a known law plus seeded Gaussian noise; a check that the
  sweep -> fit-law pipeline recovers a planted law and its noise level.
- ``cave`` (:class:`prh.scaling.cave.CaveBackend`): trains a text encoder on the cave world and
  measures it against a frozen vision encoder.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from prh.errors import InputError
from prh.scaling.grid import Cell
from prh.scaling.laws import get_law
from prh.scaling.theory_world import TheoryWorldConfig, alignment_after, effective_rho


class CellRunner(Protocol):
    name: str

    def options(self) -> dict[str, Any]: ...

    def prepare(self, out_dir: Path) -> None: ...

    def __call__(self, cell: Cell, out_dir: Path) -> dict[str, Any]: ...


@dataclass(frozen=True)
class TheoryBackend:
    """Exact finite-world learner (closed-form JEPA on the empirical pair graph)."""

    world: TheoryWorldConfig = field(default_factory=TheoryWorldConfig)
    name: str = "theory"

    def options(self) -> dict[str, Any]:
        return {"world": asdict(self.world)}

    def prepare(self, out_dir: Path) -> None:
        return None

    def __call__(self, cell: Cell, out_dir: Path) -> dict[str, Any]:
        rho = effective_rho(cell.views, cell.rho, self.world)
        res = alignment_after(self.world, rho, cell.samples, cell.seed)
        return {"score": res["score"], "calibrated": None, "e_cca": res["e_cca"],
                "seen": res["seen"], "effective_rho": rho}  # fmt: skip


_PLANTED_RHO = {"good": 1.0, "bad": 0.0, "next-token": 0.3}


@dataclass(frozen=True)
class PlantedBackend:
    """``y = law(rho, S) + N(0, noise^2)`` with the noise seeded by the cell's seed."""

    form: str = "multiplicative"
    params: tuple[float, ...] = (0.05, 0.6, 0.55, 1.3, 3.0, -1.5, 0.8)
    noise: float = 0.01
    name: str = "planted"

    def __post_init__(self) -> None:
        law = get_law(self.form)
        if len(self.params) != len(law.params):
            raise InputError(f"planted backend: {self.form} takes {len(law.params)} parameters")

    def options(self) -> dict[str, Any]:
        return {"form": self.form, "params": list(self.params), "noise": self.noise}

    def prepare(self, out_dir: Path) -> None:
        return None

    def __call__(self, cell: Cell, out_dir: Path) -> dict[str, Any]:
        rho = cell.rho if cell.views == "mixture" else _PLANTED_RHO[cell.views]
        mu = float(
            get_law(self.form)(np.array(self.params), np.array([rho]), np.array([cell.samples]))[0]
        )
        eps = float(np.random.default_rng([cell.seed, cell.samples, int(rho * 1e6)]).normal())
        return {"score": mu + self.noise * eps, "calibrated": None, "mean": mu}


def make_backend(name: str, **kwargs: Any) -> CellRunner:
    """Build a runner by name (``theory``, ``planted``, ``cave``); kwargs go to its constructor."""
    if name == "theory":
        return TheoryBackend(**kwargs)
    if name == "planted":
        return PlantedBackend(**kwargs)
    if name == "cave":
        from prh.scaling.cave import CaveBackend

        return CaveBackend(**kwargs)
    raise InputError(f"unknown backend {name!r}; expected theory, planted or cave")
