"""Run a grid of cells with an injected runner, in parallel, resumably, into ``results.jsonl``.

Files in the sweep folder:

- ``sweep.json``: the grid, the backend and its options, the base seed, the cell count. A resumed
  sweep must match it (otherwise results of two different grids would mix): ``InputError``. A
  folder without results yet (a sweep that stopped before its first cell) takes new settings.
- ``results.jsonl``: one JSON object per finished run, one line each: ``cell_id``, ``split``,
  ``point``, ``views``, ``rho``, ``samples``, ``seed``, ``score``, ``calibrated``, ``seconds``,
  ``backend``, ``config`` (what determined the result), ``extra`` (backend-specific fields).
  ``score`` is ``None`` for a runner that trains without measuring (``cave-image``: the demo
  measures its image and sketch runs afterwards).
- ``.lock``: an exclusive ``flock`` held while the sweep runs, so two sweeps never write one file.

Only the driver (the process that called :func:`run_sweep`) writes ``results.jsonl``: executors
run cells and hand back rows, the driver appends each as one whole line (write, flush, fsync). A
run killed mid-write can leave a partial last line (no newline, or not JSON); on resume that
fragment is cut off (the file is truncated to the end of the last whole line) and its cell re-runs.
A bad line anywhere else is not a kill artefact and is refused. Where cells run is an executor
(:mod:`prh.scaling.executors`): in-process (``workers = 1``), a ``spawn`` process pool
(``workers > 1``) or a Ray cluster, each cell single-threaded for BLAS. Results depend only on the
cell (and the runner), so every executor gives identical rows up to order and ``seconds``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prh.errors import InputError
from prh.io import write_json
from prh.jsonio import loads, read_json
from prh.provenance import expect_rows, sniff_json_lines
from prh.scaling.backends import CellRunner
from prh.scaling.executors import Executor, InProcess, LocalPool, run_cell
from prh.scaling.grid import CellSource

__all__ = ["RESULTS", "SWEEP", "SweepSummary", "read_results", "run_cell", "run_sweep"]

RESULTS = "results.jsonl"
SWEEP = "sweep.json"


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
            row = loads(line, f"{p} line {i + 1}")
            if not isinstance(row, dict):
                raise ValueError("not an object")
            complete = not last  # a line is whole only when its newline was written
        except InputError:
            raise  # JSON nested or sized beyond the reader's bounds: say so, not "corrupted"
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


def _check_sweep_json(out_dir: Path, desc: dict, has_results: bool) -> None:
    """Refuse a folder whose results came from other settings; then (re)write ``sweep.json``.

    A folder without results (a sweep that failed before its first cell, e.g. on a bad option)
    takes the new settings: nothing could mix, and the user's corrected rerun must not be refused.
    """
    p = out_dir / SWEEP
    if p.exists() and has_results:
        try:
            old = read_json(p)
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
    grid: CellSource,
    runner: CellRunner,
    out_dir: str | os.PathLike[str],
    *,
    seed: int = 0,
    workers: int = 1,
    progress: Callable[[str], None] | None = None,
    executor: Executor | None = None,
) -> SweepSummary:
    """Run every cell of ``grid`` not yet in ``out_dir/results.jsonl``.

    Parameters
    ----------
    grid : Grid or RunSet
        The cells to run (``grid.cells(seed)``; :mod:`prh.scaling.grid`).
    runner : CellRunner
        Trains and measures one cell (picklable unless it runs in-process). A runner with a
        ``cost(cell)`` method has its cells started longest first on a pool or cluster (the
        shortest makespan a greedy start order gives); in-process they run in the grid's order.
    out_dir : path
        Sweep folder (created).
    seed : int
        Base seed of the grid.
    workers : int
        Worker processes of the default executor (1: in-process); ignored when ``executor`` is
        given.
    progress : callable, optional
        Receives one line per finished cell.
    executor : Executor, optional
        Where cells run (:mod:`prh.scaling.executors`: ``InProcess``, ``LocalPool``,
        ``RayExecutor``). Default: in-process for ``workers = 1``, else a local pool.

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
    desc = _description(grid, runner.name, options, seed)
    with _lock(out):
        res_path = out / RESULTS
        rows = read_results(res_path) if res_path.exists() else []
        _check_sweep_json(out, desc, has_results=bool(rows))
        if res_path.exists():
            read_results(res_path, repair=True)  # ours now: cut a torn last line left by a kill
        done = {r.get("cell_id") for r in rows}
        todo = [c for c in cells if c.cell_id(runner.name, options) not in done]
        summary = SweepSummary(out, len(cells), len(cells) - len(todo), 0)
        if summary.skipped:
            say(f"resuming: {summary.skipped} of {len(cells)} cells already done")
        if not todo:
            summary.seconds = time.perf_counter() - t0
            return summary
        if executor is None:
            executor = InProcess() if workers == 1 or len(todo) <= 1 else LocalPool(workers)
        cost = getattr(runner, "cost", None)
        if cost is not None and not isinstance(executor, InProcess):  # longest first: a
            # shorter makespan on a pool (the order results finish in differs there anyway)
            todo.sort(key=lambda c: -cost(c))  # stable: equal costs keep the grid's order
        # the executor starts (pool, cluster connection) before the runner's one-off work, so an
        # unreachable cluster is reported at once; only this process writes the results file
        with executor.session() as run_cells, open(res_path, "a") as f:
            runner.prepare(out)
            for o in run_cells(runner, todo, out):
                if o.row is None:
                    summary.failed.append((o.cell.cell_id(runner.name, options), str(o.error)))
                    say(f"cell {o.cell} failed: {o.error}")
                    continue
                _append(f, o.row)
                summary.ran += 1
                say(_progress_line(o.row, summary.skipped + summary.ran, len(cells)))
    summary.seconds = time.perf_counter() - t0
    return summary


def _description(grid: CellSource, backend: str, options: dict, seed: int) -> dict:
    """What ``sweep.json`` records, with tuples as lists (as a re-read file has them)."""
    desc = {"grid": grid.describe(), "backend": backend, "options": options, "seed": seed,
            "results": RESULTS}  # fmt: skip
    return json.loads(json.dumps(desc))


def _progress_line(row: dict, done: int, total: int) -> str:
    """``[done/total] split views rho= S= seed= score= (seconds)``; the modality first when it is
    not text, no score when the runner gives none."""
    what = f"{row['modality']} {row['views']}" if "modality" in row else row["views"]
    score = "" if row["score"] is None else f" score={row['score']:.4f}"
    return (
        f"[{done}/{total}] {row['split']} {what} rho={row['rho']} S={row['samples']} "
        f"seed={row['seed']}{score} ({row['seconds']:.2f}s)"
    )


def _append(f: Any, row: dict) -> None:
    """One whole line per row, on disk before the next cell is reported (write, flush, fsync)."""
    f.write(json.dumps(row, sort_keys=True) + "\n")
    f.flush()
    os.fsync(f.fileno())
