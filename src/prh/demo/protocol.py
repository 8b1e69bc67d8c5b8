"""What the demo trains, as a sweep: its :class:`~prh.scaling.grid.Grid` preset, its cave runner,
its sweep folder, and the sweep's results rows read back as named runs with curves.

The runs (:func:`prh.scaling.grid.demo_grid`): good, next-token and bad views (next-token on
documents of several captions of one scene, at ``next_token_factor`` times the budget; good and
next-token with ``curve_seeds`` seeds), and the law's mixture runs (fit rhos, off-grid held-out
rhos and their repeats). Every run records
its alignment curve against the frozen vision features of the held-out scenes
(:class:`~prh.scaling.cave.CaveBackend` with ``curve_every``), so sample efficiency and the law
read their points off the curves. :func:`prh.scaling.sweep.run_sweep` runs them, resumably
(cells already in ``results.jsonl`` are skipped by id).

The image and sketch encoders of the ``modalities`` step are a second sweep, of the same
machinery: a :class:`~prh.scaling.grid.RunSet` (:func:`image_runs`) run by the ``cave-image``
runner (:func:`image_backend`, :mod:`prh.scaling.cave_image`) into
``OUT/modalities/sweep-<hash>/``, its render caches in ``OUT/modalities/render_cache/``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from prh.demo.config import DemoConfig
from prh.scaling.cave import CaveBackend
from prh.scaling.cave_image import CaveImageBackend
from prh.scaling.grid import Cell, Grid, RunSet, demo_grid
from prh.training.config import TrainConfig, train_config

_ORDER = {"curve": 0, "fit": 1, "heldout": 2, "repeat": 2}


def grid(cfg: DemoConfig) -> Grid:
    """The demo's runs as a grid (see :func:`prh.scaling.grid.demo_grid`): the sweep plan's
    runs at the text recipe's budgets."""
    plan, text = cfg.sweep, cfg.text
    return demo_grid(
        f"prh-demo-{cfg.name}",
        samples=text.samples,
        law_rhos=plan.law_rhos,
        law_run_samples=plan.law_run_samples,
        heldout_runs=plan.heldout_runs,
        curve_seeds=plan.curve_seeds,
        next_token_samples=text.nt_samples,
    )


def backend(cfg: DemoConfig) -> CaveBackend:
    """The cave runner: the demo's training recipe, curves every ``eval_every`` samples.

    The learning rate is constant after warm-up (``min_lr_frac = 1``), so a curve point equals a
    run stopped there; warm-up is 5% of the steps, at most 8 batches. The cell's own score uses
    the held-out captions of the curves (wording seed ``world_seed + 1``) and no null (the
    ``measure`` step calibrates). Next-token runs train on documents of ``doc_captions`` captions
    of one scene (the fair next-token protocol, ``docs/demo.md``), up to ``doc_max_len`` tokens.
    On a world with a spectral gap every run also records its curve against the theory
    embedding (held-out canonical correlation, fitted on the ``bridge_scenes`` states the theory
    step fits on; issue 23).
    """
    measure = cfg.measure
    recipe = text_recipe(cfg)
    return CaveBackend(
        vision=cfg.vision,
        train=recipe,
        next_token=next_token_recipe(cfg, recipe),
        eval_scenes=measure.eval_scenes,
        k=measure.k,
        null=0,
        caption_seed=cfg.world_seed + 1,
        threads=cfg.threads,
        curve_every=cfg.sweep.eval_every,
        warmup_max_batches=8,
        theory_fit_scenes=measure.bridge_scenes if has_theory(cfg) else 0,
    )


CONVERGED_MIN_LR = 0.1
"""The converged text recipe's cosine floor, a fraction of the peak learning rate."""
CONVERGED_CURVE_POINTS = 8
"""``--eval-theory`` points along a converged run (its curve must not fall)."""


def converged_backend(cfg: DemoConfig, runs: int = 1) -> CaveBackend:
    """The cave runner with the text recipe trained to the theory's optimum (issue 31, item 4;
    the literal step's runs, :mod:`prh.demo.literal`): cosine decay to
    :data:`CONVERGED_MIN_LR` of the peak rate and the trainer's 5% warm-up, uncapped, at
    ``cfg.text.samples`` (the literal twin's ``literal_samples``); a curve point every
    1/:data:`CONVERGED_CURVE_POINTS` of the run. Measured on literal captions (docs/training.md,
    "The last direction"): the sweep's recipe (constant rate, warm-up of 8 batches) at 32,768
    samples carried ``g7`` in none of 3 seeds, this one at 131,072 carried all of ``g1``-``g8``
    in 3 of 3. ``runs`` cells at a time: a lone run gets every thread."""
    base = backend(cfg)
    t = base.train
    every = cfg.text.samples // CONVERGED_CURVE_POINTS // t.batch_size * t.batch_size
    return replace(
        base,
        train=replace(t, optim=replace(t.optim, min_lr_frac=CONVERGED_MIN_LR)),
        warmup_max_batches=0,
        curve_every=max(t.batch_size, every),
        threads=cfg.threads if runs > 1 else cfg.workers * cfg.threads,
    )


