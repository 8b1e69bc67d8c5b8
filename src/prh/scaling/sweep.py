"""Run a grid of cells with an injected runner, in parallel, resumably, into ``results.jsonl``.

Files in the sweep folder:

- ``sweep.json``: the grid, the backend and its options, the base seed, the cell count. A resumed
  sweep must match it (otherwise results of two different grids would mix): ``InputError``.
- ``results.jsonl``: one JSON object per finished run, one line each: ``cell_id``, ``split``,
  ``point``, ``views``, ``rho``, ``samples``, ``seed``, ``score``, ``calibrated``, ``seconds``,
  ``backend``, ``config`` (what determined the result), ``extra`` (backend-specific fields).
- ``.lock``: an exclusive ``flock`` held while the sweep runs, so two sweeps never write one file.

Only the parent process writes ``results.jsonl``: workers return rows, the parent appends each as
one whole line (write, flush, fsync). A run killed mid-write can leave a partial last line (no
newline, or not JSON); on resume that fragment is cut off (the file is truncated to the end of the
last whole line) and its cell re-runs. A bad line anywhere else is not a kill artefact and is
refused. Cells run in a ``spawn`` process pool (``workers > 1``), each worker single-threaded for
BLAS, or in-process (``workers = 1``). Results depend only on the cell (and the runner), so serial
and parallel sweeps give identical rows up to order and ``seconds``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prh.errors import InputError, PrhError
from prh.io import write_json
from prh.provenance import expect_rows, format_id, sniff_json_lines
from prh.scaling.backends import CellRunner
from prh.scaling.grid import Cell, Grid

RESULTS = "results.jsonl"
SWEEP = "sweep.json"
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def read_results(path: str | os.PathLike[str], repair: bool = False) -> list[dict[str, Any]]:
    """Read ``results.jsonl``; ignore (or, with ``repair``, cut off) a partial last line.

    Raises
    ------
    InputError
        When the file is missing or a line other than the last is not a JSON object.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such results file")
    sniff_json_lines(p, "result", "results.jsonl rows from prh sweep")
    data = p.read_bytes()
    rows: list[dict[str, Any]] = []
    good_end = 0  # byte offset just past the last whole, valid line
    pos = 0
    lines = data.split(b"\n")
    for i, line in enumerate(lines):
        last = i == len(lines) - 1
        if not line.strip():
            pos += len(line) + 1
            if not last:
                good_end = pos
            continue
        try:
            row = json.loads(line)
            if not isinstance(row, dict):
                raise ValueError("not an object")
            complete = not last  # a line is whole only when its newline was written
        except ValueError:
            row, complete = None, False
        if not complete:
            if last:
                break  # a fragment left by a killed run
            raise InputError(f"{p}: line {i + 1} is not a JSON object (file corrupted?)")
        rows.append(row)
        pos += len(line) + 1
        good_end = pos
    if repair and good_end < len(data):
        with open(p, "r+b") as f:
            f.truncate(good_end)
    expect_rows(rows, "result", p)
    return rows


@dataclass
class SweepSummary:
    """What a sweep did: cells in the grid, skipped (already done), run now, failed."""

    out_dir: Path
    total: int
    skipped: int
    ran: int
    failed: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0


def _row(cell: Cell, runner: CellRunner, result: dict[str, Any], seconds: float) -> dict:
    options = runner.options()
    extra = {k: v for k, v in result.items() if k not in ("score", "calibrated")}
    return {
        "format": format_id("result"),
        "cell_id": cell.cell_id(runner.name, options),
        "split": cell.split,
        "point": cell.point,
        "views": cell.views,
        "rho": cell.rho,
        "samples": cell.samples,
        "seed": cell.seed,
        "score": float(result["score"]),
        "calibrated": None if result.get("calibrated") is None else float(result["calibrated"]),
        "seconds": round(seconds, 4),
        "backend": runner.name,
        "config": cell.key(runner.name, options),
        "extra": extra,
    }


def run_cell(runner: CellRunner, cell: Cell, out_dir: Path) -> dict[str, Any]:
    """Run one cell and return its results row (used by the workers and the serial path)."""
    t0 = time.perf_counter()
    result = runner(cell, out_dir)
    if "score" not in result:
        raise PrhError(f"backend {runner.name}: cell result lacks 'score'")
    return _row(cell, runner, result, time.perf_counter() - t0)


def _init_worker() -> None:
    with contextlib.suppress(ImportError):
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)


