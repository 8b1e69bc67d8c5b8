"""Optional metric sinks beside ``metrics.jsonl``: TensorBoard event files and Weights & Biases.

``metrics.jsonl`` stays the run's record; a sink gets a copy of each record the trainer's log
hook writes there (:class:`RunLog`), its numbers as scalars at the record's ``step``:

- ``tensorboard``: event files in ``RUN/tb/`` (``tensorboard --logdir RUN/tb``), through
  :class:`torch.utils.tensorboard.SummaryWriter`. A resumed run purges the steps after its
  checkpoint, as ``metrics.jsonl`` drops them, so each step is read back once.
- ``wandb``: one W&B run per start or resume, its files in ``RUN/wandb/``, in offline mode unless
  ``WANDB_MODE`` says otherwise (no network at run time; ``wandb sync RUN/wandb/offline-run-*``
  uploads later), its config the run's ``config.json``.

A sink whose package is missing is refused by :func:`check_sinks` before any run folder exists,
with the extra that installs it (``pip install 'prh[tensorboard]'``).
"""

from __future__ import annotations

import importlib.util
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from prh.errors import EXTRAS, InputError, MissingExtraError
from prh.training.rundir import TB_DIR, MetricsLog

SINKS = ("tensorboard", "wandb")
"""The sinks ``--log`` names (comma-separated; ``none``: ``metrics.jsonl`` alone)."""


def parse_sinks(text: str) -> tuple[str, ...]:
    """The sinks of a ``log`` value: ``"none"`` is ``()``, ``"tensorboard,wandb"`` both.

    Raises
    ------
    InputError
        An unknown or repeated sink (one line naming it and the choices).
    """
    if text.strip().lower() == "none":
        return ()
    names = tuple(n.strip() for n in text.split(","))
    for n in names:
        if n not in SINKS:
            raise InputError(
                f"log: unknown sink {n!r}; expected none or {', '.join(SINKS)} (comma-separated)"
            )
    if len(set(names)) < len(names):
        raise InputError(f"log: {text!r} names a sink twice")
    return names


def check_sinks(names: Sequence[str]) -> None:
    """Refuse a sink whose package is not installed (:class:`MissingExtraError`: the install
    hint), so that a run asking for one stops before its folder is made."""
    for name in names:
        if importlib.util.find_spec(name) is None:
            raise MissingExtraError(
                f"--log {name}: {name} is not installed; pip install 'prh[{EXTRAS[name]}]'",
                name=name,
            )


def scalars(record: dict[str, Any]) -> tuple[int | None, dict[str, float]]:
    """``(step, {name: value})`` of a metrics record: its finite numbers but ``step`` (booleans
    and text, such as a divergence's ``error``, are not scalars); step None without one."""
    step = record.get("step")
    values = {
        k: float(v)
        for k, v in record.items()
        if k != "step" and isinstance(v, (int, float)) and not isinstance(v, bool)
        and math.isfinite(v)
    }  # fmt: skip
    return (int(step) if isinstance(step, int) else None), values


class Sink(Protocol):
    """Where a copy of each metrics record goes."""

    def write(self, step: int, values: dict[str, float]) -> None:
        """Record ``values`` at ``step``."""

    def close(self) -> None:
        """Flush and release."""


class TensorBoardSink:
    """Scalars as TensorBoard event files in ``run_dir/tb`` (steps after ``resume_step``, which
    a resumed run redoes, purged)."""

    def __init__(self, run_dir: Path, resume_step: int | None) -> None:
        from torch.utils.tensorboard import SummaryWriter

        purge = None if resume_step is None else resume_step + 1
        self.writer = SummaryWriter(log_dir=str(Path(run_dir) / TB_DIR), purge_step=purge)

    def write(self, step: int, values: dict[str, float]) -> None:
        for name, value in values.items():
            self.writer.add_scalar(name, value, global_step=step)

    def close(self) -> None:
        self.writer.close()


class WandbSink:
    """Scalars to a W&B run in ``run_dir/wandb``, offline unless ``WANDB_MODE`` is set."""

    def __init__(self, run_dir: Path, config: dict[str, Any]) -> None:
        import wandb

        self.run = wandb.init(
            project=os.environ.get("WANDB_PROJECT") or "prh",
            name=Path(run_dir).name,
            dir=str(run_dir),
            config=config,
            mode=os.environ.get("WANDB_MODE") or "offline",
            settings=wandb.Settings(console="off", silent=True),
        )

    def write(self, step: int, values: dict[str, float]) -> None:
        self.run.log(values, step=step)

    def close(self) -> None:
        self.run.finish()


def open_sinks(
    names: Sequence[str], run_dir: Path, config: dict[str, Any], resume_step: int | None
) -> list[Sink]:
    """The sinks ``names`` of the run in ``run_dir`` (``config``: its ``config.json``)."""
    check_sinks(names)
    make = {
        "tensorboard": lambda: TensorBoardSink(run_dir, resume_step),
        "wandb": lambda: WandbSink(run_dir, config),
    }
    return [make[n]() for n in names]


class RunLog:
    """The trainer's log: each record to ``metrics.jsonl`` (first, and always) and its scalars
    to every sink; :meth:`close` closes the sinks."""

    def __init__(self, metrics: MetricsLog, sinks: Sequence[Sink] = ()) -> None:
        self.metrics = metrics
        self.sinks = list(sinks)

    @property
    def path(self) -> Path:
        """``metrics.jsonl``."""
        return self.metrics.path

    def write(self, record: dict[str, Any]) -> None:
        self.metrics.write(record)
        step, values = scalars(record)
        if step is None or not values:
            return
        for sink in self.sinks:
            sink.write(step, values)

    def close(self) -> None:
        for sink in self.sinks:
            sink.close()
        self.sinks = []
