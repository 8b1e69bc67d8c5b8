"""Building a caption run: fit the map on paired (or matched) train scenes, train the decoder on
captions alone, embed the gallery, write ``RUN/caption/`` (layout in :mod:`prh.caption.pipeline`).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from prh.bridge.projector import VisionProjector
from prh.caption.condition import ConditionNormalizer, modality_gap
from prh.caption.pipeline import CAPTION_DIR, FORMAT, MANIFEST
from prh.errors import InputError
from prh.io import write_json, write_tensors
from prh.progress import Progress

__all__ = ["CaptionBuildConfig", "build_caption_run", "render_features", "stored_features"]


@dataclass(frozen=True)
class CaptionBuildConfig:
    """Everything that determines a caption build (besides the text run).

    Attributes
    ----------
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
    decoder_config : mapping, optional
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
    pair_free_classes : bool
        With ``pair_free``: also match the two sides' class means (the largest object's shape
        and colour, each side labelled on its own; :func:`prh.world.factors.scene_factors`) and
        start the sample match from the rotation between them
        (:func:`prh.bridge.pair_free.anchor_rotation`). No image-caption pair is used.
    pair_scenes : tuple of int, optional
        The train scenes that fit the map (default the first ``n_pairs``, whose count it then
        replaces); with ``image_features``, a caller that has embedded some scenes already names
        them here.
    pair_free_method : {"auto", "spectral", "shape"}
        How ``pair_free`` matches: ``spectral`` (:func:`prh.bridge.spectral.spectral_align`:
        the rotation from each run's own positive pairs, ``spectral_pairs`` a side, then a
        one-to-one assignment through it; needs ``vision`` to be a prh image run), ``shape``
        (the matcher above, for frozen encoders), or ``auto``: spectral when the vision encoder
        is a prh run (it carries its positive pairs), shape otherwise. The manifest says which.
    spectral_pairs : int
        Positive pairs each run draws of its own for the spectral method.
    corpus : str, optional
        A caption corpus with its photos (:func:`prh.data.image_corpus.load_image_corpus`) to
        build on instead of the text run's world: its train images pair with their captions,
        its train captions train the decoder (the text run must have been trained on it).
    device : str, optional
        Where the text run embeds the captions and the decoder trains (``"cuda"``, ``"auto"``;
        :func:`prh.device.resolve_device`, checked before anything loads); ``None``: the CPU.
        The map (PCA and a Procrustes solve on ``n_pairs`` rows) is fitted on the CPU.
    """

    vision: str = "efficientnet-lite0"
    world_seed: int | None = None
    n_pairs: int = 1000
    decoder_scenes: int = 2000
    map_kind: str = "semi-orthogonal"
    vision_dims: int = 64
    decoder_steps: int = 1500
    decoder_config: Mapping[str, Any] | None = None
    noise: str | float = "gap"
    image_size: int = 224
    nuisance_seed: int = 0
    alpha: float = 0.6
    seed: int = 0
    threads: int | None = None
    image_features: str | os.PathLike[str] | None = None
    pair_free: bool = False
    pair_free_classes: bool = False
    pair_scenes: tuple[int, ...] | None = None
    pair_free_method: str = "auto"
    spectral_pairs: int = 8192
    corpus: str | None = None
    device: str | None = None

    def __post_init__(self) -> None:
        if self.pair_free_method not in ("auto", "spectral", "shape"):
            raise InputError(
                f"pair-free method {self.pair_free_method!r}: expected auto, spectral or shape"
            )
        if self.spectral_pairs < 16:
            raise InputError(f"spectral_pairs must be >= 16, got {self.spectral_pairs}")
        if self.pair_scenes is not None:
            scenes = tuple(int(i) for i in self.pair_scenes)
            object.__setattr__(self, "pair_scenes", scenes)
            object.__setattr__(self, "n_pairs", len(scenes))
        if self.n_pairs < 4 or self.decoder_scenes < 2 or self.decoder_steps < 0:
            raise InputError(
                f"need n_pairs >= 4, decoder_scenes >= 2 and decoder_steps >= 0, got "
                f"{self.n_pairs}, {self.decoder_scenes}, {self.decoder_steps}"
            )
        if self.pair_free_classes and not self.pair_free:
            raise InputError("--pair-free-classes needs --pair-free (it anchors the pair-free map)")
        if self.pair_free_classes and self.corpus is not None:
            raise InputError(
                "--pair-free-classes reads the cave's scene factors; a corpus has none"
            )
        noise = self.noise
        if not (noise == "gap" or (isinstance(noise, int | float) and noise >= 0)):
            raise InputError(f"noise must be 'gap' or a number >= 0, got {noise!r}")


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
    bar = Progress(len(scenes), "prh caption: images", enabled=progress, unit="image")
    for s in range(0, len(scenes), batch_size):
        chunk = scenes[s : s + batch_size]
        images = [world.render(int(i), nuisance_seed, image_size) for i in chunk]
        f = vision.encode_images(images, batch_size=batch_size)  # (b, L, D)
        out.append(unpad_layer(f, f.shape[1] - 1, vision.layer_dims or None))
        bar.update(len(chunk))
    bar.close()
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


def pair_free_pairs(
    x: np.ndarray,
    y_cond: np.ndarray,
    dims: int,
    seed: int,
    labels: Mapping[str, np.ndarray] | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Which caption row goes with which image row, found with no pairs.

    ``y_cond (N, E)`` are the captions' conditions in an order unknown to this function. Both
    sides are reduced to one common number of whitened principal components
    (:func:`prh.bridge.pair_free.reduce_pair`), then matched one to one by
    :func:`prh.bridge.pair_free.find_matching`: :func:`prh.bridge.match_samples` and, with
    ``labels`` (factor -> ``(N,)`` class of each image row and ``(N,)`` of each caption row, as
    a pair of arrays), the rotation between the class means matched at class level, each refined
    by Wasserstein-Procrustes (assignment, Procrustes, repeat).

    Returns
    -------
    perm : np.ndarray
        ``(N,)``: image row ``i`` goes with caption row ``perm[i]``.
    info : dict
        The start that won, its fit, the class-level matches, the dimensions.
    """
    from prh.bridge.pair_free import anchor_rotation, find_matching, match_factor, reduce_pair

    zx, zy = reduce_pair(x, y_cond, dims)
    anchor, classes = None, {}
    if labels:
        lx = {f: ab[0] for f, ab in labels.items()}
        ly = {f: ab[1] for f, ab in labels.items()}
        found = {f: match_factor(zx, zy, f, lx[f], seed=seed, labels_y=ly[f]) for f in labels}
        anchor = anchor_rotation(zx, zy, lx, found, labels_y=ly)
        classes = {f: {"exact": m.exact, "accuracy": m.accuracy} for f, m in found.items()}
    perm, start, fit = find_matching(zx, zy, seed=seed, anchor=anchor)
    return perm, {"start": start, "fit": fit, "dims": int(zx.shape[1]), "classes": classes}


