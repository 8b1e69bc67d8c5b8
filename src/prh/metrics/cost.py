"""What a score matrix will cost, estimated before it starts: work counted, rates timed.

A matrix of ``X`` files against ``Y`` files costs, per metric, one preparation per layer of each
distinct file (neighbour lists, kernel statistics) and, per cell, ``L_X L_Y`` pair scores for the
observation plus ``L_X L_Y R`` for ``R`` null draws. The rates are timed on random features of
the matrix's ``N`` (and a width of at most 256 columns, scaled linearly to the files' width), so
the estimate follows this machine and its load; it is an estimate (the adaptive stop usually
needs far fewer draws than the cap, a real file's layers share neighbours). Metrics that prepare
the same states (the four neighbour-list metrics; biased and unbiased CKA) share them, so only the
first of them counts the preparations; :func:`planned_work` counts the searches and Gram products.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from prh.metrics.states import Work

_WIDTH = 256  # columns of the random features the rates are timed on
_LAYERS = 6  # layers a side of the timed batched null (its per-draw cost is shared by the pairs)


@dataclass(frozen=True)
class MatrixCost:
    """The work of one metric over a matrix and its estimated seconds.

    Attributes
    ----------
    metric : str
    preparations : int
        Per-layer states computed (each distinct file's layers, once).
    pair_draws : int
        Layer-pair scores of the null at the cap (cells x pairs x draws).
    prepare_s, null_s, total_s : float
        Estimated seconds for the preparations, the null at its cap, and all (observed pairs
        included).
    pair_draw_us : float
        The timed cost of one layer pair in one null draw, microseconds.
    """

    metric: str
    preparations: int
    pair_draws: int
    prepare_s: float
    null_s: float
    total_s: float
    pair_draw_us: float
    shared_with: str | None = None


def estimate_matrix(
    metric: str,
    n: int,
    width: int,
    layers_x: list[int],
    layers_y: list[int],
    null: int,
    options=None,
    *,
    distinct_files: int | None = None,
    seed: int = 0,
    sample: tuple[list, list] | None = None,
    shared_with: str | None = None,
) -> MatrixCost:
    """Estimated cost of ``metric`` over every (X, Y) cell (layer search and null included).

    Parameters
    ----------
    n, width : int
        Paired rows, and the widest file's feature width.
    layers_x, layers_y : list of int
        Layers of each X file and each Y file, in order.
    null : int
        Null draws per cell (the cap of an adaptive stop).
    distinct_files : int, optional
        Files to prepare when X and Y share some (default: all of them).
    sample : (list, list), optional
        One real cell's per-layer states (``Metric.prepare`` of each layer of one X and one Y):
        a batched null is timed on them, since its cost per draw depends on how many neighbours
        a model's layers share (random lists share none and cost several times more).
    shared_with : str, optional
        An earlier metric of the matrix that prepares the same states: none to prepare here.
    """
    from prh.metrics.api import MetricOptions, get_metric

    m = get_metric(metric, options or MetricOptions())
    la, lb = min(max(layers_x), _LAYERS), min(max(layers_y), _LAYERS)
    t_prep, t_pair = _rates(m, n, width, la, lb, seed)
    if sample is not None and m.null is not None:
        t_pair = _null_rate(m, *sample, seed)
    pairs = sum(a * b for a in layers_x for b in layers_y)
    files = distinct_files if distinct_files is not None else len(layers_x) + len(layers_y)
    mean_layers = (sum(layers_x) + sum(layers_y)) / (len(layers_x) + len(layers_y))
    preparations = 0 if shared_with else round(files * mean_layers)
    prepare_s = preparations * t_prep
    null_s = pairs * null * t_pair
    return MatrixCost(
        metric,
        preparations,
        pairs * null,
        prepare_s,
        null_s,
        prepare_s + null_s + pairs * t_pair,
        t_pair * 1e6,
        shared_with,
    )


def planned_work(metrics: list, layers: int) -> Work:
    """The searches and Gram products of a matrix whose distinct inputs hold ``layers`` layers in
    all, for the :class:`prh.metrics.api.Metric` objects ``metrics``: one preparation per layer
    and kind of state (metrics of one ``state`` share it; the cosine lists and CKNNA's share one
    sweep, :func:`prh.metrics.knn.knn_both`, on rows L2-normalised as preprocessed), the count
    :attr:`prh.metrics.matrix.MatrixResult.work` reports when every state fits its budget."""
    kinds = {m.state: m.work for m in metrics}
    total = Work()
    for one in kinds.values():
        total = total + one.scaled(layers)
    if "knn lists" in kinds and "cknna" in kinds:  # one sweep for both on unit rows
        total = total + Work(searches=-layers)
    return total


def _rates(m, n: int, width: int, la: int, lb: int, seed: int = 0) -> tuple[float, float]:
    """``(seconds per layer preparation, seconds per layer pair per null draw)`` of metric ``m``,
    timed on random features ``(n, min(width, 256))`` (preparation scaled to ``width``)."""
    rng = np.random.default_rng(seed)
    d = min(width, _WIDTH)
    x = rng.standard_normal((n, d)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    t0 = time.perf_counter()
    state = m.prepare(x)
    t_prep = (time.perf_counter() - t0) * max(1.0, width / d)
    perms = [rng.permutation(n) for _ in range(3)]
    batched = m.batched([state] * la, [state] * lb) if m.batched is not None else None
    if batched is not None:  # the kernel null on torch: a batch of draws scores every pair
        draws = np.stack(perms[: max(1, min(len(perms), batched.batch))])  # (R, N)
        t0 = time.perf_counter()
        batched.scores(draws)
        return t_prep, (time.perf_counter() - t0) / (len(draws) * la * lb)
    if m.null is not None:  # the batched null: one draw scores every pair, time a la x lb block
        states = [np.roll(state, s, axis=0) for s in range(max(la, lb))]  # distinct edge sets
        counter = m.null(states[:la], states[:lb])
        t0 = time.perf_counter()
        for p in perms:
            counter.counts(p)
        return t_prep, (time.perf_counter() - t0) / (len(perms) * la * lb)
    t0 = time.perf_counter()
    for p in perms:
        m.score(state, state, p)
    return t_prep, (time.perf_counter() - t0) / len(perms)


def _null_rate(m, states_a: list, states_b: list, seed: int = 0) -> float:
    """Seconds per layer pair per draw of ``m``'s batched null on real states."""
    counter = m.null(states_a, states_b)
    rng = np.random.default_rng(seed)
    perms = [rng.permutation(counter.n) for _ in range(3)]
    t0 = time.perf_counter()
    for p in perms:
        counter.counts(p)
    return (time.perf_counter() - t0) / (len(perms) * len(states_a) * len(states_b))


def describe(
    costs: list[MatrixCost], cells: int, null: int, adaptive: bool, work: Work | None = None
) -> str:
    """One line per metric: the work and its estimated time, for stderr before a matrix starts;
    first, with ``work``, the searches and Gram products of the whole matrix."""
    lines = []
    if work is not None:
        lines.append(
            f"  {work.searches:,} kNN searches and {work.gemms:,} Gram products in all (one per"
            " layer and kind of state, shared by every metric and cell)"
        )
    for c in costs:
        text = f"{c.metric}: {c.preparations:,} layer preparations (~{_clock(c.prepare_s)})"
        if c.shared_with:
            text = f"{c.metric}: the layer preparations of {c.shared_with}"
        if null:
            stop = "; the adaptive stop usually ends a cell far sooner" if adaptive else ""
            text += (
                f", null up to {c.pair_draws:,} layer-pair draws (~{_clock(c.null_s)} at "
                f"{c.pair_draw_us:.1f} us each{stop})"
            )
        lines.append(f"  {text}; about {_clock(c.total_s)} in all")
    return f"estimated cost of {cells:,} cells:\n" + "\n".join(lines)


def _clock(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
