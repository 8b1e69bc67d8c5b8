"""Names of a package imported on first use (PEP 562), so importing the package stays light."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from prh.errors import hint_extras, missing_extra


def lazy_exports(
    package: str, namespace: dict[str, Any], where: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: each name of ``where`` (name -> defining
    module) is imported on first access and kept in ``namespace`` (the package's ``globals()``).

    A name whose module, or a function whose call, needs a missing optional package raises
    :class:`prh.errors.MissingExtraError`, the CLI's install hint, not a bare import error.
    """

    def getattr_(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        try:
            value = getattr(importlib.import_module(where[name]), name)
        except ModuleNotFoundError as e:
            hint = missing_extra(e)
            if hint is None or hint is e:
                raise
            raise hint from e
        if inspect.isfunction(value):
            value = hint_extras(value)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *where})

    return getattr_, dir_
