"""The demo's literal-caption twin (issue 31, item 3): one rotation against a bounded misalignment.

The demo's text-good run trains on partial captions (the object's size half the time, its cell
one time in six): text does not identify the state, and the theory predicts a bounded
misalignment with a perfect image encoder (:func:`prh.world.observation.predicted_cc`). Its
literal twin (``DemoConfig.literal``, the world ``moving-literal``: the same states, renders
and pair kernel, captions that state every factor) makes text identify the state, and the
theory predicts canonical correlations of 1 in all ``k`` directions. This step:

1. trains text-good on the twin's literal captions and again on the world's partial captions,
   ``curve_seeds`` seeds each, both at ``literal_samples`` with the converged text recipe
   (:func:`prh.demo.protocol.converged_backend`: cosine decay, 5% warm-up), so that the two
   kinds differ in their captions alone (a :class:`~prh.scaling.grid.RunSet` of the cave runner
   per kind into ``OUT/literal/sweep-<kind>-<hash>/``, their own sweeps: no other run's seed or
   random stream moves; the sweep's text-good keeps its curves' protocol);
2. embeds their held-out and bridge states' captions (``OUT/literal/features/``);
3. reads each literal run against g* and against its own modality's theory (literal captions'
   :func:`prh.demo.theory.theory_scores`), and every image-good ~ text pair, literal and partial,
   seed by seed (width-fair held-out canonical correlation, :func:`prh.demo.theory.two_readouts`)
   beside the theory's prediction for each;
4. judges the rule fixed before the run (:func:`prh.demo.literal_rule.judge_literal`) and
   finds the spectral pair-free map image-good ~ text-literal (:func:`literal_spectral`);
5. with ``--full``, builds and scores the captioners on literal captions
   (:mod:`prh.demo.literal_caption`).

Everything it computes is cached under ``OUT/literal/``; a rerun reuses it.
"""

from __future__ import annotations

import hashlib
import multiprocessing
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from prh.demo import protocol, steps
from prh.demo.context import Context
from prh.demo.figures import fig, interval
from prh.demo.literal_rule import PairFigures, judge_literal
from prh.demo.spectral import log_spectral, spectral_section
from prh.demo.sweeps import run_cells
from prh.scaling.grid import RunSet

IMAGE = "image-good"
"""The image encoder both text runs are read against."""
TEXT = {"literal": "text-literal", "partial": "text-partial"}
"""Caption kind -> its text-good run's evidence name (seed 0; seed ``j`` adds ``-s<j>``)."""


def seed_name(base: str, j: int) -> str:
    """``base`` for seed 0, ``base-s<j>`` for seed ``j``."""
    return base if j == 0 else f"{base}-s{j}"


def literal_runs(ctxs: Mapping[str, Context]) -> dict[str, dict[str, Any]]:
    """Train (or reuse) the step's text-good runs, caption kind -> its context (the twin's for
    ``literal``, :meth:`~prh.demo.config.DemoConfig.partial_config`'s for ``partial``);
    evidence name -> ``{"dir", "kind", "ctx", "train_seconds"}``, literal first, seed 0 first.

    When every cell fits the workers at once (the default demo: one seed a kind, 2 workers),
    the kinds train side by side, each sweep in a process of its own; else one after the
    other, each on the pool."""
    cfg = next(iter(ctxs.values())).cfg
    cells = len(ctxs) * cfg.sweep.curve_seeds
    together = 1 < cells <= cfg.workers
    if together:
        spawn = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(len(ctxs), mp_context=spawn) as ex:
            futures = {k: ex.submit(_kind_sweep, c.cfg, c.out, c.shared, k, runs=cells,
                                    workers=1) for k, c in ctxs.items()}  # fmt: skip
            done = {k: f.result() for k, f in futures.items()}
    else:
        done = {k: _kind_sweep(c.cfg, c.out, c.shared, k, runs=cfg.sweep.curve_seeds,
                               workers=cfg.workers, log=c.log)
                for k, c in ctxs.items()}  # fmt: skip
    out = {}
    for kind, ctx in ctxs.items():
        sweep, rows, ids = done[kind]
        if together:
            ctx.log(f"  {kind}: {len(rows)} run(s) in {sweep.name}")
        by_id = {r["cell_id"]: r for r in rows}
        for j, cid in enumerate(ids):
            out[seed_name(TEXT[kind], j)] = {
                "dir": sweep / by_id[cid]["extra"]["run_dir"], "kind": kind, "ctx": ctx,
                "train_seconds": by_id[cid]["extra"]["train_seconds"],
            }  # fmt: skip
    return out


def kind_sweep_dir(out: Path, kind: str, runner: Any, seed: int) -> Path:
    """``out/sweep-<kind>-<hash>``: one folder per (caption kind, runner options, seed), so a
    rerun finds the runs it trained and a preset with other options keeps its own."""
    return protocol.hashed_dir(out, f"sweep-{kind}", {"options": runner.options(), "seed": seed})


