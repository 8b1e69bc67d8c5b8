"""Spectral pair-free alignment between the demo's good-view encoders (issue 22, item 3).

For each good-view pair across modalities (image-good ~ text-good, sketch-good ~ text-good,
image-good ~ sketch-good) present in the run: each side draws its own positive pairs from its run
(:func:`prh.training.moving.run_positive_pairs`: two frames at the world's lag on the moving cave,
two observations of one scene on the still one), doubling from 4,096 a side until every component
is separated on both sides or ``spectral_pairs`` (the cap) is reached
(:func:`prh.bridge.spectral.spectral_align_until_separated`; the count drawn is reported), and
finds the rotation from those alone (components matched by eigenvalue), its signs from the
held-out embeddings' marginals. No cross-modal pair enters. Then, in the method's common
component coordinates (both sides whitened by their own pairs, sign-fixed), on the held-out
states:

- the spectral map (the identity there) against the **paired** orthonormal map (orthogonal
  Procrustes fitted on the bridge states' pairs in the same coordinates): held-out ``R^2`` of
  one side from the other, and R@1 of retrieving each state's partner (nearest neighbour);
- the one-to-one assignment of the two unpaired held-out sets (Hungarian), its accuracy;
- whether the eigenvalues pin the rotation, and the method's one-line reason when they do not.

On either world the method keeps the moving cave's ``k = 8`` strongest components (the still
world's JEPAs are wider: their top 8 by eigenvalue).

Layer: glue over :mod:`prh.bridge.spectral` and :mod:`prh.training.moving`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from prh.bridge.rotation_score import r2_score
from prh.demo.modalities import GOOD_PAIRS
from prh.features import last_layer


def _r1(pred: np.ndarray, y: np.ndarray) -> float:
    """Fraction of rows whose nearest row of ``y`` (L2) is their own."""
    d = ((pred[:, None, :] - y[None, :, :]) ** 2).sum(-1)
    return float((d.argmin(1) == np.arange(len(y))).mean())


def compare_maps(res: Any, fit: tuple, test: tuple) -> dict[str, Any]:
    """The spectral map against the paired orthonormal map, in ``res``'s component
    coordinates: ``fit`` / ``test`` are ``(x rows, y rows)`` of the same states."""
    cx, cy = res.components(fit[0], "x"), res.components(fit[1], "y")
    u, _, vt = np.linalg.svd(cx.T @ cy)
    rot = u @ vt  # the best rotation given the pairs
    tx, ty = res.components(test[0], "x"), res.components(test[1], "y")
    spectral = {"r2": r2_score(tx, ty), "r1": _r1(tx, ty)}
    paired = {"r2": r2_score(tx @ rot, ty), "r1": _r1(tx @ rot, ty)}
    return {
        "spectral": spectral,
        "paired": paired,
        "r2_ratio": spectral["r2"] / paired["r2"] if paired["r2"] > 0 else None,
        "r1_ratio": spectral["r1"] / paired["r1"] if paired["r1"] > 0 else None,
        "chance_r1": 1.0 / len(ty),
    }


def spectral_section(
    ctx: Any, runs: Mapping[str, Path], sets: Mapping[str, Mapping[str, Any]],
    pairs: Sequence[tuple[str, str]] = GOOD_PAIRS,
) -> dict[str, Any]:  # fmt: skip
    """``{"pairs": n, "maps": {"a~b": ...}}`` for every pair of ``pairs`` (default: the good-view
    pairs across modalities) both of whose sides are in ``runs`` (evidence name -> run folder),
    cached by the runs and the settings; ``{"skipped": why}`` when none."""
    from prh.demo.modalities import load_sets

    cfg = ctx.cfg
    todo = [(a, b) for a, b in pairs if a in runs and b in runs]
    if not todo or not cfg.measure.spectral_pairs:
        return {"skipped": "no good-view pair across modalities, or spectral_pairs = 0"}
    key = "|".join(f"{n}:{Path(runs[n]).name}:{Path(sets[n]['test']).name}" for n in sorted(runs))
    if tuple(pairs) != GOOD_PAIRS:  # another set of pairs over the same runs: another cache
        key += "|" + ",".join(f"{a}~{b}" for a, b in todo)
    h = hashlib.sha256(f"{key}|{cfg.digest('spectral_pairs', 'seed')}".encode()).hexdigest()[:10]

    def go() -> dict[str, Any]:
        train, test, dims = load_sets({n: sets[n] for n in runs})
        memo: dict[tuple, tuple] = {}  # a run's draws are shared by every map it is in

        def drawer(name: str):
            def draw(n: int, rnd: int) -> tuple:
                if (name, n, rnd) not in memo:
                    memo[(name, n, rnd)] = own_pairs(ctx.shared / "pairs", runs[name], n,
                                                     cfg.seed * 1000 + rnd)  # fmt: skip
                return memo[(name, n, rnd)]

            return draw

        maps = {}
        for a, b in todo:
            rows = [last_layer(d[n], dims[n]) for d in (train, test) for n in (a, b)]
            maps[f"{a}~{b}"] = _one(drawer(a), drawer(b), rows, cfg.seed,
                                    cfg.measure.spectral_pairs)  # fmt: skip
        return {"pairs": cfg.measure.spectral_pairs, "maps": maps}

    value, _ = ctx.cached_json(f"spectral-{h}", go)
    return value


def own_pairs(cache: Path, run: Path, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` positive pairs of ``run`` embedded by it
    (:func:`prh.training.moving.run_positive_pairs` at ``seed``), kept in ``cache`` (a folder
    beside the demo's runs) under the run's place in the demo: a pure function of the run and
    the seed, so the literal step's image-good side reuses the theory step's draws instead of
    sending 16,384 more renders through the image encoder."""
    import os

    from prh.io import read_tensors, write_tensors
    from prh.training.moving import run_positive_pairs

    where = os.path.relpath(Path(run).resolve(), Path(cache).resolve().parent)
    tag = hashlib.sha256(where.encode()).hexdigest()[:16]
    path = Path(cache) / f"{tag}-{n}-{seed}.safetensors"
    if path.is_file():
        t = read_tensors(path)
        return t["a"], t["b"]
    a, b = run_positive_pairs(run, n, seed=seed).embedding()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_tensors(path, {"a": a, "b": b})
    return a, b


