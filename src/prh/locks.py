"""One lock per output: a second writer of a folder or file is refused before any work.

Every command that writes takes the lock of each output (a run folder, a ``--json`` file) with
:func:`hold_output` as part of its pre-work checks (:func:`prh.io.guard_outputs`,
:func:`prh.io.check_output_dir`), and the command's entry point releases them when it returns
(:func:`released`). Library code that writes a run (``prh.training``) takes the same lock with
:func:`output_lock`; in one process the locks nest, so a command that locked its ``--out`` can
call the library that locks it again.

The lock is an OS file lock (``flock``, through the `filelock` package) on a hidden file beside the
output, ``.NAME.prh-lock``; the holder's PID is written into it, so the refused writer can name
it. The kernel drops the lock when its process dies, so a lock left by a killed run is simply
taken over by the next one; the file is removed on release (a killed holder's file stays until
the next writer of that output takes it over and releases it).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from prh.errors import InputError

SUFFIX = ".prh-lock"

# realpath of the output -> (lock, hold count): one physical lock per output and process
_HELD: dict[str, tuple[FileLock, int]] = {}


def lock_path(output: str | os.PathLike[str]) -> Path:
    """The lock file of ``output``: ``.NAME.prh-lock`` in the output's parent folder."""
    p = Path(os.path.realpath(output))
    return p.parent / f".{p.name}{SUFFIX}"


def _write_pid(fd: int) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)


def holder_pid(output: str | os.PathLike[str]) -> int | None:
    """The PID written into ``output``'s lock file, or ``None`` when unknown."""
    try:
        return int(lock_path(output).read_text().strip())
    except (OSError, ValueError):
        return None


def hold_output(output: str | os.PathLike[str], what: str = "--out") -> None:
    """Take ``output``'s lock for the rest of this process (or until :func:`release_all`).

    Raises
    ------
    InputError
        When another process holds it: one line naming the output and the holder's PID.
    """
    if os.environ.get("RANK", "0") not in ("", "0"):
        return  # a torchrun rank other than 0: rank 0 holds the run's lock for all of them
    key = os.path.realpath(output)
    if key in _HELD:
        lock, n = _HELD[key]
        _HELD[key] = (lock, n + 1)
        return
    lp = lock_path(output)
    try:  # a folder output's parents are created now rather than by the command, a moment later
        lp.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # nothing can be written there; the writability checks say so in one line
    lock = FileLock(str(lp), timeout=0, on_acquired=_write_pid)
    try:
        lock.acquire()
    except Timeout:
        if not lp.exists():  # no holder: the lock file could not be made there (/proc, say);
            return  # the command's own folder check says so in one line
        pid = holder_pid(output)
        who = f"process {pid}" if pid is not None else "another process"
        raise InputError(
            f"{what} {output}: in use by {who} (lock {lp}); wait for it to finish or choose "
            "another output"
        ) from None
    except PermissionError:
        return  # a read-only folder: the writability checks refuse it in one line
    _HELD[key] = (lock, 1)


def release_output(output: str | os.PathLike[str]) -> None:
    """Drop one hold of ``output``'s lock; the lock goes when its last hold does."""
    key = os.path.realpath(output)
    if key not in _HELD:
        return
    lock, n = _HELD.pop(key)
    if n > 1:
        _HELD[key] = (lock, n - 1)
    else:
        _drop(lock)


def _drop(lock: FileLock) -> None:
    """Remove the lock file, then release it. In that order: a writer that opened the file just
    before sees it unlinked once it gets the lock (`filelock` then retries on a new file), so no
    two processes can both hold one output."""
    with contextlib.suppress(OSError):
        os.unlink(lock.lock_file)
    lock.release(force=True)


def release_all() -> None:
    """Release every lock this process holds."""
    while _HELD:
        _, (lock, _) = _HELD.popitem()
        _drop(lock)


@contextlib.contextmanager
def output_lock(output: str | os.PathLike[str], what: str = "--out") -> Iterator[None]:
    """Hold ``output``'s lock inside the ``with`` block (nests with :func:`hold_output`)."""
    hold_output(output, what)
    try:
        yield
    finally:
        release_output(output)


@contextlib.contextmanager
def released() -> Iterator[None]:
    """Release every lock taken inside the block when it ends (a command's lifetime)."""
    before = set(_HELD)
    try:
        yield
    finally:
        for key in [k for k in _HELD if k not in before]:
            lock, _ = _HELD.pop(key)
            _drop(lock)
