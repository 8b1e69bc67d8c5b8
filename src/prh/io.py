"""Small I/O helpers shared by every command: atomic writes and early writability checks.

Everything that writes a result goes through :func:`atomic_write`, so a file is either whole or
absent: we write to a temporary name in the same folder, flush, fsync, then ``os.replace``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from prh.errors import CheckpointError, InputError
from prh.locks import hold_output


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


@dataclass(frozen=True)
class _InputIndex:
    """A command's inputs resolved once: by real path, by (device, inode) (hard links), and
    the real paths of the input folders; so checking N outputs against M inputs costs
    N x (path depth) look-ups, not N x M path resolutions."""

    by_real: dict[str, Path]
    by_inode: dict[tuple[int, int], Path]
    folders: dict[str, Path]

    @classmethod
    def of(cls, inputs: Iterable[PathLike | None]) -> _InputIndex:
        by_real: dict[str, Path] = {}
        by_inode: dict[tuple[int, int], Path] = {}
        folders: dict[str, Path] = {}
        for i in dict.fromkeys(Path(x) for x in inputs if x is not None):
            real = os.path.realpath(i)  # symlinks and ``..`` resolved before any comparison
            by_real.setdefault(real, i)
            with contextlib.suppress(OSError):
                st = os.stat(real)
                by_inode.setdefault((st.st_dev, st.st_ino), i)
                if stat.S_ISDIR(st.st_mode):
                    folders.setdefault(real, i)
        return cls(by_real, by_inode, folders)

    def same_file(self, real: str) -> Path | None:
        """The input that ``real`` (a resolved path) names, hard links included."""
        if real in self.by_real:
            return self.by_real[real]
        try:
            st = os.stat(real)
        except OSError:  # does not exist yet
            return None
        return self.by_inode.get((st.st_dev, st.st_ino))

    def folder_above(self, real: str) -> Path | None:
        """The input folder that holds ``real`` (a resolved path), if any."""
        for parent in Path(real).parents:
            if str(parent) in self.folders:
                return self.folders[str(parent)]
        return None


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
        run's manifest, say). A folder given here protects itself and every path under it,
        existing or not: a command that reads a folder may read any file in it, and an output
        written there would change the input the next reader sees. Every path is resolved
        (symbolic links, ``..``) before it is compared; hard links are the same file.

    Raises
    ------
    InputError
        One line naming the output flag, the path and the input it would overwrite.
    """
    index = _InputIndex.of(inputs)
    for what, out in outputs.items():
        if out is None:
            continue
        o = Path(out)
        real = os.path.realpath(o)
        folder = index.folder_above(real)
        hit = index.same_file(real) or (folder if o.exists() else None)
        if hit is not None:  # an overwrite (of an input, or of a file in an input folder)
            raise InputError(
                f"{what} {o}: would overwrite the input {hit}; choose another output path"
            )
        if folder is not None:
            raise InputError(
                f"{what} {o}: lies inside the input folder {folder}; choose another output path"
            )


def guard_outputs(
    outputs: Mapping[str, PathLike | None], inputs: Iterable[PathLike | None] = ()
) -> None:
    """:func:`refuse_input_overwrite`, :func:`check_writable` on each output file, then each
    output's lock (:func:`prh.locks.hold_output`: a second writer is refused in one line)."""
    refuse_input_overwrite(outputs, inputs)
    for what, out in outputs.items():
        if out is not None:
            check_writable(out, what)
    for what, out in outputs.items():
        if out is not None:
            hold_output(out, what)


def check_output_dir(path: PathLike, what: str = "--out") -> Path:
    """Fail early if ``path`` cannot be used (or created) as an output folder, then take its
    lock (:func:`prh.locks.hold_output`: a second writer is refused in one line).

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
    hold_output(p, what)
    return p


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; on success rename it onto ``path``.

    On any exception the temporary file is removed and ``path`` is left untouched. The file gets
    the mode a plain ``open`` would give it (``0o666`` less the umask), not ``mkstemp``'s 0600.
    """
    p = Path(path)
    tmp = _temp_beside(p)
    try:
        with _named_errors(p), open(tmp, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _temp_beside(p: Path) -> str:
    """A new empty file beside ``p`` with the mode a plain ``open`` would give (the umask's)."""
    with _named_errors(p):
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent or Path("."))
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it 0600, a plain file would not be
    return tmp


