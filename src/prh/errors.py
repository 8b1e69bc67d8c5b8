"""Typed errors. The CLI turns any :class:`PrhError` into one line on stderr and exit status 2."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

# Optional packages -> the extra that installs them (pyproject.toml).
EXTRAS = {
    "torch": "torch",
    "transformers": "encoders",
    "onnxruntime": "encoders",
    "datasets": "data",
    "faiss": "match",
    "fastapi": "serve",
    "uvicorn": "serve",
    "ray": "ray",
    "yaml": "yaml",
    "tensorboard": "tensorboard",
    "wandb": "wandb",
}


class PrhError(Exception):
    """Base class for every error that ``prh`` reports to a user as one clear line."""


class InputError(PrhError, ValueError):
    """Bad user input: a file, a row, a flag. The message names what was expected and what came."""


class CheckpointError(PrhError):
    """A checkpoint that is missing, corrupt or from a different model."""


class TrainingError(PrhError):
    """Training could not go on (a non-finite loss, say); the last good checkpoint is kept."""


class MissingExtraError(PrhError, ModuleNotFoundError):
    """An optional package is not installed; the message names the extra that brings it, the
    same line from the CLI (``prh train: error: torch is not installed; pip install
    'prh[torch]'``) and from Python (``prh.train(...)``)."""


def missing_extra(e: ModuleNotFoundError) -> MissingExtraError | None:
    """The install hint for a failed import of an optional package, or None for any other."""
    if isinstance(e, MissingExtraError):
        return e
    top = (e.name or "").split(".")[0]
    if top not in EXTRAS:
        return None
    return MissingExtraError(f"{top} is not installed; pip install 'prh[{EXTRAS[top]}]'", name=top)


def hint_extras(fn: F) -> F:
    """``fn``, raising :class:`MissingExtraError` (not a bare ``ModuleNotFoundError``) when an
    optional package it imports is missing."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ModuleNotFoundError as e:
            hint = missing_extra(e)
            if hint is None or hint is e:
                raise
            raise hint from e

    return wrapper  # type: ignore[return-value]
