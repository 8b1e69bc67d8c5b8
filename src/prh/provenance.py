"""Provenance: every JSON output says what wrote it, from which inputs, with which seed and options.

Every JSON file prh writes as a result starts with the same header::

    {"format": "prh-measure/1", "prh_version": "0.1.0",
     "inputs": [{"path": "/abs/a.safetensors", "bytes": 123, "sha256": "..."}, ...],
     "seed": 0, "options": {...the command's arguments...}, ...the result...}

and every row of a sweep's ``results.jsonl`` carries ``"format": "prh-result/1"``.

``format`` is ``prh-<kind>/<n>``: ``kind`` names what the file holds, ``n`` its layout version,
raised when a field changes meaning or disappears (adding a field does not raise it).

Inputs are recorded as absolute paths with their size and, for files up to
:data:`HASH_LIMIT_BYTES`, their SHA-256; larger files get their modification time instead (hashing
a multi-gigabyte feature file would cost more than the step that reads it). A folder is recorded by
path only; a model spec that is not a path (``hf:...``, ``minilm``) is recorded as
``{"spec": ...}``.

Readers call :func:`expect_format`: a file of another kind, or of a newer layout than this prh
reads, is refused with one line naming the file, what it holds and what was expected; a file
written before prh stamped its outputs (no ``format``) is read as layout 0 with a one-line note.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from prh.errors import InputError
from prh.jsonio import loads

HASH_LIMIT_BYTES = 256 * 2**20  # hash inputs up to 256 MiB; record size + mtime above that

# kind -> current layout version of the files prh writes.
FORMATS: dict[str, int] = {
    "measure": 2,  # prh measure --json (2: one shape for a pair, --metric all and a matrix)
    "fit-law": 1,  # prh fit-law law.json / --json
    "efficiency": 1,  # prh efficiency --json
    "prove": 1,  # prh prove --json
    "match": 1,  # prh match --json
    "bridge-score": 1,  # prh bridge score --json (alignment matrix and rotation scores)
    "caption-eval": 1,  # prh caption --eval --json
    "demo-summary": 1,  # prh demo summary.json
    "result": 1,  # one row of a sweep's results.jsonl
}

# argparse attributes that are plumbing, not options of the result.
INTERNAL_ARGS = frozenset({"func", "command", "handler", "cmd", "subcommand"})


def format_id(kind: str) -> str:
    """``"prh-<kind>/<n>"`` for the current layout of ``kind``."""
    if kind not in FORMATS:
        raise ValueError(f"unknown output kind {kind!r}; expected one of {sorted(FORMATS)}")
    return f"prh-{kind}/{FORMATS[kind]}"


def prh_version() -> str:
    from prh import __version__

    return __version__


def describe_input(item: str | os.PathLike[str]) -> dict[str, Any]:
    """Path, size and SHA-256 (or mtime when large) of a file; path of a folder; else a spec."""
    p = Path(item).expanduser()
    if p.is_file():
        st = p.stat()
        d: dict[str, Any] = {"path": str(p.resolve()), "bytes": st.st_size}
        if st.st_size <= HASH_LIMIT_BYTES:
            d["sha256"] = sha256_file(p)
        else:
            d["mtime"] = st.st_mtime
        return d
    if p.is_dir():
        return {"path": str(p.resolve()), "folder": True}
    return {"spec": str(item)}


def sha256_file(path: str | os.PathLike[str], chunk: int = 2**20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def cli_options(args: argparse.Namespace | Mapping[str, Any]) -> dict[str, Any]:
    """The command's arguments as JSON values, without argparse plumbing (``func``, ``_x``)."""
    items = vars(args).items() if isinstance(args, argparse.Namespace) else args.items()
    return {
        k: _jsonable(v)
        for k, v in sorted(items)
        if k not in INTERNAL_ARGS and not k.startswith("_") and not callable(v)
    }


def _jsonable(v: Any) -> Any:
    if v is None or isinstance(v, bool | int | float | str):
        return v
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple | set | frozenset):
        return [_jsonable(x) for x in v]
    return str(v)


