"""Benchmark: mutual kNN in prh vs the reference protocol's dense implementation vs the Gram floor.

One table, one run. For each N (default 1k, 4k, 16k, 64k) at D = 768, k = 10:

* ``prh``: :func:`prh.metrics.mutual_knn` (exact symmetric tile sweep, memory ``N (k + 6)``
  candidates plus one tile per thread);
* ``torch``: the same with ``backend="torch"`` (on the CPU the same sweep with torch's products;
  on CUDA row blocks and ``torch.topk`` on the device; exact float64 re-scoring as numpy).
  ``same`` says whether its score equals prh's exactly (identical neighbour lists give identical
  scores);
* ``baseline``: the reference protocol as ``minyoungg/platonic-rep`` codes it (float32, in numpy
  on the CPU, the same BLAS as prh): dense Gram ``A A^T``, diagonal ``-1e8``, full descending
  ``argsort`` of every row, the first ``k`` columns (a view that keeps the whole index matrix
  alive), two dense ``N x N`` masks and their product. Sizes whose estimated need (``~28 N^2``
  bytes) exceeds the memory budget print ``OOM (needs X GiB)`` instead of running;
* ``floor``: the two Gram products alone (``A A^T`` and ``B B^T``, same blocks, results dropped):
  what a method that computes every product pays at this machine's matrix-multiply speed;
* ``half``: the two *half* Grams, the tiles on and above the diagonal of each (prh's tile side,
  one reused output buffer, results dropped): what an exact method that uses the symmetry of
  ``A A^T`` pays, the floor of prh's tile sweep. ``prh/floor`` and ``prh/half`` are prh's time
  over each;
* ``tp-half``: the same half Grams scheduled as prh's sweep schedules them (whole tiles shared
  among as many threads as BLAS has, each product on one BLAS thread), and ``prh/tp-half``;
* ``t-half``: the half Grams by torch's CPU products (torch's own floor), and ``t/t-half``:
  the torch cell's time over it;
* ``cpu b/p``: the dense baseline's CPU seconds (its process, all threads) over prh's: the work
  each did, which a shared machine's scheduling does not move as it moves wall time;
* ``load``: the 1-minute load average when the row finished (also printed at the start and end).

Every cell runs in a fresh subprocess. Time is wall-clock of the call. Peak memory is the growth
of the resident set during the call: the peak RSS counter is reset (``/proc/self/clear_refs``)
just before the call, and ``VmHWM - VmRSS(before)`` is reported (inputs, 2 x N x D float32, are
allocated before and not counted; so is importing torch, which prh uses for ``topk``).
Run with ``python benchmarks/bench_metrics.py [--sizes ...] [--with-100k] [--no-baseline]
[--cells prh,half,...]``.

``--profile N`` prints instead where one kNN's time goes at N rows, by phase (products, seeds,
scans, merges, exact selection, normalisation), beside the half-Gram of the same matrix.

``--gpu`` is the prepared GPU run (needs CUDA; refused in one line without it): the torch cell
runs on ``cuda`` (TF32 off), sizes default to 16k, 64k and 100k, the dense baseline is skipped
above 16k, and a ``gpu floor`` column times the two full Grams on the GPU (``torch.matmul`` in
row blocks, synchronised). See ``docs/benchmarks.md`` for the output to expect.

``--matrix`` prints instead a score matrix's time and work before and after each layer's states
are shared by every metric and cell (``benchmarks/bench_matrix.py``, its flags).

``--svcca-seeds S`` prints instead how much the reference's SVCCA moves between seeds: its formula
(standardise, randomised ``torch.svd_lowrank(q = 10)``, scikit-learn ``CCA``, ``1e-10`` noise, mean
correlation; re-written here) for seeds ``0..S-1`` against prh's exact SVCCA, on two partly aligned
``(1024, 768)`` arrays with a power-law spectrum (the benchmark's N; real features' spectra decay).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import time

import numpy as np


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(field)


def _inputs(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, d), dtype=np.float32)
    b = 0.5 * a + rng.standard_normal((n, d), dtype=np.float32)  # partly aligned
    return a, b


def _baseline(a: np.ndarray, b: np.ndarray, k: int) -> float:
    from prh.metrics import l2_normalize

    def nn(f: np.ndarray) -> np.ndarray:
        g = f @ f.T  # (N, N)
        np.fill_diagonal(g, -1e8)
        return np.argsort(-g, axis=1)[:, :k]  # full sort; the view keeps (N, N) indices alive

    knn_a, knn_b = nn(l2_normalize(a)), nn(l2_normalize(b))
    n = knn_a.shape[0]
    rows = np.arange(n)[:, None]
    mask_a = np.zeros((n, n), dtype=np.float32)
    mask_b = np.zeros((n, n), dtype=np.float32)
    mask_a[rows, knn_a] = 1.0
    mask_b[rows, knn_b] = 1.0
    return float(((mask_a * mask_b).sum(axis=1) / k).mean())


def _reference_svcca(a: np.ndarray, b: np.ndarray, dim: int, seed: int) -> float:
    """platonic-rep's SVCCA formula (randomised SVD, iterative CCA, noise), seeded."""
    import torch
    from sklearn.cross_decomposition import CCA

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)

    def basis(x: np.ndarray) -> np.ndarray:
        t = torch.from_numpy(x)
        t = t - t.mean(dim=0)
        t = t / (t.std(dim=0) + 1e-8)
        u, _, _ = torch.svd_lowrank(t, q=dim)  # randomised: depends on the seed
        return u.numpy()  # (N, dim)

    ua, ub = basis(a), basis(b)
    ca, cb = CCA(n_components=dim).fit(ua, ub).transform(ua, ub)
    ca = ca + 1e-10 * rng.standard_normal(ca.shape)
    cb = cb + 1e-10 * rng.standard_normal(cb.shape)
    return float(np.mean([np.corrcoef(ca[:, i], cb[:, i])[0, 1] for i in range(dim)]))


