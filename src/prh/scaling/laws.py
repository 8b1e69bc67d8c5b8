"""Candidate scaling laws for alignment as a function of the fraction of good views and samples.

Every law predicts the **alignment** ``y(rho, S)`` (higher is better, e.g. ``1 - e_cca`` or a
mutual-kNN score), where ``rho`` in [0, 1] is the fraction of good views among the positive pairs
and ``S`` the number of sampled pairs seen. A law is a frozen :class:`Law` holding its name,
parameter names, box bounds, an initial guess and a pure ``predict(params, rho, S)`` function; the
fitting code (:mod:`prh.scaling.fit`) knows nothing else about it.

Sample counts enter through ``log10`` scales (``S0 = 10**log_s0``) or relative to ``S_REF = 1000``,
so that every parameter is of order one and the box bounds are meaningful.

Forms (``e = 1 - y`` is the misalignment):

- ``additive``: ``e = a + b (1 - rho)^alpha + c (S_REF / S)^beta``. Separable; it cannot express
  misalignment that rises with S at rho = 0 and falls with S at rho = 1 (docs/theory.md sec. 7).
- ``multiplicative`` (docs/theory.md sec. 7): ``y = (1 - a - b (1 - rho / rho_star)_+^alpha) / (1 +
  (S0 e^{g rho} / S)^beta)``: a rho-dependent ceiling that vanishes past ``rho_star`` times a
  saturating factor in S whose scale depends on rho.
- ``saturating``: ``y = (c0 + c1 rho^alpha) / (1 + (S0 / S)^beta)``: a power-law ceiling in rho and
  a rho-independent saturation scale (the multiplicative law with ``g = 0``, smooth ceiling).
- ``logistic``: ``y = (lo + (hi - lo) sigma((rho - r0) / w)) / (1 + (S0 e^{g rho} / S)^beta)``: a
  smooth step in rho at ``r0`` (the pure-state threshold blurred by finite samples).
- ``floored``: ``y = f + (c(rho) - f) / (1 + (S0 e^{g rho} / S)^beta)`` with the multiplicative
  ceiling ``c(rho)``: alignment moves from a small-sample floor ``f`` (what an encoder that has seen
  few pairs shares with the reference) to the ceiling, so it can *fall* with S where ``c(rho) < f``
  (rho = 0: the encoder locks onto nuisance) and rise where ``c(rho) > f``: the interaction
  docs/theory.md sec. 7 says additive forms miss.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

S_REF = 1000.0  # the sample count the additive law's S-term is measured against

PredictFn = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Law:
    """One candidate law.

    Attributes
    ----------
    name : str
        The form's name (``"multiplicative"``).
    params : tuple of str
        Parameter names, in the order ``predict`` takes them.
    lower, upper : tuple of float
        Box bounds for least squares, one per parameter.
    init : tuple of float
        The first starting point (further starts are drawn inside the bounds).
    predict : callable
        ``predict(theta (P,), rho (n,), S (n,)) -> y (n,)``, pure and vectorised.
    formula : str
        The formula, for reports.
    """

    name: str
    params: tuple[str, ...]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    init: tuple[float, ...]
    predict: PredictFn
    formula: str

    def __post_init__(self) -> None:
        n = len(self.params)
        if not (len(self.lower) == len(self.upper) == len(self.init) == n):
            raise ValueError(f"law {self.name}: bounds/init lengths differ from {n} params")
        for p, lo, hi, x0 in zip(self.params, self.lower, self.upper, self.init):
            if not lo < hi or not lo <= x0 <= hi:
                raise ValueError(f"law {self.name}: {p} init {x0} outside [{lo}, {hi}]")

    def __call__(self, theta: np.ndarray, rho: np.ndarray, S: np.ndarray) -> np.ndarray:
        return self.predict(np.asarray(theta, float), np.asarray(rho, float), np.asarray(S, float))


def _additive(theta: np.ndarray, rho: np.ndarray, S: np.ndarray) -> np.ndarray:
    a, b, alpha, c, beta = theta
    e = a + b * (1.0 - rho) ** alpha + c * (S_REF / S) ** beta
    return 1.0 - e


def _multiplicative(theta: np.ndarray, rho: np.ndarray, S: np.ndarray) -> np.ndarray:
    a, b, rho_star, alpha, log_s0, g, beta = theta
    ceiling = 1.0 - a - b * np.clip(1.0 - rho / rho_star, 0.0, None) ** alpha
    # exp(log(S0 e^{g rho} / S) * beta), computed in logs so huge S0 cannot overflow
    log_ratio = log_s0 * np.log(10.0) + g * rho - np.log(S)
    return ceiling / (1.0 + np.exp(np.clip(beta * log_ratio, -700.0, 700.0)))


def _saturating(theta: np.ndarray, rho: np.ndarray, S: np.ndarray) -> np.ndarray:
    c0, c1, alpha, log_s0, beta = theta
    log_ratio = log_s0 * np.log(10.0) - np.log(S)
    return (c0 + c1 * rho**alpha) / (1.0 + np.exp(np.clip(beta * log_ratio, -700.0, 700.0)))


def _logistic(theta: np.ndarray, rho: np.ndarray, S: np.ndarray) -> np.ndarray:
    lo, hi, r0, w, log_s0, g, beta = theta
    z = np.clip((rho - r0) / w, -700.0, 700.0)
    ceiling = lo + (hi - lo) / (1.0 + np.exp(-z))
    log_ratio = log_s0 * np.log(10.0) + g * rho - np.log(S)
    return ceiling / (1.0 + np.exp(np.clip(beta * log_ratio, -700.0, 700.0)))


ADDITIVE = Law(
    name="additive",
    params=("a", "b", "alpha", "c", "beta"),
    lower=(-1.0, -2.0, 0.05, -5.0, 0.01),
    upper=(2.0, 2.0, 10.0, 5.0, 3.0),
    init=(0.1, 0.5, 1.0, 0.1, 0.5),
    predict=_additive,
    formula="1 - y = a + b (1 - rho)^alpha + c (1000 / S)^beta",
)

MULTIPLICATIVE = Law(
    name="multiplicative",
    params=("a", "b", "rho_star", "alpha", "log_s0", "g", "beta"),
    lower=(-0.5, -2.0, 0.02, 0.05, -2.0, -20.0, 0.05),
    upper=(1.0, 2.0, 2.0, 10.0, 8.0, 20.0, 5.0),
    init=(0.0, 0.5, 0.5, 1.0, 3.0, 0.0, 1.0),
    predict=_multiplicative,
    formula="y = (1 - a - b (1 - rho/rho_star)_+^alpha) / (1 + (10^log_s0 e^(g rho) / S)^beta)",
)

SATURATING = Law(
    name="saturating",
    params=("c0", "c1", "alpha", "log_s0", "beta"),
    lower=(-1.0, -2.0, 0.05, -2.0, 0.05),
    upper=(2.0, 2.0, 10.0, 8.0, 5.0),
    init=(0.3, 0.5, 1.0, 3.0, 1.0),
    predict=_saturating,
    formula="y = (c0 + c1 rho^alpha) / (1 + (10^log_s0 / S)^beta)",
)

LOGISTIC = Law(
    name="logistic",
    params=("lo", "hi", "r0", "w", "log_s0", "g", "beta"),
    lower=(-1.0, -1.0, -0.5, 0.005, -2.0, -20.0, 0.05),
    upper=(2.0, 2.0, 1.5, 2.0, 8.0, 20.0, 5.0),
    init=(0.3, 1.0, 0.5, 0.1, 3.0, 0.0, 1.0),
    predict=_logistic,
    formula="y = (lo + (hi - lo) sigmoid((rho - r0) / w)) / (1 + (10^log_s0 e^(g rho) / S)^beta)",
)


def _floored(theta: np.ndarray, rho: np.ndarray, S: np.ndarray) -> np.ndarray:
    f, a, b, rho_star, alpha, log_s0, g, beta = theta
    ceiling = 1.0 - a - b * np.clip(1.0 - rho / rho_star, 0.0, None) ** alpha
    log_ratio = log_s0 * np.log(10.0) + g * rho - np.log(S)
    return f + (ceiling - f) / (1.0 + np.exp(np.clip(beta * log_ratio, -700.0, 700.0)))


FLOORED = Law(
    name="floored",
    params=("f", "a", "b", "rho_star", "alpha", "log_s0", "g", "beta"),
    lower=(-0.5, -0.5, -2.0, 0.02, 0.05, -2.0, -20.0, 0.05),
    upper=(1.0, 1.0, 2.0, 2.0, 10.0, 8.0, 20.0, 5.0),
    init=(0.1, 0.0, 0.5, 0.5, 1.0, 3.0, 0.0, 1.0),
    predict=_floored,
    formula=(
        "y = f + (1 - a - b (1 - rho/rho_star)_+^alpha - f) / (1 + (10^log_s0 e^(g rho) / S)^beta)"
    ),
)

LAWS: dict[str, Law] = {
    law.name: law for law in (ADDITIVE, MULTIPLICATIVE, SATURATING, LOGISTIC, FLOORED)
}


def get_law(name: str) -> Law:
    """Look a law up by name; raise ``InputError`` naming the known forms otherwise."""
    from prh.errors import InputError

    try:
        return LAWS[name]
    except KeyError:
        raise InputError(f"unknown law form {name!r}; expected one of {sorted(LAWS)}") from None