@contextlib.contextmanager
def _lock(out_dir: Path) -> Iterator[None]:
    path = out_dir / ".lock"
    f = open(path, "w")  # held for the whole sweep
    try:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            raise InputError(f"{out_dir}: another sweep is running in this folder") from None
        try:
            yield
        finally:
            path.unlink(missing_ok=True)  # still held: no other sweep can have taken it
    finally:
        f.close()


@contextlib.contextmanager
def _single_thread_env() -> Iterator[None]:
    # spawn children read these at numpy import: one BLAS thread per worker, no oversubscription
    old = {k: os.environ.get(k) for k in _THREAD_VARS}
    os.environ.update(dict.fromkeys(_THREAD_VARS, "1"))
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _check_sweep_json(out_dir: Path, desc: dict) -> None:
    p = out_dir / SWEEP
    if p.exists():
        try:
            old = json.loads(p.read_text())
        except ValueError:
            raise InputError(f"{p}: not valid JSON; remove it or use another --out") from None
        for key in ("grid", "backend", "options", "seed"):
            if old.get(key) != desc[key]:
                raise InputError(
                    f"{p}: this folder holds a sweep with a different {key}; "
                    "use another --out or the same settings to resume"
                )
    write_json(p, desc)


def run_sweep(
    grid: Grid,
    runner: CellRunner,
    out_dir: str | os.PathLike[str],
    *,
    seed: int = 0,
    workers: int = 1,
    progress: Callable[[str], None] | None = None,
) -> SweepSummary:
    """Run every cell of ``grid`` not yet in ``out_dir/results.jsonl``.

    Parameters
    ----------
    grid : Grid
        The cells to run (:meth:`Grid.cells` with ``seed``).
    runner : CellRunner
        Trains and measures one cell (picklable when ``workers > 1``).
    out_dir : path
        Sweep folder (created).
    seed : int
        Base seed of the grid.
    workers : int
        Worker processes (1: in-process).
    progress : callable, optional
        Receives one line per finished cell.

    Returns
    -------
    SweepSummary
        Failed cells are listed (and not written), so a rerun retries them.
    """
    if workers < 1:
        raise InputError(f"--workers must be >= 1, got {workers}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda _msg: None)
    t0 = time.perf_counter()
    cells = grid.cells(seed)
    options = runner.options()
    desc = {"grid": grid.describe(), "backend": runner.name, "options": options, "seed": seed,
            "results": RESULTS}  # fmt: skip
    desc = json.loads(json.dumps(desc))  # tuples -> lists, as a re-read sweep.json has them
    with _lock(out):
        _check_sweep_json(out, desc)
        res_path = out / RESULTS
        done = set()
        if res_path.exists():
            done = {r.get("cell_id") for r in read_results(res_path, repair=True)}
        todo = [c for c in cells if c.cell_id(runner.name, options) not in done]
        summary = SweepSummary(out, len(cells), len(cells) - len(todo), 0)
        if summary.skipped:
            say(f"resuming: {summary.skipped} of {len(cells)} cells already done")
        if todo:
            runner.prepare(out)
        with open(res_path, "a") as f:

            def write(row: dict) -> None:
                f.write(json.dumps(row, sort_keys=True) + "\n")
                f.flush()
                os.fsync(f.fileno())
                summary.ran += 1
                say(
                    f"[{summary.skipped + summary.ran}/{len(cells)}] {row['split']} {row['views']} "
                    f"rho={row['rho']} S={row['samples']} seed={row['seed']} "
                    f"score={row['score']:.4f} ({row['seconds']:.2f}s)"
                )

            if workers == 1 or len(todo) <= 1:
                with contextlib.ExitStack() as stack:
                    with contextlib.suppress(ImportError):
                        from threadpoolctl import threadpool_limits

                        stack.enter_context(threadpool_limits(1))
                    for c in todo:
                        try:
                            write(run_cell(runner, c, out))
                        except PrhError as e:
                            summary.failed.append((c.cell_id(runner.name, options), str(e)))
                            say(f"cell {c} failed: {e}")
            else:
                ctx = multiprocessing.get_context("spawn")
                with (
                    _single_thread_env(),
                    ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker) as ex,
                ):
                    futures = {ex.submit(run_cell, runner, c, out): c for c in todo}
                    for fut in as_completed(futures):
                        c = futures[fut]
                        try:
                            write(fut.result())
                        except PrhError as e:
                            summary.failed.append((c.cell_id(runner.name, options), str(e)))
                            say(f"cell {c} failed: {e}")
    summary.seconds = time.perf_counter() - t0
    return summary