def check_build_worlds(text_run: Path, config: Any, vision: str, world_seed: int) -> str:
    """The world a build pairs on: the text run's; refuse a text run trained on a caption corpus
    (its captions are not the world's, so pairing them with the world's renders would mix two
    sources) and a prh vision run trained on another world or world seed (issues 34, 36).

    Raises
    ------
    InputError
        One line naming the run, its corpus or world, and what a build needs.
    """
    from prh.jsonio import read_json
    from prh.world.registry import scenes_of

    if config.corpus is not None:
        raise InputError(
            f"--text-run {text_run}: trained on the caption corpus {config.corpus}, not on a "
            "world; --build pairs a world's captions with its renders, so it needs a run "
            "trained with --world (or --corpus SPEC: that corpus with its photos)"
        )
    world = config.world or "cave"
    side = Path(vision) / "config.json"
    if not side.is_file():
        return world  # a frozen encoder: it sees whatever world it is shown
    stored = read_json(side, "--vision")
    if not isinstance(stored, dict):
        raise InputError(f"--vision {vision}: config.json is not a JSON object")
    # a run's config.json nests its training settings under "train" (image and text runs alike)
    train = stored.get("train") if isinstance(stored.get("train"), dict) else stored
    v_world, v_seed = train.get("world") or "cave", train.get("world_seed", 0)
    if (scenes_of(v_world), v_seed) != (scenes_of(world), world_seed):  # a caption twin's
        # renders are its world's: an image run of either pairs with a text run of the other
        raise InputError(
            f"--vision {vision}: a run of world {v_world!r} (seed {v_seed}), but --text-run "
            f"{text_run} is of world {world!r} (seed {world_seed}); both runs must share one world"
        )
    return world


