"""Sample the embedded cave world: scenes as images (and sketches) with their captions.

``prh world sample`` writes ``scene_{i}_view_{j}.png`` and ``captions.jsonl``; ``figure`` draws a
grid of scenes with captions (the README picture; PNG, JPEG, WebP, PDF or SVG); ``info`` prints
the world's size and splits as JSON; ``export --format coco`` writes a COCO caption corpus.
"""

from __future__ import annotations

import argparse

from prh.cli._args import as_request, bounded_int, positive_int, seed
from prh.world.commands import MAX_CAPTIONS, MAX_FIGURE_SCENES, MAX_FIGURE_VIEWS


def _world_args(p: argparse.ArgumentParser, split: bool = True) -> None:
    p.add_argument("--seed", type=seed, default=0, help="world seed (scenes, splits, wordings)")
    p.add_argument("--num-scenes", type=positive_int, default=20000,
                   help="distinct scenes in the world (at least 2; bounded, as the scene table is "
                   "held in memory: prh.world.cave.MAX_SCENES)")  # fmt: skip
    if split:
        p.add_argument("--split", choices=("train", "test", "all"), default="test",
                       help="scenes to draw from")  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    captions = bounded_int(MAX_CAPTIONS, "captions")
    size = bounded_int(1024, "pixels", 16)
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
    f.add_argument("--scenes", type=bounded_int(MAX_FIGURE_SCENES, "scenes"), default=6,
                   help=f"number of scenes (at most {MAX_FIGURE_SCENES})")  # fmt: skip
    f.add_argument("--views", type=bounded_int(MAX_FIGURE_VIEWS, "views"), default=2,
                   help=f"renders per scene (at most {MAX_FIGURE_VIEWS})")  # fmt: skip
    f.add_argument("--captions", type=captions, default=3, help="captions shown per scene")
    f.add_argument("--size", type=size, default=160, help="render side in pixels (16-1024)")
    f.add_argument("--out", required=True,
                   help="image file to write: .png, .jpg, .webp, .pdf or .svg")  # fmt: skip
    i = sub.add_parser("info", help="print the world's size and splits as JSON")
    _world_args(i)
    e = sub.add_parser(
        "export", help="write scenes as a caption corpus (renders, captions, splits)"
    )
    _world_args(e, split=False)
    e.add_argument("--format", choices=("coco",), default="coco", help="corpus layout (coco)")
    e.add_argument("--train-scenes", type=positive_int, default=2000, help="first train scenes")
    e.add_argument("--test-scenes", type=positive_int, default=500, help="first test scenes")
    e.add_argument("--captions", type=captions, default=5, help="captions per scene")
    e.add_argument("--size", type=size, default=224, help="image side in pixels (16-1024)")
    e.add_argument("--out", required=True, help="output folder (new or empty)")
    from prh.cli import world_moving

    world_moving.add_parsers(sub)


def run(args: argparse.Namespace) -> int:
    """The flags as a request, done by the cave world's or the moving world's command."""
    if args.action in ("spectrum", "trajectory"):  # the moving world (prh.cli.world_moving)
        from prh.cli import world_moving

        return world_moving.run(args)
    from prh.world.commands import CaveWorldRequest, cave_world_command

    cave_world_command(as_request(CaveWorldRequest, args))
    return 0
