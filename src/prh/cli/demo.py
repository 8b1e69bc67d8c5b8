"""Reproduce the paper's three claims on the moving cave world and write a report.

The default world moves (good views are two frames of a trajectory: their pair kernel has a
spectral gap, so the theorem fixes every good-view encoder's embedding up to one rotation); the
still cave world is the control, trained and measured the same way (--world, --control).

Steps: prove (quick) -> train good, bad and next-token text encoders (next-token on documents
of four captions of one scene; at equal budgets, or 4x for next-token with --full) and mixture
runs for the law, as one sweep -> embed held-out scenes with a frozen EfficientNet-Lite0,
the trained encoders, MiniLM and a random-init control -> measure (mutual-kNN, calibrated, CI) ->
curves -> sample efficiency -> scaling-law fit -> bridge (retrieval, zero-shot, pair-free,
captioner) -> OUT/report.html and OUT/summary.json. A rerun reuses every finished step.
``--corpus SPEC --vision ENCODER``: the same claims on a caption corpus with its photos
(:mod:`prh.demo.folder` checks it first); ``--scale``: its one-GPU preset.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from prh.cli._args import local_workers, positive_int, seed


def add_arguments(parser: argparse.ArgumentParser) -> None:
    size = parser.add_mutually_exclusive_group()
    size.add_argument(
        "--quick", action="store_true", help="the small preset (about 5 minutes on 2 cores)"
    )
    size.add_argument(
        "--full",
        action="store_true",
        help="3 seeds of the efficiency curves, next-token at 4x the budget, 12 held-out law "
        "points (what claims 2 and 3 need), three image/sketch encoders and the zero-pair "
        "captioner (71 minutes on 2 cores of a slow machine when last measured, commit 8af56ca; "
        "about 50 on the machine that ran commit 8eda0c7's in 42)",
    )
    size.add_argument("--scale", action="store_true", help="the one-GPU preset for a photo "
                      "corpus (--corpus; COCO, Flickr30k: budgets in docs/caption.md)")  # fmt: skip
    parser.add_argument("--out", default="runs/demo", metavar="DIR",
                        help="output folder (default runs/demo)")  # fmt: skip
    parser.add_argument("--seed", type=seed, default=None, help="base seed (integer; default 0)")
    parser.add_argument("--workers", type=local_workers, default=None, metavar="N",
                        help="parallel training processes (count; default 2)")  # fmt: skip
    parser.add_argument(
        "--samples",
        type=positive_int,
        default=None,
        metavar="S",
        help="budget of the good/bad runs (samples; default 32768, 8192 with --quick); "
        "next-token gets the same, or 4x with --full",
    )
    _image_arguments(parser)
    parser.add_argument(
        "--world",
        choices=("moving", "cave"),
        default=None,
        help="the world every encoder trains on: the moving cave (default; good views have a "
        "spectral gap) or the still cave",
    )
    parser.add_argument("--corpus", default=None, metavar="SPEC", help="a caption corpus with "
                        "its photos instead of a world (COCO folder, Flickr, JSONL)")  # fmt: skip
    parser.add_argument("--vision", default=None, metavar="ENCODER",
                        help="the frozen image encoder (default efficientnet-lite0)")  # fmt: skip
    parser.add_argument(
        "--control",
        choices=("cave", "moving", "none"),
        default=None,
        help="the control world, trained and measured the same way at the same budgets "
        "(default: the still cave for the moving world, none for the still one)",
    )
    parser.add_argument("--skip-prove", action="store_true", help="do not run the theorem checks")


def _image_arguments(parser: argparse.ArgumentParser) -> None:
    """The image/sketch encoders' recipe: their pairs and their width."""
    parser.add_argument(
        "--image-samples",
        type=positive_int,
        default=None,
        metavar="S",
        help="budget of each image/sketch encoder (pairs, a multiple of the batch 128; default "
        "25600)",
    )
    parser.add_argument(
        "--image-embed-dim",
        type=positive_int,
        default=None,
        metavar="W",
        help="train each image/sketch encoder W wide and read it out to the encoders' width (8 "
        "on the moving world) by its own positive pairs, as prh readout does (default: train at "
        "that width); docs/demo.md",
    )


def run(args: argparse.Namespace) -> int:
    from prh.demo import demo_config, run_demo
    from prh.demo.folder import open_demo_folder
    from prh.errors import InputError

    # every setting, the inputs and the output folder are checked before any step runs
    preset = next((p for p in ("quick", "full", "scale") if getattr(args, p)), "default")
    if args.corpus and args.world:
        raise InputError("give --world or --corpus, not both (a corpus is its own world)")
    control = "" if args.control == "none" else args.control
    corpus = str(Path(args.corpus).resolve()) if args.corpus else None
    cfg = demo_config(preset, seed=args.seed, workers=args.workers, samples=args.samples,
                      image_samples=args.image_samples, world=args.world, control=control,
                      image_embed_dim=args.image_embed_dim,
                      corpus=corpus, vision=args.vision)  # fmt: skip
    from prh.progress import quiet_third_party

    quiet_third_party()  # the encoders' "Loading weights" bars; the demo logs its own steps
    out = open_demo_folder(cfg, args.out)
    summary = run_demo(cfg, out, skip_prove=args.skip_prove)
    print(f"report: {out}/report.html")
    for c in summary["claims"]:
        print(f"  [{c['label']}] {c['evidence']}")
    return 0
