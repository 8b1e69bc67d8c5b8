"""``prh demo``: the paper's three claims on the cave world, step by step, resumable.

Steps (each logs one line with its wall and CPU time; each caches its result under ``OUT``):

1. ``prove``: the theorem checks, quick (:mod:`prh.prove`).
2. ``vision``: frozen image features (EfficientNet-Lite0) of the held-out scenes' renders and of
   the training scenes that fit the bridge (``OUT/features/``).
3. ``train``: good, bad and next-token text encoders at one budget, and mixture runs for the law,
   in parallel processes, each evaluated against the vision features every ``eval_every``
   samples (``OUT/runs/``).
4. ``embed``: held-out captions with each trained encoder, the MiniLM baseline and a random-init
   control; training-scene captions (5 averaged) for the bridge.
5. ``measure``: mutual-kNN (k = 10, best layer pair), calibrated score (permutation null), CI.
6. ``efficiency``: samples good views and next-token need to reach one alignment.
7. ``law``: candidate laws fitted on mixture runs, judged on held-out runs against the seed spread.
8. ``bridge``: image <-> caption retrieval through one map, zero-shot classes, pair-free
   class matching; the captioner (``OUT/caption/``) when :mod:`prh.caption` is there.
9. ``report``: ``OUT/summary.json``, ``OUT/report.html`` and the PNG plots.

A rerun reuses every file whose inputs match (runs by a hash of their training config, features
and step results by a hash of the settings they depend on), so an interrupted demo continues
where it stopped and a finished one only rewrites the report.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prh.demo.config import DemoConfig
from prh.io import write_json

TEXT_ENCODERS = ("good", "bad", "next-token", "minilm", "random-init")


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (user + system)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + ch.ru_utime + ch.ru_stime


@dataclass
class Context:
    """Where the demo writes, what it has done, and how it talks."""

    cfg: DemoConfig
    out: Path
    log: Callable[[str], None] = print
    t0: float = field(default_factory=time.perf_counter)
    cpu0: float = field(default_factory=cpu_seconds)
    timings: dict[str, dict[str, float]] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)

    def path(self, *parts: str) -> Path:
        p = self.out.joinpath(*parts)
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def cached_json(self, name: str, fn: Callable[[], Any]) -> tuple[Any, bool]:
        """``OUT/steps/<name>.json`` if present, else ``fn()`` written there."""
        p = self.path("steps", f"{name}.json")
        if p.is_file():
            return json.loads(p.read_text()), True
        value = fn()
        write_json(p, value)
        return value, False


def _world(cfg: DemoConfig):
    from prh.world import CaveWorld, WorldConfig

    return CaveWorld(WorldConfig(seed=cfg.world_seed))


def scene_ids(cfg: DemoConfig, world) -> tuple[list[int], list[int]]:
    """Held-out scenes (first ``eval_scenes`` of the test split) and bridge-fit scenes (the last
    ``bridge_scenes`` of the train split, beyond the ``train_scenes`` the encoders saw)."""
    test = [int(i) for i in world.split("test")[: cfg.eval_scenes]]
    train = [int(i) for i in world.split("train")[-cfg.bridge_scenes :]]
    return test, train


# ----------------------------------------------------------------------------- steps
def step_prove(ctx: Context) -> dict[str, Any]:
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


def _embed_images(ctx: Context, ids: list[int], tag: str) -> Path:
    from prh.features import save_features

    cfg = ctx.cfg
    key = f"{cfg.vision}|{cfg.world_seed}|{len(ids)}|{ids[0]}|{ids[-1]}"
    import hashlib

    h = hashlib.sha256(key.encode()).hexdigest()[:10]
    path = ctx.path("features", f"vision-{tag}-{h}.safetensors")
    if path.is_file():
        ctx.log(f"  {tag}: {len(ids)} renders (cached)")
        return path
    import torch

    from prh.encoders import load_encoder
    from prh.encoders.embed import EmbedConfig, embed_world
    from prh.progress import Progress

    torch.set_num_threads(max(1, cfg.workers * cfg.threads))
    enc = load_encoder(cfg.vision)
    progress = Progress(None, f"  {tag}: renders embedded", unit="image", log=ctx.log)
    feats, names = embed_world(enc, _world(cfg), ids, EmbedConfig(modality="image"), progress)
    progress.close()
    meta = {"encoder": cfg.vision, "layer_dims": json.dumps(list(enc.layer_dims or []))}
    save_features(path, feats, ids=names, metadata=meta)
    return path


def step_vision(ctx: Context) -> dict[str, Path]:
    test, train = scene_ids(ctx.cfg, _world(ctx.cfg))
    return {"test": _embed_images(ctx, test, "test"), "train": _embed_images(ctx, train, "train")}


def step_train(ctx: Context, vision_test: Path) -> dict[str, Any]:
    from prh.demo.runs import read_evals, run_specs, train_all

    specs = run_specs(ctx.cfg)
    paths = train_all(specs, ctx.cfg, vision_test, ctx.out / "runs", log=ctx.log)
    runs = []
    for s in specs:
        runs.append(
            {
                "name": s.name,
                "role": s.role,
                "views": s.views,
                "rho": s.rho,
                "samples": s.samples,
                "seed": s.seed,
                "point": s.point,
                "path": str(paths[s.name].relative_to(ctx.out)),
                "evals": read_evals(paths[s.name]),
            }
        )
    return {"runs": runs}


class _RandomInit:
    """A random-init text encoder of the good run's preset and tokenizer (the control)."""

    def __new__(cls, good_run: Path, seed: int):
        import torch

        from prh.encoders.stored import RunEncoder
        from prh.models import TextEncoder

        enc = RunEncoder(good_run)
        torch.manual_seed(seed + 777)
        enc.run.model = TextEncoder(enc.run.model_config).eval()
        enc.spec = f"random-init:{good_run.name}"
        return enc


