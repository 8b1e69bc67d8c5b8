"""One bounded JSON reader for every JSON file and text prh reads (issue 36).

``json.loads`` recurses once per nesting level: ``[[[[...]]]]`` a few thousand deep raises
``RecursionError`` (a traceback), and a deep-but-parsable value recurses again in whatever walks
it next. So every reader goes through :func:`loads` or :func:`read_json`, which refuse, in one
line naming the source, text over a size bound and values nested deeper than a depth bound.
Syntax errors stay :class:`json.JSONDecodeError` (a ``ValueError``), which callers already
turn into their own one-line messages.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from prh.errors import InputError

MAX_DEPTH = 64  # deepest value prh writes: about 6 (a run's config, a summary's figures)
MAX_BYTES = 64 * 2**20  # largest JSON prh writes: a gallery or sweep table, a few MB


def depth(obj: Any) -> int:
    """Nesting depth of a parsed JSON value (a scalar is 0, ``[1]`` is 1), without recursion."""
    deepest, stack = 0, [(obj, 0)]
    while stack:
        value, d = stack.pop()
        if isinstance(value, dict):
            value = list(value.values())
        if isinstance(value, list):
            deepest = max(deepest, d + 1)
            stack.extend((v, d + 1) for v in value if isinstance(v, dict | list))
    return deepest


def loads(
    text: str | bytes, source: object, max_depth: int = MAX_DEPTH, max_bytes: int = MAX_BYTES
) -> Any:
    """``json.loads(text)``, refusing text longer than ``max_bytes`` or nested deeper than
    ``max_depth``.

    Parameters
    ----------
    text : str or bytes
        The JSON text.
    source : object
        How to name it in an error (a path, ``"--set"``, ``"the request"``).

    Raises
    ------
    InputError
        Too long or too deep: one line naming ``source``, the bound and what came.
    json.JSONDecodeError
        Not JSON.
    """
    if len(text) > max_bytes:
        raise InputError(f"{source}: {len(text):,} bytes of JSON; expected at most {max_bytes:,}")
    try:
        value = json.loads(text)
    except RecursionError:
        raise InputError(
            f"{source}: JSON nested too deeply to read; expected at most {max_depth} levels"
        ) from None
    if depth(value) > max_depth:
        raise InputError(
            f"{source}: JSON nested {depth(value)} levels deep; expected at most {max_depth}"
        )
    return value


def read_json(
    path: str | os.PathLike[str],
    what: str | None = None,
    max_depth: int = MAX_DEPTH,
    max_bytes: int = MAX_BYTES,
) -> Any:
    """The JSON value in the file ``path``, through :func:`loads`; its size is checked before
    a byte is read. ``what`` (a flag, say) prefixes the path in errors.

    Raises
    ------
    InputError
        A file over ``max_bytes`` or nested deeper than ``max_depth``.
    OSError, UnicodeDecodeError, json.JSONDecodeError
        A missing or unreadable file, text that is not UTF-8 or not JSON.
    """
    p = Path(path)
    source = f"{what} {p}" if what else str(p)
    size = p.stat().st_size
    if size > max_bytes:
        raise InputError(f"{source}: {size:,} bytes of JSON; expected at most {max_bytes:,}")
    return loads(p.read_text(encoding="utf-8"), source, max_depth, max_bytes)
