"""``prh world sample|figure|info|export`` as one library call on the cave world:
:func:`cave_world_command` renders scenes and their captions into a folder, draws the README's
grid of scenes, prints the world's size and splits as JSON, or exports its first train and test
scenes as a COCO-layout caption corpus (:mod:`prh.world.export`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from prh.errors import InputError

MAX_CAPTIONS = 1000  # distinct wordings per scene asked for at once
# One figure holds every render in memory and on one canvas (matplotlib refuses a side over
# 2**16 pixels): a page of scenes, a strip of views each.
MAX_FIGURE_SCENES = 64
MAX_FIGURE_VIEWS = 16
MAX_FIGURE_PIXELS = 64 * 2**20  # renders drawn into one figure, all of them held at once


@dataclass(frozen=True)
class CaveWorldRequest:
    """One ``prh world`` action on the cave world (``sample``, ``figure`` or ``info``), a field
    per flag; ``out`` is a folder for ``sample``, an image file for ``figure``."""

    action: str
    out: str | None = None
    seed: int = 0
    num_scenes: int = 20000
    split: str = "test"
    scenes: int = 6
    views: int = 2
    captions: int = 5
    size: int = 64
    sketch: bool = False
    format: str = "coco"
    train_scenes: int = 2000
    test_scenes: int = 500


def _pick_scenes(world, split: str, n: int, flag: str = "--scenes") -> list[int]:
    ids = world.split(split)
    if n > len(ids):
        raise InputError(f"{flag} {n}: the {split} split has only {len(ids)} scenes")
    return [int(x) for x in ids[:n]]


def _check_outputs(req: CaveWorldRequest) -> None:
    """Every output problem, before the world is built or anything is drawn."""
    from prh.io import check_output_dir, guard_outputs

    if req.action in ("sample", "export"):
        check_output_dir(req.out, "--out")
    elif req.action == "figure":
        from prh.world.figure import figure_format

        pixels = req.scenes * (req.views + 1) * req.size**2  # + 1: the sketch
        if pixels > MAX_FIGURE_PIXELS:
            raise InputError(
                f"--scenes {req.scenes} x (--views {req.views} + a sketch) x --size "
                f"{req.size}^2 = {pixels:,} pixels, more than one figure holds "
                f"({MAX_FIGURE_PIXELS:,}); ask for fewer scenes or views, or a smaller --size"
            )
        out = Path(req.out)
        if out.is_dir():
            raise InputError(f"--out {out}: is a folder, expected an image file name")
        figure_format(out)
        if out.parent.exists() and not out.parent.is_dir():
            raise InputError(f"--out {out}: {out.parent} is a file, expected a folder")
        check_output_dir(out.parent, "--out folder")
        if out.parent.is_dir():
            guard_outputs({"--out": out})


def cave_world_command(req: CaveWorldRequest) -> None:
    """``sample`` scenes into a folder, draw a ``figure``, or print the world's ``info``; every
    setting checked before the world is built."""
    from prh.world import make_world
    from prh.world.cave import MAX_SCENES

    if not 2 <= req.num_scenes <= MAX_SCENES:
        raise InputError(
            f"--num-scenes {req.num_scenes:,}: expected 2 to {MAX_SCENES:,} scenes "
            "(the scene table is held in memory)"
        )
    _check_outputs(req)
    world = make_world("cave", seed=req.seed, num_scenes=req.num_scenes)
    if req.action == "info":
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
        return
    if req.action == "export":
        _export(world, req)
        return
    scenes = _pick_scenes(world, req.split, req.scenes)
    if req.action == "figure":
        from prh.world.figure import save_figure

        out = Path(req.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        save_figure(world, scenes, out, views=req.views, captions=req.captions, size=req.size)
        print(f"wrote {out}")
        return
    _sample(world, scenes, req)


def _sample(world, scenes: list[int], req: CaveWorldRequest) -> None:
    from PIL import Image

    from prh.io import atomic_write

    out = Path(req.out)
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in scenes:
        for j in range(req.views):
            img = Image.fromarray(world.render(i, nuisance_seed=j, size=req.size))
            with atomic_write(out / f"scene_{i}_view_{j}.png", "wb") as f:
                img.save(f, format="PNG")
        if req.sketch:
            with atomic_write(out / f"scene_{i}_sketch.png", "wb") as f:
                Image.fromarray(world.sketch(i, 0, req.size)).save(f, format="PNG")
        caps = world.captions(i, req.captions, seed=0)
        lines.append(json.dumps({"scene": i, "state": world.state(i), "captions": caps}))
    with atomic_write(out / "captions.jsonl", "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {len(scenes)} scenes x {req.views} views and captions.jsonl to {out}")


def _export(world, req: CaveWorldRequest) -> None:
    from prh.world.export import export_coco

    splits = {"train": _pick_scenes(world, "train", req.train_scenes, "--train-scenes"),
              "test": _pick_scenes(world, "test", req.test_scenes, "--test-scenes")}  # fmt: skip
    export_coco(world, req.out, splits, captions=req.captions, size=req.size, seed=req.seed,
                progress=True)  # fmt: skip
    print(f"wrote {req.train_scenes} train and {req.test_scenes} test scenes (renders, "
          f"{req.captions} captions each) as a COCO folder to {req.out}")  # fmt: skip