def svcca_seed_spread(seeds: int, n: int = 1024, d: int = 768, dim: int = 10) -> None:
    """Print the reference SVCCA's range over seeds beside prh's exact (seed-free) SVCCA."""
    from prh.metrics import l2_normalize, svcca

    rng = np.random.default_rng(0)
    scale = np.arange(1, d + 1, dtype=np.float32) ** -0.5  # (D,) power-law spectrum
    a = rng.standard_normal((n, d), dtype=np.float32) * scale
    b = 0.5 * a + rng.standard_normal((n, d), dtype=np.float32) * scale
    a, b = l2_normalize(a), l2_normalize(b)
    ref = [_reference_svcca(a, b, dim, s) for s in range(seeds)]
    exact = svcca(a, b, dim)
    print(f"svcca, N = {n}, D = {d}, cca_dim = {dim}, {seeds} seeds of the reference formula")
    print(f"reference min {min(ref):.4f}  max {max(ref):.4f}  range {max(ref) - min(ref):.4f}")
    print(f"prh exact     {exact:.4f}  (no seed)")


def _floor(a: np.ndarray, b: np.ndarray) -> float:
    from prh.metrics.knn import default_block_size

    bs = default_block_size(a.shape[0])
    for x in (a, b):
        for s in range(0, x.shape[0], bs):
            _ = x[s : s + bs] @ x.T  # (b, N) the only work an exact method cannot skip
    return float("nan")


def _half_floor(a: np.ndarray, b: np.ndarray | None, library: str = "numpy") -> float:
    """The two half Grams (``b`` None: the one of ``a``) at prh's tile side, by numpy's BLAS or
    (``"torch"``) torch's."""
    from prh.metrics.knn import numpy_product, tile_side, torch_product

    product = torch_product if library == "torch" else numpy_product
    n = a.shape[0]
    bs = tile_side(n)
    buf = np.empty(bs * bs, dtype=np.float32)
    for x in (a,) if b is None else (a, b):
        for i0 in range(0, n, bs):
            for j0 in range(i0, n, bs):
                xi, xj = x[i0 : i0 + bs], x[j0 : j0 + bs]
                product(xi, xj, buf[: len(xi) * len(xj)].reshape(len(xi), len(xj)))
    return float("nan")


