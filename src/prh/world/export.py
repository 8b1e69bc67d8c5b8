"""A world written as a COCO-layout caption corpus: renders, captions and splits on disk.

``prh world export --format coco --out DIR`` writes::

    DIR/annotations/captions_train.json   {"info", "images": [{"id", "file_name", "width",
    DIR/annotations/captions_test.json      "height"}], "annotations": [{"id", "image_id",
    DIR/train/scene_<i>.png                 "caption"}]}
    DIR/test/scene_<i>.png

Scene ``i`` is COCO image ``id`` ``i``; its render is ``world.render(i, nuisance_seed, size)``
(PNG, lossless: the pixels a world build encodes) and its captions ``world.captions(i, captions,
seed)`` with the world's seed as the wording seed (the captions a ``--world`` text run trains on
and a world evaluation scores against). :func:`prh.data.load_corpus` and ``make_world("corpus",
spec=DIR)`` read it back.

Layer: orchestration (writes a folder: complete, or nothing).
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prh.errors import InputError
from prh.progress import Progress

FORMATS = ("coco",)


def coco_annotations(
    world: Any, scenes: Sequence[int], captions: int, seed: int, size: int
) -> dict[str, Any]:
    """The COCO captions JSON of ``scenes`` (file names ``scene_<i>.png``)."""
    images, annotations = [], []
    for i in scenes:
        images.append({"id": int(i), "file_name": f"{world.image_id(int(i))}.png",
                       "width": size, "height": size})  # fmt: skip
        for c in world.captions(int(i), captions, seed):
            annotations.append({"id": len(annotations), "image_id": int(i), "caption": c})
    info = {"description": f"prh world export (world seed {seed})", "version": "1"}
    return {"info": info, "images": images, "annotations": annotations}


def png_bytes(image: Any) -> bytes:
    """An ``(H, W, 3)`` uint8 array as PNG bytes."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="PNG")
    return buf.getvalue()


def write_split(
    root: Path, split: str, world: Any, scenes: Sequence[int], options: dict[str, int],
    progress: bool,
) -> None:  # fmt: skip
    """One split: ``root/<split>/scene_<i>.png`` and ``root/annotations/captions_<split>.json``."""
    from prh.io import json_bytes

    folder = root / split
    folder.mkdir(parents=True)
    bar = Progress(len(scenes), f"prh world export: {split}", enabled=progress, unit="image")
    for i in scenes:
        image = world.render(int(i), options["nuisance_seed"], options["size"])
        (folder / f"{world.image_id(int(i))}.png").write_bytes(png_bytes(image))
        bar.update(1)
    bar.close()
    data = coco_annotations(world, scenes, options["captions"], options["seed"], options["size"])
    (root / "annotations" / f"captions_{split}.json").write_bytes(json_bytes(data, indent=None))


def export_coco(
    world: Any,
    out: str | os.PathLike[str],
    splits: dict[str, Sequence[int]],
    *,
    captions: int = 5,
    size: int = 224,
    nuisance_seed: int = 0,
    seed: int = 0,
    progress: bool = False,
) -> Path:
    """Write ``splits`` (name -> scene indices) of ``world`` as a COCO-layout folder ``out``.

    The folder is written under a temporary name beside ``out`` and renamed when complete; an
    existing non-empty ``out`` is refused.

    Returns
    -------
    Path
        ``out``.
    """
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"--out {out}: exists and is not an empty folder")
    overlap = set.intersection(*(set(map(int, v)) for v in splits.values())) if len(splits) > 1 \
        else set()  # fmt: skip
    if overlap:
        raise InputError(f"export: scene {min(overlap)} is in more than one split")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        (tmp / "annotations").mkdir()
        options = {"captions": captions, "size": size, "nuisance_seed": nuisance_seed,
                   "seed": seed}  # fmt: skip
        for name, scenes in splits.items():
            write_split(tmp, name, world, scenes, options, progress)
        if out.exists():
            out.rmdir()
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out
