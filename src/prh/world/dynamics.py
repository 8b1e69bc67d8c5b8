"""Dynamics of the moving cave: a reversible chain over one object's (shape, colour, size, cell).

Every factor lies on a line and moves one step at a time (a birth-death chain): colours drift to
their neighbours on :data:`COLOUR_LINE`, objects grow and shrink through the sizes, shapes morph
along :data:`SHAPE_LINE`, and the object moves one cell left/right (column) or up/down (row).
Motion depends on the shape: round shapes roll, flat ones slide (:data:`MOBILITY`), and climbing
a row is slower than rolling along one (:data:`CLIMB`).

Each edge ``v <-> v+1`` of a factor line carries a stationary flow
``rate * c_v * min(pi_v, pi_{v+1})`` (Metropolis on the line's own law ``pi``, with seeded
conductances ``c`` and weights ``pi``): detailed balance holds factor by factor, and since a
move of the cell leaves the shape alone a shape-dependent rate keeps it. The stationary law is
the product of the lines' laws. Rates add up to at most 1/4, so the chain stays put at least
half of the time and every eigenvalue of ``Q`` is in ``[0, 1]``: ``mu^D`` keeps the order of
``mu``.

Layer: pure functions (numpy, scipy.sparse); no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from prh.errors import InputError
from prh.world.scenes import COLOURS, GRID, SHAPES, SIZES

COLOUR_LINE: tuple[str, ...] = (
    "gray",
    "brown",
    "red",
    "orange",
    "yellow",
    "green",
    "cyan",
    "blue",
    "purple",
    "pink",
)
SHAPE_LINE: tuple[str, ...] = (
    "sphere",
    "torus",
    "cylinder",
    "cone",
    "diamond",
    "pyramid",
    "star",
    "cube",
)
# Horizontal cell moves per unit move rate: spheres roll, cubes slide.
MOBILITY: dict[str, float] = {
    "sphere": 1.0,
    "torus": 0.8,
    "cylinder": 0.7,
    "cone": 0.45,
    "diamond": 0.35,
    "pyramid": 0.25,
    "star": 0.2,
    "cube": 0.15,
}
CLIMB = 0.5  # a row move (up/down) is this much slower than a column move
MAX_TOTAL_RATE = 0.25  # the chain holds still with probability >= 1/2: eigenvalues in [0, 1]
FACTORS: tuple[str, ...] = ("shape", "colour", "size", "row", "col")


@dataclass(frozen=True)
class Line:
    """One factor line: its values (indices into the scene vocabulary), law, conductances."""

    name: str
    values: tuple[int, ...]
    pi: np.ndarray
    conductance: np.ndarray

    @property
    def n(self) -> int:
        return len(self.values)

    def edge_flow(self) -> np.ndarray:
        """``c_v * min(pi_v, pi_{v+1})`` for ``v = 0..n-2`` (times the rate: stationary flow)."""
        return self.conductance * np.minimum(self.pi[:-1], self.pi[1:])


def factor_lines(
    colours: int, shapes: int, sizes: int, jitter: float, seed: int
) -> tuple[Line, ...]:
    """The five lines (shape, colour, size, row, col) with seeded laws and conductances.

    ``jitter`` in ``[0, 0.9]``: conductances are drawn in ``[1 - jitter, 1]`` and weights in
    ``[1 - jitter, 1 + jitter]`` (0: uniform, symmetric lines with sign-ambiguous
    eigenfunctions).
    """
    rng = np.random.default_rng([seed, 0x30F1])
    names = {
        "shape": [SHAPES.index(s) for s in SHAPE_LINE[:shapes]],
        "colour": [COLOURS.index(c) for c in COLOUR_LINE[:colours]],
        "size": list(range(len(SIZES)))[:sizes],
        "row": list(range(GRID)),
        "col": list(range(GRID)),
    }
    lines = []
    for name in FACTORS:
        vals = names[name]
        pi = rng.uniform(1 - jitter, 1 + jitter, len(vals))
        c = rng.uniform(1 - jitter, 1.0, len(vals) - 1)
        lines.append(Line(name, tuple(vals), pi / pi.sum(), c))
    return tuple(lines)


def check_rates(rates: dict[str, float]) -> None:
    """Every rate in ``(0, 1/4]`` and their total (a cell move counted for row and column) at
    most :data:`MAX_TOTAL_RATE`; one line naming the rate otherwise."""
    for name, r in rates.items():
        if not (isinstance(r, int | float) and 0 < r <= MAX_TOTAL_RATE):
            raise InputError(f"moving world: {name} must be in (0, {MAX_TOTAL_RATE}], got {r!r}")
    total = rates["shape_rate"] + rates["colour_rate"] + rates["size_rate"]
    total += rates["move_rate"] * (1 + CLIMB)
    if total > MAX_TOTAL_RATE + 1e-12:
        raise InputError(
            f"moving world: shape_rate + colour_rate + size_rate + {1 + CLIMB} * move_rate = "
            f"{total:.4g} exceeds {MAX_TOTAL_RATE} (the chain must hold still half of the time)"
        )


def state_grid(lines: tuple[Line, ...]) -> np.ndarray:
    """``(N, 5)`` positions on each line of every state, in row-major order over the lines."""
    shape = tuple(line.n for line in lines)
    return np.stack(np.unravel_index(np.arange(int(np.prod(shape))), shape), axis=1)


def chain_matrix(
    lines: tuple[Line, ...], rates: dict[str, float]
) -> tuple[sp.csr_matrix, np.ndarray]:
    """The sparse transition matrix ``Q`` ``(N, N)`` and the stationary law ``p`` ``(N,)``."""
    sizes = tuple(line.n for line in lines)
    grid = state_grid(lines)
    n = grid.shape[0]
    mobility = np.array([MOBILITY[SHAPES[v]] for v in lines[0].values])[grid[:, 0]]
    per_state = {
        "shape": np.full(n, rates["shape_rate"]),
        "colour": np.full(n, rates["colour_rate"]),
        "size": np.full(n, rates["size_rate"]),
        "row": rates["move_rate"] * CLIMB * mobility,
        "col": rates["move_rate"] * mobility,
    }
    rows, cols, vals = [], [], []
    for j, line in enumerate(lines):
        pos = grid[:, j]
        flow = line.edge_flow()
        for step in (1, -1):
            ok = (pos + step >= 0) & (pos + step < line.n)
            edge = np.minimum(pos, pos + step)[ok]
            prob = per_state[line.name][ok] * flow[edge] / line.pi[pos[ok]]
            target = grid[ok].copy()
            target[:, j] += step
            rows.append(np.flatnonzero(ok))
            cols.append(np.ravel_multi_index(target.T, sizes))
            vals.append(prob)
    rows_a, cols_a, vals_a = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    off = sp.csr_matrix((vals_a, (rows_a, cols_a)), shape=(n, n))
    stay = 1.0 - np.asarray(off.sum(axis=1)).ravel()
    p = lines[0].pi
    for line in lines[1:]:
        p = np.kron(p, line.pi)
    return sp.csr_matrix(off + sp.diags(stay)), p
