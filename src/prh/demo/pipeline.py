"""``prh demo``: the paper's three claims on the cave world, step by step, resumable.

Steps (each logs one line with its wall and CPU time; each caches its result under ``OUT``):

1. ``prove``: the theorem checks, quick (:mod:`prh.prove`).
2. ``vision``: frozen image features (EfficientNet-Lite0) of the held-out scenes' renders and of
   the training scenes that fit the bridge.
3. ``train``: the demo's sweep (:mod:`prh.demo.protocol`): good, bad and next-token text
   encoders at one budget and mixture runs for the law, a :class:`~prh.scaling.grid.Grid` run by
   :func:`~prh.scaling.sweep.run_sweep` into ``OUT/sweep-<hash>/``; each run records its alignment
   curve against the held-out vision features.
4. ``embed``: held-out captions with each trained encoder, the MiniLM baseline and a random-init
   control; training-scene captions (5 averaged) for the bridge.
5. ``measure``: mutual-kNN (k = 10, best layer pair), calibrated score (permutation null), CI;
   next-token pooled two ways (mean over tokens, last token).
6. ``word_order``: does the world reward context? Per layer, captions as written vs shuffled,
   beside a bag of words (:mod:`prh.demo.word_order`); and the word-collapse check of every
   trained text run (:func:`prh.demo.steps.step_word_collapse`).
7. ``efficiency``: samples good views and next-token need to reach one alignment (seed curves).
8. ``law``: candidate laws fitted on the mixture runs' curves, judged on held-out runs; on a
   world with a theory, sample efficiency and the law again on the curves against the theory
   embedding (:func:`prh.demo.steps.step_theory_curves`).
9. ``bridge``: image <-> caption retrieval through one map, zero-shot classes, pair-free class
   matching; the captioner (``OUT/caption/``).
10. ``modalities``: image and sketch encoders trained apart on their own views; the alignment
    matrix of every encoder pair, the rotation scores, pair-free matching and (``--full``) the
    captioner built with zero pairs (:mod:`prh.demo.modalities`).
11. ``theory``: the world's spectrum, every encoder's held-out canonical correlation with the
    theory embedding and every pair's with each other (:mod:`prh.demo.theory`).
12. ``control``: the text good / bad and image/sketch encoders again on the control world (the
    still cave: no gap), measured the same way (:mod:`prh.demo.control`); issue 21's targets
    (:mod:`prh.demo.theory_targets`).
13. ``literal``: text-good again on the literal-caption twin of the world, both caption kinds
    against the same image encoder beside the theory's predictions, and the rule's verdict
    (:mod:`prh.demo.literal`).
14. ``report``: ``OUT/summary.json``, ``OUT/report.html`` and the PNG plots.

A rerun reuses every finished result (sweep cells by id, features and step results by a hash of
the settings they depend on), so a killed demo continues where it stopped and a finished one only
rewrites the report.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prh.demo import steps
from prh.demo.bridge import bridge_section
from prh.demo.config import DemoConfig
from prh.demo.context import Context, cpu_seconds
from prh.demo.control import step_control
from prh.demo.modalities import ModalityEvidence, log_targets, step_modalities
from prh.demo.report import write_outputs
from prh.demo.world import check_world_sizes
from prh.io import write_json
from prh.jsonio import read_json

N_STEPS = 14


def _record_cost(ctx: Context, name: str, wall: float, cpu: float) -> None:
    """Keep, per step, the costliest invocation in ``OUT/steps/costs-<hash>.json`` (a rerun that
    reuses a step's results costs seconds; the report shows what computing it took)."""
    p = ctx.path("steps", f"costs-{ctx.cfg.digest()}.json")
    costs = read_json(p) if p.is_file() else {}
    old = costs.get(name, {"wall_s": 0.0, "cpu_s": 0.0})
    if cpu > old["cpu_s"]:
        costs[name] = {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1)}
        write_json(p, costs)
    ctx.costs = costs


def _step(ctx: Context, i: int, name: str, fn: Callable[[], Any]) -> Any:
    """Run one step with its start and done lines and its timing."""
    ctx.log(f"[{i}/{N_STEPS}] {name} ...")
    w, c = time.perf_counter(), cpu_seconds()
    value = fn()
    dw, dc = time.perf_counter() - w, cpu_seconds() - c
    ctx.timings[name] = {"wall_s": round(dw, 1), "cpu_s": round(dc, 1)}
    _record_cost(ctx, name, dw, dc)
    ctx.log(
        f"[{i}/{N_STEPS}] {name} done in {dw:.0f}s (cpu {dc:.0f}s; total "
        f"{time.perf_counter() - ctx.t0:.0f}s)"
    )
    return value


