"""Sample efficiency: how many samples each training objective needs to reach a target alignment.

Given curves of alignment ``y`` against samples ``S`` (one curve per seed) for a method ``a`` (good-
view JEPA) and a method ``b`` (next-token LM), we report ``S_a(target)``, ``S_b(target)`` and the
ratio ``S_b / S_a`` (the paper reports 42x for next-token vs JEPA).

``samples_to_reach`` definition (documented, tested):

1. Make the curve monotone with its running maximum ``m_j = max_{i <= j} y_i`` over increasing ``S``
("the best alignment reached with at most ``S_j`` samples"), so one noisy dip cannot create two
crossings. 2. Find the first ``j`` with ``m_j >= target``. None: the target is never reached ->
``inf`` (reported, never extrapolated). ``j = 0``: reached at the smallest budget -> ``S_0`` (an
upper bound; a note says so). 3. Otherwise interpolate linearly in ``log S`` between ``(S_{j-1},
m_{j-1})`` and ``(S_j, m_j)``.

Point estimate: ``samples_to_reach`` on the seed-mean curve of each method. Interval: a percentile
bootstrap over seeds: resample each method's seeds with replacement (independently), recompute both
seed-mean curves and the ratio, and take the ``(1 - level)/2`` and ``(1 + level)/2`` quantiles
(``inverted_cdf``, so infinite ratios stay infinite instead of becoming ``nan``). Per-seed ratios
(seed ``i`` of ``a`` with seed ``i`` of ``b``) are listed as well.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from prh.errors import InputError
from prh.scaling import rows as rows_
from prh.scaling.rows import default_places


def samples_to_reach(S: Sequence[float], y: Sequence[float], target: float) -> float:
    """Samples needed for the curve ``y(S)`` to reach ``target`` (``inf`` if never).

    Parameters
    ----------
    S : array-like, shape (n,)
        Sample counts, > 0 (sorted here).
    y : array-like, shape (n,)
        Alignment at each count.
    target : float
        The alignment to reach.

    Returns
    -------
    float
        Interpolated in ``log S`` on the running maximum of ``y`` (see the module docstring).
    """
    S, y = np.asarray(S, float), np.asarray(y, float)
    if S.shape != y.shape or S.ndim != 1 or S.size == 0:
        raise InputError(f"efficiency: S and y must be equal-length 1-D, got {S.shape}, {y.shape}")
    if np.any(S <= 0) or not np.all(np.isfinite(y)):
        raise InputError("efficiency: samples must be > 0 and alignments finite")
    order = np.argsort(S, kind="stable")
    S, m = S[order], np.maximum.accumulate(y[order])
    hit = np.flatnonzero(m >= target)
    if hit.size == 0:
        return float("inf")
    j = int(hit[0])
    if j == 0:
        return float(S[0])
    t = (target - m[j - 1]) / (m[j] - m[j - 1])
    return float(np.exp(np.log(S[j - 1]) + t * (np.log(S[j]) - np.log(S[j - 1]))))


@dataclass(frozen=True)
class Curves:
    """Alignment curves of one method: ``S (n,)`` shared by all seeds, ``y (n_seeds, n)``."""

    S: np.ndarray
    y: np.ndarray
    seeds: tuple[int, ...]
    name: str = ""

    def __post_init__(self) -> None:
        S, y = np.asarray(self.S, float), np.atleast_2d(np.asarray(self.y, float))
        if y.shape != (len(self.seeds), len(S)):
            raise InputError(
                f"curves {self.name}: y has shape {y.shape}, expected ({len(self.seeds)}, {len(S)})"
            )
        object.__setattr__(self, "S", S)
        object.__setattr__(self, "y", y)

    def mean(self) -> np.ndarray:
        """The seed-mean curve, shape ``(n,)``."""
        return self.y.mean(axis=0)


def curves_from_rows(
    rows: Sequence[dict], views: str, key: str = "score", places: Sequence[str] | None = None
) -> Curves:
    """Collect ``rows`` (``results.jsonl`` dicts) with ``views == views`` into :class:`Curves`.

    ``places`` names where each row came from (``"results.jsonl line 6"``) for error messages.
    Raises ``InputError`` when no row matches, a seed lacks a sample count another seed has, or a
    row lacks a field or holds the wrong type (naming the row, the field, expected and got).
    """
    table: dict[int, dict[float, float]] = {}
    for r, where in zip(rows, default_places(rows, places)):
        if rows_.text(r, "views", where) != views:
            continue
        y = rows_.optional_number(r, key, where)
        if y is None:
            continue
        seed = rows_.integer(r, "seed", where)
        table.setdefault(seed, {})[rows_.number(r, "samples", where, positive=True)] = y
    if not table:
        raise InputError(f"efficiency: no runs with views={views!r} and a {key!r} value")
    grid = sorted(set().union(*(set(v) for v in table.values())))
    for seed, by_s in table.items():
        missing = [s for s in grid if s not in by_s]
        if missing:
            raise InputError(f"efficiency: {views} seed {seed} lacks samples {missing[:3]}")
    seeds = tuple(sorted(table))
    y = np.array([[table[s][x] for x in grid] for s in seeds])
    return Curves(np.array(grid), y, seeds, views)


@dataclass(frozen=True)
class EfficiencyResult:
    """Samples each method needs for ``target``, the ratio ``samples_b / samples_a``, its CI."""

    target: float
    name_a: str
    name_b: str
    samples_a: float
    samples_b: float
    ratio: float
    ci: tuple[float, float]
    level: float
    n_boot: int
    per_seed_a: tuple[float, ...]
    per_seed_b: tuple[float, ...]
    per_seed_ratio: tuple[float, ...]
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict:
        """JSON-ready; ``inf`` (never reached) becomes ``None`` with a note."""

        def j(x: float) -> float | None:
            return float(x) if np.isfinite(x) else None

        return {
            "target": self.target,
            "a": self.name_a,
            "b": self.name_b,
            "samples_a": j(self.samples_a),
            "samples_b": j(self.samples_b),
            "ratio": j(self.ratio),
            "ci": [j(self.ci[0]), j(self.ci[1])],
            "level": self.level,
            "n_boot": self.n_boot,
            "per_seed_a": [j(x) for x in self.per_seed_a],
            "per_seed_b": [j(x) for x in self.per_seed_b],
            "per_seed_ratio": [j(x) for x in self.per_seed_ratio],
            "interval": "percentile bootstrap over seeds (each method resampled independently)",
            "notes": list(self.notes),
        }


def _ratio(sa: float, sb: float) -> float:
    if np.isinf(sa) and np.isinf(sb):
        return float("nan")  # neither reaches the target: no ratio
    if np.isinf(sa):
        return 0.0
    return sb / sa


def default_target(a: Curves, b: Curves, fraction: float = 0.95) -> float:
    """``fraction`` times the lower of the two methods' best seed-mean alignment (both reach it)."""
    return float(fraction * min(a.mean().max(), b.mean().max()))