def _umask() -> int:
    """This process's umask, read without changing it (``os.umask`` sets it, racing threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


@contextlib.contextmanager
def _named_errors(p: Path) -> Iterator[None]:
    """An ``OSError`` without a file name (a full disk during ``write``) gets ``p`` as its name,
    so the one-line message says which output could not be written."""
    try:
        yield
    except OSError as e:
        if e.filename is None or str(e.filename).endswith(".tmp"):
            raise OSError(e.errno, e.strerror or str(e), str(p)) from None
        raise


def write_all(files: Mapping[PathLike, bytes]) -> None:
    """Write several files as one output: all of them, or none.

    Every file is written whole to a temporary name first; only when all are on disk are they
    renamed into place. A failure (a full disk, say) removes every temporary file and leaves each
    path as it was; the error names the file that could not be written.
    """
    temps: list[tuple[str, Path]] = []
    try:
        for path, blob in files.items():
            p = Path(path)
            tmp = _temp_beside(p)
            temps.append((tmp, p))
            with _named_errors(p), open(tmp, "wb") as f:
                f.write(blob)
                f.flush()
                os.fsync(f.fileno())
        for tmp, p in temps:
            os.replace(tmp, p)
    except BaseException:
        for tmp, _ in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        raise


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


def json_bytes(obj: Any, indent: int = 2) -> bytes:
    """``obj`` as the UTF-8 JSON text :func:`write_json` writes."""
    return (json.dumps(obj, indent=indent, sort_keys=False, default=_json_default) + "\n").encode()


def write_json(path: str | os.PathLike[str], obj: Any, indent: int = 2) -> None:
    """Write ``obj`` as JSON, atomically (whole or not at all)."""
    with atomic_write(path, "wb") as f:
        f.write(json_bytes(obj, indent))


def canonical_safetensors(blob: bytes) -> bytes:
    """``blob`` (safetensors bytes) with its JSON header's keys sorted, the metadata's included.

    safetensors writes ``__metadata__`` from a hash map whose order changes from process to
    process, so one model saved twice gave two files with one content and two sha256s. Sorting
    moves no tensor data (offsets are relative to the data section) and keeps the header's length
    (same keys and values, compact JSON), so the result is a valid file, byte-identical for equal
    tensors and metadata.
    """
    n = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8 : 8 + n])
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    if len(text) > n:  # cannot happen for safetensors' own compact header; keep it as it was
        return blob
    return blob[:8] + text + b" " * (n - len(text)) + blob[8 + n :]


def write_tensors(
    path: str | os.PathLike[str], tensors: Mapping[str, Any], metadata: dict[str, str] | None = None
) -> None:
    """Write numpy arrays to a safetensors file, atomically (whole or not at all)."""
    import numpy as np
    from safetensors.numpy import save

    blob = save({k: np.ascontiguousarray(v) for k, v in tensors.items()}, metadata=metadata)
    with atomic_write(path, "wb") as f:
        f.write(canonical_safetensors(blob))


def read_tensors(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a safetensors file into numpy arrays.

    Raises
    ------
    CheckpointError
        A missing file, or bytes that are not safetensors.
    """
    return read_tensors_and_metadata(path)[0]


def read_tensors_and_metadata(
    path: str | os.PathLike[str],
) -> tuple[dict[str, Any], dict[str, str]]:
    """A safetensors file's numpy arrays and its string metadata, in one read.

    Raises
    ------
    CheckpointError
        A missing file, or bytes that are not safetensors.
    """
    from safetensors import safe_open

    p = Path(path)
    if not p.is_file():
        raise CheckpointError(f"{p}: missing file")
    try:
        with safe_open(str(p), framework="numpy") as f:
            return {k: f.get_tensor(k) for k in f.keys()}, dict(f.metadata() or {})
    except Exception as e:  # safetensors raises its own error types on bad bytes
        raise CheckpointError(f"{p}: not a readable safetensors file ({e})") from None


def _json_default(o: Any) -> Any:
    # numpy scalars and arrays appear in figures; JSON has no such types.
    if hasattr(o, "tolist"):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
