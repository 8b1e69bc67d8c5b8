"""Typed fields of ``results.jsonl`` rows: a bad row is one line naming the file, line and field.

A sweep writes one JSON object per line (:func:`prh.scaling.sweep.read_results` reads them). The
readers of those rows (:func:`prh.scaling.fit.law_data_from_rows`,
:func:`prh.scaling.efficiency.curves_from_rows`) take each field through these helpers, so a row
edited by hand (``"score": "high"``, a deleted ``"samples"``) is refused with what was expected
and what came, never a ``KeyError`` or a ``ValueError`` from deep inside numpy.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prh.errors import InputError

_MISSING = object()


def read_rows(results: str | os.PathLike[str]) -> tuple[list[dict], list[str]]:
    """The rows of a ``results.jsonl`` and where each came from (``"PATH line N"``), for
    ``prh fit-law`` and ``prh efficiency`` (``RESULTS`` names the positional argument)."""
    from prh.scaling.sweep import read_results

    if Path(results).is_dir():
        hint = Path(results) / "results.jsonl"
        raise InputError(
            f"RESULTS {results}: is a folder, expected the results.jsonl file"
            + (f" (try {hint})" if hint.is_file() else "")
        )
    if Path(results).exists() and not Path(results).is_file():
        raise InputError(f"RESULTS {results}: not a regular file (a device or a pipe?)")
    rows = read_results(results)
    return rows, row_places(results, len(rows))


def row_places(path: str | os.PathLike[str], n_rows: int) -> list[str]:
    """``"PATH line N"`` for each of the first ``n_rows`` rows of a ``results.jsonl``.

    Rows are the file's non-blank lines in order (``read_results`` skips blank lines and drops
    only a partial *last* line), so row ``j`` sits on the ``j``-th non-blank line.
    """
    lines = Path(path).read_bytes().split(b"\n")
    numbers = [i + 1 for i, line in enumerate(lines) if line.strip()]
    return [f"{path} line {n}" for n in numbers[:n_rows]]


def default_places(rows: Sequence[dict], places: Sequence[str] | None) -> Sequence[str]:
    """``places`` itself, or ``"row j"`` (1-based) for rows that did not come from a file."""
    if places is None:
        return [f"row {j + 1}" for j in range(len(rows))]
    if len(places) != len(rows):
        raise ValueError(f"{len(places)} places for {len(rows)} rows")
    return places


def field(row: dict, name: str, where: str, expected: str) -> Any:
    """``row[name]``; a missing field is refused, naming ``where`` and what was ``expected``."""
    value = row.get(name, _MISSING)
    if value is _MISSING:
        raise InputError(f"{where}: missing field {name!r} (expected {expected})")
    return value


def _refuse(where: str, name: str, expected: str, value: Any) -> InputError:
    return InputError(f"{where}: field {name!r} expected {expected}, got {value!r}")


def number(row: dict, name: str, where: str, *, positive: bool = False) -> float:
    """A finite number (``bool`` refused); with ``positive``, one > 0."""
    expected = "a finite number > 0" if positive else "a finite number"
    value = field(row, name, where, expected)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _refuse(where, name, expected, value)
    if positive and not value > 0:
        raise _refuse(where, name, expected, value)
    return float(value)


def optional_number(row: dict, name: str, where: str) -> float | None:
    """A finite number or ``null`` (a measurement that was not made); the field must be there."""
    expected = "a finite number or null"
    value = field(row, name, where, expected)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _refuse(where, name, expected, value)
    return float(value)


def integer(row: dict, name: str, where: str) -> int:
    """An integer (``bool`` refused; ``3.0`` is not an integer)."""
    value = field(row, name, where, "an integer")
    if isinstance(value, bool) or not isinstance(value, int):
        raise _refuse(where, name, "an integer", value)
    return value


def text(row: dict, name: str, where: str) -> str:
    """A string."""
    value = field(row, name, where, "a string")
    if not isinstance(value, str):
        raise _refuse(where, name, "a string", value)
    return value


def label(row: dict, name: str, where: str) -> str | int | None:
    """A key that groups rows (``point``): a string, an integer or ``null``."""
    expected = "a string, an integer or null"
    value = field(row, name, where, expected)
    if value is not None and (isinstance(value, bool) or not isinstance(value, str | int)):
        raise _refuse(where, name, expected, value)
    return value