def text_recipe(cfg: DemoConfig) -> TrainConfig:
    """The :class:`~prh.training.TrainConfig` every text run of the demo starts from: the text
    recipe on the demo's world, a constant learning rate after warm-up."""
    text = cfg.text
    # a corpus's runs train on its whole train split (prh.training.data.corpus_split); the
    # world seed still picks the held-out caption their curves read (seed + 1)
    data = {"corpus": cfg.corpus} if cfg.corpus else {"world": cfg.world,
            "train_scenes": text.train_scenes}  # fmt: skip
    return train_config(
        text.preset, batch_size=text.batch_size, lr=text.lr, max_len=text.max_len,
        min_lr_frac=1.0, world_seed=cfg.world_seed, model_overrides=width(cfg), **data,
    )  # fmt: skip


def width(cfg: DemoConfig) -> dict[str, int]:
    """The model override of a config with its own encoder width (``embed_dim``; none: the
    world's default, and the runs' ids as before the setting)."""
    return {"embed_dim": cfg.embed_dim} if cfg.embed_dim else {}


def has_theory(cfg: DemoConfig) -> bool:
    """Whether the demo's world has a theory embedding to measure curves against (a spectral
    gap: the moving world; the still cave has none)."""
    from prh.demo.world import demo_world
    from prh.world import has_theory as world_has_theory

    return world_has_theory(demo_world(cfg))


def next_token_recipe(cfg: DemoConfig, recipe: TrainConfig) -> TrainConfig | None:
    """``recipe`` for the next-token runs (None: the same), documents of ``doc_captions``
    captions, up to ``doc_max_len`` tokens: on the still world captions of one scene (the fair
    next-token protocol); on a moving world a narration of ``doc_captions`` consecutive frames
    of one trajectory, 25 chain steps apart, in one narrator style (:mod:`prh.views.narration`,
    issue 23), so that both worlds' documents read as many captions a row."""
    text = cfg.text
    if text.doc_captions <= 1:
        return None
    nt = replace(recipe, views="next-token", max_len=text.doc_max_len)
    if has_theory(cfg):  # a moving world: narrations of its trajectories
        return replace(nt, narration_len=text.doc_captions)
    return replace(nt, doc_captions=text.doc_captions)


def hashed_dir(parent: Path, prefix: str, desc: dict[str, Any]) -> Path:
    """``parent/<prefix>-<hash>``, the hash the first 10 hex digits of the SHA-256 of ``desc`` as
    sorted JSON: every demo sweep's folder, so that runs differing in what ``desc`` records never
    share one and a rerun with the same ``desc`` finds its runs."""
    blob = json.dumps(desc, sort_keys=True, default=list)
    return Path(parent) / f"{prefix}-{hashlib.sha256(blob.encode()).hexdigest()[:10]}"


def sweep_dir(out: Path, cfg: DemoConfig) -> Path:
    """``OUT/sweep-<hash>``: one folder per (grid, runner options, seed), so a quick and a full
    demo in one ``OUT`` keep their own sweeps."""
    desc = {"grid": grid(cfg).describe(), "options": backend(cfg).options(), "seed": cfg.seed}
    return hashed_dir(out, "sweep", desc)


def run_name(cell: Cell, base_seed: int = 0) -> str:
    """``good`` / ``bad`` / ``next-token`` (base seed; ``good-s<j>`` for seed ``base + j``),
    ``mix<rho>``, ``heldout<i>``, ``repeat<i>``."""
    if cell.split == "curve":
        j = cell.seed - base_seed
        return cell.views if j == 0 else f"{cell.views}-s{j}"
    if cell.split == "fit":
        return f"mix{cell.rho:g}"
    return f"{cell.split}{cell.point}"


