"""Benchmark: a score matrix before and after sharing each layer's states across metrics and cells.

One benchmark-shaped matrix (``X`` models against ``Y`` models, ``L_X`` and ``L_Y`` layers, ``N``
paired rows, width ``D``: by default 3 x 3 models, 8 and 6 layers, N = 1024, D = 768; random
features sharing a signal), every kNN metric (the four list metrics and CKNNA; ``--metrics all``
adds CKA, unbiased CKA and SVCCA), one run, two columns side by side:

* ``before``: the matrix as ``main`` computed it before the states were shared (``measure`` per
  cell and metric, the list metrics sharing one cache of neighbour lists, SVCCA one of bases, CKA
  and CKNNA preparing both sides of every cell);
* ``after``: :func:`prh.measure_matrix`, which prepares each layer's states once per kind.

Each column gives its wall time, its CPU time (this process's, all threads: the steadier figure
on a shared machine) and its work (kNN searches, kernel Gram products, counted by
:class:`prh.metrics.states.StateCache`); ``same`` says whether every score of every metric is
equal, bit for bit; ``load`` is the 1-minute load average at the end.

Run with ``python benchmarks/bench_metrics.py --matrix [--models 3,3] [--layers 8,6] [--sizes
1024] [--metrics knn|all]`` (or this file directly, same flags). ``--plain`` only times
:func:`prh.measure_matrix` on the same inputs and prints the sum of its scores: it runs on a
checkout of an older ``prh`` too (``PYTHONPATH=<checkout>/src``), to time ``main`` itself.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from prh.metrics import measure, measure_matrix
from prh.metrics.api import KNN_METRICS, METRICS, MetricOptions
from prh.metrics.preprocess import preprocess

KNN_BASED = (*KNN_METRICS, "cknna")


def models(nx: int, ny: int, layers: tuple[int, int], n: int, d: int, seed: int) -> tuple:
    """``nx`` X and ``ny`` Y models ``(n, L, d)`` float32 sharing a signal, noisier by layer."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 1, d), dtype=np.float32)

    def model(count: int) -> np.ndarray:
        noise = np.linspace(0.5, 2.0, count, dtype=np.float32)[None, :, None]  # (1, L, 1)
        return z + noise * rng.standard_normal((n, count, d), dtype=np.float32)

    return [model(layers[0]) for _ in range(nx)], [model(layers[1]) for _ in range(ny)]


def before(xs: list, ys: list, metrics: tuple[str, ...], options: MetricOptions) -> tuple:
    """``(scores by metric, Work)`` of the matrix as ``main`` made it: ``measure`` per cell and
    metric; neighbour lists shared by the list metrics, SVCCA bases per metric, CKA and CKNNA
    states per call."""
    from prh.metrics.api import get_metric
    from prh.metrics.states import StateCache, Work, work

    px = [preprocess(x, 0.95, False, f"X {i}") for i, x in enumerate(xs)]
    py = [preprocess(y, 0.95, False, f"Y {j}") for j, y in enumerate(ys)]
    lists, svcca = StateCache(), StateCache()
    made: list = [(Work(searches=1), lists), (Work(), svcca)]
    scores = {m: np.full((len(xs), len(ys)), np.nan) for m in metrics}
    for i, a in enumerate(px):
        for j, b in enumerate(py):
            for m in metrics:
                cache = lists if m in KNN_METRICS else svcca if m == "svcca" else StateCache()
                if cache is not lists and cache is not svcca:
                    made.append((get_metric(m, options).work, cache))
                r = measure(
                    a, b, m, k=options.k, options=options, preprocess_features=False,
                    cache=cache, cache_keys=(("x", i), ("y", j)),
                )  # fmt: skip
                scores[m][i, j] = r.score
    return scores, work(made)


