"""Figures as text: an undefined metric (``None``, NaN) reads "undefined", never crashes a log line.

A CKA of constant features, a rotation score of a degenerate map, an interval of too few rows: each
is a result (the metric is undefined there), and every log line, target and table says so.
"""

from __future__ import annotations

import math
from typing import Any

UNDEFINED = "undefined"


def defined(x: Any) -> bool:
    """True for a finite number (``None``, NaN and infinities are undefined figures)."""
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def fig(x: Any, spec: str = ".3f", scale: float = 1.0) -> str:
    """``format(x * scale, spec)``, or ``"undefined"`` when ``x`` is not a finite number."""
    return format(x * scale, spec) if defined(x) else UNDEFINED


def interval(lo: Any, hi: Any, spec: str = ".4f") -> str:
    """``"[lo, hi]"``, each bound through :func:`fig`."""
    return f"[{fig(lo, spec)}, {fig(hi, spec)}]"


def at_least(x: Any, bound: Any) -> bool | None:
    """``x >= bound``; ``None`` (undefined, so neither met nor missed) when either is undefined."""
    return x >= bound if defined(x) and defined(bound) else None


def above(x: Any, bound: Any) -> bool | None:
    """``x > bound``; ``None`` when either is undefined."""
    return x > bound if defined(x) and defined(bound) else None
