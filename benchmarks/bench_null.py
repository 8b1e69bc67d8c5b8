"""Benchmark: the permutation null of mutual kNN, per layer pair per draw and over a whole matrix.

Two parts, one run:

* ``pair``: the null (mutual kNN, then cycle kNN) of one benchmark-shaped cell (``--layers`` x
  ``--layers`` layers, ``N`` rows, ``k`` neighbours) by the pair loop (every draw relabels
  ``B``'s lists and rescores every layer pair: what ``prh measure --null`` did before issue 34)
  and by
  the batched counts (:class:`prh.metrics.null_knn.MutualKnnNull`, one bitset intersection per
  pair per draw), in microseconds per layer pair per draw, and whether their p-values and null
  quantiles agree for the same seed and draws;
* ``kernel``: the same for CKA, unbiased CKA and SVCCA: the numpy pair loop (every draw rescores
  every layer pair) against the torch batch (:mod:`prh.metrics.null_kernel`: each layer's centred
  kernel gathered by the draws, every pair one matrix product) on ``--kernel-device``;
* ``matrix``: ``prh measure --x FOLDER --y FOLDER --null R --null-stop adaptive`` end to end (a
  subprocess, feature files on disk, the cost estimate it prints, the draws it made) on
  ``--x-models`` x ``--y-models`` synthetic models of ``--layers`` layers: each model's layer ``l``
  is a random projection of one shared latent plus noise that grows with depth, so most cells are
  strongly aligned (decided after 125 draws) and the models marked unrelated (the last
  ``--unrelated`` of Y) are not (decided when the p-value's interval is wholly above 0.05, or at
  the cap near it).

Run with ``python benchmarks/bench_null.py [--n 1024] [--k 10] [--layers 12] [--draws 20]
[--kernel-draws 10] [--kernel-device cpu|cuda] [--only knn|kernel] [--x-models 12]
[--y-models 17] [--null 1000] [--skip-matrix] [--gpu]``. ``--gpu`` adds
``--backend torch --device cuda`` to the matrix (the neighbour searches on the GPU; the null's
counts stay on the CPU). The figures in ``docs/benchmarks.md`` come from this script.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _layers(rng, z: np.ndarray, layers: int, dim: int, noise: float) -> np.ndarray:
    """``(N, layers, dim)`` float32: random projections of ``z`` plus noise growing with depth."""
    n, out = z.shape[0], np.empty((z.shape[0], layers, dim), dtype=np.float32)
    for layer in range(layers):
        w = rng.standard_normal((z.shape[1], dim)) / np.sqrt(z.shape[1])
        sigma = noise * (0.5 + abs(layer - layers / 2) / layers)
        out[:, layer] = z @ w + sigma * rng.standard_normal((n, dim))
    return out


def bench_pair(
    n: int, k: int, layers: int, draws: int, seed: int = 0, metric: str = "mutual_knn"
) -> dict:
    """Microseconds per layer pair per draw, loop vs batched, and their agreement."""
    from prh.metrics import calibrate
    from prh.metrics.api import _counted, get_metric
    from prh.metrics.knn import knn
    from prh.metrics.layers import best_pair, layer_scores

    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 16))
    xa, xb = _layers(rng, z, layers, 64, 1.0), _layers(rng, z, layers, 64, 1.5)
    m = get_metric(metric)
    sa = [knn(xa[:, i], k) for i in range(layers)]
    sb = [knn(xb[:, j], k) for j in range(layers)]
    obs = best_pair(layer_scores(m.score, sa, sb))[0]

    def loop(perm: np.ndarray) -> float:
        return best_pair(layer_scores(m.score, sa, sb, perm))[0]

    out = {"metric": metric, "n": n, "k": k, "layers": f"{layers} x {layers}", "draws": draws}
    results = {}
    for name, make in (("loop", lambda: loop), ("batched", lambda: _counted(m, sa, sb, n))):
        t0 = time.perf_counter()
        statistic = make()
        setup = time.perf_counter() - t0
        t0 = time.perf_counter()
        d = calibrate.permutation_null(statistic, n, draws, np.random.default_rng(seed + 1))
        spent = time.perf_counter() - t0
        results[name] = d
        out[f"{name}_us_per_pair_draw"] = round(spent / (draws * layers * layers) * 1e6, 2)
        out[f"{name}_setup_ms"] = round(setup * 1e3, 1)
    return _compared(out, results, obs)


def _compared(out: dict, results: dict, obs: float) -> dict:
    """``out`` with the loop's and the batch's speed-up, p-values and null draws compared."""
    from prh.metrics import calibrate

    out["speedup"] = round(out["loop_us_per_pair_draw"] / out["batched_us_per_pair_draw"], 1)
    out["same_p_value"] = calibrate.p_value(obs, results["loop"]) == calibrate.p_value(
        obs, results["batched"]
    )
    out["max_null_difference"] = float(np.abs(results["loop"] - results["batched"]).max())
    return out


def bench_kernel_pair(
    n: int, layers: int, draws: int, metric: str, device: str = "cpu", seed: int = 0
) -> dict:
    """The kernel metrics' null: the numpy pair loop against the torch batch
    (:mod:`prh.metrics.null_kernel`, on ``device``), microseconds per layer pair per draw."""
    from prh.metrics import calibrate
    from prh.metrics.api import MetricOptions, _rescored, get_metric
    from prh.metrics.layers import best_pair, layer_scores
    from prh.metrics.preprocess import preprocess

    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 16))
    xa = preprocess(_layers(rng, z, layers, 64, 1.0), 0.95, False, "A", None, False)
    xb = preprocess(_layers(rng, z, layers, 64, 1.5), 0.95, False, "B", None, False)
    m = get_metric(metric, MetricOptions(backend="torch", device=device))
    sa = [m.prepare(xa[:, i]) for i in range(layers)]
    sb = [m.prepare(xb[:, j]) for j in range(layers)]
    obs = best_pair(layer_scores(m.score, sa, sb))[0]
    out = {"metric": metric, "n": n, "layers": f"{layers} x {layers}", "draws": draws,
           "device": device}  # fmt: skip
    results = {}
    for name in ("loop", "batched"):
        t0 = time.perf_counter()
        batched = m.batched(sa, sb) if name == "batched" else None
        setup = time.perf_counter() - t0
        null_rng = np.random.default_rng(seed + 1)
        t0 = time.perf_counter()
        if batched is None:
            statistic = lambda perm: best_pair(layer_scores(m.score, sa, sb, perm))[0]  # noqa: E731
            d = calibrate.permutation_null(statistic, n, draws, null_rng)
        else:
            statistics = _rescored(m, batched, sa, sb, obs)
            d = calibrate.permutation_null_batched(
                statistics, n, draws, null_rng, batch=batched.batch
            )
        spent = time.perf_counter() - t0
        results[name] = d
        out[f"{name}_us_per_pair_draw"] = round(spent / (draws * layers * layers) * 1e6, 2)
        out[f"{name}_setup_ms"] = round(setup * 1e3, 1)
    return _compared(out, results, obs)


def bench_matrix(args: argparse.Namespace) -> dict:
    """``prh measure`` on a synthetic benchmark-shaped matrix: wall time, draws made, estimate."""
    rng = np.random.default_rng(args.seed)
    z = rng.standard_normal((args.n, 16))
    with tempfile.TemporaryDirectory() as tmp:
        xs, ys = Path(tmp, "x"), Path(tmp, "y")
        xs.mkdir(), ys.mkdir()
        for i in range(args.x_models):
            np.save(xs / f"x{i:02d}.npy", _layers(rng, z, args.layers, args.dim, 0.8 + 0.1 * i))
        for j in range(args.y_models):
            unrelated = j >= args.y_models - args.unrelated
            zz = rng.standard_normal(z.shape) if unrelated else z
            np.save(ys / f"y{j:02d}.npy", _layers(rng, zz, args.layers, args.dim, 0.8 + 0.1 * j))
        out = Path(tmp, "m.json")
        cmd = [sys.executable, "-m", "prh", "measure", "--x", str(xs), "--y", str(ys), "--k",
               str(args.k), "--null", str(args.null), "--null-stop", "adaptive", "--json",
               str(out)]  # fmt: skip
        if args.gpu:
            cmd += ["--backend", "torch", "--device", "cuda"]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            sys.exit(f"bench_null: prh measure failed: {proc.stderr.strip().splitlines()[-1]}")
        doc = json.loads(out.read_text())
    draws = np.array(doc["matrices"]["mutual_knn"]["null_draws"])
    p = np.array(doc["matrices"]["mutual_knn"]["p_values"])
    estimate = [line for line in proc.stderr.splitlines() if "about" in line][:1]
    return {
        "matrix": f"{args.x_models} x {args.y_models} models, {args.layers} x {args.layers} "
        f"layers, N = {args.n}, D = {args.dim}, k = {args.k}, null up to {args.null} adaptive",
        "wall_s": round(wall, 1),
        "estimate": estimate[0].strip() if estimate else None,
        "draws_total": int(draws.sum()),
        "draws_min_median_max": [int(draws.min()), int(np.median(draws)), int(draws.max())],
        "cells_at_cap": int((draws == args.null).sum()),
        "cells_p_below_0.05": int((p < 0.05).sum()),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--draws", type=int, default=20, help="draws of the pair benchmark")
    ap.add_argument("--dim", type=int, default=128, help="feature width of the matrix's models")
    ap.add_argument("--x-models", type=int, default=12)
    ap.add_argument("--y-models", type=int, default=17)
    ap.add_argument("--unrelated", type=int, default=2, help="Y models of another latent")
    ap.add_argument("--null", type=int, default=1000, help="the matrix's null cap")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kernel-draws", type=int, default=10, help="draws of the kernel rows")
    ap.add_argument("--kernel-device", default="cpu", help="device of the kernel metrics' batch")
    ap.add_argument("--only", choices=("knn", "kernel"), default=None, help="one part of pair")
    ap.add_argument("--skip-matrix", action="store_true")
    ap.add_argument("--gpu", action="store_true", help="neighbour searches on CUDA (torch)")
    args = ap.parse_args()
    for metric in ("mutual_knn", "cycle_knn") if args.only != "kernel" else ():
        row = bench_pair(args.n, args.k, args.layers, args.draws, args.seed, metric)
        print(json.dumps(row), flush=True)
    for metric in ("cka", "unbiased_cka", "svcca", "cknna") if args.only != "knn" else ():
        row = bench_kernel_pair(
            args.n, args.layers, args.kernel_draws, metric, args.kernel_device, args.seed
        )
        print(json.dumps(row), flush=True)
    if not args.skip_matrix:
        print(json.dumps(bench_matrix(args)), flush=True)


if __name__ == "__main__":
    main()
