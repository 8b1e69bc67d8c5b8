"""The demo's captioner: ``OUT/caption/`` built from the good run, so that ``prh caption --run
OUT`` and ``prh serve --run OUT`` accept a demo folder.

``decoder_steps > 0`` (full demo): map + a decoder trained on text only. ``decoder_steps = 0``
(quick demo): the nearest-caption (retrieval) captioner, same map, no decoder: the caption is
the training caption closest to the mapped image (labelled as such in the manifest, by ``prh
caption`` and on the ``prh serve`` page). The map is fitted on the bridge scenes, whose image
features the ``vision`` step has already computed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from prh.demo.context import Context
from prh.demo.world import demo_world, scene_ids


def demo_captioner(ctx: Context, good_run: Path, vision_train: Path) -> Any:
    """Build ``OUT/caption/`` once (rebuilt when the good run changed) and load it."""
    from prh.caption import build_caption_run, load_captioner

    cfg = ctx.cfg
    folder = ctx.out / "caption"
    manifest = folder / "caption.json"
    want = {"text_run": good_run.name, "decoder_steps": cfg.decoder_steps}
    if manifest.is_file():
        info = json.loads(manifest.read_text())
        have = {
            "text_run": Path(info.get("text_run", "")).name,
            "decoder_steps": int((info.get("decoder_train") or {}).get("steps", 0)),
        }
        if have != want:
            shutil.rmtree(folder)  # built from another good run or recipe: rebuild
    if not manifest.is_file():
        what = "map + text-only decoder" if cfg.decoder_steps else "map + nearest caption"
        ctx.log(f"  building the captioner ({what}) into {folder}")
        _, bridge = scene_ids(cfg, demo_world(cfg))
        build_caption_run(
            good_run,
            ctx.out,
            vision=cfg.vision,
            pair_scenes=bridge,
            image_features=vision_train,
            decoder_scenes=cfg.decoder_scenes,
            decoder_steps=cfg.decoder_steps,
            seed=cfg.seed,
            threads=max(1, cfg.workers * cfg.threads),
            progress=False,
        )
    return load_captioner(ctx.out)