def _tile_half_floor(a: np.ndarray, b: np.ndarray) -> float:
    """The two half Grams as prh's sweep schedules them: whole tiles shared among as many threads
    as BLAS has, each product on one BLAS thread (its own output buffer), results dropped."""
    from concurrent.futures import ThreadPoolExecutor

    from threadpoolctl import threadpool_limits

    from prh.metrics.knn import tile_side
    from prh.metrics.knn_tiles import blas_threads

    n = a.shape[0]
    bs, workers = tile_side(n), blas_threads()
    tiles = [(x, i0, j0) for x in (a, b) for i0 in range(0, n, bs) for j0 in range(i0, n, bs)]
    bufs = [np.empty((bs, bs), dtype=np.float32) for _ in range(workers)]

    def run(w: int) -> None:
        for x, i0, j0 in tiles[w::workers]:  # static split: no queue, no merges
            xi, xj = x[i0 : i0 + bs], x[j0 : j0 + bs]
            np.matmul(xi, xj.T, out=bufs[w][: len(xi), : len(xj)])

    with threadpool_limits(1, user_api="blas"), ThreadPoolExecutor(workers) as pool:
        list(pool.map(run, range(workers)))
    return float("nan")


def _gpu_floor(a: np.ndarray, b: np.ndarray) -> float:
    import torch

    from prh.metrics.knn import default_block_size

    torch.backends.cuda.matmul.allow_tf32 = False  # as the torch kNN backend
    bs = default_block_size(a.shape[0])
    for x in (torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()):
        for s in range(0, x.shape[0], bs):
            _ = x[s : s + bs] @ x.T  # (b, N) on the GPU
    torch.cuda.synchronize()
    return float("nan")


def profile_knn(n: int, d: int, k: int, seed: int, backend: str) -> None:
    """Print where one ``knn(A, k)`` call's time goes, by phase, beside the half-Gram floor of
    ``A`` alone (same process, same tiles).

    Phases are timed around prh's own functions: the tile products, the seeds of the diagonal
    tiles (bound and scan, without their merges), the scans of the off-diagonal tiles (one
    comparison per entry), the merges into the lists, the exact selection (float64 re-scoring),
    the normalisation. Thread-seconds: the tile phases run on several threads at once, so they
    may add up to more than the wall time.
    """
    import threading
    from collections import defaultdict

    import torch  # noqa: F401  (imported before timing, as in the table's cells)

    from prh.metrics import knn_tiles

    knn_module = importlib.import_module("prh.metrics.knn")  # the package exports a function

    a, _ = _inputs(n, d, seed)
    spent: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    lock = threading.Lock()

    def timed(mod, name: str, phase: str) -> None:
        fn = getattr(mod, name)

        def wrapper(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                with lock:
                    spent[phase] += time.perf_counter() - t0
                    calls[phase] += 1

        setattr(mod, name, wrapper)

    knn_module.knn(a[:512], k, backend=backend, device="cpu")  # warm-up: threads, imports
    t0 = time.perf_counter()
    _half_floor(a, None, backend)
    half = time.perf_counter() - t0
    timed(knn_module, "torch_product" if backend == "torch" else "numpy_product", "products")
    timed(knn_tiles, "seed_tile", "seeds (with their merges)")
    timed(knn_tiles, "union_hits", "scans")
    timed(knn_tiles, "merge_hits", "merges (seeds' too)")
    timed(knn_module, "_select", "exact selection")
    timed(knn_module, "l2_normalize", "normalisation")
    t0 = time.perf_counter()
    knn_module.knn(a, k, backend=backend, device="cpu")
    wall = time.perf_counter() - t0
    print(f"knn({n} x {d}, k = {k}), backend {backend}: {wall:.3f} s wall, half-Gram of A"
          f" {half:.3f} s ({wall / half:.2f}x), load average {_load()}")  # fmt: skip
    for phase, sec in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"  {phase:<24} {sec:8.3f} thread-s  {calls[phase]:>5} calls")