def _one(draw_a, draw_b, rows: Sequence[np.ndarray], seed: int, cap: int) -> dict[str, Any]:
    """One pair: the method on pairs drawn from each side's own run (``draw_*(n, round)``) until
    separated or ``cap``, the unpaired held-out sets, and the comparison with the paired map
    (``rows``: fit x, fit y, test x, test y)."""
    from prh.bridge.spectral import spectral_align_until_separated
    from prh.errors import InputError
    from prh.world.moving import GAP_K

    fx, fy, tx, ty = rows
    k = min(fx.shape[1], fy.shape[1], GAP_K)  # the theory's k on either world
    try:
        res = spectral_align_until_separated(
            draw_a, draw_b, tx, ty, k=k, start=min(4096, cap), cap=cap,
            truth=np.arange(len(ty)), seed=seed, assignment="hungarian",
        )  # fmt: skip
    except InputError as e:  # e.g. a constant side: reported, not fatal to the demo
        return {"pinned": False, "reason": str(e), "error": True}
    d = res.to_dict()
    keep = ("k", "pinned", "reason", "eigenvalues_x", "eigenvalues_y", "relative_separation_x",
            "relative_separation_y", "sign_z", "accuracy", "match_y", "eigenvalue_agreement_z",
            "pairs_drawn", "stopped")  # fmt: skip
    return {**{f: d[f] for f in keep}, **compare_maps(res, (fx, fy), (tx, ty))}


def theory_and_maps(
    ctx: Any, sets: Mapping[str, Any], names: Sequence[str], good_runs: Mapping[str, Path]
) -> dict[str, Any]:
    """The theory section of the compared ``sets`` (:func:`prh.demo.theory.theory_section`)
    with the spectral maps between the ``good_runs`` under ``"spectral"``: the main demo's and
    the control's one recipe."""
    from prh.demo.theory import theory_section

    value = theory_section(ctx, sets, names)
    value["spectral"] = spectral_section(ctx, good_runs, sets)
    return value


def log_spectral(ctx: Any, value: Mapping[str, Any], where: str = "") -> None:
    from prh.demo.figures import fig

    if "skipped" in value:
        return
    for pair, m in value["maps"].items():
        if m.get("error"):
            ctx.log(f"  {where}spectral {pair}: {m['reason']}")
            continue
        ctx.log(
            f"  {where}spectral {pair}: {'pinned' if m['pinned'] else 'NOT pinned'}; R^2 "
            f"{fig(m['spectral']['r2'])} vs paired {fig(m['paired']['r2'])}, R@1 "
            f"{fig(m['spectral']['r1'])} vs paired {fig(m['paired']['r1'])} (chance "
            f"{fig(m['chance_r1'])}); assignment {fig(m['accuracy'])}; "
            f"{m.get('pairs_drawn')} pairs a side ({m.get('stopped')})"
            + ("" if m["pinned"] else f"; {m['reason']}")
        )
