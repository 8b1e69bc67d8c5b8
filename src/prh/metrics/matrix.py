"""``measure_matrix``: every X against every Y, the PRH benchmark's score matrix, one call.

Each cell is :func:`prh.metrics.measure` of one X and one Y (best layer pair, null, interval);
each side's per-layer states (neighbour lists, kernel statistics and their Gram, CKNNA's lists,
SVCCA bases) are prepared once and shared by every cell and every metric that uses them (a
model's neighbours do not depend on the other side): :mod:`prh.metrics.states`. The matrix
reports that work (:attr:`MatrixResult.work`: searches and Gram products).
``prh measure --x ... --y ...`` is this function plus file loading and writing.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from prh.errors import InputError
from prh.metrics.api import METRICS, MeasureResult, MetricOptions, get_metric, measure
from prh.metrics.kernel import knn_kernel_side
from prh.metrics.knn import knn_both
from prh.metrics.layers import resolve_pair
from prh.metrics.preprocess import CLAMPS, as_layers, preprocess
from prh.metrics.states import StateCache, Work, work

STATE_BYTES = 2**30  # bytes of kernel states (float64 rows, small Grams) a matrix keeps per kind


class Cell(NamedTuple):
    """One cell's paired, preprocessed rows, the keys their states are kept under, and how to
    name each side in an error message."""

    a: np.ndarray
    b: np.ndarray
    key_a: Hashable
    key_b: Hashable
    name_a: str
    name_b: str


Rows = Callable[[int, int], Cell]


@dataclass
class MatrixResult:
    """Per-metric ``(X, Y)`` tables of a score matrix, filled cell by cell.

    Attributes
    ----------
    metrics : tuple of str
    x_names, y_names : list of str
    scores, calibrated, p_values, null_critical, null_draws : dict of str to np.ndarray
        ``(X, Y)`` each; NaN where not measured (no null, an undefined score).
    layers : dict of str to np.ndarray
        ``(X, Y, 2)`` int: the best (or fixed) pair, layer of X then layer of Y.
    ci : dict of str to np.ndarray
        ``(X, Y, 2)``: the bootstrap interval's low and high.
    results : list of dict
        One per cell and metric: ``x_name``, ``y_name``, ``row``, ``col`` and
        :meth:`MeasureResult.to_dict`.
    work : Work
        The kNN searches and Gram products made to prepare the observed states (bootstrap
        resamples' states and CKA's per-pair products not counted).
    """

    metrics: tuple[str, ...]
    x_names: list[str]
    y_names: list[str]
    scores: dict[str, np.ndarray] = field(default_factory=dict)
    layers: dict[str, np.ndarray] = field(default_factory=dict)
    ci: dict[str, np.ndarray] = field(default_factory=dict)
    calibrated: dict[str, np.ndarray] = field(default_factory=dict)
    p_values: dict[str, np.ndarray] = field(default_factory=dict)
    null_critical: dict[str, np.ndarray] = field(default_factory=dict)
    null_draws: dict[str, np.ndarray] = field(default_factory=dict)
    results: list[dict[str, Any]] = field(default_factory=list)
    work: Work = field(default_factory=Work)

    def __post_init__(self) -> None:
        nx, ny = len(self.x_names), len(self.y_names)
        for m in self.metrics:
            for table in (self.scores, self.calibrated, self.p_values, self.null_critical):
                table[m] = np.full((nx, ny), np.nan)
            self.null_draws[m] = np.full((nx, ny), np.nan)
            self.ci[m] = np.full((nx, ny, 2), np.nan)
            self.layers[m] = np.zeros((nx, ny, 2), dtype=np.int64)

    def put(self, i: int, j: int, r: MeasureResult) -> None:
        """Record cell ``(i, j)`` of metric ``r.metric``."""
        m = r.metric
        self.scores[m][i, j], self.layers[m][i, j] = r.score, r.layers
        if r.ci is not None:
            self.ci[m][i, j] = r.ci
        if r.calibrated is not None:
            self.calibrated[m][i, j], self.p_values[m][i, j] = r.calibrated, r.p_value
            self.null_critical[m][i, j], self.null_draws[m][i, j] = r.null_critical, r.n_null
        cell = {"x_name": self.x_names[i], "y_name": self.y_names[j], "row": i, "col": j}
        self.results.append({**cell, **r.to_dict()})


def measure_matrix(
    xs: Sequence[Any],
    ys: Sequence[Any],
    metrics: str | Sequence[str] = "mutual_knn",
    *,
    k: int = 10,
    null: int = 0,
    bootstrap: int = 0,
    seed: int = 0,
    layers: tuple[int, int] | None = None,
    null_stop: str = "fixed",
    options: MetricOptions | None = None,
    x_names: Sequence[str] | None = None,
    y_names: Sequence[str] | None = None,
    preprocess_features: bool = True,
    clamp: str = "mean",
    progress: bool = False,
    rows: Rows | None = None,
    on_cell: Callable[[int, int, MeasureResult], None] | None = None,
    lists: StateCache | None = None,
    state_bytes: int | None = STATE_BYTES,
) -> MatrixResult:
    """The score matrix of every X against every Y, for one or more metrics.

    Parameters
    ----------
    xs, ys : sequence of array-like
        ``(N, D)`` or ``(N, L, D)`` features (numpy arrays or torch tensors of any float dtype),
        rows paired across every X and Y. The same object in both (``X = Y``) is prepared once.
    metrics : str or sequence of str
        Names of :data:`prh.metrics.METRICS`, or ``"all"``.
    k, null, bootstrap, seed, layers, null_stop, options, clamp, progress
        As :func:`prh.metrics.measure`, for every cell.
    x_names, y_names : sequence of str, optional
        Row and column names (default ``x0, x1, ...`` and ``y0, y1, ...``).
    preprocess_features : bool
        The reference preprocessing (clamp, L2 rows), once per input; False: used as given.
    rows : callable, optional
        ``rows(i, j) -> Cell``: the paired, already preprocessed rows of cell ``(i, j)`` and the
        keys their states are kept under (``prh measure`` loads files, joins them by id and
        preprocesses each once here); ``xs`` and ``ys`` then only count the cells.
    on_cell : callable, optional
        Called as ``on_cell(i, j, result)`` after each cell and metric.
    lists : StateCache, optional
        The neighbour lists of every kNN metric by ``(key, layer)``, to share with the caller
        (``prh measure`` times its cost estimate on the first cell's lists, then reuses them).
    state_bytes : int or None
        Bytes of each other kind of state kept (kernel states hold float64 rows); past it the
        least recently used are prepared again when needed. None: no limit.

    Returns
    -------
    MatrixResult

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> z = rng.standard_normal((60, 4))
    >>> xs = [z + 0.1 * rng.standard_normal((60, 4)), rng.standard_normal((60, 4))]
    >>> r = measure_matrix(xs, [z], k=5)
    >>> bool(r.scores["mutual_knn"][0, 0] > r.scores["mutual_knn"][1, 0])
    True
    """
    names = _metric_names(metrics)
    x_names = list(x_names) if x_names is not None else [f"x{i}" for i in range(len(xs))]
    y_names = list(y_names) if y_names is not None else [f"y{j}" for j in range(len(ys))]
    if (len(x_names), len(y_names)) != (len(xs), len(ys)):
        raise InputError(
            f"{len(x_names)} x names for {len(xs)} X inputs, {len(y_names)} y names for {len(ys)}"
        )
    if clamp not in CLAMPS:
        raise InputError(f"unknown clamp rule {clamp!r}, expected one of {', '.join(CLAMPS)}")
    if rows is None:
        rows = _array_rows(xs, ys, preprocess_features, clamp)
    caches, kinds = _caches(names, options, StateCache() if lists is None else lists, state_bytes)
    out = MatrixResult(names, x_names, y_names)
    matrix, saved = len(xs) * len(ys) > 1, 0
    for i in range(len(xs)):
        for j in range(len(ys)):
            c = rows(i, j)
            saved += _search_once(c, layers, kinds, options or MetricOptions(), k)
            label = f"[{i},{j}] {x_names[i]} ~ {y_names[j]}" if matrix else ""
            for name in names:
                r = measure(
                    c.a, c.b, name, k=k, null=null, bootstrap=bootstrap, seed=seed, layers=layers,
                    preprocess_features=False, options=options, name_a=c.name_a,
                    name_b=c.name_b, cache=caches[name], cache_keys=(c.key_a, c.key_b),
                    progress=progress, label=label, null_stop=null_stop,
                )  # fmt: skip
                out.put(i, j, r)
                if on_cell is not None:
                    on_cell(i, j, r)
    out.work = work(kinds.values()) + Work(searches=-saved)
    return out


def _caches(names, options, lists: StateCache, budget: int | None) -> tuple[dict, dict]:
    """``({metric: its StateCache}, {state kind: (one preparation's Work, its StateCache)})``:
    metrics that prepare the same states share one cache (the neighbour lists: ``lists``)."""
    kinds: dict[str, tuple[Work, StateCache]] = {}
    caches = {}
    for name in names:
        m = get_metric(name, options or MetricOptions())
        if m.state not in kinds:
            kinds[m.state] = (m.work, lists if m.state == "knn lists" else StateCache(budget))
        caches[name] = kinds[m.state][1]
    return caches, kinds


def _search_once(c: Cell, layers, kinds: dict, o: MetricOptions, k: int) -> int:
    """With both the cosine lists and CKNNA in the matrix, prepare each layer of the cell that
    CKNNA has not yet seen from one tile sweep for both (:func:`prh.metrics.knn.knn_both`); the
    searches that saved. A cell that :func:`prh.metrics.measure` will refuse is left to it."""
    if "knn lists" not in kinds or "cknna" not in kinds:
        return 0
    (_, lists), (_, sides) = kinds["knn lists"], kinds["cknna"]
    n = c.a.shape[0]
    if c.b.shape[0] != n or not 2 <= k < n or n < 4:
        return 0
    pair = resolve_pair(layers, (c.a.shape[1], c.b.shape[1])) if layers is not None else None
    saved = 0
    for side, (x, key, name) in enumerate(((c.a, c.key_a, c.name_a), (c.b, c.key_b, c.name_b))):
        for layer in range(x.shape[1]) if pair is None else [pair[side]]:
            rows = x[:, layer]  # (N, D)
            if (key, layer) in sides or not np.any(rows != 0, axis=1).all():
                continue
            cos, ip, searches = knn_both(rows, k, block_size=o.block_size, backend=o.backend,
                                         device=o.device, name=name)  # fmt: skip
            sides[key, layer] = knn_kernel_side(rows, k, nbrs=ip)
            if (key, layer) not in lists:
                lists[key, layer], saved = cos, saved + 2 - searches
    return saved


def _metric_names(metrics: str | Sequence[str]) -> tuple[str, ...]:
    names = (metrics,) if isinstance(metrics, str) else tuple(metrics)
    if "all" in names:
        return METRICS
    bad = [m for m in names if m not in METRICS]
    if bad or not names:
        raise InputError(
            f"unknown metric {bad[0] if bad else names!r}, expected one of {', '.join(METRICS)}"
        )
    return tuple(dict.fromkeys(names))


def _array_rows(xs, ys, preprocess_features: bool, clamp: str) -> Rows:
    """Cells of in-memory inputs: each checked and preprocessed once, keyed by its identity."""
    q, exact = (1.0 if clamp == "none" else 0.95), clamp == "exact"
    prepared: dict[int, np.ndarray] = {}

    def side(x: Any, name: str) -> np.ndarray:
        if id(x) not in prepared:
            arr = as_layers(x, name)
            prepared[id(x)] = preprocess(arr, q, exact, name) if preprocess_features else arr
        return prepared[id(x)]

    def cell(i: int, j: int) -> Cell:
        a, b = side(xs[i], f"X {i}"), side(ys[j], f"Y {j}")
        return Cell(a, b, ("in", id(xs[i])), ("in", id(ys[j])), f"X {i}", f"Y {j}")

    return cell
