"""The demo's control (issue 21): the same encoders trained on a world without a spectral gap.

The default demo trains on the moving cave, whose good views (two frames ``D`` steps apart)
have a pair kernel with distinct top eigenvalues and a gap; the control is the still cave
(``DemoConfig.control``), whose good views (two observations of one scene) give ``diag(p)``:
no gap, so the theorem fixes nothing. The control trains the text good and bad runs at the
main budget (a :class:`~prh.scaling.grid.RunSet` of the same cave runner, so the cells are the
main sweep's would-be curve cells) and the image/sketch runs of ``cfg.image.modalities``, embeds
them like the main demo and measures the same matrix (mutual-kNN, CKA, rotation scores, pair-free,
held-out canonical correlation ``cc``). Everything lies under ``OUT/control/``; a rerun reuses
it. The prediction: the good-view pairs agree less across modalities on the control, intervals
apart (:func:`prh.demo.theory_targets.targets`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prh.demo import modalities, protocol, steps
from prh.demo.context import Context
from prh.demo.figures import fig, interval
from prh.demo.sweeps import run_cells
from prh.scaling.grid import RunSet

CONTROL_TEXT = ("good", "bad", "random-init")
"""The control's text encoders (the names of :data:`prh.demo.world.TEXT_ENCODERS`)."""


def control_runs(ctx: Context) -> dict[str, Path]:
    """Train (or reuse) the control's good and bad text runs; name -> run folder."""
    cfg = ctx.cfg
    runner = protocol.backend(cfg)
    sweep = protocol.sweep_dir(ctx.out, cfg)
    runs = RunSet("prh-demo-control", tuple(("text", v, cfg.text.samples) for v in ("good", "bad")))
    _, rows = run_cells(ctx, runs, runner, sweep, what="control ", tag="control: ")
    by_id = {r["cell_id"]: r for r in rows}
    out = {}
    for cell in runs.cells(cfg.seed):
        row = by_id[cell.cell_id(runner.name, runner.options())]
        out[cell.views] = sweep / row["extra"]["run_dir"]
    return out


def step_control(ctx: Context) -> dict[str, Any]:
    """Train, embed and measure the control (module docstring); ``{"world", "runs", "theory",
    "evidence"}``, or ``{"skipped": reason}`` without a control world."""
    from prh.demo.spectral import log_spectral, theory_and_maps
    from prh.demo.world import text_encoder
    from prh.encoders import load_encoder

    if not ctx.cfg.control:
        ctx.log("  no control world in this config")
        return {"skipped": "no control world"}
    cfg = ctx.cfg.control_config()
    cctx = Context(cfg, ctx.out / "control", ctx.log, root=ctx.shared)
    ctx.log(f"  control world {cfg.world}: text good and bad at {cfg.text.samples} samples, "
            f"{', '.join(cfg.image.modalities) or 'no image run'}")  # fmt: skip
    vision = steps.step_vision(cctx)
    runs = control_runs(cctx)
    text = {}
    for name in CONTROL_TEXT:
        make = (lambda n=name: text_encoder(cfg, n, runs)) if name == "random-init" else (
            lambda n=name: load_encoder(str(runs[n])))  # fmt: skip
        src = str(runs["good" if name == "random-init" else name].name)
        text[name] = steps.embed_text(cctx, name, src, make)
    image_runs = modalities.train_runs(cctx)
    images = modalities.embed_runs(cctx, image_runs)
    sets = modalities.evidence_sets(text, vision, images)
    ev = modalities.evidence(cctx, sets)
    good = {"text-good": runs["good"], **image_runs}
    th = theory_and_maps(cctx, sets, ev["matrix"]["names"], good)
    _log(ctx, ev, th)
    log_spectral(ctx, th["spectral"], "control ")
    return {
        "world": cfg.world,
        "runs": {n: str(d.relative_to(ctx.out)) for n, d in runs.items()},
        "theory": th,
        "evidence": ev,
    }


def _log(ctx: Context, ev: dict[str, Any], th: dict[str, Any]) -> None:
    names = th["pairs"]["names"]
    for a, b in modalities.GOOD_PAIRS:
        if a in names and b in names:
            i, j = names.index(a), names.index(b)
            p = th["pairs"]
            m = ev["matrix"]
            ctx.log(
                f"  control {a}~{b}: cc {fig(p['cc'][i][j])} "
                f"{interval(p['cc_ci_low'][i][j], p['cc_ci_high'][i][j])}, CKA "
                f"{fig(m['cka'][i][j])}, mutual-kNN {fig(m['mutual_knn'][i][j], '.4f')}"
            )