def same_corpus(trained_on: str, spec: str) -> bool:
    """Whether a text run's ``--corpus`` path names the corpus ``spec``: the same path, or one
    of its files (a COCO folder's caption file, say)."""
    from prh.data.loaders import detect_format
    from prh.data.record import corpus_files

    run, want = Path(trained_on).resolve(), Path(spec).resolve()
    return run == want or run in {f.resolve() for f in corpus_files(want, detect_format(want))}


def check_corpus_run(text_run: Path, config: Any, corpus: str) -> None:
    """Refuse, for a ``--corpus`` build, a text run trained on a world or on another corpus
    (its space has not seen these captions), or on every image of a corpus that names no train
    split (it has seen the test photos' captions).

    Raises
    ------
    InputError
        One line naming the run, what it was trained on, and ``--corpus``.
    """
    if config.corpus is None:
        raise InputError(
            f"--text-run {text_run}: trained on world {config.world or 'cave'}, not on --corpus "
            f"{corpus}; train it with prh train --corpus {corpus}"
        )
    if not same_corpus(config.corpus, corpus):
        raise InputError(
            f"--text-run {text_run}: trained on the corpus {config.corpus}, not on --corpus "
            f"{corpus}; a build pairs and decodes the captions its text run was trained on"
        )
    from prh.jsonio import read_json

    record = read_json(text_run / "config.json", "--text-run").get("corpus")
    if isinstance(record, dict) and record.get("split") == "all":
        raise InputError(
            f"--text-run {text_run}: trained on every image of {config.corpus} (it names no "
            "train split), test photos included; give the corpus a train split (split lists, "
            "a 'split' field, a captions_train*.json) and train again"
        )


def own_pairs(cfg: CaptionBuildConfig, text_run: Any, progress: bool) -> tuple | None:
    """``(image pairs, text pairs)``: each run's own positive pairs, embedded by it
    (:func:`prh.training.moving.run_positive_pairs`), when ``cfg`` matches pair-free with the
    spectral method (``auto``: when ``cfg.vision`` is a prh run folder); ``None`` otherwise.

    Raises
    ------
    InputError
        ``spectral`` asked for a vision encoder that is not a prh run.
    """
    from prh.training.moving import run_positive_pairs

    if not cfg.pair_free or cfg.pair_free_method == "shape":
        return None
    is_run = (Path(cfg.vision) / "config.json").is_file()
    if not is_run:
        if cfg.pair_free_method == "spectral":
            raise InputError(
                f"--vision {cfg.vision}: the spectral pair-free method needs a prh image run "
                "(it draws the run's own positive pairs); frozen encoders match by shape"
            )
        return None
    _say(progress, f"drawing {cfg.spectral_pairs} positive pairs of each run's own")
    return tuple(
        run_positive_pairs(r, cfg.spectral_pairs, seed=cfg.seed).embedding()
        for r in (cfg.vision, text_run)
    )


