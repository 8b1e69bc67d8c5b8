"""Argument types shared by subcommands: they turn bad flags into one clear argparse error."""

from __future__ import annotations

import argparse
import math
import os
from dataclasses import fields
from typing import TypeVar

T = TypeVar("T")

# Seeds feed numpy's SeedSequence and torch.manual_seed; one range keeps them interchangeable.
MAX_SEED = 2**32 - 1
# torch.set_num_threads accepts any count, and crashes the process far above the core count.
MAX_THREADS = 1024


def positive_int(text: str) -> int:
    """An integer >= 1 (``--worlds``, ``--k``, ``--steps``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def bounded_int(hi: int, what: str, lo: int = 1):
    """An argparse type: an integer in [``lo``, ``hi``], ``what`` naming its unit."""

    def parse(text: str) -> int:
        value = positive_int(text)
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"expected {lo:,} to {hi:,} {what}, got {value:,}")
        return value

    return parse


def old_spelling(parser, old: str, new: str, dest: str, flag: bool = False, **kw) -> None:
    """Keep a renamed flag's ``old`` spelling working for one release, hidden from ``--help``:
    it stores into ``new``'s ``dest`` (``flag``: a store-true switch; ``kw``, such as ``type``,
    parse its value as ``new``'s). Silent, so a refusal stays one line on stderr; the renames
    are listed in the README ("Renamed flags")."""
    action = "store_true" if flag else "store"
    parser.add_argument(
        old, dest=dest, action=action, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kw
    )


def cpu_count() -> int:
    """CPUs this process may run on (its affinity mask; the whole machine's count elsewhere)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def local_workers(text: str) -> int:
    """A count of local worker processes: 1 to this machine's CPUs (never clamped in silence;
    a pool larger than the cores only queues work and can start a process storm)."""
    value = positive_int(text)
    cpus = cpu_count()
    if value > cpus:
        raise argparse.ArgumentTypeError(
            f"expected 1 to {cpus} worker processes (this machine's CPUs), got {value:,}"
        )
    return value


def nonnegative_int(text: str) -> int:
    """An integer >= 0 (``--null``, ``--bootstrap``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


def fraction(text: str) -> float:
    """A float in [0, 1] (``--rho``); NaN refused."""
    value = _finite(text, "a number in [0, 1]")
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {value}")
    return value


def seed(text: str) -> int:
    """A seed: an integer in [0, 2**32 - 1] (``--seed`` everywhere)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer seed, got {text!r}") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"expected a seed in [0, {MAX_SEED}], got {value}")
    return value


def _finite(text: str, expected: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {value}")
    return value


def finite_float(text: str) -> float:
    """Any finite number (NaN and infinities refused)."""
    return _finite(text, "a finite number")


def positive_float(text: str) -> float:
    """A finite number > 0 (``--lr``, ``--rbf-sigma``); NaN and infinities refused."""
    value = _finite(text, "a finite positive number")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a finite positive number, got {value}")
    return value


def nonnegative_float(text: str) -> float:
    """A finite number >= 0 (``--alpha``); NaN and infinities refused."""
    value = _finite(text, "a finite number >= 0")
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {value}")
    return value


DEVICE_HELP = "auto (CUDA when present, else the CPU), cpu, cuda or cuda:N (default auto)"


def device_name(text: str) -> str:
    """``auto``, ``cpu``, ``cuda`` or ``cuda:N``: the one device convention of every command
    (argparse type: anything else is one line). Whether the machine has it is checked later."""
    name = text.strip().lower()
    index = name[5:] if name.startswith("cuda:") else "0"
    if name in ("cpu", "cuda", "auto") or (name.startswith("cuda:") and index.isdigit()):
        return name
    raise argparse.ArgumentTypeError(f"expected auto, cpu, cuda or cuda:N, got {text!r}")


def as_request(cls: type[T], args: argparse.Namespace) -> T:
    """The parsed flags as ``cls``, a frozen dataclass with one field per flag (its dest), the
    config a command hands to its one library call; lists become tuples. A field without a flag
    in this parser (another action's) keeps its default."""
    given = {f.name: getattr(args, f.name) for f in fields(cls) if hasattr(args, f.name)}
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in given.items()})
