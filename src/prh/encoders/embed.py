"""Embed the scenes of the cave world, a caption corpus or a Hugging Face table with one encoder.

No disk I/O here beyond what the given sources read.

Row order is the order of the scene (or image) ids, for every modality, so that a text file and an
image file of the same scenes pair row by row (and by id) in ``prh measure``.

Text of a scene: by default ONE caption per scene, ``world.captions(i, n=1, seed=caption_seed)[0]``
(a fixed, seeded wording). With ``captions_per_scene = K > 1`` the K captions'
features are averaged per layer (the mean of K embeddings: less wording noise, closer to the
scene's state). Images: ``world.render(i, nuisance_seed, size)``; the encoder resizes to its own
input size (224 for EfficientNet-Lite0).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from prh.encoders.base import Encoder, Features
from prh.errors import InputError

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class EmbedConfig:
    """How scenes become encoder inputs.

    Attributes
    ----------
    modality : {"text", "image", "sketch"}
        Captions, renders, or line sketches (the world's third modality, fed to image encoders).
    captions_per_scene : int
        Captions averaged per scene (1: one seeded caption).
    caption_seed : int
        Wording seed of the captions.
    nuisance_seed : int
        Nuisance seed of the renders (light, camera, jitter, background, noise).
    image_size : int
        Render side in pixels.
    batch_size : int
        Items per forward pass.
    caption_index : int
        A corpus's text: the first caption embedded of each image (0: its first; 1 with a run
        that embeds caption 0 gives *another* caption of the same photo).
    """

    modality: str = "text"
    captions_per_scene: int = 1
    caption_seed: int = 0
    nuisance_seed: int = 0
    image_size: int = 224
    batch_size: int = 64
    caption_index: int = 0


MODALITIES = ("text", "image", "sketch")


def _encoder_modality(modality: str) -> str:
    return "text" if modality == "text" else "image"


def embed_world(
    encoder: Encoder,
    world,
    scene_ids: Sequence[int],
    config: EmbedConfig = EmbedConfig(),
    progress: Progress | None = None,
) -> tuple[np.ndarray, list[str]]:
    """Features of scenes of a :class:`prh.world.CaveWorld`.

    Parameters
    ----------
    encoder : Encoder
    world : prh.world.CaveWorld
    scene_ids : sequence of int, length N
    config : EmbedConfig
    progress : callable, optional
        ``progress(done, total)`` in scenes.

    Returns
    -------
    features : np.ndarray
        ``(N, L, D)`` float32, row ``j`` is scene ``scene_ids[j]``.
    ids : list of str
        ``"scene_{i}"`` per row.
    """
    if config.modality not in MODALITIES:
        raise InputError(f"modality {config.modality!r}: expected one of {MODALITIES}")
    encoder.check_modality(_encoder_modality(config.modality))
    ids = [world.image_id(int(i)) for i in scene_ids]
    if not ids:
        raise InputError("no scenes to embed")
    if isinstance(encoder, Features):
        return encoder.rows(ids), ids
    if config.modality == "text":
        k = config.captions_per_scene
        texts_of = [world.captions(int(i), k, config.caption_seed)[:k] for i in scene_ids]
        return _embed_caption_lists(encoder, texts_of, config.batch_size, progress), ids
    draw = world.render if config.modality == "image" else world.sketch

    def make(i: int) -> np.ndarray:
        return draw(int(i), config.nuisance_seed, config.image_size)

    return _embed_streamed(encoder, list(scene_ids), make, config.batch_size, progress), ids


def embed_corpus(
    encoder: Encoder,
    corpus,
    config: EmbedConfig = EmbedConfig(),
    images_dir=None,
    progress: Progress | None = None,
) -> tuple[np.ndarray, list[str]]:
    """Features of the images of a :class:`prh.data.CaptionCorpus` (its first captions, or files).

    Text: ``captions_per_scene`` captions of each image from its caption ``caption_index`` on,
    averaged per layer (an image with fewer averages those it has; one without caption
    ``caption_index`` is an :class:`InputError`). Images: ``images_dir / image_id`` decoded with
    PIL.

    Returns
    -------
    features : np.ndarray
        ``(N, L, D)``, in the corpus's image order.
    ids : list of str
        The corpus image ids.
    """
    encoder.check_modality(_encoder_modality(config.modality))
    ids = list(corpus.image_ids)
    if not ids:
        raise InputError(f"corpus {getattr(corpus, 'source', '')}: no images to embed")
    if isinstance(encoder, Features):
        return encoder.rows(ids), ids
    if config.modality == "text":
        i, k = config.caption_index, config.captions_per_scene
        texts_of = [list(caps[i : i + k]) for caps in corpus.captions]
        for image_id, caps, have in zip(ids, texts_of, corpus.captions):
            if not caps:
                which = "no caption" if not have else f"{len(have)} caption(s), no caption {i}"
                raise InputError(f"corpus: image {image_id!r} has {which} (--caption-index {i})")
        return _embed_caption_lists(encoder, texts_of, config.batch_size, progress), ids
    if config.modality == "sketch":
        raise InputError("--modality sketch exists only for the cave world")
    if images_dir is None:
        raise InputError("--modality image with --corpus needs --images DIR (the image files)")
    from prh.encoders.images import read_image_for_id

    def make(image_id: str) -> np.ndarray:
        return read_image_for_id(images_dir, image_id)

    return _embed_streamed(encoder, ids, make, config.batch_size, progress), ids


def embed_dataset(
    encoder: Encoder,
    rows,
    modality: str,
    batch_size: int = 64,
    progress: Progress | None = None,
) -> tuple[np.ndarray, list[str]]:
    """Features of the rows of a Hugging Face table (:class:`prh.data.hf_dataset.DatasetRows`).

    Rows are read, decoded and encoded ``4 * batch_size`` at a time: never the whole table in
    memory, whatever its size.

    Parameters
    ----------
    encoder : Encoder
    rows : DatasetRows
        ``len(rows)``, ``rows.ids``, ``rows.texts(start, stop)`` (one caption per row) and
        ``rows.image_cells(start, stop)``.
    modality : {"text", "image"}
    batch_size : int
        Items per forward pass.
    progress : callable, optional
        ``progress(done, total)`` in rows.

    Returns
    -------
    features : np.ndarray
        ``(N, L, D)`` float32, row ``i`` is table row ``i``.
    ids : list of str
        ``rows.ids``.
    """
    if modality not in ("text", "image"):
        raise InputError(f"modality {modality!r}: a data set has text and image columns only")
    encoder.check_modality(modality)
    ids = list(rows.ids)
    if isinstance(encoder, Features):
        return encoder.rows(ids), ids
    from prh.encoders.images import image_cell_to_array

    source = rows.spec.source

    def encode(start: int, stop: int) -> np.ndarray:
        if modality == "text":
            return encoder.encode_texts(rows.texts(start, stop), batch_size=batch_size)
        cells = rows.image_cells(start, stop)
        images = [image_cell_to_array(c, f"{source} row {start + j}") for j, c in enumerate(cells)]
        return encoder.encode_images(images, batch_size=batch_size)

    chunk, n, out = max(batch_size, 1) * 4, len(rows), []
    for start in range(0, n, chunk):
        out.append(encode(start, min(start + chunk, n)))
        if progress is not None:
            progress(min(start + chunk, n), n)
    return np.concatenate(out, axis=0), ids


def _embed_caption_lists(
    encoder: Encoder, texts_of: list[list[str]], batch_size: int, progress: Progress | None
) -> np.ndarray:
    """Encode every caption once, then average each item's captions per layer."""
    counts = np.array([len(t) for t in texts_of], dtype=np.int64)
    flat = [t for ts in texts_of for t in ts]
    total = len(texts_of)

    def caption_progress(done: int, _n: int) -> None:
        if progress is not None:  # report in items, not captions
            progress(int(np.searchsorted(np.cumsum(counts), done, side="right")), total)

    feats = encoder.encode_texts(flat, batch_size=batch_size, progress=caption_progress)
    if (counts == 1).all():
        return feats
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    summed = np.add.reduceat(feats, starts, axis=0)  # (N, L, D)
    return (summed / counts[:, None, None]).astype(np.float32)


def _embed_streamed(
    encoder: Encoder,
    keys: list,
    make: Callable[[object], np.ndarray],
    batch_size: int,
    progress: Progress | None,
) -> np.ndarray:
    """Make images chunk by chunk (never all N in memory) and encode each chunk."""
    chunk = max(batch_size, 1) * 4
    out = []
    for start in range(0, len(keys), chunk):
        images = [make(k) for k in keys[start : start + chunk]]
        out.append(encoder.encode_images(images, batch_size=batch_size))
        if progress is not None:
            progress(min(start + chunk, len(keys)), len(keys))
    return np.concatenate(out, axis=0)
