"""Pure pieces of the demo: curves to sample efficiency, runs to law data, the bridge section.

No disk I/O here: arrays and dicts in, dicts out (the orchestration in :mod:`prh.demo.pipeline`
reads and writes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from prh.demo.summary import ci_bounds
from prh.errors import InputError


# ----------------------------------------------------------------------------- curves, efficiency
def curve_arrays(evals: Sequence[tuple[int, float]]) -> tuple[np.ndarray, np.ndarray]:
    """``(S (n,), y (n,))`` from ``(samples, score)`` records, sorted by samples."""
    if not evals:
        raise InputError("demo: a run has no evaluations (was eval_every set?)")
    ev = sorted(evals)
    return np.array([s for s, _ in ev], float), np.array([y for _, y in ev], float)


def seed_curves(per_seed: Sequence[Sequence[tuple[int, float]]], name: str):
    """:class:`prh.scaling.efficiency.Curves` of one method from its seeds' ``(samples, score)``
    records (seed ``j`` = the ``j``-th curve), through
    :func:`prh.scaling.efficiency.curves_from_rows`, which refuses a seed that lacks a sample
    count another seed has."""
    from prh.scaling.efficiency import curves_from_rows

    rows = [
        {"views": name, "seed": j, "samples": float(s), "score": float(y)}
        for j, ev in enumerate(per_seed)
        for s, y in zip(*curve_arrays(ev))
    ]
    return curves_from_rows(rows, name)


def efficiency_summary(
    good: Sequence[Sequence[tuple[int, float]]],
    next_token: Sequence[Sequence[tuple[int, float]]],
    seed: int = 0,
    target: float | None = None,
    control: float | None = None,
    n_boot: int = 1000,
) -> dict[str, Any]:
    """Samples good views and next-token need to reach ``target``, their ratio and its interval.

    Parameters
    ----------
    good, next_token : sequence of curves
        One ``[(samples, score), ...]`` curve per seed; each method's seeds share sample counts
        (next-token's may run further than good views').
    seed : int
        Seeds the bootstrap over seeds.
    target : float, optional
        Default: the higher of :func:`prh.scaling.efficiency.default_target` (0.95 x the lower
        of the two best seed-mean alignments) and, when the untrained ``control`` score is
        given, halfway from the control to the best seed-mean good-view alignment. The second
        rule keeps the target above what an untrained encoder already scores (otherwise both
        methods "reach" it at the first point).
    n_boot : int
        Bootstrap resamples over seeds for the ratio's interval (none with one seed per method).

    Returns :meth:`EfficiencyResult.to_dict` with ``samples_a``/``samples_b`` renamed
    ``samples_good``/``samples_next_token``, plus ``n_seeds`` (the fewer of the two methods'),
    ``largest_budget`` (next-token's largest sample count) and ``ratio_lower_bound`` (that budget
    over ``samples_good`` when next-token never reaches the target).
    """
    from prh.scaling.efficiency import default_target, sample_efficiency

    a = seed_curves(good, "good")
    b = seed_curves(next_token, "next-token")
    rule = "given"
    if target is None:
        t = default_target(a, b)
        rule = "0.95 x the lower of the two best alignments"
        if control is not None:
            half = control + 0.5 * (float(a.mean().max()) - control)
            if half > t:
                t, rule = half, "halfway from the random-init control to the best good-view score"
    else:
        t = float(target)
    n_seeds = min(len(a.seeds), len(b.seeds))
    d = sample_efficiency(a, b, t, n_boot=n_boot if n_seeds > 1 else 0, seed=seed).to_dict()
    d["samples_good"] = d.pop("samples_a")
    d["samples_next_token"] = d.pop("samples_b")
    d["target_rule"] = rule
    d["n_seeds"] = n_seeds
    d["largest_budget"] = float(b.S.max())
    d["ratio_lower_bound"] = None
    if d["samples_next_token"] is None and d["samples_good"]:
        d["ratio_lower_bound"] = float(b.S.max() / d["samples_good"])
    d["curves"] = {
        "good": {"samples": a.S.tolist(), "mean": a.mean().tolist()},
        "next-token": {"samples": b.S.tolist(), "mean": b.mean().tolist()},
    }
    return d


def ratio_text(e: dict[str, Any]) -> str:
    """The sample-efficiency ratio of :func:`efficiency_summary` as the report and the log print
    it: ``"4.00x [3.10, 5.20]"``, ``">= 73.6x (a lower bound)"`` or ``"not defined"``.

    >>> ratio_text({"ratio": None, "ratio_lower_bound": 73.56})
    '>= 73.6x (a lower bound)'
    """
    r, lb = e.get("ratio"), e.get("ratio_lower_bound")
    if r is not None:
        ci = ci_bounds(e)
        return f"{r:.2f}x" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if None not in ci else "")
    return f">= {lb:.1f}x (a lower bound)" if lb else "not defined"


# ----------------------------------------------------------------------------- law rows
def law_rows(
    runs: Sequence[dict[str, Any]],
    law_samples: Sequence[int],
    heldout_samples: Sequence[int],
    key: str = "evals",
) -> list[dict[str, Any]]:
    """``results.jsonl``-style rows for :func:`prh.scaling.fit.law_data_from_rows`.

    Parameters
    ----------
    runs : sequence of dict
        ``{"name", "role", "views", "rho", "seed", "point", "evals": [(samples, score), ...]}``;
        the base seed's good and bad curve runs (named ``good`` and ``bad``) enter the fit as
        rho = 1 and rho = 0 (pure good / pure bad views are the mixture's end points).
    law_samples, heldout_samples : sequence of int
        Where fit runs and held-out / repeat runs are read off their curves.
    key : str
        The curve read: ``evals`` (against the frozen vision features) or ``theory_evals``
        (against the theory embedding).
    """
    rows: list[dict[str, Any]] = []
    for r in runs:
        ev = dict(r[key])
        role = r["role"]
        if role == "curve":
            if r.get("name", r["views"]) not in ("good", "bad"):
                continue  # next-token, and the extra seeds of the efficiency curves
            role, rho = "fit", 1.0 if r["views"] == "good" else 0.0
        else:
            rho = float(r["rho"])
        counts = law_samples if role == "fit" else heldout_samples
        for j, s in enumerate(counts):
            if s not in ev:
                raise InputError(f"demo: run {r.get('name')} has no evaluation at {s} samples")
            point = None if r.get("point") is None else int(r["point"]) * len(counts) + j
            rows.append(
                {
                    "split": role,
                    "views": "mixture",
                    "rho": rho,
                    "samples": int(s),
                    "seed": int(r["seed"]),
                    "point": point,
                    "score": float(ev[s]),
                    "run": r.get("name"),
                }
            )
    return rows


# ----------------------------------------------------------------------------- bridge
def varying_columns(train: np.ndarray) -> np.ndarray:
    """``(D,)`` bool: the columns of ``train`` ``(N, D)`` that are not constant on it (a feature
    file written without its layer widths pads a narrow layer with zero columns)."""
    return train.std(0) > 1e-8


def drop_constant_columns(train: np.ndarray, *others: np.ndarray) -> list[np.ndarray]:
    """Remove columns that are constant on ``train`` (zero padding of narrow layers)."""
    keep = varying_columns(train)
    return [train[:, keep], *(o[:, keep] for o in others)]


def main_object(scene) -> tuple[int, int]:
    """``(shape, colour)`` of a scene's largest object (the first one on ties)."""
    obj = max(scene.objects, key=lambda o: o.size)
    return int(obj.shape), int(obj.colour)


def class_centroids(x: np.ndarray, labels: np.ndarray, classes: int) -> np.ndarray:
    """``(C, D)`` mean of the rows of each class (a class without rows raises)."""
    out = np.zeros((classes, x.shape[1]))
    for c in range(classes):
        rows = x[labels == c]
        if not len(rows):
            raise InputError(f"demo: class {c} has no scenes; use more scenes")
        out[c] = rows.mean(0)
    return out


def bridge_metrics(
    img_train: np.ndarray,
    txt_train: np.ndarray,
    img_test: np.ndarray,
    txt_test: np.ndarray,
    *,
    kind: str = "semi-orthogonal",
    whiten: bool = True,
) -> tuple[dict[str, Any], Any]:
    """Fit an image -> text map on training pairs; retrieval R@1/5/10 both ways on test pairs.

    Returns ``(metrics, fitted map)``; ``img_to_txt`` queries images and retrieves captions.
    """
    from prh.bridge import make_map, retrieval

    xi, xt = drop_constant_columns(img_train, img_test)
    yi, yt = drop_constant_columns(txt_train, txt_test)
    params = {"whiten": whiten} if kind != "ridge" else {}
    m = make_map(kind, **params).fit(xi, yi)
    r = retrieval(m.transform(xt), yt).to_dict()
    out = {
        "map": kind,
        "n_train": len(xi),
        "n_test": len(xt),
        "d_image": xi.shape[1],
        "d_text": yi.shape[1],
        "img_to_txt": r["x_to_y"],
        "txt_to_img": r["y_to_x"],
    }
    return out, (m, xt, yt)


def chance_recall(n: int, ks: Sequence[int] = (1, 5, 10)) -> dict[str, float]:
    """Recall@k of a random ranking of ``n`` candidates: ``k / n``."""
    return {f"R@{k}": min(1.0, k / n) for k in ks}
