"""The demo's steps up to the law: each a function of the context and earlier steps' results.

``prove`` (theorem checks), ``vision`` (frozen image features), ``train`` (the sweep of
:mod:`prh.demo.protocol`), ``embed`` (text features of every encoder), ``measure`` (mutual-kNN,
calibrated, CI), ``efficiency`` (samples to a target alignment), ``law`` (laws fitted on the
mixture runs' curves, judged on held-out runs). Each caches what it computes under ``OUT``.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

from prh.demo import protocol
from prh.demo.context import Context
from prh.demo.figures import fig, interval
from prh.demo.sweeps import run_cells
from prh.demo.world import RUN_OF, TEXT_ENCODERS, demo_world, scene_ids, text_encoder
from prh.world.registry import is_default_world, world_offers


def step_prove(ctx: Context) -> dict[str, Any]:
    """``prh prove --quick`` (60 worlds), cached per seed."""
    from prh.prove import ProveConfig, run_checks, select_checks

    def go() -> dict[str, Any]:
        cfg = ProveConfig(worlds=60, seed=ctx.cfg.seed, quick=True)

        def show(r) -> None:
            ctx.log(f"  {r.name:<12} {'PASS' if r.passed else 'FAIL'}  {r.seconds:5.1f}s")

        results = run_checks(select_checks(None), cfg, on_result=show)
        return {
            "passed": all(r.passed for r in results),
            "n": len(results),
            "n_passed": sum(r.passed for r in results),
            "checks": [r.to_dict() for r in results],
        }

    value, cached = ctx.cached_json(f"prove-{ctx.cfg.digest('seed')}", go)
    if cached:
        ctx.log(f"  {value['n_passed']}/{value['n']} checks passed (cached)")
    return value


def step_vision(ctx: Context) -> dict[str, Path]:
    """Frozen image features: ``test`` (held-out scenes, in the sweep folder where its runs'
    curves read them) and ``train`` (the bridge-fit scenes, ``OUT/features/``)."""
    from prh.scaling.cave import embed_renders

    cfg = ctx.cfg
    world = demo_world(cfg)
    test, train = scene_ids(cfg, world)
    key = f"{cfg.vision}|{cfg.world_seed}|{len(train)}|{train[0]}|{train[-1]}"
    if not is_default_world(cfg.world):  # the cave's cached names as before
        key += f"|{cfg.world}"
    if cfg.corpus:  # two corpora in one OUT never share photos' features
        key += f"|{cfg.corpus}"
    h = hashlib.sha256(key.encode()).hexdigest()[:10]
    paths = {
        "test": protocol.backend(cfg).vision_path(protocol.sweep_dir(ctx.out, cfg)),
        "train": ctx.path("features", f"vision-train-{h}.safetensors"),
    }
    for tag, ids in (("test", test), ("train", train)):
        if paths[tag].is_file():
            ctx.log(f"  {tag}: {len(ids)} renders (cached)")
            continue
        embed_renders(cfg.vision, world, ids, paths[tag], threads=cfg.workers * cfg.threads,
                      progress=_render_progress(ctx, tag))  # fmt: skip
    return paths


def _render_progress(ctx: Context, tag: str):
    """``progress(done, total)`` that logs at most every 10 s (and at the end)."""
    t0, last = time.perf_counter(), [0.0]

    def progress(done: int, total: int) -> None:
        if time.perf_counter() - last[0] > 10 or done == total:
            last[0] = time.perf_counter()
            rate = done / max(time.perf_counter() - t0, 1e-9)
            ctx.log(f"  {tag}: {done}/{total} renders embedded ({rate:.1f} images/s)")

    return progress


def step_train(ctx: Context) -> dict[str, Any]:
    """Run the demo's sweep (skipping finished cells) and read its runs back with their curves."""
    cfg = ctx.cfg
    sweep = protocol.sweep_dir(ctx.out, cfg)
    g = protocol.grid(cfg)
    n = len(g.cells(cfg.seed))
    ctx.log(f"  {n} runs in {sweep.name}, {cfg.workers} at a time; a line as each one finishes")
    s, rows = run_cells(ctx, g, protocol.backend(cfg), sweep)
    runs = protocol.run_records(cfg, rows, sweep, ctx.out)
    return {"runs": runs, "sweep": str(sweep.relative_to(ctx.out)), "ran": s.ran}