def worker(method: str, n: int, d: int, k: int, seed: int) -> None:
    """Run one cell and print one JSON line."""
    a, b = _inputs(n, d, seed)
    if method == "gpu_floor":
        _gpu_floor(a[:64], b[:64])  # CUDA context and kernels: warm-up
        call = lambda: _gpu_floor(a, b)  # noqa: E731
    elif method in ("prh", "torch"):
        import torch  # imported before timing: knn uses torch.topk on long rows

        from prh.metrics import mutual_knn

        backend = "numpy" if method == "prh" else "torch"
        if backend == "torch" and torch.cuda.is_available():
            mutual_knn(a[:64], b[:64], k, backend=backend)  # CUDA context and kernels: warm-up
        call = lambda: mutual_knn(a, b, k, backend=backend)  # noqa: E731
    elif method == "baseline":
        call = lambda: _baseline(a, b, k)  # noqa: E731
    elif method == "tphalf":
        call = lambda: _tile_half_floor(a, b)  # noqa: E731
    elif method in ("half", "thalf"):
        import torch

        lib = "torch" if method == "thalf" else "numpy"
        call = lambda: _half_floor(a, b, lib)  # noqa: E731
    else:
        call = lambda: _floor(a, b)  # noqa: E731
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the peak RSS counter
    rss0 = _status_kib("VmRSS")
    t0, c0 = time.perf_counter(), time.process_time()
    score = call()
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = _status_kib("VmHWM") - rss0
    device = "-"
    if method == "torch":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    out = {"time": dt, "cpu": cpu, "peak_kib": peak, "score": score, "device": device}
    print(json.dumps(out))


def _run_cell(method: str, n: int, d: int, k: int, seed: int) -> dict:
    cmd = [sys.executable, __file__, "--worker", method, str(n), str(d), str(k), str(seed)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def _cell(r: dict, key: str, scale: float, w: int) -> str:
    if key in r:
        return f"{r[key] / scale:>{w}.2f}"
    return f"{r.get('skip', r.get('error', '?'))[:w]:>{w}}"


def _mem_available_gib() -> float:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 2**20
    return 0.0


CELLS = ("prh", "torch", "floor", "half", "tphalf", "thalf", "baseline", "gpu_floor")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default=None, help="comma-separated N (default 1k,4k,16k,64k)")
    p.add_argument("--dim", type=int, default=768, help="feature dimension D")
    p.add_argument("--k", type=int, default=10, help="neighbours")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--with-100k", action="store_true", help="also run prh (only) at N = 100,000")
    p.add_argument(
        "--budget-gib", type=float, default=None, help="baseline memory budget (default: 80%% of"
        " MemAvailable)"
    )  # fmt: skip
    p.add_argument("--no-baseline", action="store_true", help="skip the dense baseline")
    p.add_argument(
        "--gpu", action="store_true", help="the prepared GPU run: torch cell on CUDA, sizes 16k,"
        " 64k, 100k, a gpu floor column"
    )  # fmt: skip
    p.add_argument("--svcca-seeds", type=int, default=0, help="SVCCA spread over seeds instead")
    p.add_argument(
        "--cells",
        default=",".join(CELLS),
        help=f"cells to run (default all: {','.join(CELLS)};"
        " baseline and gpu_floor only where the table has them)",
    )
    p.add_argument(
        "--profile", type=int, default=0, metavar="N", help="instead: where one kNN's time goes"
        " at N rows (each of --backends), by phase"
    )  # fmt: skip
    p.add_argument("--backends", default="numpy,torch", help="backends for --profile")
    p.add_argument(
        "--matrix", action="store_true", help="instead: a score matrix before and after sharing"
        " each layer's states (benchmarks/bench_matrix.py, which reads the other flags)"
    )  # fmt: skip
    p.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    return p


def _header(gpu: bool) -> str:
    head = f"{'N':>7} | {'prh s':>8} {'prh MiB':>8} | {'torch s':>8} {'torch MiB':>9} {'dev':>4}"
    head += f" {'same':>4} | {'base s':>8} {'base MiB':>9} | {'floor s':>8} {'half s':>8}"
    head += f" {'tp-half s':>9} {'t-half s':>8}" + (f" {'gpu fl s':>8}" if gpu else "")
    head += f" | {'prh/floor':>9} {'prh/half':>8} {'prh/tp-half':>11} {'t/t-half':>8}"
    head += f" {'base/prh':>8} {'cpu b/p':>7}"
    return head + f" | {'|score diff|':>12} {'load':>4}"


def _ratio(num: dict, den: dict, key: str = "time") -> float:
    return num[key] / den[key] if key in num and key in den else float("nan")