def run_demo(
    cfg: DemoConfig,
    out: str | os.PathLike[str],
    log: Callable[[str], None] | None = None,
    skip_prove: bool = False,
) -> dict[str, Any]:
    """Run every step into ``out``; return the summary (also ``out/summary.json``)."""

    def say(msg: str) -> None:
        print(msg, flush=True) if log is None else log(msg)

    check_world_sizes(cfg)
    ctx = Context(cfg, Path(out), say)
    ctx.out.mkdir(parents=True, exist_ok=True)
    write_json(ctx.out / "demo.json", {"config": cfg.to_dict()})
    results: dict[str, Any] = {"config": cfg.to_dict()}

    if skip_prove:
        results["prove"] = {"passed": None, "skipped": True}
    else:
        results["prove"] = _step(ctx, 1, "prove", lambda: steps.step_prove(ctx))
    vision = _step(ctx, 2, "vision", lambda: steps.step_vision(ctx))
    train = _step(ctx, 3, "train", lambda: steps.step_train(ctx))
    results["runs"] = train["runs"]
    runs = {r["name"]: ctx.out / r["path"] for r in train["runs"]}
    text = _step(ctx, 4, "embed", lambda: steps.step_embed(ctx, runs))
    results["measure"] = _step(
        ctx, 5, "measure", lambda: steps.step_measure(ctx, text, vision["test"])
    )
    results["word_order"] = _step(
        ctx, 6, "word_order", lambda: steps.step_word_order(ctx, runs, text, vision["test"])
    )
    results["word_collapse"] = steps.step_word_collapse(ctx, runs)
    results["tokens_per_row"] = steps.step_tokens(ctx, runs)
    results["sample_efficiency"] = _step(
        ctx, 7, "efficiency", lambda: steps.step_efficiency(ctx, train["runs"], results["measure"])
    )
    results["law"] = _step(ctx, 8, "law", lambda: steps.step_law(ctx, train["runs"]))
    results["theory_curves"] = steps.step_theory_curves(ctx, train["runs"], runs)
    results["bridge"] = _step(ctx, 9, "bridge", lambda: bridge_section(ctx, text, vision, runs))
    mod = _step(ctx, 10, "modalities", lambda: step_modalities(ctx, text, vision, runs))
    results["modalities"] = mod.section
    results["theory"] = _step(ctx, 11, "theory", lambda: step_theory(ctx, text, vision, runs, mod))
    results["control"] = _step(ctx, 12, "control", lambda: step_control(ctx))
    results["theory"]["targets"] = theory_targets(ctx, results)
    results["literal"] = _step(ctx, 13, "literal", lambda: step_literal(ctx, mod))
    return _step(ctx, 14, "report", lambda: write_outputs(ctx, results))


def step_theory(
    ctx: Context, text: dict, vision: dict, runs: dict[str, Path], mod: ModalityEvidence
) -> dict[str, Any]:
    """The theory section of every feature set the modalities step compared (the text and
    frozen sets alone when it trained none), and the spectral pair-free maps between the
    good-view encoders (:func:`prh.demo.spectral.theory_and_maps`)."""
    from prh.demo.modalities import evidence_sets
    from prh.demo.spectral import log_spectral, theory_and_maps
    from prh.demo.theory import log_theory

    sets = mod.sets or evidence_sets(text, vision, {})
    names = mod.names or list(sets)
    value = theory_and_maps(ctx, sets, names, {"text-good": runs["good"], **mod.image_runs})
    log_theory(ctx, value)
    log_spectral(ctx, value["spectral"])
    return value


def step_literal(ctx: Context, mod: ModalityEvidence) -> dict[str, Any]:
    """The literal-caption twin against the modalities step's image-good encoder
    (:func:`prh.demo.literal.step_literal`)."""
    from prh.demo.literal import step_literal as literal

    return literal(ctx, mod.sets, mod.image_runs)


def theory_targets(ctx: Context, results: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 21's targets (:mod:`prh.demo.theory_targets`), each logged; none on a corpus
    (they are the generated worlds' spectrum, theory embedding and control)."""
    from prh.demo.theory_targets import targets

    if ctx.cfg.corpus:
        ctx.log("  issue 21's targets: absent on a corpus (no spectrum, theory or control)")
        return []

    ev = results["modalities"].get("evidence")
    rows = targets(results["theory"], ev["matrix"] if ev else None, results["control"])
    log_targets(ctx, rows)
    return rows
