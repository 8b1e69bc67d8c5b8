"""Fit candidate laws by least squares, select by held-out error, compare with the seed spread.

The protocol (docs/theory.md sec. 7): fit every form on the *fit* runs, predict the *held-out* runs
(off-grid ``(rho, S)`` with fresh seeds) before looking at them, and judge the chosen form by

- ``heldout_rmse = sqrt(mean_i (law(rho_i, S_i) - y_i)^2)`` over the held-out runs;
- ``seed_spread = sqrt(mean_j (y_j - y'_j)^2 / 2)`` over pairs ``(y_j, y'_j)`` of runs at the same
  ``(rho, S)`` that differ only in the seed (each held-out point and its repeat). If a run is
  ``mu(rho, S) + eps`` with independent ``eps`` of standard deviation ``sigma``, then ``E (y - y')^2
  = 2 sigma^2``, so ``seed_spread`` estimates ``sigma``: the RMS error of a *perfect* law on single
  runs. Hence ``ratio = heldout_rmse / seed_spread`` is about 1 for a law that is as good as the
  noise allows, and larger by how much the law misses.

Least squares uses :func:`scipy.optimize.least_squares` (trust-region reflective, box bounds) from
several starts: the law's own initial guess, then points drawn uniformly inside the bounds from a
seeded generator. The best start (lowest cost) is kept. A fit whose best start did not converge
(``status <= 0``: evaluation budget exhausted or bad input) or gave non-finite predictions is
reported with ``converged=False`` and scipy's message; it is never dropped silently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from prh.errors import InputError
from prh.scaling import rows as rows_
from prh.scaling.laws import LAWS, Law, get_law
from prh.scaling.rows import default_places


@dataclass(frozen=True)
class LawData:
    """Runs to fit or to predict: ``rho (n,)``, ``S (n,)`` and measured alignment ``y (n,)``."""

    rho: np.ndarray
    S: np.ndarray
    y: np.ndarray

    def __post_init__(self) -> None:
        rho, S, y = (np.asarray(v, float).reshape(-1) for v in (self.rho, self.S, self.y))
        if not (len(rho) == len(S) == len(y)):
            raise InputError(f"law data: rho, S, y lengths differ ({len(rho)}, {len(S)}, {len(y)})")
        if not (np.all(np.isfinite(rho)) and np.all(np.isfinite(S)) and np.all(np.isfinite(y))):
            raise InputError("law data: rho, S and y must be finite")
        if np.any(S <= 0):
            raise InputError(f"law data: samples must be > 0, got min {S.min()}")
        object.__setattr__(self, "rho", rho)
        object.__setattr__(self, "S", S)
        object.__setattr__(self, "y", y)

    def __len__(self) -> int:
        return len(self.y)


@dataclass(frozen=True)
class LawFit:
    """The result of fitting one form.

    Attributes
    ----------
    form : str
        The law's name.
    params : dict of str to float
        Fitted parameters (best start), in the law's order.
    converged : bool
        Whether the best start's least squares reported convergence and predictions are finite.
    message : str
        scipy's termination message for the best start (or why no start produced a result).
    train_rmse : float
        RMS residual on the fit runs (``nan`` when no start produced a result).
    n_train : int
        Number of fit runs.
    starts : int
        Number of starts tried.
    """

    form: str
    params: dict[str, float]
    converged: bool
    message: str
    train_rmse: float
    n_train: int
    starts: int

    @property
    def law(self) -> Law:
        return get_law(self.form)

    def predict(self, rho: np.ndarray, S: np.ndarray) -> np.ndarray:
        """Predicted alignment at ``(rho, S)``; shapes broadcast."""
        theta = np.array([self.params[p] for p in self.law.params])
        return self.law(theta, rho, S)

    def to_dict(self) -> dict:
        return {
            "form": self.form,
            "formula": self.law.formula,
            "params": dict(self.params),
            "converged": self.converged,
            "message": self.message,
            "train_rmse": self.train_rmse,
            "n_train": self.n_train,
            "starts": self.starts,
        }


def rmse(pred: np.ndarray, y: np.ndarray) -> float:
    """``sqrt(mean((pred - y)^2))``; ``nan`` for empty input or non-finite predictions."""
    pred, y = np.asarray(pred, float), np.asarray(y, float)
    if pred.size == 0 or not np.all(np.isfinite(pred)):
        return float("nan")
    return float(np.sqrt(np.mean((pred - y) ** 2)))


def seed_spread(y_a: Sequence[float], y_b: Sequence[float]) -> float:
    """Seed-to-seed spread ``sqrt(mean((y_a - y_b)^2) / 2)`` over pairs of repeat-seed runs.

    Parameters
    ----------
    y_a, y_b : array-like, shape (P,)
        Scores of two runs at the same configuration that differ only in their seed.

    Returns
    -------
    float
        An estimate of the per-run standard deviation due to the seed (see the module docstring);
        ``nan`` when there are no pairs.
    """
    a, b = np.asarray(y_a, float), np.asarray(y_b, float)
    if a.shape != b.shape:
        raise InputError(f"seed spread: pair arrays differ in shape, {a.shape} vs {b.shape}")
    if a.size == 0:
        return float("nan")
    return float(np.sqrt(np.mean((a - b) ** 2) / 2.0))


def fit_law(
    law: Law | str,
    data: LawData,
    *,
    starts: int = 8,
    seed: int = 0,
    max_nfev: int | None = None,
) -> LawFit:
    """Least-squares fit of one law from several starts.

    Parameters
    ----------
    law : Law or str
        The form (or its name, see :data:`prh.scaling.laws.LAWS`).
    data : LawData
        The fit runs.
    starts : int
        Number of starts: the law's ``init`` then ``starts - 1`` uniform draws inside the bounds.
    seed : int
        Seeds the start draws (same seed => same fit).
    max_nfev : int, optional
        Evaluation budget per start (scipy's default when ``None``); a tiny budget makes the fit
        report ``converged=False``.

    Returns
    -------
    LawFit
    """
    law = get_law(law) if isinstance(law, str) else law
    if starts < 1:
        raise InputError(f"fit {law.name}: starts must be >= 1, got {starts}")
    n_params = len(law.params)
    if len(data) <= n_params:
        raise InputError(
            f"fit {law.name}: {len(data)} fit runs for {n_params} parameters; need more runs"
        )
    lo, hi = np.array(law.lower), np.array(law.upper)
    rng = np.random.default_rng(seed)
    x0s = [np.array(law.init)] + [rng.uniform(lo, hi) for _ in range(starts - 1)]

    def residuals(theta: np.ndarray) -> np.ndarray:
        r = law(theta, data.rho, data.S) - data.y
        # a non-finite residual would stop the solver; a large finite one steers it away instead
        return np.nan_to_num(r, nan=1e3, posinf=1e3, neginf=-1e3)

    best = None
    last_error = "no start produced a result"
    for x0 in x0s:
        try:
            res = least_squares(
                residuals, x0, bounds=(lo, hi), method="trf", max_nfev=max_nfev, x_scale="jac"
            )
        except (ValueError, np.linalg.LinAlgError) as e:  # pragma: no cover - scipy edge cases
            last_error = f"least_squares failed: {e}"
            continue
        if best is None or res.cost < best.cost:
            best = res
    if best is None:
        params = dict.fromkeys(law.params, float("nan"))
        return LawFit(law.name, params, False, last_error, float("nan"), len(data), starts)
    pred = law(best.x, data.rho, data.S)
    finite = bool(np.all(np.isfinite(pred)))
    converged = bool(best.status > 0) and finite
    message = str(best.message) if finite else f"non-finite predictions ({best.message})"
    params = {p: float(v) for p, v in zip(law.params, best.x)}
    return LawFit(law.name, params, converged, message, rmse(pred, data.y), len(data), starts)


@dataclass(frozen=True)
class FormResult:
    """One form's fit and its held-out error."""

    fit: LawFit
    heldout_rmse: float

    def to_dict(self) -> dict:
        return {**self.fit.to_dict(), "heldout_rmse": self.heldout_rmse}


@dataclass(frozen=True)
class LawReport:
    """Every form's fit, the chosen form, and the seed spread it is judged against.

    ``chosen`` is the converged form with the lowest held-out RMSE (``None`` when no form
    converged); ``ratio = heldout_rmse(chosen) / seed_spread``.
    """

    forms: tuple[FormResult, ...]
    chosen: str | None
    seed_spread: float
    n_fit: int
    n_heldout: int
    n_pairs: int
    notes: tuple[str, ...] = field(default=())

    def form(self, name: str) -> FormResult:
        for f in self.forms:
            if f.fit.form == name:
                return f
        raise KeyError(name)

    @property
    def heldout_rmse(self) -> float:
        return self.form(self.chosen).heldout_rmse if self.chosen else float("nan")

    @property
    def ratio(self) -> float:
        s = self.seed_spread
        return self.heldout_rmse / s if s and np.isfinite(s) and s > 0 else float("nan")

    def to_dict(self) -> dict:
        chosen = self.form(self.chosen) if self.chosen else None
        return {
            "form": self.chosen,
            "heldout_rmse": self.heldout_rmse,
            "seed_spread": self.seed_spread,
            "ratio": self.ratio,
            "params": dict(chosen.fit.params) if chosen else None,
            "n_fit": self.n_fit,
            "n_heldout": self.n_heldout,
            "n_pairs": self.n_pairs,
            "seed_spread_definition": "sqrt(mean((y - y_repeat)^2) / 2) over repeat-seed pairs",
            "selection": "converged form with the lowest held-out RMSE",
            "forms": [f.to_dict() for f in self.forms],
            "notes": list(self.notes),
        }


def fit_laws(
    fit_data: LawData,
    heldout: LawData,
    pairs: tuple[np.ndarray, np.ndarray] | None = None,
    *,
    forms: Sequence[str] | None = None,
    starts: int = 8,
    seed: int = 0,
    max_nfev: int | None = None,
) -> LawReport:
    """Fit every form, measure held-out RMSE, choose the best converged one.

    Parameters
    ----------
    fit_data : LawData
        Runs the laws are fitted on.
    heldout : LawData
        Runs predicted before being looked at (never used for fitting).
    pairs : (y_a (P,), y_b (P,)), optional
        Repeat-seed pairs for :func:`seed_spread`.
    forms : sequence of str, optional
        Forms to try (default: all of :data:`LAWS`).
    starts, seed, max_nfev
        Passed to :func:`fit_law`.
    """
    names = list(forms) if forms else list(LAWS)
    if not names:
        raise InputError("fit-law: no forms to fit")
    if len(heldout) == 0:
        raise InputError("fit-law: no held-out runs to select a form with")
    results = []
    for name in names:
        fit = fit_law(name, fit_data, starts=starts, seed=seed, max_nfev=max_nfev)
        ho = rmse(fit.predict(heldout.rho, heldout.S), heldout.y) if fit.converged else float("nan")
        results.append(FormResult(fit, ho))
    ok = [r for r in results if r.fit.converged and np.isfinite(r.heldout_rmse)]
    chosen = min(ok, key=lambda r: r.heldout_rmse).fit.form if ok else None
    notes = []
    if chosen is None:
        notes.append("no form converged; nothing chosen")
    for r in results:
        if not r.fit.converged:
            notes.append(f"{r.fit.form} did not converge: {r.fit.message}")
    spread = seed_spread(*pairs) if pairs is not None else float("nan")
    n_pairs = len(pairs[0]) if pairs is not None else 0
    return LawReport(
        tuple(results), chosen, spread, len(fit_data), len(heldout), n_pairs, tuple(notes)
    )


def law_data_from_rows(
    rows: Sequence[dict], key: str = "score", places: Sequence[str] | None = None
) -> tuple[LawData, LawData, tuple[np.ndarray, np.ndarray]]:
    """Split ``results.jsonl`` rows into fit runs, held-out runs and repeat-seed pairs.

    Fit: ``split == "fit"``; held-out: ``split == "heldout"``; pairs: each held-out run with the
    ``repeat`` run of the same ``point``. Only ``views == "mixture"`` rows with a ``key`` value
    (not ``null``) count.

    Parameters
    ----------
    rows : sequence of dict
        The rows (:func:`prh.scaling.sweep.read_results`).
    key : str
        The alignment column (``score`` or ``calibrated``).
    places : sequence of str, optional
        Where each row came from (``"results.jsonl line 6"``, see
        :func:`prh.scaling.rows.row_places`), for error messages; default ``"row j"``.

    Raises
    ------
    InputError
        When there are no fit or no held-out runs, or a row lacks a field or holds the wrong
        type (the message names the row, the field, what was expected and what came).
    """
    by: dict[str, list[tuple[float, float, float, Any]]] = {"fit": [], "heldout": [], "repeat": []}
    for r, where in zip(rows, default_places(rows, places)):
        if rows_.text(r, "views", where) != "mixture":
            continue
        split, y = rows_.text(r, "split", where), rows_.optional_number(r, key, where)
        if y is None or split not in by:
            continue
        rho = rows_.number(r, "rho", where)
        samples = rows_.number(r, "samples", where, positive=True)
        point = rows_.label(r, "point", where) if split != "fit" else None
        by[split].append((rho, samples, y, point))
    if not by["fit"] or not by["heldout"]:
        raise InputError(
            f"fit-law: need fit and held-out mixture runs with a {key!r} value, got "
            f"{len(by['fit'])} fit and {len(by['heldout'])} held-out"
        )

    def data(rs: list[tuple[float, float, float, Any]]) -> LawData:
        return LawData([r[0] for r in rs], [r[1] for r in rs], [r[2] for r in rs])

    repeat = {r[3]: r[2] for r in by["repeat"] if r[3] is not None}
    paired = [(r[2], repeat[r[3]]) for r in by["heldout"] if r[3] in repeat]
    pairs = (np.array([a for a, _ in paired]), np.array([b for _, b in paired]))
    return data(by["fit"]), data(by["heldout"]), pairs