def _text_encoder(ctx: Context, name: str, runs: dict[str, Path]):
    from prh.encoders import load_encoder

    if name == "minilm":
        return load_encoder(ctx.cfg.text_baseline)
    if name == "random-init":
        return _RandomInit(runs["good"], ctx.cfg.seed)
    return load_encoder(str(runs[name]))


def step_embed(ctx: Context, runs: dict[str, Path]) -> dict[str, dict[str, Path]]:
    """Text features per encoder: ``test`` (one caption per held-out scene, the wording the
    training eval used) and ``train`` (5 captions averaged per bridge-fit scene)."""
    import hashlib

    import torch

    from prh.encoders.embed import EmbedConfig, embed_world
    from prh.features import save_features

    cfg = ctx.cfg
    torch.set_num_threads(max(1, cfg.workers * cfg.threads))
    world = _world(cfg)
    test, train = scene_ids(cfg, world)
    out: dict[str, dict[str, Path]] = {}
    for name in TEXT_ENCODERS:
        src = (
            cfg.text_baseline
            if name == "minilm"
            else str(runs["good" if name == "random-init" else name].name)
        )
        h = hashlib.sha256(
            f"{name}|{src}|{cfg.digest('eval_scenes', 'bridge_scenes', 'world_seed')}".encode()
        ).hexdigest()[:10]
        paths = {
            s: ctx.path("features", f"text-{name}-{s}-{h}.safetensors") for s in ("test", "train")
        }
        if all(p.is_file() for p in paths.values()):
            ctx.log(f"  {name:<11} (cached)")
            out[name] = paths
            continue
        t = time.perf_counter()
        enc = _text_encoder(ctx, name, runs)
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
        out[name] = paths
    return out


def step_measure(ctx: Context, text: dict[str, dict[str, Path]], vision_test: Path) -> dict:
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
            r = measure(
                t,
                v,
                metric="mutual_knn",
                k=cfg.k,
                null=cfg.null,
                bootstrap=cfg.bootstrap,
                seed=cfg.seed,
            )
            return r.to_dict()

        out[name], _ = ctx.cached_json(key, go)
        d = out[name]
        ctx.log(
            f"  {name:<11} mutual-kNN {d['score']:.4f}  calibrated {d['calibrated']:.4f}  "
            f"95% CI [{d['ci'][0]:.4f}, {d['ci'][1]:.4f}]"
        )
    return out


def step_efficiency(ctx: Context, train: dict, measure: dict) -> dict:
    from prh.demo.analysis import efficiency_summary

    ev = {r["name"]: r["evals"] for r in train["runs"]}
    control = measure["random-init"]["score"]
    d = efficiency_summary(ev["good"], ev["next-token"], seed=ctx.cfg.seed, control=control)
    sg, sn = d["samples_good"], d["samples_next_token"]
    ratio = d["ratio"] if d["ratio"] is not None else f">= {d['ratio_lower_bound']}"
    ctx.log(
        f"  target {d['target']:.4f} ({d['target_rule']}): good {sg if sg is None else round(sg)}"
        f" samples, next-token {sn if sn is None else round(sn)}, ratio {ratio}"
    )
    return d


