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


M_TRIM_THRESHOLD = -1  # glibc mallopt parameters (malloc.h)
M_MMAP_MAX = -4


def keep_freed_memory() -> bool:
    """Make glibc's allocator serve every allocation from its heap and keep what is freed there.

    By default glibc maps each allocation over 32 MiB fresh from the kernel and unmaps it when
    freed, so a CPU forward pass at batch 128 (the demo's image trunk: 200 MB activations) pays
    a page fault for every page of every such tensor, every batch: a fifth of the default demo's
    CPU time was system time. ``mallopt(M_MMAP_MAX, 0)`` and a 1 GiB trim threshold keep those
    pages in the process instead (the demo's image encoder 175.9 -> 422.0 images/s on 2 cores,
    ``benchmarks/bench_alloc.py``). Numbers are unchanged: only where memory comes from.

    Called once per process by ``prh``'s command line and its pool workers. ``PRH_MALLOC=system``
    leaves the allocator as it is. Returns whether the settings were applied (False elsewhere
    than glibc, or when opted out).
    """
    if os.environ.get("PRH_MALLOC", "").lower() == "system":
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to tune
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, GIB))
