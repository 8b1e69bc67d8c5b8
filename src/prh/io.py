"""Small I/O helpers shared by every command: atomic writes and early writability checks.

Everything that writes a result goes through :func:`atomic_write`, so a file is either whole or
absent: we write to a temporary name in the same folder, flush, fsync, then ``os.replace``.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from prh.errors import InputError


def check_writable(path: str | os.PathLike[str], what: str = "output") -> Path:
    """Fail early, before any long computation, if ``path`` cannot be written.

    Parameters
    ----------
    path : path-like
        The file that will be written later.
    what : str
        How to name the file in the error message (for example ``"--json"``).

    Returns
    -------
    Path
        ``path`` as a :class:`~pathlib.Path`.

    Raises
    ------
    InputError
        When the parent folder is missing or not writable, or ``path`` is a folder.
    """
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise InputError(f"{what} {p}: is a directory, expected a file path")
    if not parent.is_dir():
        raise InputError(f"{what} {p}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise InputError(f"{what} {p}: folder {parent} is not writable")
    if p.exists() and not os.access(p, os.W_OK):
        raise InputError(f"{what} {p}: file is not writable")
    return p


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; on success rename it onto ``path``.

    On any exception the temporary file is removed and ``path`` is left untouched.
    """
    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent or Path("."))
    try:
        with os.fdopen(fd, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_json(path: str | os.PathLike[str], obj: Any, indent: int = 2) -> None:
    """Write ``obj`` as JSON, atomically (whole or not at all)."""
    text = json.dumps(obj, indent=indent, sort_keys=False, default=_json_default) + "\n"
    with atomic_write(path, "w") as f:
        f.write(text)


def _json_default(o: Any) -> Any:
    # numpy scalars and arrays appear in figures; JSON has no such types.
    if hasattr(o, "tolist"):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