def _row(n: int, args: argparse.Namespace, with_baseline: bool, budget: float) -> str:
    """Run every cell of size ``n`` (each in its own subprocess) and format the table line."""
    cells = set(args.cells.split(","))

    def cell(m: str) -> dict:
        if m not in cells:
            return {"skip": "-"}
        return _run_cell(m, n, args.dim, args.k, args.seed)

    prh, tch, floor, half = cell("prh"), cell("torch"), cell("floor"), cell("half")
    thalf, tphalf = cell("thalf"), cell("tphalf")
    need = 28 * n * n / 2**30
    if not with_baseline:
        base = {"skip": "not run"}
    elif need > budget:
        base = {"skip": f"OOM (needs {need:.0f} GiB)"}
    else:
        base = cell("baseline")
    line = f"{n:>7} | {_cell(prh, 'time', 1, 8)} {_cell(prh, 'peak_kib', 1024, 8)} | "
    same = "yes" if tch.get("score", 0) == prh.get("score", 1) else "NO"
    same = same if "score" in tch and "score" in prh else "-"
    line += f"{_cell(tch, 'time', 1, 8)} {_cell(tch, 'peak_kib', 1024, 9)} "
    line += f"{tch.get('device', '-' if 'skip' in tch else '?'):>4} {same:>4} | "
    if "skip" in base and base["skip"].startswith("OOM"):
        line += f"{base['skip']:>18}"
    else:
        line += f"{_cell(base, 'time', 1, 8)} {_cell(base, 'peak_kib', 1024, 9)}"
    line += f" | {_cell(floor, 'time', 1, 8)} {_cell(half, 'time', 1, 8)}"
    line += f" {_cell(tphalf, 'time', 1, 9)} {_cell(thalf, 'time', 1, 8)}"
    line += f" {_cell(cell('gpu_floor'), 'time', 1, 8)}" if args.gpu else ""
    line += f" | {_ratio(prh, floor):>9.2f} {_ratio(prh, half):>8.2f}"
    line += f" {_ratio(prh, tphalf):>11.2f} {_ratio(tch, thalf):>8.2f}"
    diff = abs(base["score"] - prh["score"]) if "score" in base and "score" in prh else None
    line += f" {_ratio(base, prh):>8.1f} {_ratio(base, prh, 'cpu'):>7.1f}"
    line += " | " + f"{'-' if diff is None else f'{diff:.1e}':>12}"
    return line + f" {os.getloadavg()[0]:>4.1f}"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--matrix" in argv:  # the score matrix's table, with its own flags
        from bench_matrix import parser, run

        return run(parser().parse_args([a for a in argv if a != "--matrix"]))
    args = _parser().parse_args(argv)
    if args.worker:
        m, n, d, k, s = args.worker
        worker(m, int(n), int(d), int(k), int(s))
        return 0
    if args.svcca_seeds:
        svcca_seed_spread(args.svcca_seeds)
        return 0
    if args.profile:
        for backend in args.backends.split(","):
            profile_knn(args.profile, args.dim, args.k, args.seed, backend)
        return 0
    if args.gpu:
        import torch

        if not torch.cuda.is_available():
            print("--gpu: CUDA is not available on this machine", file=sys.stderr)
            return 2
    budget = args.budget_gib or 0.8 * _mem_available_gib()
    default = "16000,64000,100000" if args.gpu else "1000,4000,16000,64000"
    sizes = [int(s) for s in (args.sizes or default).split(",") if s]
    print(
        f"mutual_knn, D = {args.dim}, k = {args.k}, {os.cpu_count()} CPUs, budget {budget:.1f} GiB,"
        f" load average {_load()} at the start"
    )
    head = _header(args.gpu)
    print(head)
    print("-" * len(head))
    rows = [(n, not args.no_baseline and not (args.gpu and n > 16000)) for n in sizes]
    rows += [(100_000, False)] if args.with_100k else []
    for n, with_baseline in rows:
        print(_row(n, args, with_baseline, budget), flush=True)
    print(f"load average {_load()} at the end (1, 5, 15 min)")
    return 0


def _load() -> str:
    return " ".join(f"{v:.1f}" for v in os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