def run_records(cfg: DemoConfig, rows: list[dict[str, Any]], sweep: Path, out: Path) -> list[dict]:
    """The sweep's rows as named runs, curves first, in grid order.

    Each: ``name``, ``role`` (the cell's split), ``views``, ``rho``, ``samples``, ``seed``,
    ``point``, ``path`` (run folder, relative to ``out``), ``evals`` (``[[samples, score]]``)
    and ``theory_evals`` (``[[samples, theory cc]]``; None on a world without a theory).
    """
    runner = backend(cfg)
    by_id = {r["cell_id"]: r for r in rows}
    cells = sorted(grid(cfg).cells(cfg.seed), key=lambda c: _ORDER[c.split])
    records = []
    for c in cells:
        row = by_id.get(c.cell_id(runner.name, runner.options()))
        if row is None:
            from prh.errors import PrhError

            raise PrhError(f"demo: run {run_name(c, cfg.seed)} has no result in {sweep}")
        records.append(
            {
                "name": run_name(c, cfg.seed),
                "role": c.split,
                "views": c.views,
                "rho": c.rho,
                "samples": c.samples,
                "seed": c.seed,
                "point": c.point,
                "path": str((sweep / row["extra"]["run_dir"]).relative_to(out)),
                "evals": row["extra"]["curve"],
                "theory_evals": row["extra"].get("theory_curve"),
            }
        )
    return records


IMAGE_RUNS = {
    "image-good": ("image", "good"),
    "image-bad": ("image", "bad"),
    "sketch-good": ("sketch", "good"),
}
"""Every image/sketch encoder the demo can train: name -> (modality, views)."""


def image_runs(cfg: DemoConfig) -> RunSet:
    """The image/sketch runs of ``cfg.image.modalities``, in that order, ``image.samples``
    each."""
    runs = tuple((*IMAGE_RUNS[n], cfg.image.samples) for n in cfg.image.modalities)
    return RunSet("prh-demo-modalities", runs)


def image_width(cfg: DemoConfig) -> dict[str, int]:
    """The image/sketch runs' model override: ``image_embed_dim`` when set (each run is read out
    to the encoders' width after it trains, :func:`prh.demo.modalities.read_out_runs`), else
    :func:`width`'s."""
    return {"embed_dim": cfg.image.embed_dim} if cfg.reads_out_images() else width(cfg)


def image_backend(cfg: DemoConfig, render_cache: Path) -> CaveImageBackend:
    """The image/sketch runner: the demo's image recipe, caches in ``render_cache``.

    Every run is ``image.encoder`` (:class:`~prh.training.ImageConfig`: the backbone, renders of
    ``image_size`` pixels, two cached views per training scene), checkpointed every 20 steps,
    at the text recipe's batch. Several runs: ``cfg.threads`` torch threads each
    (``cfg.workers`` at a time); a lone run gets every thread.
    """
    image = cfg.image
    n = len(image.modalities)
    return CaveImageBackend(
        train=train_config(
            cfg.text.preset,
            world=cfg.world,
            world_seed=cfg.world_seed,
            lr=image.lr,
            batch_size=cfg.text.batch_size,
            train_scenes=image.train_scenes,
            checkpoint_every=20,
            model_overrides=image_width(cfg),
        ),
        image=image.encoder,
        threads=cfg.threads if n > 1 else cfg.workers * cfg.threads,
        render_cache=str(render_cache),
        modalities=tuple(sorted({IMAGE_RUNS[m][0] for m in image.modalities})),
        cache_workers=cfg.workers,
    )


def image_sweep_dir(out: Path, cfg: DemoConfig) -> Path:
    """``OUT/modalities/sweep-<hash>``: one folder per (runner options, seed), whichever runs
    ``cfg.image.modalities`` picks, so that a preset with more runs reuses those another one trained
    (the run set is recorded by its family only, :class:`~prh.scaling.grid.RunSet`)."""
    runner = image_backend(cfg, Path(out) / "modalities" / "render_cache")
    desc = {"runs": image_runs(cfg).describe(), "options": runner.options(), "seed": cfg.seed}
    return hashed_dir(Path(out) / "modalities", "sweep", desc)


def image_run_dirs(cfg: DemoConfig, rows: list[dict[str, Any]], sweep: Path) -> dict[str, Path]:
    """Name -> run folder of every run of ``cfg.image.modalities``, read off the sweep's rows.

    Raises
    ------
    PrhError
        When a run has no row, or its row names a folder without final weights (removed by
        hand: delete its row from ``results.jsonl`` to train it again).
    """
    from prh.errors import PrhError

    runner = image_backend(cfg, sweep.parent / "render_cache")
    by_id = {r["cell_id"]: r for r in rows}
    out: dict[str, Path] = {}
    for name, cell in zip(cfg.image.modalities, image_runs(cfg).cells(cfg.seed), strict=True):
        row = by_id.get(cell.cell_id(runner.name, runner.options()))
        if row is None:
            raise PrhError(f"demo: run {name} has no result in {sweep}")
        run = sweep / row["extra"]["run_dir"]
        if not (run / "model.safetensors").is_file():
            raise PrhError(
                f"demo: run {name} ({run}) has no final weights; remove its row from "
                f"{sweep / 'results.jsonl'} to train it again"
            )
        out[name] = run
    return out
