"""Paired feature sets with a planted answer for the rotation score: one rotation apart or not.

Pure functions of a seed, so ``tests/bridge/test_rotation_score.py`` and
``benchmarks/bench_rotation.py`` share one definition. Every case draws a latent ``z (n, d)``
(or ``(n, d / 2)``) and builds ``x (n, d_x)`` and ``y (n, d_y)`` from it with independent noise
``noise`` per side, so retrieval is neither trivial nor hopeless.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from prh.bridge.synthetic import random_rotation

__all__ = ["PLANTED_CASES", "planted_pair"]

Pair = tuple[np.ndarray, np.ndarray]


def _rotation(rng: np.random.Generator, n: int, d: int, noisy: Callable) -> Pair:
    z = rng.standard_normal((n, d))
    spectrum = np.exp(-np.arange(d) / 8)  # anisotropic X: whitening must undo it
    return noisy(z) * spectrum, noisy(z) @ random_rotation(d, rng)


def _private_both(rng: np.random.Generator, n: int, d: int, noisy: Callable) -> Pair:
    h = d // 2
    z = rng.standard_normal((n, h))
    x = np.hstack([noisy(z), rng.standard_normal((n, h))])  # X's own nuisance half
    y = np.hstack([noisy(z), rng.standard_normal((n, h))]) @ random_rotation(d, rng)
    return x, y


def _nonlinear_half(rng: np.random.Generator, n: int, d: int, noisy: Callable) -> Pair:
    h = d // 2
    z = rng.standard_normal((n, d))
    zy = noisy(z)
    y = np.hstack([zy[:, :h], zy[:, h:] ** 2 - 1]) @ random_rotation(d, rng)  # even: rho = 0
    return noisy(z), y


def _linear(rng: np.random.Generator, n: int, d: int, noisy: Callable) -> Pair:
    a = rng.standard_normal((d, d)) @ np.diag(np.logspace(0, -2, d))  # condition number ~100
    z = rng.standard_normal((n, d))
    return noisy(z), noisy(z) @ a


def _tanh(rng: np.random.Generator, n: int, d: int, noisy: Callable) -> Pair:
    z = rng.standard_normal((n, d))
    return noisy(z), np.tanh(3 * noisy(z) @ random_rotation(d, rng))


def _private_wider(rng: np.random.Generator, n: int, d: int, noisy: Callable) -> Pair:
    h = d // 2
    z = rng.standard_normal((n, h))
    x = np.hstack([noisy(z), 1.2 * rng.standard_normal((n, h))])  # (n, d): half private
    return x, noisy(z) @ random_rotation(h, rng)  # (n, d / 2)


def _unrelated(rng: np.random.Generator, n: int, d: int, noisy: Callable) -> Pair:
    return rng.standard_normal((n, d)), rng.standard_normal((n, d))


# name -> (what is planted, builder)
PLANTED_CASES: dict[str, tuple[str, Callable[..., Pair]]] = {
    "rotation": ("Y = rotation of X, anisotropic X", _rotation),
    "private-both": ("each side keeps half its dims for its own nuisance", _private_both),
    "nonlinear-half": (
        "half of Y's directions an even function (z^2) of the latent",
        _nonlinear_half,
    ),
    "linear": ("Y = X A, A ill-conditioned (condition number 100)", _linear),
    "tanh": ("Y = tanh(3 X R), every direction equally saturated", _tanh),
    "private-wider": ("private dims on the wider side only (X: d, Y: d / 2)", _private_wider),
    "unrelated": ("X and Y independent", _unrelated),
}


def planted_pair(case: str, n: int = 1600, d: int = 24, noise: float = 0.5, seed: int = 0) -> Pair:
    """Rows ``(x, y)`` of one planted case (:data:`PLANTED_CASES`), deterministic in ``seed``."""
    if case not in PLANTED_CASES:
        raise ValueError(f"unknown planted case {case!r}; expected one of {sorted(PLANTED_CASES)}")
    rng = np.random.default_rng(seed)

    def noisy(z: np.ndarray) -> np.ndarray:
        return z + noise * rng.standard_normal(z.shape)

    return PLANTED_CASES[case][1](rng, n, d, noisy)