def step_embed(ctx: Context, runs: dict[str, Path]) -> dict[str, dict[str, Path]]:
    """Text features per encoder: ``test`` (one caption per held-out scene, the wording the
    curves used) and ``train`` (5 captions averaged per bridge-fit scene)."""
    cfg = ctx.cfg
    out: dict[str, dict[str, Path]] = {}
    for name in TEXT_ENCODERS:
        src = cfg.text_baseline if name == "minilm" else str(runs[RUN_OF.get(name, name)].name)
        out[name] = embed_text(ctx, name, src, lambda name=name: text_encoder(cfg, name, runs))
    return out


def embed_text(ctx: Context, name: str, src: str, make: Any) -> dict[str, Path]:
    """One text encoder's ``test`` and ``train`` features (:func:`step_embed`), cached under a
    hash of ``name``, ``src`` (what it is made from) and the scenes; ``make()`` builds it."""
    import torch

    from prh.encoders.embed import EmbedConfig, embed_world
    from prh.features import save_features

    cfg = ctx.cfg
    where = ("world_seed", "world", *(("corpus",) if cfg.corpus else ()))  # a world's as before
    h = hashlib.sha256(
        f"{name}|{src}|{cfg.digest('eval_scenes', 'bridge_scenes', *where)}".encode()
    ).hexdigest()[:10]
    paths = {s: ctx.path("features", f"text-{name}-{s}-{h}.safetensors") for s in ("test", "train")}
    if all(p.is_file() for p in paths.values()):
        ctx.log(f"  {name:<11} (cached)")
        return paths
    torch.set_num_threads(max(1, cfg.workers * cfg.threads))
    world = demo_world(cfg)
    test, train = scene_ids(cfg, world)
    t = time.perf_counter()
    enc = make()
    for split, ids, ec in (
        ("test", test, EmbedConfig(modality="text", caption_seed=cfg.world_seed + 1)),
        (
            "train",
            train,
            EmbedConfig(modality="text", captions_per_scene=5, caption_seed=cfg.world_seed),
        ),
    ):
        feats, names = embed_world(enc, world, ids, ec)
        save_features(paths[split], feats, ids=names, metadata={"encoder": name})
    ctx.log(f"  {name:<11} {len(test)} + {len(train)} scenes in {time.perf_counter() - t:.0f}s")
    return paths


def step_measure(ctx: Context, text: dict[str, dict[str, Path]], vision_test: Path) -> dict:
    """Mutual-kNN of every text encoder with the vision features, calibrated, with a CI."""
    from prh.features import load_features
    from prh.metrics import measure

    cfg = ctx.cfg
    v = load_features(vision_test).features
    out = {}
    for name in TEXT_ENCODERS:
        key = (
            f"measure-{name}-{Path(text[name]['test']).stem}-{cfg.digest('null', 'bootstrap', 'k')}"
        )

        def go(name: str = name) -> dict:
            t = load_features(text[name]["test"]).features
            r = measure(t, v, metric="mutual_knn", k=cfg.measure.k, null=cfg.measure.null,
                        bootstrap=cfg.measure.bootstrap, seed=cfg.seed)  # fmt: skip
            return r.to_dict()

        out[name], _ = ctx.cached_json(key, go)
        d = out[name]
        ctx.log(
            f"  {name:<11} mutual-kNN {fig(d['score'], '.4f')}  calibrated "
            f"{fig(d['calibrated'], '.4f')}  95% CI {interval(*(d['ci'] or (None, None)))}"
        )
    return out


