"""Pieces of the demo report's HTML, shared by its sections: a table, a figure, a number."""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any


def img_tag(path: Path, alt: str) -> str:
    """The PNG at ``path`` inlined as an ``<img>`` (a muted note when it is missing)."""
    if not path.is_file():
        return f"<p class=muted>({html.escape(alt)}: no figure)</p>"
    b = base64.b64encode(path.read_bytes()).decode()
    return f'<img class=plot alt="{html.escape(alt)}" src="data:image/png;base64,{b}">'


def cell(x: Any, nd: int = 3) -> str:
    """A table cell: a dash for ``None``, a float to ``nd`` decimals, anything else escaped."""
    if x is None:
        return "&ndash;"
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return html.escape(str(x))


def table(head: list[str], rows: list[list[Any]]) -> str:
    """An HTML table: escaped ``head``, ``rows`` of ready HTML cells."""
    h = "".join(f"<th>{html.escape(c)}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{h}</tr>{body}</table>"
