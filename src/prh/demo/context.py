"""Where a demo writes, what it has done, and how it talks: the one object its steps share.

Below every other demo module (it imports only :mod:`prh.demo.config` and :mod:`prh.io`).
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prh.demo.config import DemoConfig
from prh.io import write_json
from prh.jsonio import read_json


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (user + system)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + ch.ru_utime + ch.ru_stime


@dataclass
class Context:
    """The demo's settings, output folder, logger, clocks, step timings and step costs (what
    each step's costliest run took, :func:`prh.demo.pipeline.run_demo`), and for a sub-demo
    (control, literal) the top folder ``root``. Results pass from step to step as return
    values, not through here."""

    cfg: DemoConfig
    out: Path
    log: Callable[[str], None] = print
    t0: float = field(default_factory=time.perf_counter)
    cpu0: float = field(default_factory=cpu_seconds)
    timings: dict[str, dict[str, float]] = field(default_factory=dict)
    costs: dict[str, dict[str, float]] = field(default_factory=dict)
    root: Path | None = None

    @property
    def shared(self) -> Path:
        """The demo's top folder, for what its sub-demos (control, literal) share: ``root``
        when this is a sub-demo's context, else ``out``."""
        return self.root if self.root is not None else self.out

    def path(self, *parts: str) -> Path:
        """``OUT/parts...`` with its parent folder created."""
        p = self.out.joinpath(*parts)
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def cached_json(self, name: str, fn: Callable[[], Any]) -> tuple[Any, bool]:
        """``OUT/steps/<name>.json`` if present, else ``fn()`` written there."""
        p = self.path("steps", f"{name}.json")
        if p.is_file():
            return read_json(p), True
        value = fn()
        write_json(p, value)
        return value, False