def sample_efficiency(
    a: Curves,
    b: Curves,
    target: float,
    *,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> EfficiencyResult:
    """Samples to reach ``target`` for methods ``a`` and ``b``, the ratio ``S_b / S_a`` and a CI.

    Parameters
    ----------
    a, b : Curves
        Per-seed curves (``a``: good-view JEPA, ``b``: next-token LM in the paper's comparison).
    target : float
        Alignment to reach.
    n_boot : int
        Bootstrap resamples over seeds (0: no interval).
    level : float
        Interval coverage.
    seed : int
        Seeds the bootstrap.
    """
    if not 0 < level < 1:
        raise InputError(f"efficiency: level must be in (0, 1), got {level}")
    sa = samples_to_reach(a.S, a.mean(), target)
    sb = samples_to_reach(b.S, b.mean(), target)
    ratio = _ratio(sa, sb)
    notes = []
    for name, s, c in ((a.name, sa, a), (b.name, sb, b)):
        if np.isinf(s):
            notes.append(f"{name} never reaches {target:.4g} (best mean {c.mean().max():.4g})")
        elif s == c.S.min():
            notes.append(f"{name} reaches {target:.4g} at its smallest budget: an upper bound")
    per_a = tuple(samples_to_reach(a.S, ya, target) for ya in a.y)
    per_b = tuple(samples_to_reach(b.S, yb, target) for yb in b.y)
    n_pair = min(len(per_a), len(per_b))
    per_ratio = tuple(_ratio(per_a[i], per_b[i]) for i in range(n_pair))
    ci = (float("nan"), float("nan"))
    if n_boot > 0:
        rng = np.random.default_rng(seed)
        boots = np.empty(n_boot)
        for t in range(n_boot):
            ia = rng.integers(0, len(a.seeds), len(a.seeds))
            ib = rng.integers(0, len(b.seeds), len(b.seeds))
            boots[t] = _ratio(
                samples_to_reach(a.S, a.y[ia].mean(0), target),
                samples_to_reach(b.S, b.y[ib].mean(0), target),
            )
        boots = boots[~np.isnan(boots)]
        if boots.size:
            q = np.quantile(boots, [(1 - level) / 2, (1 + level) / 2], method="inverted_cdf")
            ci = (float(q[0]), float(q[1]))
        if min(len(a.seeds), len(b.seeds)) < 3:
            notes.append("fewer than 3 seeds: the bootstrap interval is crude")
    return EfficiencyResult(
        float(target), a.name, b.name, sa, sb, ratio, ci, level, n_boot, per_a, per_b,
        per_ratio, tuple(notes),
    )  # fmt: skip
