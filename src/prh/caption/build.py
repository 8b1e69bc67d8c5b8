"""Building a caption run: fit the map on paired (or matched) train scenes, train the decoder on
captions alone, embed the gallery, write ``RUN/caption/`` (layout in :mod:`prh.caption.pipeline`).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from prh.caption.condition import ConditionNormalizer, modality_gap
from prh.caption.pipeline import (
    CAPTION_DIR,
    FORMAT,
    MANIFEST,
    VisionProjector,
    _write_tensors,
)
from prh.errors import InputError

__all__ = ["build_caption_run", "render_features", "stored_features"]


def _say(progress: bool, msg: str) -> None:
    if progress:
        print(f"prh caption: {msg}", file=sys.stderr, flush=True)


def _relative(target: Path, start: Path) -> str:
    try:
        return os.path.relpath(target.resolve(), start.resolve())
    except ValueError:  # another drive on Windows
        return str(target.resolve())


def render_features(
    vision: Any,
    world: Any,
    scenes: Sequence[int],
    *,
    nuisance_seed: int = 0,
    image_size: int = 224,
    batch_size: int = 32,
    progress: bool = False,
) -> np.ndarray:
    """Last-layer features ``(N, D_v)`` of the world renders of ``scenes``."""
    from prh.encoders import unpad_layer

    out = []
    for s in range(0, len(scenes), batch_size):
        chunk = scenes[s : s + batch_size]
        images = [world.render(int(i), nuisance_seed, image_size) for i in chunk]
        f = vision.encode_images(images, batch_size=batch_size)  # (b, L, D)
        out.append(unpad_layer(f, f.shape[1] - 1, vision.layer_dims or None))
        if progress and (s // batch_size) % 10 == 0:
            _say(True, f"  images {s + len(chunk)}/{len(scenes)}")
    return np.concatenate(out).astype(np.float32)


def stored_features(
    path: str | os.PathLike[str], world: Any, scenes: Sequence[int], vision: str
) -> np.ndarray:
    """Last-layer rows ``(N, D_v)`` of ``scenes`` from a ``prh embed`` image feature file.

    Lets a build or an evaluation reuse renders already embedded by ``prh embed MODEL --world
    cave --modality image`` (same world seed, nuisance seed and image size are the caller's
    responsibility; the encoder spec is checked against ``vision``).
    """
    import json as _json

    from prh.encoders import unpad_layer
    from prh.features import load_features

    fs = load_features(path)
    spec = fs.metadata.get("encoder")
    if spec is not None and spec != vision:
        raise InputError(f"--image-features {path}: made by {spec!r}, but the vision is {vision!r}")
    if fs.ids is None:
        raise InputError(f"--image-features {path}: the file has no ids (scene_<i>)")
    index = {s: r for r, s in enumerate(fs.ids)}
    want = [world.image_id(int(i)) for i in scenes]
    missing = [s for s in want if s not in index]
    if missing:
        raise InputError(
            f"--image-features {path}: {len(missing)} of {len(want)} scenes missing "
            f"(first {missing[0]})"
        )
    dims = _json.loads(fs.metadata["layer_dims"]) if "layer_dims" in fs.metadata else None
    rows = fs.features[[index[s] for s in want]]  # (N, L, D)
    return np.asarray(unpad_layer(rows, fs.layers - 1, dims), dtype=np.float32)


def _pair_free(
    x: np.ndarray,
    y: np.ndarray,
    y_all: np.ndarray,
    normalizer: ConditionNormalizer,
    dims: int,
    seed: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    """Shuffle the caption side, match it back without pairs; returns the matched pairs."""
    from prh.bridge import match_samples

    shuffle = np.random.default_rng([seed, 0xF4EE]).permutation(len(x))
    y_u, y_all_u = y[shuffle], y_all[shuffle]  # the pairing is now unknown to the matcher
    k = min(dims, len(x) - 1, x.shape[1])
    xc = x - x.mean(0)
    u, _, _ = np.linalg.svd(xc, full_matrices=False)
    xw = u[:, :k] * np.sqrt(len(x) - 1)  # whitened PCA scores (N, k)
    res = match_samples(xw, normalizer.transform(y_u), truth=np.argsort(shuffle), seed=seed)
    perm = res.permutation
    info = {"accuracy": res.accuracy, "objective": res.objective, "seconds": res.seconds}
    return x, y_u[perm], y_all_u[perm], info  # fmt: skip


def build_caption_run(
    text_run: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    vision: str = "efficientnet-lite0",
    world_seed: int | None = None,
    n_pairs: int = 1000,
    decoder_scenes: int = 2000,
    map_kind: str = "semi-orthogonal",
    vision_dims: int = 64,
    decoder_steps: int = 1500,
    decoder_config: dict[str, Any] | None = None,
    noise: str | float = "gap",
    image_size: int = 224,
    nuisance_seed: int = 0,
    alpha: float = 0.6,
    seed: int = 0,
    threads: int | None = None,
    image_features: str | os.PathLike[str] | None = None,
    pair_free: bool = False,
    progress: bool = True,
    pair_scenes: Sequence[int] | None = None,
) -> Path:
    """Fit the map, train the decoder on text, embed the gallery; write ``out_dir/caption/``.

    Parameters
    ----------
    text_run : path-like
        A text JEPA run from ``prh train`` (its embedding ``E`` is the shared space).
    out_dir : path-like
        The run folder to write ``caption/`` into (created; an existing ``caption/`` with a
        manifest is refused).
    vision : str
        Frozen image encoder spec (:func:`prh.encoders.load_encoder`); its last layer is used.
    world_seed : int, optional
        Cave world seed; default the text run's.
    n_pairs : int
        Train scenes whose (render, captions) pairs fit the map. ``y`` is the mean JEPA
        embedding of the scene's captions.
    decoder_scenes : int
        Train scenes whose captions (all of them, as in the text run's corpus) train the decoder
        and form the nearest-caption gallery.
    map_kind : {"semi-orthogonal", "orthogonal", "ridge"}
        The map (``orthogonal`` needs ``vision_dims == E``).
    vision_dims : int
        PCA dimensions of the image features before the map.
    decoder_steps : int
        Decoder optimiser steps (batch 128). 0: no decoder; the run is a nearest-caption
        (retrieval) captioner whose caption is the gallery caption closest to the mapped image
        (manifest ``"captioner": "nearest"``).
    decoder_config : dict, optional
        Overrides of :class:`prh.caption.decoder.DecoderConfig` fields (``d_model``, ...).
    noise : "gap" or float
        CapDec noise: ``"gap"`` sets ``sigma^2`` to :func:`modality_gap` of a map fitted on 80 %
        of the pairs and measured on the other 20 %; a float is ``sigma`` itself (0: off).
    image_size : int
        Render side in pixels (the encoder resizes to its own input).
    nuisance_seed : int
        Nuisance seed of the renders.
    alpha : float
        Default beam-search length-penalty exponent stored in the manifest.
    seed : int
        Decoder initialisation, batch order and noise.
    threads : int, optional
        Torch threads.
    image_features : path-like, optional
        A ``prh embed`` image feature file holding the pair scenes' renders (by the same
        ``vision``), used instead of encoding them again.
    pair_free : bool
        Forget which render goes with which captions (a seeded shuffle of the caption side),
        recover the correspondence with :func:`prh.bridge.match_samples` between the whitened
        PCA image features and the normalised caption embeddings, and fit the map (and the
        noise) on the matched pairs. The matching accuracy is recorded.
    progress : bool
        Phase lines on stderr.
    pair_scenes : sequence of int, optional
        The train scenes that fit the map (default the first ``n_pairs``); with
        ``image_features``, a caller that has embedded some scenes already names them here.

    Returns
    -------
    Path
        ``out_dir`` (pass it to :func:`load_captioner`).
    """
    import torch

    from prh.caption.decoder import DecoderConfig, DecoderTrainConfig, train_decoder
    from prh.encoders import load_encoder
    from prh.io import write_json
    from prh.training import load_run
    from prh.world import CaveWorld, WorldConfig

    t_start = time.perf_counter()
    text_run = Path(text_run)
    out = Path(out_dir)
    folder = out / CAPTION_DIR
    if (folder / MANIFEST).exists():
        raise InputError(f"--out {out}: already holds a caption model ({folder / MANIFEST})")
    if pair_scenes is not None:
        n_pairs = len(pair_scenes)
    if n_pairs < 4 or decoder_scenes < 2 or decoder_steps < 0:
        raise InputError(
            f"need n_pairs >= 4, decoder_scenes >= 2 and decoder_steps >= 0, got {n_pairs}, "
            f"{decoder_scenes}, {decoder_steps}"
        )
    if not (noise == "gap" or (isinstance(noise, (int, float)) and noise >= 0)):
        raise InputError(f"noise must be 'gap' or a number >= 0, got {noise!r}")
    if threads:
        torch.set_num_threads(threads)
    run = load_run(text_run, device="cpu")
    if run.config.is_lm:
        raise InputError(f"{text_run}: a next-token run; captioning needs a text JEPA run")
    wseed = run.config.world_seed if world_seed is None else int(world_seed)
    world = CaveWorld(WorldConfig(seed=wseed))
    train_scenes = world.split("train")
    if max(n_pairs, decoder_scenes) > len(train_scenes):
        raise InputError(
            f"the world has {len(train_scenes)} train scenes; asked for "
            f"{max(n_pairs, decoder_scenes)}"
        )
    per_scene = run.config.captions_per_scene
    timings: dict[str, float] = {}

    # 1. Decoder corpus and gallery: train-scene captions, as in the text run's corpus.
    t0 = time.perf_counter()
    dec_scenes = train_scenes[:decoder_scenes]
    texts = [c for i in dec_scenes for c in world.captions(int(i), per_scene, wseed)]
    emb = run.embed_texts(texts)  # (M, E)
    normalizer = ConditionNormalizer().fit(emb)
    cond = normalizer.transform(emb)  # (M, E)
    E = emb.shape[1]
    timings["embed_texts_s"] = time.perf_counter() - t0
    _say(progress, f"embedded {len(texts)} captions of {len(dec_scenes)} scenes (E = {E})")

    # 2. Pairs: renders of train scenes and the mean embedding of their captions.
    t0 = time.perf_counter()
    pair_scenes = train_scenes[:n_pairs] if pair_scenes is None else list(pair_scenes)
    pair_caps = [world.captions(int(i), per_scene, wseed) for i in pair_scenes]
    y_all = run.embed_texts([c for caps in pair_caps for c in caps]).reshape(n_pairs, per_scene, E)
    y = y_all.mean(1)  # (N, E)
    enc = load_encoder(vision, efficientnet_layers="head", threads=threads)
    if enc.modality != "image":
        raise InputError(f"--vision {vision}: a {enc.modality} encoder, expected an image encoder")
    if image_features is not None:
        x = stored_features(image_features, world, pair_scenes, enc.spec or vision)
        _say(progress, f"read {n_pairs} image features from {image_features}")
    else:
        _say(progress, f"encoding {n_pairs} renders with {vision}")
        x = render_features(
            enc, world, pair_scenes, nuisance_seed=nuisance_seed, image_size=image_size,
            progress=progress,
        )  # fmt: skip
    timings["encode_images_s"] = time.perf_counter() - t0

    # 3. The map; the modality gap on held-out pairs sets the noise.
    t0 = time.perf_counter()
    match_info = None
    if pair_free:
        x, y, y_all, match_info = _pair_free(x, y, y_all, normalizer, vision_dims, seed)
        _say(progress, f"pair-free match: accuracy {match_info['accuracy']:.3f}")
    n_fit = max(2, int(0.8 * n_pairs))
    probe = VisionProjector(vision_dims, map_kind).fit(x[:n_fit], y[:n_fit])
    held = normalizer.transform(probe.transform(x[n_fit:]))  # (n_held, E)
    caps_held = normalizer.transform(y_all[n_fit:].reshape(-1, E))  # (n_held * C, E)
    gap = modality_gap(np.repeat(held, per_scene, axis=0), caps_held)
    projector = VisionProjector(vision_dims, map_kind).fit(x, y)
    sigma = float(np.sqrt(gap)) if noise == "gap" else float(noise)
    r2 = projector.map_.score(projector.reduce(x), y)
    timings["fit_map_s"] = time.perf_counter() - t0
    _say(
        progress, f"map {map_kind} fitted: R^2 {r2:.3f}, held-out gap {gap:.4f}, sigma {sigma:.3f}"
    )

    # 4. The decoder, on text only.
    t0 = time.perf_counter()
    overrides = {"max_len": run.config.max_len, **(decoder_config or {})}
    ids, mask = run.tokenizer.encode_batch(texts, max_len=overrides["max_len"])
    dcfg = DecoderConfig(vocab_size=run.tokenizer.vocab_size, cond_dim=E, **overrides)
    tcfg = (
        DecoderTrainConfig(steps=decoder_steps, noise_std=sigma, seed=seed)
        if decoder_steps
        else None
    )

    def report(step: int, loss: float) -> None:
        if step % 250 == 0 or step == decoder_steps - 1:
            _say(progress, f"  decoder step {step + 1}/{decoder_steps} loss {loss:.3f}")

    decoder, losses = None, [float("nan")]
    if tcfg is not None:  # decoder_steps = 0: a nearest-caption captioner, nothing to train
        decoder, losses = train_decoder(dcfg, cond, ids, mask, tcfg, report)
    timings["train_decoder_s"] = time.perf_counter() - t0

    # 5. Write: tensors first, the manifest last.
    folder.mkdir(parents=True, exist_ok=True)
    projector.save(folder)
    _write_tensors(folder / "normalizer.safetensors", normalizer.state_dict())
    if decoder is not None:
        _write_tensors(
            folder / "decoder.safetensors",
            {k: v.detach().cpu().numpy() for k, v in decoder.state_dict().items()},
        )
    run.tokenizer.save(folder / "tokenizer.json")
    seen: dict[str, int] = {}
    for j, t in enumerate(texts):
        seen.setdefault(t, j)
    gallery_idx = list(seen.values())
    _write_tensors(folder / "gallery.safetensors", {"embeddings": cond[gallery_idx]})
    write_json(folder / "gallery.json", [texts[j] for j in gallery_idx])
    _write_tensors(
        folder / "pairs.safetensors",
        {"x": x, "y": y.astype(np.float32), "scenes": np.asarray(pair_scenes, dtype=np.int64)},
    )
    from prh import __version__

    info = {
        "format": FORMAT,
        "captioner": "decoder" if decoder is not None else "nearest",
        "prh_version": __version__,
        "text_run": _relative(text_run, folder),
        "text_run_step": int(run.step),
        "vision": enc.spec or vision,
        "vision_layer": (enc.layer_names or ["last"])[-1],
        "vision_dim": int(x.shape[1]),
        "embed_dim": int(E),
        "world": {"name": "cave", "seed": wseed, "image_size": image_size,
                  "nuisance_seed": nuisance_seed, "captions_per_scene": per_scene},
        "n_pairs": int(n_pairs),
        "decoder_scenes": int(decoder_scenes),
        "map": {"kind": map_kind, "vision_dims": int(projector.components_.shape[0]),
                "r2_train": float(r2)},
        "pair_free": match_info,
        "gap": float(gap),
        "noise": noise if noise == "gap" else float(noise),
        "noise_std": sigma,
        "alpha": float(alpha),
        "decoder": dcfg.to_dict(),
        "decoder_train": tcfg.to_dict() if tcfg is not None else None,
        "decoder_loss_final": float(np.mean(losses[-50:])) if decoder is not None else None,
        "gallery_size": len(gallery_idx),
        "seconds": {**{k: round(v, 2) for k, v in timings.items()},
                    "total_s": round(time.perf_counter() - t_start, 2)},
    }  # fmt: skip
    write_json(folder / MANIFEST, info)
    _say(progress, f"wrote {folder} in {info['seconds']['total_s']:.0f} s")
    return out
