"""One lock per output: a second writer of a folder or file is refused before any work.

Every command that writes takes the lock of each output (a run folder, a ``--json`` file) with
:func:`hold_output` as part of its pre-work checks (:func:`prh.io.guard_outputs`,
:func:`prh.io.check_output_dir`), and the command's entry point releases them when it returns
(:func:`released`). Library code that writes a run (``prh.training``) takes the same lock with
:func:`output_lock`; in one process the locks nest, so a command that locked its ``--out`` can
call the library that locks it again.

The lock is an OS file lock (``flock``) on a hidden file beside the output, ``.NAME.prh-lock``;
the holder's PID is written into it, so the refused writer can name it. The lock file is opened
without following a symbolic link (``O_NOFOLLOW``) and never truncated before it is checked: a
lock path that is a link, a hard link (more than one name) or a file that is not a PID is refused
in one line, so a PID is never written through a link into somebody's input (issue 36). The
kernel drops the lock when its process dies, so a lock left by a killed run is simply taken over
by the next one; the file is removed on release (a killed holder's file stays until
the next writer of that output takes it over and releases it).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from prh.errors import InputError

SUFFIX = ".prh-lock"


@dataclass(frozen=True)
class _Lock:
    """An open, ``flock``-ed lock file: its descriptor and the path it was opened at."""

    fd: int
    path: Path


# realpath of the output -> (lock, hold count): one physical lock per output and process
_HELD: dict[str, tuple[_Lock, int]] = {}

# what prh writes into its lock: a PID and a newline (or nothing, before the first write)
_PID_TEXT = re.compile(rb"\d{0,12}\n?")
_OPEN_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def lock_path(output: str | os.PathLike[str]) -> Path:
    """The lock file of ``output``: ``.NAME.prh-lock`` in the output's parent folder."""
    p = Path(os.path.realpath(output))
    return p.parent / f".{p.name}{SUFFIX}"


def is_prh_lock(st: os.stat_result, head: bytes) -> bool:
    """True when a file with status ``st`` and first bytes ``head`` can be prh's own lock file:
    a regular file with one name (no hard link to it elsewhere) that holds a PID or nothing."""
    return (
        stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and st.st_size <= 16
        and _PID_TEXT.fullmatch(head) is not None
    )  # fmt: skip


def holder_pid(output: str | os.PathLike[str]) -> int | None:
    """The PID written into ``output``'s lock file, or ``None`` when unknown."""
    try:
        fd = os.open(lock_path(output), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        return int(os.pread(fd, 16, 0).strip())
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


def _not_a_lock(what: str, output: object, lp: Path) -> InputError:
    return InputError(
        f"{what} {output}: the lock path {lp} exists and is not a prh lock (a link, a folder or "
        "another file); remove it or choose another output"
    )


def _open_lock(lp: Path, what: str, output: object) -> int | None:
    """Open (or create) ``lp`` as prh's lock file, never through a link; ``None`` when no file
    can be made there (a read-only folder, /proc): the writability checks then say so."""
    try:
        fd = os.open(lp, _OPEN_FLAGS, 0o644)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO, errno.ENOTDIR):
            raise _not_a_lock(what, output, lp) from None
        if e.errno in (errno.ENOSPC, errno.EMFILE, errno.ENFILE, errno.EDQUOT):
            msg = f"{e.strerror} (taking the lock of {what} {output})"
            raise OSError(e.errno, msg, str(lp)) from None
        return None
    try:
        ok = is_prh_lock(os.fstat(fd), os.pread(fd, 17, 0))
    except OSError:
        ok = False
    if not ok:
        os.close(fd)
        raise _not_a_lock(what, output, lp)
    return fd


def _names(fd: int, lp: Path) -> bool:
    """True when ``lp`` still names the file open at ``fd`` (a releasing holder unlinks it)."""
    try:
        a, b = os.fstat(fd), os.stat(lp, follow_symlinks=False)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _acquire(lp: Path, what: str, output: object) -> _Lock | None:
    """``flock`` ``lp`` without waiting; refuse in one line when another process holds it."""
    for _ in range(20):  # a holder that unlinks its file as we open it: retry on the new one
        fd = _open_lock(lp, what, output)
        if fd is None:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            pid = holder_pid(Path(output))  # type: ignore[arg-type]
            who = f"process {pid}" if pid is not None else "another process"
            raise InputError(
                f"{what} {output}: in use by {who} (lock {lp}); wait for it to finish or choose "
                "another output"
            ) from None
        if _names(fd, lp):
            return _Lock(fd, lp)
        os.close(fd)
    raise InputError(f"{what} {output}: its lock {lp} keeps changing; try again")


def _write_pid(lock: _Lock, what: str, output: object) -> None:
    """Write this process's PID into its lock; on failure (a full disk) drop the lock, remove
    the file and name it in the error."""
    try:
        os.ftruncate(lock.fd, 0)
        os.pwrite(lock.fd, f"{os.getpid()}\n".encode(), 0)
    except OSError as e:
        _drop(lock)
        msg = f"{e.strerror or e} (taking the lock of {what} {output})"
        raise OSError(e.errno, msg, str(lock.path)) from None


def hold_output(output: str | os.PathLike[str], what: str = "--out") -> None:
    """Take ``output``'s lock for the rest of this process (or until :func:`release_all`).

    Raises
    ------
    InputError
        When another process holds it (one line naming the output and the holder's PID), or
        when the lock path exists as anything but prh's own lock (a link, say).
    OSError
        When the lock cannot be written (a full disk): the error names the lock file, and no
        lock file is left.
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
    lock = _acquire(lp, what, output)
    if lock is None:
        return
    _write_pid(lock, what, output)
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


def _drop(lock: _Lock) -> None:
    """Remove the lock file, then release it. In that order: a writer that opened the file just
    before sees it unlinked once it gets the lock (:func:`_acquire` then retries on a new file),
    so no two processes can both hold one output. The name is removed only while it still names
    this lock's file."""
    if _names(lock.fd, lock.path):
        with contextlib.suppress(OSError):
            os.unlink(lock.path)
    os.close(lock.fd)


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