def step_law(ctx: Context, train: dict) -> dict:
    from prh.demo.analysis import law_rows
    from prh.scaling.fit import fit_laws, law_data_from_rows
    from prh.scaling.laws import LAWS, get_law
    from prh.scaling.plot import plot_predicted_vs_measured

    cfg = ctx.cfg
    rows = law_rows(train["runs"], cfg.law_samples, cfg.heldout_samples)
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
    if report.chosen:
        plot_predicted_vs_measured(
            report, report.form(report.chosen).fit, fit, heldout, ctx.path("law_fit.png")
        )
    if not report.chosen:
        ctx.log(f"  no law form converged: {'; '.join(d['notes'])}")
        return d
    ctx.log(
        f"  chosen {d['form']}: held-out RMSE {d['heldout_rmse']:.4f}, seed spread "
        f"{d['seed_spread']:.4f} ({d['n_fit']} fit, {d['n_heldout']} held-out points)"
    )
    return d


def step_bridge(ctx: Context, text: dict, vision: dict[str, Path], runs: dict[str, Path]) -> dict:
    from prh.demo.bridge import bridge_section

    return bridge_section(ctx, text, vision, runs)


def step_report(ctx: Context, results: dict) -> dict:
    from prh.demo.report import write_outputs

    return write_outputs(ctx, results)


# ----------------------------------------------------------------------------- driver
def _record_cost(ctx: Context, name: str, wall: float, cpu: float) -> None:
    """Keep, per step, the costliest invocation in ``OUT/steps/costs.json`` (a rerun that reuses
    a step's results costs seconds; the report shows what computing it took)."""
    p = ctx.path("steps", f"costs-{ctx.cfg.digest()}.json")
    costs = json.loads(p.read_text()) if p.is_file() else {}
    old = costs.get(name, {"wall_s": 0.0, "cpu_s": 0.0})
    if cpu > old["cpu_s"]:
        costs[name] = {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1)}
        write_json(p, costs)
    ctx.state["costs"] = costs


def run_demo(
    cfg: DemoConfig,
    out: str | os.PathLike[str],
    log: Callable[[str], None] | None = None,
    skip_prove: bool = False,
) -> dict[str, Any]:
    """Run every step into ``out``; return the summary (also ``out/summary.json``)."""

    def say(msg: str) -> None:
        print(msg, flush=True) if log is None else log(msg)

    ctx = Context(cfg, Path(out), say)
    ctx.out.mkdir(parents=True, exist_ok=True)
    write_json(ctx.out / "demo.json", {"config": cfg.to_dict()})
    steps = 9
    results: dict[str, Any] = {"config": cfg.to_dict()}

    def step(i: int, name: str, fn: Callable[[], Any]) -> Any:
        ctx.log(f"[{i}/{steps}] {name} ...")
        w, c = time.perf_counter(), cpu_seconds()
        value = fn()
        dw, dc = time.perf_counter() - w, cpu_seconds() - c
        ctx.timings[name] = {"wall_s": round(dw, 1), "cpu_s": round(dc, 1)}
        _record_cost(ctx, name, dw, dc)
        ctx.log(
            f"[{i}/{steps}] {name} done in {dw:.0f}s (cpu {dc:.0f}s; total "
            f"{time.perf_counter() - ctx.t0:.0f}s)"
        )
        return value

    if skip_prove:
        results["prove"] = {"passed": None, "skipped": True}
    else:
        results["prove"] = step(1, "prove", lambda: step_prove(ctx))
    vision = step(2, "vision", lambda: step_vision(ctx))
    train = step(3, "train", lambda: step_train(ctx, vision["test"]))
    results["runs"] = train["runs"]
    runs = {r["name"]: ctx.out / r["path"] for r in train["runs"]}
    text = step(4, "embed", lambda: step_embed(ctx, runs))
    results["measure"] = step(5, "measure", lambda: step_measure(ctx, text, vision["test"]))
    results["sample_efficiency"] = step(
        6, "efficiency", lambda: step_efficiency(ctx, train, results["measure"])
    )
    results["law"] = step(7, "law", lambda: step_law(ctx, train))
    results["bridge"] = step(8, "bridge", lambda: step_bridge(ctx, text, vision, runs))
    summary = step(9, "report", lambda: step_report(ctx, results))
    return summary


def main_log(msg: str) -> None:  # pragma: no cover - convenience for python -m
    sys.stdout.write(msg + "\n")
