"""Theory against an encoder: held-out canonical correlations with the theory's eigenfunctions.

Given an encoder's features ``X`` of states and the theory embedding ``G = g*(s)`` of the same
states (the top-k eigenfunctions of the world's pair kernel, :mod:`prh.theory.markov`), fit
canonical directions on one set of states and score them on another: a trained whitened JEPA
carries ``g*`` up to a rotation (docs/theory.md sec. 3 and 8), so its held-out correlations are
near 1, and a model that carries none of it scores near 0 (fitting on the same rows would
inflate an unrelated pair; fitting and scoring apart does not). The interval resamples the
scored states (fitted directions fixed).

Layer: pure numpy; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from prh.errors import InputError


@dataclass(frozen=True)
class TheoryCCA:
    """Held-out canonical correlations between features and the theory embedding.

    Attributes
    ----------
    correlations : ndarray, shape (k,)
        Held-out correlation of each fitted canonical pair, in fitted order (strongest first).
    mean : float
        Their mean: the score (1: the features carry the theory's k eigenfunctions linearly).
    ci : tuple of float
        Bootstrap interval of ``mean`` over the scored states.
    fit_correlations : ndarray, shape (k,)
        The canonical correlations on the fitted states (optimistic; for reference).
    """

    correlations: np.ndarray
    mean: float
    ci: tuple[float, float]
    fit_correlations: np.ndarray

    def to_dict(self) -> dict:
        return {
            "correlations": [float(c) for c in self.correlations],
            "mean": self.mean,
            "ci": [float(self.ci[0]), float(self.ci[1])],
            "fit_correlations": [float(c) for c in self.fit_correlations],
        }


def _check(x: np.ndarray, g: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray]:
    x, g = np.asarray(x, dtype=np.float64), np.asarray(g, dtype=np.float64)
    if x.ndim != 2 or g.ndim != 2 or x.shape[0] != g.shape[0]:
        raise InputError(
            f"theory CCA {what}: expected features (N, D) and theory (N, k) with one N, "
            f"got {x.shape} and {g.shape}"
        )
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(g))):
        raise InputError(f"theory CCA {what}: features or theory contain NaN or inf")
    return x, g


def _whitener(z: np.ndarray, ridge: float) -> np.ndarray:
    """``C^-1/2`` of ``z``'s covariance with a ridge of ``ridge`` times its mean variance."""
    c = np.cov(z, rowvar=False).reshape(z.shape[1], z.shape[1])
    c = c + ridge * max(float(np.trace(c)) / c.shape[0], 1e-300) * np.eye(c.shape[0])
    w, V = np.linalg.eigh(c)
    return (V / np.sqrt(np.maximum(w, 1e-300))) @ V.T


def _fit(x: np.ndarray, g: np.ndarray, ridge: float):
    """Canonical directions ``A`` (D, k), ``B`` (k, k), means, and the fit correlations."""
    mx, mg = x.mean(axis=0), g.mean(axis=0)
    wx, wg = _whitener(x - mx, ridge), _whitener(g - mg, ridge)
    cross = (wx @ (x - mx).T @ (g - mg) @ wg) / (x.shape[0] - 1)
    U, s, Vt = np.linalg.svd(cross, full_matrices=False)
    return wx @ U, wg @ Vt.T, mx, mg, s


def _column_corr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a - a.mean(axis=0)
    b = b - b.mean(axis=0)
    den = np.sqrt((a * a).sum(axis=0) * (b * b).sum(axis=0))
    return np.where(den > 0, (a * b).sum(axis=0) / np.where(den > 0, den, 1.0), 0.0)


def theory_cca(
    x_fit: np.ndarray,
    g_fit: np.ndarray,
    x_test: np.ndarray,
    g_test: np.ndarray,
    *,
    ridge: float = 1e-3,
    components: int | None = None,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> TheoryCCA:
    """Canonical correlations of features ``x`` with the theory ``g``, fitted apart from scored.

    Parameters
    ----------
    x_fit, g_fit : ndarray, shapes (N, D) and (N, k)
        An encoder's features and the theory embedding of the fitting states, rows paired.
    x_test, g_test : ndarray, shapes (M, D) and (M, k)
        The same for held-out states (scored with the fitted directions).
    ridge : float
        Covariance ridge, a fraction of the mean variance (features wider than the fitting set
        stay invertible).
    components : int, optional
        Canonical pairs scored, strongest first (default ``min(D, k)``, all of them): two
        encoders' embeddings are compared in the theory's ``k`` (:func:`heldout_cc`).
    n_boot, level, seed : int, float, int
        Bootstrap resamples of the scored states, interval level, and its seed.

    Returns
    -------
    TheoryCCA
        At most ``min(D, k)`` correlations, their mean, its interval and the fit correlations.
    """
    x_fit, g_fit = _check(x_fit, g_fit, "fit")
    x_test, g_test = _check(x_test, g_test, "test")
    if x_fit.shape[1] != x_test.shape[1] or g_fit.shape[1] != g_test.shape[1]:
        raise InputError("theory CCA: fit and test widths differ")
    k = min(x_fit.shape[1], g_fit.shape[1])
    if components is not None:
        if components < 1:
            raise InputError(f"theory CCA: components must be >= 1, got {components}")
        k = min(k, int(components))
    if x_fit.shape[0] <= k + 1 or x_test.shape[0] < 3:
        raise InputError(f"theory CCA: need more than {k + 1} fitting and 3 scored states")
    if not (ridge >= 0 and 0 < level < 1 and n_boot >= 1):
        raise InputError("theory CCA: ridge >= 0, 0 < level < 1 and n_boot >= 1 expected")
    A, B, mx, mg, s = _fit(x_fit, g_fit, ridge)
    a, b = (x_test - mx) @ A[:, :k], (g_test - mg) @ B[:, :k]
    corr = _column_corr(a, b)
    rng = np.random.default_rng([seed, 0xCCA])
    boot = np.empty(n_boot)
    for i in range(n_boot):
        idx = rng.integers(0, a.shape[0], a.shape[0])
        boot[i] = _column_corr(a[idx], b[idx]).mean()
    lo, hi = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2])
    return TheoryCCA(corr, float(corr.mean()), (float(lo), float(hi)), s[:k])


