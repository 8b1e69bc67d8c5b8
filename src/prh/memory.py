"""Memory estimated before a dense allocation, so a request that cannot fit is one line, not a
traceback from numpy's allocator minutes later."""

from __future__ import annotations

import os

from prh.errors import InputError

GIB = 2**30


def available_bytes() -> int:
    """Memory this process can still allocate: ``MemAvailable`` from ``/proc/meminfo`` (Linux),
    else the physical memory size."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 2**63 - 1  # unknown: do not refuse


def check_fits(need: int, what: str, available: int | None = None) -> None:
    """Refuse ``what`` in one line when its estimated ``need`` (bytes) exceeds the free memory.

    Raises
    ------
    InputError
        ``what`` needs about X GiB, Y GiB available.
    """
    have = available_bytes() if available is None else available
    if need > have:
        raise InputError(
            f"{what} needs about {need / GIB:,.1f} GiB of memory, {have / GIB:,.1f} GiB available"
        )
