"""The demo's bridge section: what one map between frozen image and text encoders buys.

For each text encoder (trained good / bad / next-token, MiniLM, random-init):

- **retrieval**: image features (EfficientNet-Lite0, last layer) are reduced by PCA and mapped
  into the text encoder's space by :class:`prh.bridge.VisionProjector` (PCA + whitened
  semi-orthogonal Procrustes map, :mod:`prh.bridge`), fitted on (render, mean of 5 captions)
  pairs of training scenes; R@1/5/10 both ways on the held-out scenes (one caption each);
- **zero-shot**: the main (largest) object's shape (8 classes) and colour (10 classes) of each
  held-out image, by the nearest class prompt embedding (prompt ensemble);
- **pair-free**: class centroids of image features and of caption features matched with no pairs
  at all (:func:`prh.bridge.match_classes`); accuracy against the true class correspondence.

Zero-shot and pair-free need scene classes: on a world that does not offer ``factors``
(:func:`prh.world.world_offers`: a caption corpus of photos) they are absent (``None``, and
``classes_absent`` says why); retrieval is measured on every world.

The good run's captioner (:mod:`prh.demo.captioner`, ``OUT/caption/``) captions a few held-out
scenes for the report.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import numpy as np

from prh.demo.analysis import chance_recall, class_centroids, main_object, varying_columns
from prh.demo.captioner import demo_captioner
from prh.demo.context import Context
from prh.demo.figures import fig
from prh.demo.world import TEXT_ENCODERS, demo_world, scene_ids, text_encoder
from prh.features import last_layer

TEMPLATES = ("a {}", "a photo of a {}", "there is a {}", "an image showing a {}")


def file_last_layer(path: Path) -> np.ndarray:
    """``(N, D)`` last layer of a feature file (:func:`prh.features.last_layer`), constant
    (padding) columns kept."""
    from prh.features import load_features

    return last_layer(load_features(path).features)


def _labels(world, ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
    mo = [main_object(world.scene(i)) for i in ids]
    return np.array([s for s, _ in mo]), np.array([c for _, c in mo])


def _prompts(kind: str) -> tuple[list[str], int]:
    from prh.world.scenes import COLOURS, SHAPES

    words = list(SHAPES) if kind == "shape" else list(COLOURS)
    noun = "{}" if kind == "shape" else "{} object"
    texts = [t.format(noun.format(w)) for w in words for t in TEMPLATES]
    return texts, len(words)


def _png_b64(image: np.ndarray) -> str:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


def bridge_section(
    ctx: Context, text: dict, vision: dict[str, Path], runs: dict[str, Path]
) -> dict:
    """Retrieval, zero-shot and pair-free matching for every text encoder (cached per step)."""
    cfg = ctx.cfg
    key = "bridge-" + "-".join(Path(text[n]["test"]).stem[-10:] for n in TEXT_ENCODERS)

    def go() -> dict[str, Any]:
        world = demo_world(cfg)
        test, train = scene_ids(cfg, world)
        return _compute(ctx, text, vision, runs, world, test, train)

    value, cached = ctx.cached_json(key, go)
    for name, r in value["encoders"].items():
        line = (f"  {name:<11} R@1 img->txt {fig(r['retrieval']['img_to_txt']['R@1'])} "
                f"txt->img {fig(r['retrieval']['txt_to_img']['R@1'])}")  # fmt: skip
        if r["zero_shot"] is not None:
            z, p = r["zero_shot"], r["pair_free"]
            line += (f" | zero-shot shape {fig(z['shape']['top1'])} colour "
                     f"{fig(z['colour']['top1'])} | pair-free shape "
                     f"{fig(p['shape']['accuracy'], '.2f')} colour "
                     f"{fig(p['colour']['accuracy'], '.2f')}")  # fmt: skip
        ctx.log(line + (" (cached)" if cached else ""))
    if value.get("classes_absent"):
        ctx.log(f"  zero-shot and pair-free classes: absent ({value['classes_absent']})")
    value["samples"] = _samples(ctx, runs, vision)
    return value


CLASSES_ABSENT = "a caption corpus of photos has no scene classes"


def _compute(ctx: Context, text, vision, runs, world, test, train) -> dict:
    import torch

    from prh.bridge import VisionProjector, retrieval
    from prh.world import world_offers

    torch.set_num_threads(max(1, ctx.cfg.workers * ctx.cfg.threads))
    v_te, v_tr = file_last_layer(vision["test"]), file_last_layer(vision["train"])
    classes = world_offers(ctx.cfg.world, "factors")
    out: dict[str, Any] = {
        "n_train": len(train),
        "n_test": len(test),
        "map": "PCA-64 + whitened semi-orthogonal",
        "chance": {"retrieval": chance_recall(len(test)), "shape": 1 / 8, "colour": 1 / 10},
        "classes_absent": None if classes else CLASSES_ABSENT,
        "encoders": {},
    }
    for name in TEXT_ENCODERS:
        keep = varying_columns(file_last_layer(text[name]["train"]))  # drop zero padding
        t_te, t_tr = (
            file_last_layer(text[name]["test"])[:, keep],
            file_last_layer(text[name]["train"])[:, keep],
        )
        mu = t_tr.mean(0)
        proj = VisionProjector(64, "semi-orthogonal").fit(v_tr, t_tr)
        mapped = proj.transform(v_te) - mu  # (N, E) images in the text space, centred
        rr = retrieval(mapped, t_te - mu).to_dict()
        r = {"img_to_txt": rr["x_to_y"], "txt_to_img": rr["y_to_x"], "n": rr["n"]}
        row = {"retrieval": r, "zero_shot": None, "pair_free": None, "d_text": int(t_tr.shape[1])}
        if classes:
            enc = text_encoder(ctx.cfg, name, runs)
            row["zero_shot"] = _zero_shot(enc, keep, mu, mapped, _labels(world, test))
            labels = _labels(world, test + train)
            images, texts = np.concatenate([v_te, v_tr]), np.concatenate([t_te, t_tr])
            row["pair_free"] = {
                kind: _pair_free_classes(images, texts, y, C, ctx.cfg.seed)
                for kind, y, C in (("shape", labels[0], 8), ("colour", labels[1], 10))
            }
        out["encoders"][name] = row
    return out


def _zero_shot(enc, keep: np.ndarray, mu: np.ndarray, mapped: np.ndarray, labels) -> dict:
    """Shape and colour of the held-out scenes by the nearest class prompt (``mapped``: their
    images in the text space, centred by ``mu``; ``keep``: the text columns that vary)."""
    from prh.bridge import zero_shot

    zs = {}
    for kind, y in (("shape", labels[0]), ("colour", labels[1])):
        prompts, C = _prompts(kind)
        pe = np.asarray(enc.encode_texts(prompts)[:, -1], dtype=np.float64)[:, keep]
        cls = (pe - mu).reshape(C, len(TEMPLATES), -1)  # (C, P, E)
        zs[kind] = zero_shot(mapped, cls, y).to_dict()
    return zs


def _pair_free_classes(images, texts, labels, n_classes: int, seed: int) -> dict[str, Any]:
    """The class centroids of each side matched without pairs (the truth: class order)."""
    from prh.bridge import match_classes

    img_c = class_centroids(images, labels, n_classes)
    txt_c = class_centroids(texts, labels, n_classes)
    m = match_classes(
        img_c - img_c.mean(0), txt_c - txt_c.mean(0), truth=np.arange(n_classes), seed=seed
    )
    return {"accuracy": m.accuracy, "objective": m.objective, "classes": n_classes,
            "seconds": round(m.seconds, 3)}  # fmt: skip


def _samples(ctx: Context, runs: dict[str, Path], vision: dict[str, Path], n: int = 6) -> list:
    """Sample held-out scenes: render, a reference caption, and the demo captioner's caption
    with the nearest training caption (when a captioner was built)."""
    cfg = ctx.cfg
    world = demo_world(cfg)
    test, _ = scene_ids(cfg, world)
    cap = demo_captioner(ctx, runs["good"], vision["train"]) if cfg.caption.build else None
    out = []
    for i in test[:n]:
        img = world.render(i, 0, 160)
        item = {
            "scene": i,
            "png": _png_b64(img),
            "reference": world.captions(i, 1, cfg.world_seed + 1)[0],
        }
        if cap is not None:
            res = cap.caption(world.render(i, 0, 224))
            item["caption"] = res.caption
            item["nearest"] = res.nearest[0][0] if res.nearest else None
            item["captioner"] = cap.kind
        out.append(item)
    return out