def stamp(
    kind: str,
    *,
    inputs: Iterable[str | os.PathLike[str] | None] = (),
    seed: int | None = None,
    options: argparse.Namespace | Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The provenance header of a ``kind`` output (put it first: ``{**stamp(...), **result}``).

    Parameters
    ----------
    kind : str
        One of :data:`FORMATS`.
    inputs : iterable of paths or specs
        What the result was computed from (files are hashed, see :func:`describe_input`);
        ``None`` entries (an optional input not given) are skipped.
    seed : int, optional
        The seed that made it (None when nothing random was drawn).
    options : Namespace or mapping, optional
        The command's arguments (``vars(args)``; plumbing is dropped by :func:`cli_options`).
    """
    return {
        "format": format_id(kind),
        "prh_version": prh_version(),
        "inputs": [describe_input(i) for i in inputs if i is not None],
        "seed": seed,
        "options": cli_options(options) if options is not None else {},
    }


def stamped(kind: str, result: Mapping[str, Any], **kw: Any) -> dict[str, Any]:
    """``result`` with the provenance header of :func:`stamp` in front (header keys win)."""
    head = stamp(kind, **kw)
    return {**head, **{k: v for k, v in result.items() if k not in head}}


def parse_format(value: Any) -> tuple[str, int] | None:
    """``("measure", 1)`` from ``"prh-measure/1"``; None for anything else."""
    if not isinstance(value, str) or not value.startswith("prh-") or "/" not in value:
        return None
    kind, _, n = value[4:].rpartition("/")
    return (kind, int(n)) if kind and n.isdigit() else None


def _stderr_note(msg: str) -> None:
    print(f"prh: note: {msg}", file=sys.stderr)


def expect_format(
    obj: Any,
    kind: str,
    path: str | os.PathLike[str],
    *,
    note: Callable[[str], None] = _stderr_note,
) -> int:
    """Check that ``obj`` (read from ``path``) is a ``kind`` output this prh can read.

    Returns
    -------
    int
        Its layout version; 0 for a file written before prh stamped its outputs (one note).

    Raises
    ------
    InputError
        Not a JSON object, another kind of file, or a layout newer than this prh reads.
    """
    expected = format_id(kind)
    if not isinstance(obj, Mapping):
        raise InputError(f"{path}: expected a JSON object ({expected}), got {type(obj).__name__}")
    if "format" not in obj:
        note(f"{path} has no 'format' field (written before prh stamped its outputs, or not by "
             f"prh); reading it as an unversioned {expected.rsplit('/', 1)[0]} file")  # fmt: skip
        return 0
    got = parse_format(obj["format"])
    if got is None or got[0] != kind:
        raise InputError(f"{path}: a {obj['format']!r} file; expected {expected}")
    if got[1] > FORMATS[kind]:
        raise InputError(
            f"{path}: format {obj['format']} is newer than this prh "
            f"{prh_version()} reads ({expected}); upgrade prh"
        )
    return got[1]


def expect_rows(
    rows: list[Mapping[str, Any]],
    kind: str,
    path: str | os.PathLike[str],
    *,
    note: Callable[[str], None] = _stderr_note,
) -> int:
    """:func:`expect_format` for the rows of a JSON-lines file: one note for a whole older file.

    Rows must agree: a file mixing unversioned and versioned rows is read (a sweep resumed by a
    newer prh) with one note; a row of another kind or a newer layout is refused, naming its line.
    """
    versions = set()
    unversioned = 0
    for i, row in enumerate(rows):
        if isinstance(row, Mapping) and "format" not in row:
            unversioned += 1
            versions.add(0)
            continue
        versions.add(expect_format(row, kind, f"{path} row {i + 1}", note=note))
    if unversioned:
        note(f"{path}: {unversioned} of {len(rows)} rows have no 'format' field (written before "
             f"prh stamped its outputs); read as {format_id(kind)}")  # fmt: skip
    return min(versions) if versions else FORMATS[kind]


def sniff_json_lines(path: str | os.PathLike[str], kind: str, what: str) -> None:
    """Refuse, in one line, a whole-JSON prh output given where ``what`` (JSON lines) is expected.

    ``fit-law`` given a ``measure`` JSON says so instead of "line 1 is not a JSON object".
    """

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
        obj = loads(text, p)
    except (OSError, UnicodeDecodeError, ValueError):
        return  # not one JSON document: the JSON-lines reader reports what it finds
    fmt = obj.get("format") if isinstance(obj, Mapping) else None
    if fmt is None and "\n" not in text.strip():
        return  # one line: a single row, checked by the rows reader
    parsed = parse_format(fmt)
    if parsed is not None and parsed[0] == kind:
        return  # a single stamped row
    holds = f"a {fmt!r} file" if fmt else "one JSON document, not JSON lines"
    raise InputError(f"{path}: {holds}; expected {what} ({format_id(kind)} rows)")