def _hidden_pairing(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The seeded shuffle that hides which caption row goes with which image row, and its
    inverse (image row ``i``'s true caption row), shared by both pair-free methods."""
    shuffle = np.random.default_rng([seed, 0xF4EE]).permutation(n)
    return shuffle, np.argsort(shuffle)


def _pair_free_spectral(
    x: np.ndarray, y: np.ndarray, y_all: np.ndarray, own: tuple, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    """:func:`_pair_free` by the spectral method: the caption side shuffled, the rotation from
    ``own`` (each side's own pairs), the rows matched one to one through it."""
    from prh.bridge.spectral import spectral_align

    t0 = time.perf_counter()
    shuffle, truth = _hidden_pairing(len(x), seed)
    y_u, y_all_u = y[shuffle], y_all[shuffle]  # the pairing is now unknown to the matcher
    # a run's last layer is its JEPA embedding zero-padded to the widest layer: the pairs' width
    dx, dy = own[0][0].shape[1], own[1][0].shape[1]
    if np.any(x[:, dx:]) or np.any(y_u[:, dy:]):
        raise InputError(
            f"spectral pair-free: the image / caption features are wider ({x.shape[1]}, "
            f"{y_u.shape[1]}) than the runs' embeddings ({dx}, {dy}) and not zero-padded"
        )
    k = min(dx, dy)
    res = spectral_align(own[0], own[1], x[:, :dx], y_u[:, :dy], k=k, assignment="hungarian",
                         truth=truth, seed=seed)  # fmt: skip
    perm = res.assignment
    info = {
        "method": "spectral",
        "accuracy": float((perm == truth).mean()),
        "chance": 1.0 / len(x),
        "pinned": bool(res.pinned),
        "reason": res.reason,
        "k": int(res.k),
        "pairs": int(own[0][0].shape[0]),
        "eigenvalues_image": res.eigenvalues_x.tolist(),
        "eigenvalues_text": res.eigenvalues_y.tolist(),
        "seconds": time.perf_counter() - t0,
    }
    return x, y_u[perm], y_all_u[perm], info


def _pair_free(
    x: np.ndarray,
    y: np.ndarray,
    y_all: np.ndarray,
    normalizer: ConditionNormalizer,
    dims: int,
    seed: int,
    labels: Mapping[str, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    """Shuffle the caption side, match it back without pairs; returns the matched pairs.

    ``labels`` (factor -> ``(N,)`` class of each scene) label each side on its own: the caption
    side's labels are shuffled with the captions, so only class membership crosses over.
    """
    t0 = time.perf_counter()
    shuffle, truth = _hidden_pairing(len(x), seed)
    y_u, y_all_u = y[shuffle], y_all[shuffle]  # the pairing is now unknown to the matcher
    both = {f: (np.asarray(v), np.asarray(v)[shuffle]) for f, v in (labels or {}).items()}
    perm, info = pair_free_pairs(x, normalizer.transform(y_u), dims, seed, both)
    xc, yc = x - x.mean(0), y_u[perm] - y_u[perm].mean(0)
    info = {
        "accuracy": float((perm == truth).mean()),
        "chance": 1.0 / len(x),
        "objective": float(np.linalg.norm(xc.T @ yc) ** 2)
        / max(float(np.linalg.norm(xc.T @ xc) * np.linalg.norm(yc.T @ yc)), 1e-300),
        "seconds": time.perf_counter() - t0,
        **info,
    }
    return x, y_u[perm], y_all_u[perm], {"method": "shape", **info}


@dataclass(frozen=True, eq=False)
class MapFit:
    """What step 3 produces: the fitted projector, the noise it sets, its diagnostics."""

    projector: VisionProjector
    x: np.ndarray  # (N, D_v) image features of the (possibly matched) pairs
    y: np.ndarray  # (N, E) mean caption embedding per pair
    gap: float
    sigma: float
    r2: float
    match_info: dict[str, Any] | None


def embed_decoder_corpus(
    run: Any, world: Any, scenes: Sequence[int], wseed: int
) -> tuple[list[str], np.ndarray]:
    """Step 1: the train-scene captions (as in the text run's corpus) and their embeddings
    ``(M, E)``; they train the decoder and form the gallery."""
    per_scene = run.config.captions_per_scene
    texts = [c for i in scenes for c in world.captions(int(i), per_scene, wseed)]
    return texts, run.embed_texts(texts)  # (M, E)


def embed_pairs(
    run: Any,
    enc: Any,
    world: Any,
    scenes: Sequence[int],
    wseed: int,
    cfg: CaptionBuildConfig,
    progress: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Step 2: image features ``x (N, D_v)`` of the scenes' renders and the embeddings
    ``y_all (N, C, E)`` of their first ``C`` captions (``C``: the run's captions per scene, or
    the fewest any of these corpus images has)."""
    per_scene = run.config.captions_per_scene
    lists = [world.captions(int(i), per_scene, wseed) for i in scenes]
    per_scene = min(len(c) for c in lists)
    caps = [c for cs in lists for c in cs[:per_scene]]
    y_all = run.embed_texts(caps).reshape(len(scenes), per_scene, -1)
    if cfg.image_features is not None:
        x = stored_features(cfg.image_features, world, scenes, enc.spec or cfg.vision)
        _say(progress, f"read {len(scenes)} image features from {cfg.image_features}")
    else:
        _say(progress, f"encoding {len(scenes)} renders with {cfg.vision}")
        x = render_features(
            enc, world, scenes, nuisance_seed=cfg.nuisance_seed, image_size=cfg.image_size,
            progress=progress,
        )  # fmt: skip
    return x, y_all


def fit_map(
    x: np.ndarray,
    y_all: np.ndarray,
    normalizer: ConditionNormalizer,
    cfg: CaptionBuildConfig,
    progress: bool,
    labels: Mapping[str, np.ndarray] | None = None,
    own: tuple | None = None,
) -> MapFit:
    """Step 3: the map on all pairs (with ``cfg.pair_free``: on the pairs matched without any,
    by the spectral method from the runs' ``own`` positive pairs when given, else by shape;
    ``labels`` anchor the shape match at class level); the modality gap of a map fitted on 80 %
    of them, measured on the other 20 %, sets the decoder's noise."""
    y = y_all.mean(1)  # (N, E)
    n, per_scene, E = y_all.shape
    match_info = None
    if cfg.pair_free and own is not None:
        x, y, y_all, match_info = _pair_free_spectral(x, y, y_all, own, cfg.seed)
        pinned = "pinned" if match_info["pinned"] else f"NOT pinned ({match_info['reason']})"
        _say(progress, f"pair-free match (spectral, {pinned}): accuracy "
                       f"{match_info['accuracy']:.3f}")  # fmt: skip
    elif cfg.pair_free:
        x, y, y_all, match_info = _pair_free(
            x, y, y_all, normalizer, cfg.vision_dims, cfg.seed, labels
        )
        _say(progress, f"pair-free match (shape): accuracy {match_info['accuracy']:.3f}")
    n_fit = max(2, int(0.8 * n))
    probe = VisionProjector(cfg.vision_dims, cfg.map_kind).fit(x[:n_fit], y[:n_fit])
    held = normalizer.transform(probe.transform(x[n_fit:]))  # (n_held, E)
    caps_held = normalizer.transform(y_all[n_fit:].reshape(-1, E))  # (n_held * C, E)
    gap = modality_gap(np.repeat(held, per_scene, axis=0), caps_held)
    projector = VisionProjector(cfg.vision_dims, cfg.map_kind).fit(x, y)
    sigma = float(np.sqrt(gap)) if cfg.noise == "gap" else float(cfg.noise)
    r2 = projector.map_.score(projector.reduce(x), y)
    _say(
        progress,
        f"map {cfg.map_kind} fitted: R^2 {r2:.3f}, held-out gap {gap:.4f}, sigma {sigma:.3f}",
    )
    return MapFit(projector, x, y, gap, sigma, r2, match_info)


def train_text_decoder(
    run: Any,
    texts: list[str],
    cond: np.ndarray,
    sigma: float,
    cfg: CaptionBuildConfig,
    progress: bool,
    device: Any = "cpu",
) -> tuple[Any, list[float], Any, Any]:
    """Step 4: the decoder, on text only, trained on ``device``; returns ``(decoder, losses,
    model config, train config)``; ``(None, [], model config, None)`` when ``decoder_steps``
    is 0."""
    from prh.caption.decoder import DecoderConfig, DecoderTrainConfig, train_decoder

    overrides = {"max_len": run.config.max_len, **(cfg.decoder_config or {})}
    ids, mask = run.tokenizer.encode_batch(texts, max_len=overrides["max_len"])
    dcfg = DecoderConfig(vocab_size=run.tokenizer.vocab_size, cond_dim=cond.shape[1], **overrides)
    if cfg.decoder_steps == 0:  # a nearest-caption captioner: nothing to train
        return None, [], dcfg, None
    tcfg = DecoderTrainConfig(steps=cfg.decoder_steps, noise_std=sigma, seed=cfg.seed)

    bar = Progress(cfg.decoder_steps, "prh caption: decoder", enabled=progress, unit="step")
    report = lambda step, loss: bar.set(step + 1, loss=f"{loss:.3f}")  # noqa: E731
    decoder, losses = train_decoder(dcfg, cond, ids, mask, tcfg, report, device=device)
    bar.close()
    return decoder, losses, dcfg, tcfg


def write_caption_folder(
    folder: Path,
    fit: MapFit,
    normalizer: ConditionNormalizer,
    decoder: Any,
    tokenizer: Any,
    texts: list[str],
    cond: np.ndarray,
    pair_scenes: Sequence[int],
) -> int:
    """Step 5: every tensor file of ``folder`` (the manifest is written last, by the caller);
    returns the gallery size (each distinct caption once)."""
    folder.mkdir(parents=True, exist_ok=True)
    fit.projector.save(folder)
    write_tensors(folder / "normalizer.safetensors", normalizer.state_dict())
    if decoder is not None:  # a nearest-caption captioner has none
        write_tensors(
            folder / "decoder.safetensors",
            {k: v.detach().cpu().numpy() for k, v in decoder.state_dict().items()},
        )
    tokenizer.save(folder / "tokenizer.json")
    seen: dict[str, int] = {}
    for j, t in enumerate(texts):
        seen.setdefault(t, j)
    gallery_idx = list(seen.values())
    write_tensors(folder / "gallery.safetensors", {"embeddings": cond[gallery_idx]})
    write_json(folder / "gallery.json", [texts[j] for j in gallery_idx])
    write_tensors(
        folder / "pairs.safetensors",
        {
            "x": fit.x,
            "y": fit.y.astype(np.float32),
            "scenes": np.asarray(pair_scenes, dtype=np.int64),
        },
    )
    return len(gallery_idx)


@dataclass(frozen=True, eq=False)
class BuildInputs:
    """What a build reads before any model runs: the text run, its world (or the corpus world of
    ``--corpus``) and the world's record for the manifest."""

    text_run: Path
    run: Any
    world: Any
    wseed: int
    world_info: dict[str, Any]


def load_build_inputs(text_run: Path, cfg: CaptionBuildConfig) -> BuildInputs:
    """Load the text run and the world a build pairs on; refuse a next-token run, a world or
    corpus the text run was not trained on, and more pairs or decoder scenes than train
    scenes."""
    from prh.training import load_run
    from prh.world import make_world

    run = load_run(text_run, device=cfg.device or "cpu")
    if run.config.is_lm:
        raise InputError(f"{text_run}: a next-token run; captioning needs a text JEPA run")
    wseed = run.config.world_seed if cfg.world_seed is None else int(cfg.world_seed)
    if cfg.corpus is not None:  # the corpus's own checks (images, rows) come first
        name, options = "corpus", {"spec": str(Path(cfg.corpus).resolve())}
        world = make_world(name, seed=wseed, **options)
        check_corpus_run(text_run, run.config, cfg.corpus)
    else:
        name, options = check_build_worlds(text_run, run.config, cfg.vision, wseed), {}
        world = make_world(name, seed=wseed)
    train = world.split("train")
    if max(cfg.n_pairs, cfg.decoder_scenes) > len(train):
        what = f"corpus {cfg.corpus}" if cfg.corpus is not None else "world"
        raise InputError(
            f"the {what} has {len(train)} train scenes; asked for "
            f"{max(cfg.n_pairs, cfg.decoder_scenes)} (--n-pairs, --decoder-scenes)"
        )
    info = {"name": name, "seed": wseed, "image_size": cfg.image_size,
            "nuisance_seed": cfg.nuisance_seed,
            "captions_per_scene": run.config.captions_per_scene}  # fmt: skip
    if options:
        info["options"] = options
    return BuildInputs(text_run, run, world, wseed, info)


def decoder_conditions(
    inputs: BuildInputs, cfg: CaptionBuildConfig, progress: bool
) -> tuple[list[str], ConditionNormalizer, np.ndarray]:
    """Step 1 with its normaliser: the decoder's captions, the normaliser fitted on their
    embeddings, and their conditions ``(M, E)``."""
    from prh.world.registry import split_sample

    scenes = split_sample(inputs.world, "train", cfg.decoder_scenes)  # the cave's first ones
    texts, emb = embed_decoder_corpus(inputs.run, inputs.world, scenes, inputs.wseed)
    normalizer = ConditionNormalizer().fit(emb)
    _say(progress, f"embedded {len(texts)} captions of {len(scenes)} scenes (E = {emb.shape[1]})")
    return texts, normalizer, normalizer.transform(emb)


def load_vision(cfg: CaptionBuildConfig) -> Any:
    """The frozen image encoder of ``cfg.vision`` (last layer); a text encoder is refused."""
    from prh.encoders import load_encoder

    enc = load_encoder(cfg.vision, efficientnet_layers="head", threads=cfg.threads)
    if enc.modality != "image":
        raise InputError(
            f"--vision {cfg.vision}: a {enc.modality} encoder, expected an image encoder"
        )
    return enc


def map_from_pairs(
    inputs: BuildInputs, enc: Any, normalizer: ConditionNormalizer, cfg: CaptionBuildConfig,
    progress: bool, timings: dict[str, float],
) -> tuple[MapFit, list[int]]:  # fmt: skip
    """Steps 2 and 3: embed the pair scenes (renders, captions) and fit the map; returns the fit
    and the pair scenes."""
    from prh.world.registry import split_sample

    t0 = time.perf_counter()
    world = inputs.world
    if cfg.pair_scenes is None:
        pair_scenes = split_sample(world, "train", cfg.n_pairs)
    else:
        pair_scenes = list(cfg.pair_scenes)
    x, y_all = embed_pairs(inputs.run, enc, world, pair_scenes, inputs.wseed, cfg, progress)
    timings["encode_images_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    labels = None
    if cfg.pair_free_classes:
        from prh.world.factors import scene_factors

        f = scene_factors(world, pair_scenes)
        labels = {"shape": f["shape"], "colour": f["colour"]}
    own = own_pairs(cfg, inputs.text_run, progress)
    fit = fit_map(x, y_all, normalizer, cfg, progress, labels, own)
    timings["fit_map_s"] = time.perf_counter() - t0
    return fit, pair_scenes


def build_caption_run(
    text_run: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    config: CaptionBuildConfig | None = None,
    *,
    progress: bool = True,
    **overrides: Any,
) -> Path:
    """Fit the map, train the decoder on text, embed the gallery; write ``out_dir/caption/``.

    Parameters
    ----------
    text_run : path-like
        A text JEPA run from ``prh train`` (its embedding ``E`` is the shared space).
    out_dir : path-like
        The run folder to write ``caption/`` into (created; an existing ``caption/`` with a
        manifest is refused).
    config : CaptionBuildConfig, optional
        The build's settings (default: the defaults).
    progress : bool
        Phase lines on stderr.
    **overrides
        Fields of :class:`CaptionBuildConfig` replacing those of ``config``.

    Returns
    -------
    Path
        ``out_dir`` (pass it to :func:`prh.caption.load_captioner`).
    """
    import torch

    cfg = dataclasses.replace(config or CaptionBuildConfig(), **overrides)
    t_start = time.perf_counter()
    out = Path(out_dir)
    folder = out / CAPTION_DIR
    if (folder / MANIFEST).exists():
        raise InputError(f"--out {out}: already holds a caption model ({folder / MANIFEST})")
    from prh.device import resolve_device

    device = resolve_device(cfg.device or "cpu")  # an unavailable device: one line, first
    cfg = dataclasses.replace(cfg, device=str(device))  # "auto" resolved once
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    inputs = load_build_inputs(Path(text_run), cfg)
    t0 = time.perf_counter()
    texts, normalizer, cond = decoder_conditions(inputs, cfg, progress)
    timings = {"embed_texts_s": time.perf_counter() - t0}
    enc = load_vision(cfg)
    fit, pair_scenes = map_from_pairs(inputs, enc, normalizer, cfg, progress, timings)
    t0 = time.perf_counter()
    run = inputs.run
    decoder, losses, dcfg, tcfg = train_text_decoder(run, texts, cond, fit.sigma, cfg, progress,
                                                     device)  # fmt: skip
    timings["train_decoder_s"] = time.perf_counter() - t0

    created = not folder.exists()
    try:  # the folder is one output: complete (its manifest written last) or removed
        gallery_size = write_caption_folder(
            folder, fit, normalizer, decoder, run.tokenizer, texts, cond, pair_scenes
        )
        info = manifest(cfg, inputs, enc, fit, folder)
        _finish_manifest(folder, info, dcfg, tcfg, decoder, losses, gallery_size, timings, t_start)
    except BaseException:
        if created:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    _say(progress, f"wrote {folder} in {info['seconds']['total_s']:.0f} s")
    return out


def _finish_manifest(folder, info, dcfg, tcfg, decoder, losses, gallery_size, timings, t_start):
    """Complete ``info`` and write it: last, so its presence marks a complete folder."""
    info.update(
        captioner="decoder" if decoder is not None else "nearest",
        decoder=dcfg.to_dict(),
        decoder_train=tcfg.to_dict() if tcfg is not None else None,
        decoder_loss_final=float(np.mean(losses[-50:])) if decoder is not None else None,
        gallery_size=gallery_size,
        seconds={
            **{k: round(v, 2) for k, v in timings.items()},
            "total_s": round(time.perf_counter() - t_start, 2),
        },
    )
    write_json(folder / MANIFEST, info)


def manifest(
    cfg: CaptionBuildConfig, inputs: BuildInputs, enc: Any, fit: MapFit, folder: Path
) -> dict[str, Any]:
    """The manifest's description of the inputs, the map and the noise (``caption.json``)."""
    from prh import __version__

    run, text_run = inputs.run, inputs.text_run
    return {
        "format": FORMAT,
        "prh_version": __version__,
        "text_run": _relative(text_run, folder),
        "text_run_step": int(run.step),
        "vision": enc.spec or cfg.vision,
        "vision_layer": (enc.layer_names or ["last"])[-1],
        "vision_dim": int(fit.x.shape[1]),
        "embed_dim": int(fit.y.shape[1]),
        "world": inputs.world_info,
        "n_pairs": int(cfg.n_pairs),
        "decoder_scenes": int(cfg.decoder_scenes),
        "map": {"kind": cfg.map_kind, "vision_dims": int(fit.projector.components_.shape[0]),
                "r2_train": float(fit.r2)},
        "pair_free": fit.match_info,
        "gap": float(fit.gap),
        "noise": cfg.noise if cfg.noise == "gap" else float(cfg.noise),
        "noise_std": fit.sigma,
        "alpha": float(cfg.alpha),
    }  # fmt: skip
