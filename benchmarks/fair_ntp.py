"""Fair next-token protocol, measured: does next-token prediction on themed worlds with
D-caption (styled) documents rise above the random-init control?

Trains tiny runs with the demo's settings (tiny preset, batch 128, lr 1e-3 constant after
warm-up, 4,000 training scenes, eval every 1,024 rows against the vision features) on one world,
then reports, for each run and the random-init control, on the held-out scenes of the vision
feature file: mutual-kNN@10 vs the vision features (best layer pair, bootstrap interval), the same
within theme, and kNN@10 factor accuracy of the largest object's shape / colour and the count
(best layer, centred features, ties for the largest object going to the first in reading order:
issue 12's probe conventions; overall and within theme), with mean (``avg``) and last-token
(``last``) pooling.

Usage (project root, one thread)::

    prh embed efficientnet-lite0 --world cave --world-themes 20 --n 500 --split test \\
        --modality image --out VISION.safetensors
    python benchmarks/fair_ntp.py VISION.safetensors OUT --themes 20 --samples 32768 \\
        --run nt1:next-token:1:0 --run nt4:next-token:4:0 --run nt4s:next-token:4:1 \\
        --run good:good:1:0

A ``--run NAME:VIEWS:D:STYLE`` trains (or reuses) ``OUT/NAME``; the random-init control is a
TextEncoder of the first JEPA run's (else the first run's) preset and tokenizer.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def _read(path):
    from prh.features import load_features

    f = load_features(path)
    return f.features, list(f.ids)


def train_run(out: Path, name: str, views: str, d: int, style: bool, args) -> Path:
    from prh.training import api
    from prh.training.config import train_config

    cfg = train_config(
        "tiny",
        views=views,
        samples=args.samples,
        seed=args.seed,
        batch_size=128,
        lr=1e-3,
        max_len=48 * d,
        min_lr_frac=1.0,
        warmup_frac=min(0.05, 8 * 128 / args.samples),
        train_scenes=4000,
        world_themes=args.themes,
        theme_strength=args.strength,
        doc_captions=d,
        doc_style=style,
        eval_features=str(args.vision),
        eval_every=1024 // 128,
        checkpoint_every=10_000,
        log_every=8,
    )
    path = out / name
    if (path / "model.safetensors").is_file():
        return path
    t0 = time.process_time()
    api.train(cfg, path, progress=False, threads=1)
    print(f"trained {name}: {views} D={d} style={style} in {time.process_time() - t0:.0f} CPU-s")
    return path


def curve(path: Path) -> list[tuple[int, float]]:
    out = []
    for line in (path / "metrics.jsonl").read_text().splitlines():
        r = json.loads(line)
        if "eval_mutual_knn" in r:
            out.append((int(r.get("samples", r.get("step", 0))), float(r["eval_mutual_knn"])))
    return out


def report(name, feats, vision, themes, factors, rows):
    from prh.metrics import measure
    from prh.metrics.probe import (
        factor_accuracy,
        mutual_knn_chance_within_groups,
        mutual_knn_within_groups,
    )

    m = measure(feats, vision, "mutual_knn", k=10, bootstrap=200, seed=0)
    within = mutual_knn_within_groups(feats, vision, themes, k=10)
    chance = mutual_knn_chance_within_groups(themes, k=10)
    fac = factor_accuracy(feats, factors, k=10, groups=themes, centre=True)
    row = {
        "encoder": name,
        "mknn": m.score,
        "ci": list(m.ci),
        "layers": list(m.layers),
        "mknn_within_theme": within,
        "mknn_within_theme_chance": chance,
        "factors": fac,
    }
    rows.append(row)
    f = " ".join(
        f"{k} {v['overall']:.2f}/{v['within']:.2f}(L{v['overall_layer']})" for k, v in fac.items()
    )
    print(
        f"{name:22s} mkNN {m.score:.3f} [{m.ci[0]:.3f}, {m.ci[1]:.3f}] layers {m.layers} "
        f"within-theme {within:.3f} (chance {chance:.3f}) | kNN overall/within {f}"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("vision")
    p.add_argument("out")
    p.add_argument("--themes", type=int, default=20)
    p.add_argument("--strength", type=float, default=2.0)
    p.add_argument("--samples", type=int, default=32768)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--run", action="append", default=[], help="NAME:VIEWS:D:STYLE")
    args = p.parse_args()

    import torch

    from prh.encoders.stored import RunEncoder
    from prh.models import TextEncoder
    from prh.training.api import load_run
    from prh.training.data import build_world, eval_texts
    from prh.world.factors import scene_factors, scene_ids_of

    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    vision, ids = _read(args.vision)
    runs = {}
    for spec in args.run:
        name, views, d, style = spec.split(":")
        runs[name] = train_run(out, name, views, int(d), style == "1", args)
    first = next(iter(runs.values()))
    cfg = load_run(first).config
    world = build_world(cfg)
    scenes = scene_ids_of(ids)
    themes = world.themes_of(scenes)
    factors = scene_factors(world, scenes, ties="first")  # issue 12's probe convention
    texts = eval_texts(cfg, ids)  # the eval hook's captions: one seeded caption per scene
    rows: list[dict] = []
    for name, path in runs.items():
        print(f"{name}: curve {[(s, round(v, 3)) for s, v in curve(path)]}")
        run = load_run(path)
        for pool in ("avg", "last"):
            feats = run.encode_texts(texts, pool=pool)
            report(f"{name}/{pool}", feats, vision, themes, factors, rows)
    jepa = [p for p in runs.values() if not load_run(p).config.is_lm]
    enc = RunEncoder(jepa[0] if jepa else first)
    torch.manual_seed(args.seed + 777)
    enc.run.model = TextEncoder(enc.run.model_config).eval()
    report("random-init/avg", enc.run.encode_texts(texts), vision, themes, factors, rows)
    (out / "fair_ntp.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
