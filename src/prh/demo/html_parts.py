"""Pieces of the demo report, shared by its sections: the template, a number, a table, a figure.

The report is a Jinja2 template (``prh/demo/templates/``) with autoescaping: every value handed to
it is plain text (a formatted number, a name, a caption) and is escaped there; the markup lives in
the template. The functions here prepare those values:

- :func:`num`, :func:`interval`: a number or an interval as the report writes it
  (``"undefined"`` for ``None`` and NaN, with the reason when the data gives one);
- :func:`table`: ``{"head", "rows"}``, each row a list of cells, each cell a string or
  ``{"text", "tag", "note"}`` (:func:`strong`, :func:`italic`, :func:`noted`);
- :func:`figure`: ``{"alt", "src"}``, the PNG inlined as a ``data:`` URI (``src`` is ``None``
  when the file is missing).
"""

from __future__ import annotations

import base64
import math
from functools import cache
from pathlib import Path
from typing import Any

from prh.demo.figures import UNDEFINED  # one word for a figure that could not be computed

Cell = str | dict[str, str | None]

DASH = "\N{EN DASH}"


@cache
def environment() -> Any:
    """The report's Jinja2 environment: templates from ``prh/demo/templates``, autoescaped, a
    missing value an error (not an empty string)."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).with_name("templates")),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render(name: str, **context: Any) -> str:
    """Template ``name`` rendered with ``context``."""
    return environment().get_template(name).render(**context)


def num(x: Any, nd: int = 3, why: str | None = None) -> str:
    """A figure as the report writes it: a float to ``nd`` decimals, an undefined one (``None``,
    NaN) as ``"undefined"`` (``"undefined (why)"`` when the data says why), anything else as
    text."""
    if is_undefined(x):
        return f"{UNDEFINED} ({why})" if why else UNDEFINED
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return str(x)


def interval(lo: Any, hi: Any, nd: int = 3) -> str:
    """``[lo, hi]``, each bound by :func:`num`; ``[undefined]`` when neither bound is defined."""
    if is_undefined(lo) and is_undefined(hi):
        return f"[{UNDEFINED}]"
    return f"[{num(lo, nd)}, {num(hi, nd)}]"


def strong(text: str) -> Cell:
    """A cell in bold."""
    return {"text": text, "tag": "b", "note": None}


def italic(text: str) -> Cell:
    """A cell in italics."""
    return {"text": text, "tag": "i", "note": None}


def noted(text: str, note: str) -> Cell:
    """A cell with a muted note after it."""
    return {"text": text, "tag": None, "note": note}


def table(head: list[str], rows: list[list[Cell]]) -> dict[str, Any]:
    """A table for the template's ``table`` macro: column heads and rows of cells."""
    return {"head": head, "rows": rows}


def figure(path: Path, alt: str) -> dict[str, str | None]:
    """The PNG at ``path`` for the template's ``figure`` macro (``src`` ``None`` when missing)."""
    if not path.is_file():
        return {"alt": alt, "src": None}
    b = base64.b64encode(path.read_bytes()).decode()
    return {"alt": alt, "src": f"data:image/png;base64,{b}"}


def img_tag(path: Path, alt: str) -> str:
    """The PNG at ``path`` inlined as an ``<img>`` (a muted note when it is missing)."""
    return render("figure.html", figure=figure(path, alt)).strip()


def is_undefined(x: Any) -> bool:
    """``None`` or a NaN float: a figure that could not be computed."""
    return x is None or (isinstance(x, float) and math.isnan(x))
