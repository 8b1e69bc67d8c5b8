"""Small I/O helpers shared by every command: atomic writes and early writability checks.

Everything that writes a result goes through :func:`atomic_write`, so a file is either whole or
absent: we write to a temporary name in the same folder, flush, fsync, then ``os.replace``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from prh.errors import CheckpointError, InputError


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
    if p.exists() and not p.is_file():
        # atomic_write renames a new file onto the path: it would replace the device or pipe
        raise InputError(f"{what} {p}: not a regular file (a device or a pipe?), expected a file")
    if parent.exists() and not parent.is_dir():
        raise InputError(f"{what} {p}: {parent} is a file, not a folder")
    if not parent.is_dir():
        raise InputError(f"{what} {p}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise InputError(f"{what} {p}: folder {parent} is not writable")
    if p.exists() and not os.access(p, os.W_OK):
        raise InputError(f"{what} {p}: file is not writable")
    return p


PathLike = str | os.PathLike[str]


def _same_file(a: Path, b: Path) -> bool:
    """True when ``a`` and ``b`` name one file (symlinks and hard links included)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist yet
        return False


def refuse_input_overwrite(
    outputs: Mapping[str, PathLike | None], inputs: Iterable[PathLike | None]
) -> None:
    """Refuse, before any work, an output path that names one of the command's inputs.

    Parameters
    ----------
    outputs : mapping of str to path-like or None
        What the command will write, keyed by how to name it in the message (``"--json"``).
        ``None`` entries (an output that was not asked for) are skipped.
    inputs : iterable of path-like or None
        Every file the command reads, including files inside an input run folder (a caption
        run's manifest, say). A folder given here protects itself and every file under it that
        exists now: a command that reads a folder may read any of them.

    Raises
    ------
    InputError
        One line naming the output flag, the path and the input it would overwrite.
    """
    ins = [Path(i) for i in inputs if i is not None]
    for what, out in outputs.items():
        if out is None:
            continue
        o = Path(out)
        for i in ins:
            inside = i.is_dir() and o.exists() and _is_under(o, i)
            if _same_file(o, i) or inside:
                raise InputError(
                    f"{what} {o}: would overwrite the input {i}; choose another output path"
                )


def _is_under(path: Path, folder: Path) -> bool:
    return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(folder))


def guard_outputs(
    outputs: Mapping[str, PathLike | None], inputs: Iterable[PathLike | None] = ()
) -> None:
    """:func:`refuse_input_overwrite`, then :func:`check_writable` on each output file."""
    refuse_input_overwrite(outputs, inputs)
    for what, out in outputs.items():
        if out is not None:
            check_writable(out, what)


def check_output_dir(path: PathLike, what: str = "--out") -> Path:
    """Fail early if ``path`` cannot be used (or created) as an output folder.

    The folder itself need not exist; its nearest existing ancestor must be a writable folder.

    Raises
    ------
    InputError
        When ``path`` (or an ancestor) is a regular file, or the folder cannot be created.
    """
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise InputError(f"{what} {p}: is a file, expected a folder")
    probe = p
    while not probe.exists():
        parent = probe.parent
        if parent == probe:
            break
        probe = parent
    if probe.exists() and not probe.is_dir():
        raise InputError(f"{what} {p}: {probe} is a file, so the folder cannot be created")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise InputError(f"{what} {p}: folder {probe} is not writable")
    return p


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; on success rename it onto ``path``.

    On any exception the temporary file is removed and ``path`` is left untouched. The file gets
    the mode a plain ``open`` would give it (``0o666`` less the umask), not ``mkstemp``'s 0600.
    """
    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent or Path("."))
    try:
        os.chmod(tmp, 0o666 & ~_umask())
        with os.fdopen(fd, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    """The process's umask (read by setting it and putting it back: there is no getter)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def json_safe(obj: Any) -> Any:
    """``obj`` with every NaN or infinity replaced by ``None`` (JSON has no such numbers), through
    nested dicts, lists and tuples; dict keys become strings."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    return obj


def write_json(path: str | os.PathLike[str], obj: Any, indent: int = 2) -> None:
    """Write ``obj`` as JSON, atomically (whole or not at all)."""
    text = json.dumps(obj, indent=indent, sort_keys=False, default=_json_default) + "\n"
    with atomic_write(path, "w") as f:
        f.write(text)


def write_tensors(
    path: str | os.PathLike[str], tensors: Mapping[str, Any], metadata: dict[str, str] | None = None
) -> None:
    """Write numpy arrays to a safetensors file, atomically (whole or not at all)."""
    import numpy as np
    from safetensors.numpy import save

    blob = save({k: np.ascontiguousarray(v) for k, v in tensors.items()}, metadata=metadata)
    with atomic_write(path, "wb") as f:
        f.write(blob)


def read_tensors(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a safetensors file into numpy arrays.

    Raises
    ------
    CheckpointError
        A missing file, or bytes that are not safetensors.
    """
    from safetensors.numpy import load_file

    p = Path(path)
    if not p.is_file():
        raise CheckpointError(f"{p}: missing file")
    try:
        return load_file(str(p))
    except Exception as e:  # safetensors raises its own error types on bad bytes
        raise CheckpointError(f"{p}: not a readable safetensors file ({e})") from None


def _json_default(o: Any) -> Any:
    # numpy scalars and arrays appear in figures; JSON has no such types.
    if hasattr(o, "tolist"):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