def plain(xs: list, ys: list, metrics: tuple[str, ...], options: MetricOptions, k: int) -> None:
    """Time :func:`prh.measure_matrix` alone: the ``--plain`` line, which also runs on a checkout
    from before :mod:`prh.metrics.states` existed (``main`` as it was)."""
    measure_matrix(xs[:1], ys[:1], "mutual_knn", k=k)  # warm: imports, BLAS threads
    r, t = _timed(measure_matrix, xs, ys, metrics, k=k, options=options)
    digest = float(sum(np.nansum(r.scores[m]) for m in metrics))
    print(f"measure_matrix alone: {t[0]:.2f} s wall, {t[1]:.2f} s CPU, sum of scores "
          f"{digest!r}, load {os.getloadavg()[0]:.1f}")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """Time both columns on one matrix per ``--sizes`` entry and print the table."""
    nx, ny = (int(v) for v in args.models.split(","))
    layers = tuple(int(v) for v in args.layers.split(","))
    metrics = METRICS if args.metrics == "all" else KNN_BASED
    options = MetricOptions(k=args.k, cca_dim=min(10, args.dim))
    if args.plain:
        for n in (int(s) for s in (args.sizes or "1024").split(",")):
            plain(*models(nx, ny, layers, n, args.dim, args.seed), metrics, options, args.k)
        return 0
    print(f"score matrix {nx} x {ny} models, layers {layers}, D = {args.dim}, k = {args.k}, "
          f"{len(metrics)} metrics ({', '.join(metrics)}), {os.cpu_count()} CPUs, "
          f"load average {_load()} at the start")  # fmt: skip
    head = (
        "| N | cells | before s | before cpu s | before searches | before gemms | after s"
        " | after cpu s | after searches | after gemms | before / after | cpu before / after"
        " | same | load |"
    )
    print(head + "\n|" + "--:|" * (head.count("|") - 1))
    for n in (int(s) for s in (args.sizes or "1024").split(",")):
        xs, ys = models(nx, ny, layers, n, args.dim, args.seed)
        measure_matrix(xs[:1], ys[:1], "mutual_knn", k=args.k)  # warm: imports, BLAS threads
        (old, old_work), t_old = _timed(before, xs, ys, metrics, options)
        new, t_new = _timed(measure_matrix, xs, ys, metrics, k=args.k, options=options)
        same = all(np.array_equal(old[m], new.scores[m], equal_nan=True) for m in metrics)
        print(
            f"| {n:,} | {nx * ny} | {t_old[0]:.2f} | {t_old[1]:.2f} | {old_work.searches:,} "
            f"| {old_work.gemms:,} | {t_new[0]:.2f} | {t_new[1]:.2f} | {new.work.searches:,} "
            f"| {new.work.gemms:,} | {t_old[0] / t_new[0]:.2f} | {t_old[1] / t_new[1]:.2f} "
            f"| {'yes' if same else 'NO'} | {os.getloadavg()[0]:.1f} |",
            flush=True,
        )
    print(f"load average {_load()} at the end (1, 5, 15 min)")
    return 0


def _timed(call, *args, **kwargs) -> tuple:
    """``(call(*args, **kwargs), (wall seconds, CPU seconds of this process))``."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = call(*args, **kwargs)
    return out, (time.perf_counter() - t0, time.process_time() - c0)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default=None, help="comma-separated N (default 1024)")
    p.add_argument("--dim", type=int, default=768, help="feature dimension D")
    p.add_argument("--k", type=int, default=10, help="neighbours")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--models", default="3,3", help="X models, Y models (default 3,3)")
    p.add_argument("--layers", default="8,6", help="layers of each X, each Y model (default 8,6)")
    p.add_argument("--metrics", choices=("knn", "all"), default="knn", help="kNN-based or all")
    p.add_argument(
        "--plain", action="store_true", help="only time measure_matrix (runs on an older prh too)"
    )
    return p


def _load() -> str:
    return " ".join(f"{v:.1f}" for v in os.getloadavg())


if __name__ == "__main__":
    sys.exit(run(parser().parse_args()))
