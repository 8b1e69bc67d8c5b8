"""The demo's one way to train a set of runs: a sweep, refused on a failed cell, read back.

Layer: orchestration over :func:`prh.scaling.sweep.run_sweep` (the sweep folder is the cache: a
rerun skips finished cells).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prh.demo.context import Context


def run_cells(
    ctx: Context,
    runs: Any,
    runner: Any,
    sweep: Path,
    *,
    what: str = "",
    workers: int | None = None,
    tag: str = "",
) -> tuple[Any, list[dict[str, Any]]]:
    """Run the cells of ``runs`` (a :class:`~prh.scaling.grid.Grid` or ``RunSet``) with
    ``runner`` into ``sweep``, ``workers`` (default ``cfg.workers``) at a time, each finished
    cell logged (prefixed ``tag``); the sweep's summary and its result rows.

    Raises
    ------
    PrhError
        When a cell failed: ``demo: N {what}run(s) failed, first: ...``.
    """
    from prh.errors import PrhError
    from prh.scaling.sweep import RESULTS, read_results, run_sweep

    cfg = ctx.cfg
    s = run_sweep(runs, runner, sweep, seed=cfg.seed, workers=workers or cfg.workers,
                  progress=lambda m: ctx.log(f"  {tag}{m}"))  # fmt: skip
    if s.failed:
        raise PrhError(f"demo: {len(s.failed)} {what}run(s) failed, first: {s.failed[0][1]}")
    return s, read_results(sweep / RESULTS)