def _kind_sweep(
    cfg: Any, out: Path, root: Path, kind: str, *, runs: int, workers: int, log: Any = None
) -> tuple[Path, list[dict[str, Any]], list[str]]:
    """One caption kind's runs into ``out/sweep-<kind>-<hash>`` (module-level: a child process
    runs it when the kinds train side by side, with no log): the sweep, its rows and the cells'
    ids, seed 0 first. ``runs``: cells training at once (a lone run gets every thread);
    ``workers``: this sweep's pool."""
    ctx = Context(cfg, out, log or (lambda _m: None), root=root)
    runner = protocol.converged_backend(cfg, runs=runs)
    cells = RunSet(f"prh-demo-literal-{kind}", (("text", "good", cfg.text.samples),),
                   seeds=cfg.sweep.curve_seeds)  # fmt: skip
    sweep = kind_sweep_dir(out, kind, runner, cfg.seed)
    _, rows = run_cells(ctx, cells, runner, sweep, what=f"{kind} ", tag=f"{kind}: ",
                        workers=workers)  # fmt: skip
    ids = [c.cell_id(runner.name, runner.options()) for c in cells.cells(cfg.seed)]
    return sweep, rows, ids


def _embed(ctx: Context, name: str, run: Path) -> dict[str, Path]:
    from prh.encoders import load_encoder

    return steps.embed_text(ctx, name, run.name, lambda: load_encoder(str(run)))


def feature_sets(runs: Mapping[str, Any]) -> dict[str, dict[str, dict[str, Path]]]:
    """``{"literal", "partial"}`` -> evidence name -> feature files, seed 0 first: each run's
    captions of its own world, embedded under the step's folder."""
    out: dict[str, dict[str, dict[str, Path]]] = {"literal": {}, "partial": {}}
    for name, r in runs.items():
        out[r["kind"]][name] = _embed(r["ctx"], name.removeprefix("text-"), r["dir"])
    return out


def measure(
    lctx: Context, worlds: Mapping[str, Any], image: Mapping[str, Path],
    texts: Mapping[str, Mapping[str, Mapping[str, Path]]],
) -> dict[str, Any]:  # fmt: skip
    """``{"k", "theory_cc", "pairs"}`` (cached by the files): each run, literal and partial,
    against g* and its own captions' theory; per caption kind, the image~text pairs seed by
    seed and the prediction."""
    from prh.demo.modalities import load_sets
    from prh.demo.theory import theory_scores, two_readouts
    from prh.demo.world import scene_ids
    from prh.features import last_layer
    from prh.world.observation import predicted_cc

    cfg = lctx.cfg
    named = {IMAGE: image, **{n: p for kind in texts.values() for n, p in kind.items()}}
    files = "|".join(f"{n}:{Path(p['test']).name}:{Path(p['train']).name}"
                     for n, p in named.items())  # fmt: skip
    h = hashlib.sha256(f"{files}|{cfg.digest('world', 'world_seed', 'seed')}".encode())

    def go() -> dict[str, Any]:
        test_ids, fit_ids = scene_ids(cfg, worlds["literal"])
        train, test, dims = load_sets(named)
        k = int(worlds["literal"].gap_k)
        theory: dict[str, Any] = {}
        for kind, names in texts.items():  # each run against g* and its own captions' theory
            own = {n: train[n] for n in names}
            theory.update(theory_scores(worlds[kind], own, {n: test[n] for n in own}, dims,
                                        fit_ids, test_ids, seed=cfg.seed))  # fmt: skip
        emb = {n: (last_layer(train[n], dims[n]), last_layer(test[n], dims[n])) for n in named}
        (i_fit, i_test), pairs = emb[IMAGE], {}
        for kind, names in texts.items():
            per_seed = [two_readouts(i_fit, emb[n][0], i_test, emb[n][1], k, seed=cfg.seed)
                        for n in names]  # fmt: skip
            pred = predicted_cc(worlds[kind], "image", "text", k)["observation"]
            pairs[kind] = {"pair": f"{IMAGE}~{next(iter(names))}", "names": list(names),
                           "seeds": per_seed, "predicted": pred}  # fmt: skip
        return {"k": k, "theory_cc": theory, "pairs": pairs}

    value, _ = lctx.cached_json(f"literal-{h.hexdigest()[:10]}", go)
    return value


def pair_figures(pair: Mapping[str, Any]) -> PairFigures:
    """What the rule reads of one caption kind's pair (:func:`measure`)."""
    seeds = pair["seeds"]
    return PairFigures(
        cc=[s["mean"] for s in seeds],
        correlations=[s["correlations"] for s in seeds],
        predicted=pair["predicted"],
        state_ci=tuple(seeds[0]["ci"]),
    )


def why_not(ctx: Context, worlds: Mapping[str, Any], image_runs: Mapping[str, Path]) -> str:
    """Why the twin cannot be compared here (``""``: it can)."""
    from prh.demo.world import scene_ids
    from prh.world import has_theory

    if IMAGE not in image_runs:
        return "no image-good run to compare the captions against (the default demo trains one)"
    if not all(has_theory(w) for w in worlds.values()):
        return "the world or its literal twin has no pair kernel to predict from"
    if scene_ids(ctx.cfg, worlds["partial"]) != scene_ids(ctx.cfg.literal_config(),
                                                          worlds["literal"]):  # fmt: skip
        return f"world {ctx.cfg.literal!r} does not share the held-out states of {ctx.cfg.world!r}"
    return ""