def step_word_order(
    ctx: Context, runs: dict[str, Path], text: dict[str, dict[str, Path]], vision_test: Path
) -> dict:
    """The word-order test (:mod:`prh.demo.word_order`): per layer of the good-view JEPA, the
    next-token LM and the random-init control, alignment and largest-object probes on the
    held-out captions as written (the ``embed`` step's ``test`` features of ``text``) and with
    their words shuffled, beside a bag of words."""
    from prh.demo.word_order import bag_of_words, layer_profile, shuffle_words, summarise
    from prh.features import load_features
    from prh.world.factors import scene_factors

    cfg = ctx.cfg
    names = ("good", "next-token", "random-init")
    key = "|".join(Path(text[n]["test"]).name for n in names)  # the written captions' features
    h = hashlib.sha256(f"{key}|{cfg.digest('eval_scenes', 'world_seed', 'world', 'k')}".encode())

    def go() -> dict:
        world = demo_world(cfg)
        test, _ = scene_ids(cfg, world)
        texts = [world.captions(i, 1, cfg.world_seed + 1)[0] for i in test]
        shuffled = shuffle_words(texts, seed=cfg.seed)
        labels = {}  # a world without scene classes (a corpus) has no largest-object probes
        if world_offers(cfg.world, "factors"):
            f = scene_factors(world, test)
            labels = {"shape": f["shape"], "colour": f["colour"]}
        vision = load_features(vision_test).features
        profiles = {
            "bag-of-words": layer_profile(bag_of_words(texts), vision, labels, cfg.measure.k)
        }
        for name in names:
            written = load_features(text[name]["test"]).features
            profiles[name] = layer_profile(written, vision, labels, cfg.measure.k)
            feats = text_encoder(cfg, name, runs).encode_texts(shuffled, batch_size=256)
            profiles[name + " shuffled"] = layer_profile(feats, vision, labels, cfg.measure.k)
        return {"profiles": profiles, "summary": summarise(profiles), "n": len(test)}

    value, _ = ctx.cached_json(f"word-order-{h.hexdigest()[:10]}", go)
    for name, row in value["summary"].items():
        probes = ("" if "shape_max" not in row else f"; largest shape {row['shape_max']:.2f}, "
                  f"colour {row['colour_max']:.2f} (best layer of each probe)")  # fmt: skip
        ctx.log(
            f"  {name:<22} best layer {row['best_layer']} mutual-kNN {row['best_mutual_knn']:.4f}"
            f" (last {row['last_mutual_knn']:.4f}){probes}"
        )
    return value


def step_word_collapse(ctx: Context, runs: dict[str, Path]) -> dict[str, Any]:
    """Issue 23's word-collapse check: the centred cosine among the world's shape words and
    among its colour words in each trained text run's token embeddings
    (:func:`prh.metrics.word_collapse.word_collapse_of`): a next-token model whose documents give
    its words no distinct contexts merges them (0.85 on the still world at 16k documents); a
    good-view JEPA keeps them apart (about 0). Absent (``{}``) on a world without the cave's
    factors (a corpus of photos: its captions need not name those words)."""
    from prh.metrics.word_collapse import word_collapse_of
    from prh.training import load_run
    from prh.world.scenes import COLOURS, SHAPES

    out: dict[str, Any] = {}
    if not world_offers(ctx.cfg.world, "factors"):
        ctx.log("  word collapse: absent (the world has no shape and colour words)")
        return out
    for name in ("good", "bad", "next-token"):
        wc = word_collapse_of(load_run(runs[name], device="cpu"), SHAPES, COLOURS)
        out[name] = {"shape": round(wc.shape, 4), "colour": round(wc.colour, 4)}
        ctx.log(f"  word collapse {name:<10} shape words {wc.shape:.2f}  colour words "
                f"{wc.colour:.2f}")  # fmt: skip
    return out


def step_tokens(ctx: Context, runs: dict[str, Path]) -> dict[str, float]:
    """Mean tokens a row of the good, bad and next-token runs read (first 4 batches, each run's
    own tokenizer; :func:`prh.training.data.run_tokens_per_row`): the budget's token count."""
    from prh.training.data import run_tokens_per_row

    out = {v: round(run_tokens_per_row(runs[v]), 2) for v in ("good", "bad", "next-token")}
    ctx.log("  tokens per row: " + ", ".join(f"{v} {t:.1f}" for v, t in out.items()))
    return out


def step_efficiency(
    ctx: Context, runs: list[dict], measure: dict, key: str = "evals",
    control: float | None = None,
) -> dict:  # fmt: skip
    """Samples good views and next-token need to reach the target, off their seeds' curves
    (``key``: ``evals``, against the vision features, the control the measure step's
    random-init; or ``theory_evals`` with the given ``control``)."""
    from prh.demo.analysis import efficiency_summary, ratio_text

    def curves(view: str) -> list:
        return [r[key] for r in runs if r["role"] == "curve" and r["views"] == view]

    if control is None:
        control = measure["random-init"]["score"]
    d = efficiency_summary(curves("good"), curves("next-token"), seed=ctx.cfg.seed,
                           control=control)  # fmt: skip
    sg, sn = d["samples_good"], d["samples_next_token"]
    ctx.log(
        f"  target {d['target']:.4f} ({d['target_rule']}): good {sg if sg is None else round(sg)}"
        f" samples, next-token {sn if sn is None else round(sn)}, ratio {ratio_text(d)}"
        f" ({d['n_seeds']} seed(s))"
    )
    return d


