"""Argument types shared by subcommands: they turn bad flags into one clear argparse error."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """An integer >= 1 (``--worlds``, ``--k``, ``--steps``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def nonnegative_int(text: str) -> int:
    """An integer >= 0 (``--null``, ``--bootstrap``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


def fraction(text: str) -> float:
    """A float in [0, 1] (``--rho``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {value}")
    return value


def positive_float(text: str) -> float:
    """A number > 0 (``--lr``, ``--rbf-sigma``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {value}")
    return value