def step_literal(
    ctx: Context, sets: Mapping[str, Mapping[str, Path]] | None, image_runs: Mapping[str, Path]
) -> dict[str, Any]:
    """Train, embed, measure and judge the twin (module docstring); ``{"world", "image", "seeds",
    "runs", "train_seconds", "k", "theory_cc", "pairs", "verdict"}``, or ``{"skipped": why}``."""
    from prh.demo.world import demo_world

    if not ctx.cfg.literal:
        ctx.log("  no literal-caption world in this config")
        return {"skipped": "no literal-caption world in this config"}
    lcfg = ctx.cfg.literal_config()
    worlds = {"partial": demo_world(ctx.cfg), "literal": demo_world(lcfg)}
    reason = why_not(ctx, worlds, image_runs)
    if reason or sets is None:
        ctx.log(f"  skipped: {reason or 'no feature sets'}")
        return {"skipped": reason or "no feature sets"}
    lctx = Context(lcfg, ctx.out / "literal", ctx.log, root=ctx.shared)
    pctx = Context(ctx.cfg.partial_config(), ctx.out / "literal", ctx.log, root=ctx.shared)
    ctx.log(f"  world {lcfg.world} and {ctx.cfg.world}: text-good at {lcfg.text.samples} "
            f"samples (converged recipe), {lcfg.sweep.curve_seeds} seed(s) each, against "
            f"{IMAGE}")  # fmt: skip
    runs = literal_runs({"literal": lctx, "partial": pctx})
    texts = feature_sets(runs)
    value = measure(lctx, worlds, sets[IMAGE], texts)
    verdict = judge_literal(*(pair_figures(value["pairs"][k]) for k in ("literal", "partial")))
    section = {
        "world": lcfg.world, "image": IMAGE, "seeds": lcfg.sweep.curve_seeds,
        "samples": lcfg.text.samples, "recipe": converged_recipe(lcfg),
        "runs": {n: str(r["dir"].relative_to(ctx.out)) for n, r in runs.items()},
        "train_seconds": {n: r["train_seconds"] for n, r in runs.items()},
        **value, "verdict": verdict.to_dict(),
    }  # fmt: skip
    log_literal(ctx, section)
    section["spectral"] = literal_spectral(lctx, runs, image_runs, sets, texts)
    log_spectral(ctx, section["spectral"], "literal ")
    if ctx.cfg.caption.zero_pair:  # --full: the captioners on literal captions
        from prh.demo.literal_caption import literal_captioners

        first = runs[TEXT["literal"]]["dir"]
        section["captioners"] = literal_captioners(lctx, first, image_runs[IMAGE], sets[IMAGE])
    return section


def converged_recipe(cfg: Any) -> dict[str, Any]:
    """What the step's runs were trained with (``summary.json``'s ``literal.recipe``)."""
    t = protocol.converged_backend(cfg).train
    return {"samples": cfg.text.samples, "lr": t.optim.lr, "min_lr_frac": t.optim.min_lr_frac,
            "warmup_frac": t.optim.warmup_frac, "batch_size": t.batch_size}  # fmt: skip


def literal_spectral(
    lctx: Context, runs: Mapping[str, Any], image_runs: Mapping[str, Path],
    sets: Mapping[str, Mapping[str, Path]], texts: Mapping[str, Mapping[str, Mapping[str, Path]]],
) -> dict[str, Any]:  # fmt: skip
    """The spectral pair-free map image-good ~ text-literal (seed 0), each side from its own
    run's positive pairs (:func:`prh.demo.spectral.spectral_section`): literal captions identify
    the state, so the theory's eigenvalues agree across the two and the rotation can be pinned."""
    lit = TEXT["literal"]
    return spectral_section(
        lctx, {IMAGE: image_runs[IMAGE], lit: runs[lit]["dir"]},
        {IMAGE: sets[IMAGE], lit: texts["literal"][lit]}, pairs=((IMAGE, lit),),
    )  # fmt: skip


def log_literal(ctx: Context, s: Mapping[str, Any]) -> None:
    """One line per literal run against the theory, one per pair, the verdict."""
    from prh.demo.theory import modes_note

    for name, r in s["theory_cc"].items():
        own = r["own"]
        ctx.log(f"  {name:<18} cc vs g* {fig(r['mean'])} {interval(*r['ci'])}; vs its own "
                f"theory {fig(own['mean'])} {interval(*own['ci'])}{modes_note(r)}")  # fmt: skip
    for kind, p in s["pairs"].items():
        ccs = " ".join(fig(x["mean"]) for x in p["seeds"])
        pred = sum(p["predicted"]) / len(p["predicted"])
        ctx.log(f"  {p['pair']:<24} cc {ccs} ({len(p['seeds'])} seed(s); {kind} captions), "
                f"predicted {fig(pred)}")  # fmt: skip
    v = s["verdict"]
    ctx.log(f"  literal above partial: {v['label']} ({v['basis']}): {v['reason']}")
