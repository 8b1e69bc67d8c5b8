"""Scene grammar of the cave world: objects with a shape, a colour, a size and a grid cell.

A scene is one to three objects. Each object has a shape (8), a colour (10), a size (3) and a cell
of a 3 x 3 grid (no two objects share a cell, no two share both shape and colour, so every caption
can name each object unambiguously). The world draws ``num_scenes`` *distinct* scenes from a seed;
the relations between objects (left of, above, next to, ...) follow from the cells and are true by
construction.

Layer: pure data and pure functions; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

SHAPES: tuple[str, ...] = (
    "cube",
    "sphere",
    "cylinder",
    "cone",
    "pyramid",
    "torus",
    "star",
    "diamond",
)
COLOURS: tuple[str, ...] = (
    "red",
    "orange",
    "yellow",
    "green",
    "cyan",
    "blue",
    "purple",
    "pink",
    "brown",
    "gray",
)
SIZES: tuple[str, ...] = ("small", "medium", "large")
GRID = 3  # cells per side; cell = row * GRID + col, row 0 at the top
COLUMNS: tuple[str, ...] = ("left", "center", "right")
ROWS: tuple[str, ...] = ("top", "middle", "bottom")


@dataclass(frozen=True)
class SceneObject:
    """One object of a scene: indices into :data:`SHAPES`, :data:`COLOURS`, :data:`SIZES`."""

    shape: int
    colour: int
    size: int
    col: int
    row: int

    @property
    def shape_name(self) -> str:
        return SHAPES[self.shape]

    @property
    def colour_name(self) -> str:
        return COLOURS[self.colour]

    @property
    def size_name(self) -> str:
        return SIZES[self.size]

    def to_dict(self) -> dict:
        return {
            "shape": self.shape_name,
            "colour": self.colour_name,
            "size": self.size_name,
            "col": self.col,
            "row": self.row,
            "position": f"{ROWS[self.row]} {COLUMNS[self.col]}",
        }


@dataclass(frozen=True)
class Relation:
    """A true spatial relation ``objects[a] <kind> objects[b]``.

    ``kind`` is one of ``"left of"``, ``"right of"``, ``"above"``, ``"below"``, ``"next to"``.
    """

    a: int
    kind: str
    b: int


@dataclass(frozen=True)
class Scene:
    """A scene: its index in the world and its objects, sorted by cell (reading order)."""

    index: int
    objects: tuple[SceneObject, ...]

    def relations(self) -> list[Relation]:
        """Every true pairwise relation, computed from the cells.

        ``a left of b`` when ``col_a < col_b``; ``a above b`` when ``row_a < row_b``;
        ``a next to b`` when both are in one row in adjacent columns, or in one column in adjacent
        rows. The converse relations (``right of``, ``below``) are listed too.
        """
        out: list[Relation] = []
        for a, oa in enumerate(self.objects):
            for b, ob in enumerate(self.objects):
                if a == b:
                    continue
                if oa.col < ob.col:
                    out.append(Relation(a, "left of", b))
                if oa.col > ob.col:
                    out.append(Relation(a, "right of", b))
                if oa.row < ob.row:
                    out.append(Relation(a, "above", b))
                if oa.row > ob.row:
                    out.append(Relation(a, "below", b))
                dc, dr = abs(oa.col - ob.col), abs(oa.row - ob.row)
                if (dc, dr) in ((1, 0), (0, 1)):
                    out.append(Relation(a, "next to", b))
        return out

    @cached_property
    def relation_kinds(self) -> dict[tuple[int, int], tuple[str, ...]]:
        """``{(a, b): kinds}``: every true relation kind from object ``a`` to object ``b``."""
        out: dict[tuple[int, int], list[str]] = {}
        for r in self.relations():
            out.setdefault((r.a, r.b), []).append(r.kind)
        return {k: tuple(v) for k, v in out.items()}

    def to_state(self) -> dict:
        """The scene as a JSON-able dict: ``{"index", "objects": [...], "relations": [...]}``."""
        return {
            "index": self.index,
            "objects": [o.to_dict() for o in self.objects],
            "relations": [[r.a, r.kind, r.b] for r in self.relations()],
        }


def sample_scene_table(
    num_scenes: int, seed: int, max_objects: int = 3, object_probs: tuple[float, ...] = ()
) -> np.ndarray:
    """Draw ``num_scenes`` distinct scenes as an integer table.

    Parameters
    ----------
    num_scenes : int
        How many distinct scenes.
    seed : int
        The world seed; the table is a pure function of ``(num_scenes, seed, max_objects)``.
    max_objects : int
        Objects per scene are drawn in ``1..max_objects``.
    object_probs : tuple of float
        Probability of each object count (default: 0.15, 0.35, 0.5 for three objects).

    Returns
    -------
    np.ndarray
        ``(S, max_objects, 4)`` int16 with columns ``(shape, colour, size, cell)``; unused slots
        are ``-1``. Objects are sorted by cell. Rows are distinct scenes, in draw order.
    """
    if not 1 <= max_objects <= GRID * GRID:
        raise ValueError(f"max_objects must be in 1..{GRID * GRID}, got {max_objects}")
    probs = np.asarray(object_probs or _default_probs(max_objects), dtype=np.float64)
    probs = probs / probs.sum()
    capacity = _capacity(max_objects, probs)
    if num_scenes > capacity:
        raise ValueError(f"num_scenes={num_scenes} exceeds the ~{capacity} distinct scenes here")
    rng = np.random.default_rng([seed, 0x5CE7E])
    seen: set[bytes] = set()
    rows: list[np.ndarray] = []
    while len(rows) < num_scenes:
        batch = _draw(rng, 2 * (num_scenes - len(rows)) + 64, max_objects, probs)
        for row in batch:
            key = row.tobytes()
            if key in seen:
                continue
            seen.add(key)
            rows.append(row)
            if len(rows) == num_scenes:
                break
    return np.stack(rows).astype(np.int16)


def object_count_probs(max_objects: int) -> tuple[float, ...]:
    """The default probability of each object count ``1..max_objects`` (before normalising)."""
    return _default_probs(max_objects)


def _default_probs(max_objects: int) -> tuple[float, ...]:
    if max_objects == 3:
        return (0.15, 0.35, 0.5)
    return tuple([1.0] * max_objects)


def _capacity(max_objects: int, probs: np.ndarray) -> int:
    # Rough count of distinct scenes reachable with non-zero probability (cells distinct).
    per = len(SHAPES) * len(COLOURS) * len(SIZES)
    total, cells = 0, GRID * GRID
    for n in range(1, max_objects + 1):
        if probs[n - 1] <= 0:
            continue
        ways = 1
        for j in range(n):
            ways *= (cells - j) * per
        for j in range(2, n + 1):
            ways //= j
        total += ways
    return total


def _draw(rng: np.random.Generator, n: int, max_objects: int, probs: np.ndarray) -> np.ndarray:
    """Draw ``n`` candidate scenes (possibly repeated or with a repeated shape-colour)."""
    k = rng.choice(max_objects, size=n, p=probs) + 1  # (n,)
    shape = rng.integers(0, len(SHAPES), size=(n, max_objects))
    colour = rng.integers(0, len(COLOURS), size=(n, max_objects))
    size = rng.integers(0, len(SIZES), size=(n, max_objects))
    cell = np.argsort(rng.random((n, GRID * GRID)), axis=1)[:, :max_objects]  # distinct cells
    table, ok = scene_rows(k, shape, colour, size, cell)
    return table[ok]


def scene_rows(
    k: np.ndarray, shape: np.ndarray, colour: np.ndarray, size: np.ndarray, cell: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Candidate scenes as table rows: the first ``k`` of each row's objects, sorted by cell.

    Parameters
    ----------
    k : np.ndarray
        ``(n,)`` objects per scene (``1..max_objects``).
    shape, colour, size, cell : np.ndarray
        ``(n, max_objects)`` attribute indices of each slot (cells distinct within a row).

    Returns
    -------
    table : np.ndarray
        ``(n, max_objects, 4)`` columns ``(shape, colour, size, cell)``, unused slots ``-1``.
    ok : np.ndarray
        ``(n,)`` bool: no two objects share (shape, colour) (a caption can name each one).
    """
    slot = np.arange(shape.shape[1])[None, :]
    used = slot < k[:, None]  # (n, max_objects)
    big = GRID * GRID + 1
    order = np.argsort(np.where(used, cell, big), axis=1)  # sort used objects by cell
    table = np.stack([shape, colour, size, cell], axis=-1)  # (n, max_objects, 4)
    table = np.take_along_axis(table, order[:, :, None], axis=1)
    used = np.take_along_axis(used, order, axis=1)
    table[~used] = -1
    # Reject scenes where two objects share shape and colour (captions must name each one).
    sc = np.where(used, table[..., 0] * len(COLOURS) + table[..., 1], -1 - slot)
    sc_sorted = np.sort(sc, axis=1)
    ok = ~np.any(sc_sorted[:, 1:] == sc_sorted[:, :-1], axis=1)
    return table, ok


def scene_from_row(index: int, row: np.ndarray) -> Scene:
    """Build a :class:`Scene` from one row of :func:`sample_scene_table`."""
    objs = tuple(
        SceneObject(int(s), int(c), int(z), int(cell) % GRID, int(cell) // GRID)
        for s, c, z, cell in row
        if s >= 0
    )
    return Scene(index=index, objects=objs)
