"""The demo's captioner: ``OUT/caption/`` built from the good run, so that ``prh caption --run
OUT`` and ``prh serve --run OUT`` accept a demo folder.

``decoder_steps > 0`` (full demo): map + a decoder trained on text only. ``decoder_steps = 0``
(quick demo): the nearest-caption (retrieval) captioner, same map, no decoder: the caption is
the training caption closest to the mapped image (labelled as such in the manifest, by ``prh
caption`` and on the ``prh serve`` page). The map is fitted on the bridge scenes, whose image
features the ``vision`` step has already computed.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from prh.demo.context import Context
from prh.demo.figures import fig
from prh.demo.world import demo_world, scene_ids
from prh.jsonio import read_json


def demo_captioner(ctx: Context, good_run: Path, vision_train: Path) -> Any:
    """Build ``OUT/caption/`` once (rebuilt when the good run changed) and load it."""
    from prh.caption import build_caption_run, load_captioner

    cfg = ctx.cfg
    folder = ctx.out / "caption"
    manifest = folder / "caption.json"
    want = {"text_run": good_run.name, "decoder_steps": cfg.caption.decoder_steps}
    if manifest.is_file():
        info = read_json(manifest)
        have = {
            "text_run": Path(info.get("text_run", "")).name,
            "decoder_steps": int((info.get("decoder_train") or {}).get("steps", 0)),
        }
        if have != want:
            shutil.rmtree(folder)  # built from another good run or recipe: rebuild
    if not manifest.is_file():
        what = "map + text-only decoder" if cfg.caption.decoder_steps else "map + nearest caption"
        ctx.log(f"  building the captioner ({what}) into {folder}")
        _, bridge = scene_ids(cfg, demo_world(cfg))
        build_caption_run(
            good_run,
            ctx.out,
            vision=cfg.vision,
            pair_scenes=bridge,
            image_features=vision_train,
            decoder_scenes=cfg.caption.decoder_scenes,
            decoder_steps=cfg.caption.decoder_steps,
            seed=cfg.seed,
            threads=max(1, cfg.workers * cfg.threads),
            progress=False,
            corpus=cfg.corpus or None,  # a corpus's photos and captions, else the run's world
            device="auto",  # the decoder on a GPU when there is one, as the runs train
        )
    return load_captioner(ctx.out)


def zero_pair_captioners(
    ctx: Context, good_run: Path, image_run: Path, features: dict[str, Path]
) -> Any:
    """Issue 13's captioner built with zero pairs, beside the paired one, on the image-good JEPA.

    Two caption folders on the good text run and the image-good run
    (``OUT/modalities/caption-paired-<hash>/``, ``OUT/modalities/caption-zero-pair-<hash>/``): the
    paired map is fitted on the bridge scenes' (render, captions) pairs; the zero-pair map on the
    same scenes with the correspondence forgotten and recovered by pair-free matching
    (``pair_free=True``, no class labels either). Same text-only decoder recipe. Both are scored
    on the held-out scenes against the same references;
    :func:`prh.caption.evaluate.compare_captioners` gives CIDEr of each, of the nearest-caption
    baseline and the ratio zero-pair / paired, and ``match`` the zero-pair build's matching
    accuracy (its manifest's ``pair_free``). Cached in
    ``OUT/steps/``.
    """
    import hashlib

    from prh.caption import build_caption_run, load_captioner
    from prh.caption.evaluate import compare_captioners, evaluate_captioner

    cfg = ctx.cfg
    fields = cfg.digest(
        "decoder_steps", "decoder_scenes", "eval_scenes", "bridge_scenes", "seed", "world"
    )
    key = f"{good_run.name}|{image_run.name}|{fields}"
    h = hashlib.sha256(key.encode()).hexdigest()[:10]

    def go() -> dict[str, Any]:
        test, bridge = scene_ids(cfg, demo_world(cfg))
        evals, infos = {}, {}
        for kind in ("paired", "zero-pair"):
            out = ctx.out / "modalities" / f"caption-{kind}-{h}"
            if not (out / "caption" / "caption.json").is_file():
                shutil.rmtree(out / "caption", ignore_errors=True)  # a killed build: redo
                ctx.log(f"  building the {kind} captioner on {image_run.name}")
                build_caption_run(
                    good_run,
                    out,
                    vision=str(image_run),
                    pair_scenes=bridge,
                    image_features=features["train"],
                    decoder_scenes=cfg.caption.decoder_scenes,
                    decoder_steps=cfg.caption.decoder_steps,
                    seed=cfg.seed,
                    threads=max(1, cfg.workers * cfg.threads),
                    progress=False,
                    pair_free=kind == "zero-pair",
                )
            captioner = load_captioner(out)
            infos[kind] = captioner.info
            evals[kind] = evaluate_captioner(
                captioner, scenes=test, image_features=features["test"], text_run=good_run
            )
        d = compare_captioners(evals["zero-pair"], evals["paired"])
        d["match"] = infos["zero-pair"].get("pair_free")
        d["evaluations"] = {k: v.to_dict() for k, v in evals.items()}
        return d

    value, _ = ctx.cached_json(f"modalities-captioners-{h}", go)
    ctx.log(
        f"  CIDEr (x100): paired {fig(value['paired'], '.1f', 100)}, zero-pair "
        f"{fig(value['zero_pair'], '.1f', 100)} ({fig(value['ratio'], '.0f', 100)}% of paired), "
        f"nearest caption {fig(value['nearest_caption'], '.1f', 100)}; floors: unconditional "
        f"{fig(value.get('unconditional'), '.1f', 100)}, shuffled map "
        f"{fig(value.get('shuffled'), '.1f', 100)}; oracle {fig(value.get('oracle'), '.1f', 100)}"
        f"; pair-free match of the bridge scenes {fig((value.get('match') or {}).get('accuracy'))}"
    )
    return value
