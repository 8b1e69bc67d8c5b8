"""Pure pieces of the demo: curves to sample efficiency, runs to law data, the bridge section.

No disk I/O here: arrays and dicts in, dicts out (the orchestration in :mod:`prh.demo.pipeline`
reads and writes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from prh.errors import InputError


# ----------------------------------------------------------------------------- curves, efficiency
def curve_arrays(evals: Sequence[tuple[int, float]]) -> tuple[np.ndarray, np.ndarray]:
    """``(S (n,), y (n,))`` from ``(samples, score)`` records, sorted by samples."""
    if not evals:
        raise InputError("demo: a run has no evaluations (was eval_every set?)")
    ev = sorted(evals)
    return np.array([s for s, _ in ev], float), np.array([y for _, y in ev], float)


def efficiency_summary(
    good: Sequence[tuple[int, float]],
    next_token: Sequence[tuple[int, float]],
    seed: int = 0,
    target: float | None = None,
    control: float | None = None,
) -> dict[str, Any]:
    """Samples good views and next-token need to reach ``target``, and their ratio.

    Default target: the higher of :func:`prh.scaling.efficiency.default_target` (0.95 x the lower
    of the two best alignments) and, when the untrained ``control`` score is given, halfway from
    the control to the best good-view alignment. The second rule keeps the target above what an
    untrained encoder already scores (otherwise both methods "reach" it at the first point).
    When next-token never reaches the target, ``ratio`` is ``None`` and ``ratio_lower_bound`` is
    the largest budget over ``samples_good``.

    Returns :meth:`EfficiencyResult.to_dict` with ``samples_a``/``samples_b`` renamed
    ``samples_good``/``samples_next_token``.
    """
    from prh.scaling.efficiency import Curves, default_target, sample_efficiency

    sg, yg = curve_arrays(good)
    sn, yn = curve_arrays(next_token)
    common = np.intersect1d(sg, sn)
    a = Curves(common, yg[np.isin(sg, common)][None], (seed,), "good")
    b = Curves(common, yn[np.isin(sn, common)][None], (seed,), "next-token")
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
    d = sample_efficiency(a, b, t, n_boot=0).to_dict()
    d["samples_good"] = d.pop("samples_a")
    d["samples_next_token"] = d.pop("samples_b")
    d["target_rule"] = rule
    d["ratio_lower_bound"] = None
    if d["samples_next_token"] is None and d["samples_good"]:
        d["ratio_lower_bound"] = float(common.max() / d["samples_good"])
    return d


# ----------------------------------------------------------------------------- law rows
def law_rows(
    runs: Sequence[dict[str, Any]],
    law_samples: Sequence[int],
    heldout_samples: Sequence[int],
) -> list[dict[str, Any]]:
    """``results.jsonl``-style rows for :func:`prh.scaling.fit.law_data_from_rows`.

    Parameters
    ----------
    runs : sequence of dict
        ``{"role", "views", "rho", "seed", "point", "evals": [(samples, score), ...]}``; the good
        and bad curve runs enter the fit as rho = 1 and rho = 0 (pure good / pure bad views are
        the mixture's end points).
    law_samples, heldout_samples : sequence of int
        Where fit runs and held-out / repeat runs are read off their curves.
    """
    rows: list[dict[str, Any]] = []
    for r in runs:
        ev = dict(r["evals"])
        role = r["role"]
        if role == "curve":
            if r["views"] not in ("good", "bad"):
                continue
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
def drop_constant_columns(train: np.ndarray, *others: np.ndarray) -> list[np.ndarray]:
    """Remove columns that are constant on ``train`` (zero padding of narrow layers)."""
    keep = train.std(0) > 1e-8
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