def step_law(ctx: Context, runs: list[dict], key: str = "evals", plot: str = "law_fit.png") -> dict:
    """Candidate laws fitted on the fit runs' curves (``key``, as :func:`step_efficiency`),
    judged on the held-out runs'; the predicted-vs-measured plot into ``OUT/plot``."""
    from prh.demo.analysis import law_rows
    from prh.scaling.fit import fit_laws, law_data_from_rows
    from prh.scaling.laws import LAWS, get_law
    from prh.scaling.plot import plot_predicted_vs_measured

    cfg = ctx.cfg
    rows = law_rows(runs, cfg.sweep.law_samples, cfg.sweep.heldout_samples, key)
    fit, heldout, pairs = law_data_from_rows(rows)
    # a form needs more fit points than parameters (small presets can afford only some forms)
    forms = [f for f in LAWS if len(get_law(f).params) < len(fit)]
    if not forms:
        ctx.log(f"  {len(fit)} fit points: too few for any law form")
        return {
            "form": None,
            "heldout_rmse": None,
            "seed_spread": None,
            "ratio": None,
            "n_fit": len(fit),
            "n_heldout": len(heldout),
            "forms": [],
            "rows": rows,
            "backend": "cave",
            "notes": ["too few fit points for any form"],
        }
    report = fit_laws(fit, heldout, pairs, forms=forms, starts=8, seed=cfg.seed)
    d = report.to_dict()
    d["backend"] = "cave"
    d["rows"] = rows
    if not report.chosen:
        ctx.log(f"  no law form converged: {'; '.join(d['notes'])}")
        return d
    plot_predicted_vs_measured(report, report.form(report.chosen).fit, fit, heldout, ctx.path(plot))
    ctx.log(
        f"  chosen {d['form']}: held-out RMSE {d['heldout_rmse']:.4f}, seed spread "
        f"{d['seed_spread']:.4f} ({d['n_fit']} fit, {d['n_heldout']} held-out points)"
    )
    return d


def step_theory_curves(ctx: Context, runs: list[dict], paths: dict[str, Path]) -> dict | None:
    """Claims 2 and 3 against the theory embedding (issue 23): sample efficiency and the law on
    every run's curve of held-out canonical correlation with ``g*``
    (:mod:`prh.training.theory_eval`), the control the random-init encoder on the same measure;
    None on a world without a theory (no run has such a curve)."""
    if not any(r.get("theory_evals") for r in runs):
        return None
    from prh.demo.origins import run_origin

    control = theory_control(ctx, paths["good"])
    ctx.log(f"  random-init on the curves' theory measure: {control:.4f}")
    origins = {v: run_origin(paths[v]) for v in ("good", "bad", "next-token") if v in paths}
    ctx.log("  at 0 samples (each run's own initial weights): " + "; ".join(
        f"{v} theory {o['theory']:.4f}, vision {o['vision']:.4f}" for v, o in origins.items()
    ))  # fmt: skip
    eff = step_efficiency(ctx, runs, {}, "theory_evals", control)
    law = step_law(ctx, runs, "theory_evals", "law_fit_theory.png")
    return {"control": control, "origins": origins, "efficiency": eff, "law": law}


def theory_control(ctx: Context, good_run: Path) -> float:
    """The random-init control (:func:`prh.demo.world.random_init_encoder`) measured as the
    training runs measure themselves against the theory (the good run's ``eval_theory`` file,
    its held-out captions; :func:`prh.training.theory_eval.theory_point`)."""
    from prh.demo.world import random_init_encoder
    from prh.training import load_run
    from prh.training.api import TextTask
    from prh.training.theory_eval import theory_point, theory_target

    run = load_run(good_run, device="cpu")
    target = theory_target(TextTask(), run.config)
    feats = random_init_encoder(good_run, ctx.cfg.seed).encode_texts(list(target.items))
    return theory_point(feats, target)["eval_theory_cc"]
