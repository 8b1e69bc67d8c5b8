"""The types every check shares: its configuration and its result (the runner is in
:mod:`prh.prove.runner`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from prh.errors import InputError


@dataclass(frozen=True)
class ProveConfig:
    """Shared settings of every check.

    Attributes
    ----------
    worlds : int
        Random worlds for the ``bound`` check (and a cap for the others' sample sizes).
    seed : int
        Base seed; every check derives its own generator from it.
    quick : bool
        Fewer worlds and training steps (for ``prh demo``); the statements are unchanged.
    """

    worlds: int = 300
    seed: int = 0
    quick: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.worlds, int) or self.worlds < 1:
            raise InputError(f"--worlds: expected a positive integer, got {self.worlds!r}")


@dataclass(frozen=True)
class CheckResult:
    """One theorem statement and what was measured."""

    name: str
    statement: str
    passed: bool
    figures: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "statement": self.statement,
            "passed": bool(self.passed),
            "figures": self.figures,
            "seconds": round(self.seconds, 3),
        }
