"""Sample the embedded cave world: scenes as images (and sketches) with their captions.

``prh world sample`` writes ``scene_{i}_view_{j}.png`` and ``captions.jsonl`` (one line per scene:
``{"scene", "state", "captions"}``); ``prh world figure`` draws a grid of scenes with captions
(the README picture) as PNG, JPEG, WebP, PDF or SVG by the name's extension; ``prh world info``
prints the world's size and splits as JSON.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from prh.cli._args import positive_int, seed
from prh.errors import InputError

MAX_CAPTIONS = 1000  # distinct wordings per scene asked for at once
# One figure holds every render in memory and on one canvas (matplotlib refuses a side over
# 2**16 pixels): a page of scenes, a strip of views each.
MAX_FIGURE_SCENES = 64
MAX_FIGURE_VIEWS = 16
MAX_FIGURE_PIXELS = 64 * 2**20  # renders drawn into one figure, all of them held at once


def _bounded(lo: int, hi: int, what: str):
    def parse(text: str) -> int:
        value = positive_int(text)
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"expected {lo:,} to {hi:,} {what}, got {value:,}")
        return value

    return parse


def _world_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=seed, default=0, help="world seed (scenes, splits, wordings)")
    p.add_argument("--num-scenes", type=positive_int, default=20000,
                   help="distinct scenes in the world (at least 2; bounded, as the scene table is "
                   "held in memory: prh.world.cave.MAX_SCENES)")  # fmt: skip
    p.add_argument("--split", choices=("train", "test", "all"), default="test",
                   help="scenes to draw from")  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    captions = _bounded(1, MAX_CAPTIONS, "captions")
    size = _bounded(16, 1024, "pixels")
    s = sub.add_parser("sample", help="write rendered views and captions of a few scenes")
    _world_args(s)
    s.add_argument("--scenes", type=positive_int, default=6, help="number of scenes")
    s.add_argument("--views", type=positive_int, default=2, help="renders per scene")
    s.add_argument("--captions", type=captions, default=5, help="captions per scene")
    s.add_argument("--size", type=size, default=64, help="image side in pixels (16-1024)")
    s.add_argument("--sketch", action="store_true", help="also write scene_{i}_sketch.png")
    s.add_argument("--out", required=True, help="output folder (created if missing)")
    f = sub.add_parser("figure", help="draw a grid of sample scenes with their captions")
    _world_args(f)
    f.add_argument("--scenes", type=_bounded(1, MAX_FIGURE_SCENES, "scenes"), default=6,
                   help=f"number of scenes (at most {MAX_FIGURE_SCENES})")  # fmt: skip
    f.add_argument("--views", type=_bounded(1, MAX_FIGURE_VIEWS, "views"), default=2,
                   help=f"renders per scene (at most {MAX_FIGURE_VIEWS})")  # fmt: skip
    f.add_argument("--captions", type=captions, default=3, help="captions shown per scene")
    f.add_argument("--size", type=size, default=160, help="render side in pixels (16-1024)")
    f.add_argument("--out", required=True,
                   help="image file to write: .png, .jpg, .webp, .pdf or .svg")  # fmt: skip
    i = sub.add_parser("info", help="print the world's size and splits as JSON")
    _world_args(i)
    from prh.cli import world_moving

    world_moving.add_parsers(sub)


def _pick_scenes(world, split: str, n: int) -> list[int]:
    ids = world.split(split)
    if n > len(ids):
        raise InputError(f"--scenes {n}: the {split} split has only {len(ids)} scenes")
    return [int(x) for x in ids[:n]]


def _check_outputs(args: argparse.Namespace) -> None:
    """Every output problem, before the world is built or anything is drawn."""
    from prh.io import check_output_dir, guard_outputs

    if args.action == "sample":
        check_output_dir(args.out, "--out")
    elif args.action == "figure":
        from prh.world.figure import figure_format

        pixels = args.scenes * (args.views + 1) * args.size**2  # + 1: the sketch
        if pixels > MAX_FIGURE_PIXELS:
            raise InputError(
                f"--scenes {args.scenes} x (--views {args.views} + a sketch) x --size "
                f"{args.size}^2 = {pixels:,} pixels, more than one figure holds "
                f"({MAX_FIGURE_PIXELS:,}); ask for fewer scenes or views, or a smaller --size"
            )
        out = Path(args.out)
        if out.is_dir():
            raise InputError(f"--out {out}: is a folder, expected an image file name")
        figure_format(out)
        if out.parent.exists() and not out.parent.is_dir():
            raise InputError(f"--out {out}: {out.parent} is a file, expected a folder")
        check_output_dir(out.parent, "--out folder")
        if out.parent.is_dir():
            guard_outputs({"--out": out})


def run(args: argparse.Namespace) -> int:
    from prh.world import make_world
    from prh.world.cave import MAX_SCENES

    if args.action in ("spectrum", "trajectory"):  # the moving world (prh.cli.world_moving)
        from prh.cli import world_moving

        return world_moving.run(args)
    if not 2 <= args.num_scenes <= MAX_SCENES:
        raise InputError(
            f"--num-scenes {args.num_scenes:,}: expected 2 to {MAX_SCENES:,} scenes "
            "(the scene table is held in memory)"
        )
    _check_outputs(args)
    world = make_world("cave", seed=args.seed, num_scenes=args.num_scenes)
    if args.action == "info":
        print(
            json.dumps(
                {
                    "config": world.config.to_dict(),
                    "scenes": world.num_scenes,
                    "train": len(world.split("train")),
                    "test": len(world.split("test")),
                },
                indent=2,
            )
        )
        return 0
    scenes = _pick_scenes(world, args.split, args.scenes)
    if args.action == "figure":
        from prh.world.figure import save_figure

        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        save_figure(world, scenes, out, views=args.views, captions=args.captions, size=args.size)
        print(f"wrote {out}")
        return 0
    return _sample(world, scenes, args)


def _sample(world, scenes: list[int], args: argparse.Namespace) -> int:
    from PIL import Image

    from prh.io import atomic_write

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in scenes:
        for j in range(args.views):
            img = Image.fromarray(world.render(i, nuisance_seed=j, size=args.size))
            with atomic_write(out / f"scene_{i}_view_{j}.png", "wb") as f:
                img.save(f, format="PNG")
        if args.sketch:
            with atomic_write(out / f"scene_{i}_sketch.png", "wb") as f:
                Image.fromarray(world.sketch(i, 0, args.size)).save(f, format="PNG")
        caps = world.captions(i, args.captions, seed=0)
        lines.append(json.dumps({"scene": i, "state": world.state(i), "captions": caps}))
    with atomic_write(out / "captions.jsonl", "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {len(scenes)} scenes x {args.views} views and captions.jsonl to {out}")
    return 0