def top_components(fit: np.ndarray, test: np.ndarray, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """``fit`` and ``test`` projected on ``fit``'s top ``dim`` principal directions (centred on
    ``fit``'s mean; unchanged when they are at most ``dim`` wide): a wide layer's canonical
    directions fitted on a few hundred states would otherwise fit noise."""
    fit, test = np.asarray(fit, dtype=np.float64), np.asarray(test, dtype=np.float64)
    if fit.shape[1] <= dim:
        return fit, test
    mu = fit.mean(axis=0)
    _, _, vt = np.linalg.svd(fit - mu, full_matrices=False)
    return (fit - mu) @ vt[:dim].T, (test - mu) @ vt[:dim].T


def heldout_cc(
    a_fit: np.ndarray,
    b_fit: np.ndarray,
    a_test: np.ndarray,
    b_test: np.ndarray,
    *,
    components: int = 8,
    max_dim: int = 64,
    n_boot: int = 200,
    seed: int = 0,
) -> TheoryCCA:
    """Held-out canonical correlation of two encoders' features of the same states: each side
    reduced to its top ``max_dim`` principal directions on the fit states
    (:func:`top_components`), the ``components`` strongest canonical pairs fitted there and
    scored on the test states (:func:`theory_cca` with either side in the theory's place)."""
    a_fit, a_test = top_components(a_fit, a_test, max_dim)
    b_fit, b_test = top_components(b_fit, b_test, max_dim)
    return theory_cca(a_fit, b_fit, a_test, b_test, components=components, n_boot=n_boot,
                      seed=seed)  # fmt: skip


def width_fair_cc(
    a_fit: np.ndarray,
    b_fit: np.ndarray,
    a_test: np.ndarray,
    b_test: np.ndarray,
    *,
    components: int = 8,
    n_boot: int = 200,
    seed: int = 0,
) -> TheoryCCA:
    """:func:`heldout_cc` with each side first reduced to its top ``components`` principal
    directions (on the fit states): every encoder is read through the same ``k`` dimensions.

    Why: with 64 principal directions per side, a wide map that merely keeps its input's
    identity lets the canonical fit *decode* ``g*`` linearly (on the moving cave a random,
    untrained 128-wide text map scored 0.41-0.49 against ``g*`` and plain word counts 0.551,
    while a random 8-wide head scored 0.10-0.17), so wide and narrow encoders were not judged
    alike. Read through its top ``k`` directions, an encoder scores high only when ``g*`` is
    what its dominant directions carry (random wide maps 0.01-0.14, word counts -0.01; trained
    k-wide JEPAs unchanged, since their ``k`` directions are all they have).
    """
    return heldout_cc(a_fit, b_fit, a_test, b_test, components=components,
                      max_dim=components, n_boot=n_boot, seed=seed)  # fmt: skip


RAW_DIM = 64  # principal directions per side of the raw read-out (the one before issue 31)


def fair_and_raw_cc(
    a_fit: np.ndarray,
    b_fit: np.ndarray,
    a_test: np.ndarray,
    b_test: np.ndarray,
    *,
    components: int = 8,
    n_boot: int = 200,
    seed: int = 0,
) -> tuple[TheoryCCA, TheoryCCA]:
    """``(width_fair_cc, heldout_cc at RAW_DIM)`` of the same features: the headline read-out and
    the raw one every report shows beside it."""
    fair = width_fair_cc(a_fit, b_fit, a_test, b_test, components=components, n_boot=n_boot,
                         seed=seed)  # fmt: skip
    raw = heldout_cc(a_fit, b_fit, a_test, b_test, components=components, max_dim=RAW_DIM,
                     n_boot=n_boot, seed=seed)  # fmt: skip
    return fair, raw


CARRIED_R2 = 0.5  # a mode is carried when its held-out R^2 from the k directions reaches this


@dataclass(frozen=True)
class ModeProfile:
    """Which of the theory's modes an encoder's ``k`` directions carry, mode by mode.

    Attributes
    ----------
    r2 : ndarray, shape (m,)
        Held-out R^2 of each theory mode ``g_1 .. g_m`` from the encoder's top ``k`` principal
        directions (least squares with an intercept, fitted on the fit states); ``m > k`` when
        modes below the cut were given.
    k : int
        The cut: modes ``1 .. k`` are the theory's optimum, the rest below it.
    floor : float
        The R^2 at which a mode counts as carried.
    """

    r2: np.ndarray
    k: int
    floor: float = CARRIED_R2

    @property
    def missing(self) -> list[int]:
        """Modes above the cut (1-based) the encoder does not carry."""
        return [j + 1 for j in range(min(self.k, len(self.r2))) if self.r2[j] < self.floor]

    @property
    def instead(self) -> list[int]:
        """Modes below the cut (1-based) the encoder carries: where the missing went."""
        return [j + 1 for j in range(self.k, len(self.r2)) if self.r2[j] >= self.floor]

    def describe(self) -> str:
        """One line: ``"all of g1-g8"``, or ``"misses g7; carries g11 (below the cut) instead"``."""
        if not self.missing:
            out = f"all of g1-g{self.k}"
        else:
            out = "misses " + ", ".join(f"g{j}" for j in self.missing)
        if self.instead:
            out += "; carries " + ", ".join(f"g{j}" for j in self.instead) + " (below the cut)"
            out += " instead" if self.missing else ""
        return out

    def to_dict(self) -> dict:
        return {"r2": [float(v) for v in self.r2[: self.k]],
                "r2_below": [float(v) for v in self.r2[self.k :]], "k": int(self.k),
                "floor": float(self.floor), "missing": self.missing, "instead": self.instead,
                "describe": self.describe()}  # fmt: skip


def mode_profile(
    x_fit: np.ndarray,
    g_fit: np.ndarray,
    x_test: np.ndarray,
    g_test: np.ndarray,
    *,
    components: int = 8,
    floor: float = CARRIED_R2,
) -> ModeProfile:
    """Held-out R^2 of every theory mode (a column of ``g``, modes below the cut after the first
    ``components``) from the features' top ``components`` principal directions on the fit
    states (:func:`top_components`: the width-fair read-out). Where the canonical correlations
    say *that* a direction is missing, this says *which* mode it is and what took its place."""
    x_fit, g_fit = _check(x_fit, g_fit, "fit")
    x_test, g_test = _check(x_test, g_test, "test")
    if x_fit.shape[1] != x_test.shape[1] or g_fit.shape[1] != g_test.shape[1]:
        raise InputError(
            f"mode profile: fit and test widths differ: features {x_fit.shape[1]} vs "
            f"{x_test.shape[1]}, theory {g_fit.shape[1]} vs {g_test.shape[1]}"
        )
    f_fit, f_test = top_components(x_fit, x_test, components)
    a_fit = np.column_stack([f_fit, np.ones(len(f_fit))])
    a_test = np.column_stack([f_test, np.ones(len(f_test))])
    coef, *_ = np.linalg.lstsq(a_fit, g_fit, rcond=None)
    resid = ((g_test - a_test @ coef) ** 2).sum(0)
    total = np.maximum(((g_test - g_test.mean(0)) ** 2).sum(0), 1e-300)
    return ModeProfile(1.0 - resid / total, int(components), float(floor))
