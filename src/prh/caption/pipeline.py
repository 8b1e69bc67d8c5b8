"""Captioning an image through one map: frozen vision encoder -> map -> text-only decoder.

``image -> vision encoder (last layer, pooled) -> PCA to k dims -> fitted map into the text JEPA's
embedding space -> condition normaliser (centre, whiten, L2) -> decoder``; ``nearest`` are the
gallery captions (train-scene captions embedded by the text JEPA) closest in cosine to the mapped
image embedding.

:func:`prh.caption.build.build_caption_run` makes the ``caption/`` folder of a run directory from
a trained text run; :func:`load_captioner` reads it back. Layout of ``RUN/caption/`` (every file
written atomically; ``caption.json`` last, so its presence marks a complete folder):

===========================  ===================================================================
``caption.json``             manifest: vision spec and layer, text run path, world, map, decoder
                             and training configs, fit diagnostics, timings
``vision_pca.safetensors``   ``mean (D_v,)``, ``components (k, D_v)``: PCA of the image features
``map.safetensors`` (+json)  the fitted map (:func:`prh.bridge.save_map`), PCA coords -> JEPA space
``normalizer.safetensors``   ``mean (E,)``, ``whiten (E, E)`` of the condition space
``decoder.safetensors``      the decoder's weights (config in the manifest); absent from a
                             nearest-caption run (manifest ``"captioner": "nearest"``)
``tokenizer.json``           the text run's tokenizer (so the folder decodes on its own)
``gallery.safetensors``      ``embeddings (G, E)`` normalised gallery captions
``gallery.json``             the ``G`` gallery captions
``pairs.safetensors``        the fitting pairs: ``x (N, D_v)`` image features, ``y (N, E)`` mean
                             caption embeddings, ``scenes (N,)`` (to refit or ablate the map)
===========================  ===================================================================
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from prh.bridge.projector import VisionProjector
from prh.caption.condition import ConditionNormalizer
from prh.errors import CheckpointError, InputError
from prh.io import read_tensors
from prh.jsonio import read_json

__all__ = [
    "CAPTION_DIR",
    "CaptionResult",
    "Captioner",
    "check_image",
    "load_captioner",
]

CAPTION_DIR = "caption"
MANIFEST = "caption.json"
FORMAT = "prh-caption/1"
MAX_IMAGE_SIDE = 8192  # pixels; larger arrays are refused before any work
KIND_LABELS = {
    "decoder": "map + text-only decoder",
    "nearest": "nearest-caption retrieval (no decoder: the closest training caption)",
}


@dataclass(frozen=True)
class CaptionResult:
    """One image's caption.

    Attributes
    ----------
    caption : str
        The decoder's caption.
    nearest : list of (str, float)
        The closest gallery captions with their cosine similarity, best first.
    seconds : float
        Wall time of the whole call.
    """

    caption: str
    nearest: list[tuple[str, float]]
    seconds: float


def check_image(image: Any, max_side: int = MAX_IMAGE_SIDE) -> np.ndarray:
    """Validate an ``(H, W, 3)`` uint8 RGB array (``max_side`` pixels at most per side)."""
    if not isinstance(image, np.ndarray):
        raise InputError(f"expected an image array (H, W, 3) uint8, got {type(image).__name__}")
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise InputError(
            f"expected an image (H, W, 3) uint8, got shape {image.shape} dtype {image.dtype}"
        )
    h, w = image.shape[:2]
    if h < 1 or w < 1:
        raise InputError(f"empty image of shape {image.shape}")
    if max(h, w) > max_side:
        raise InputError(f"image {w}x{h} is larger than the limit of {max_side} px per side")
    return image


_SPACE_BEFORE = re.compile(r"\s+([.,;:!?)])")
_HYPHEN = re.compile(r"(\w)\s*-\s*(\w)")


def detokenize(text: str) -> str:
    """Undo the word-piece decoder's spaces around punctuation.

    The tokenizer splits punctuation off words, so decoding gives ``"a medium - sized cube ."``;
    the references read ``"a medium-sized cube."``. Caption metrics tokenise both the same way
    only after this clean-up (PTB keeps ``medium-sized`` as one token).

    >>> detokenize("a medium - sized cube , left of a ball .")
    'a medium-sized cube, left of a ball.'
    """
    return _HYPHEN.sub(r"\1-\2", _SPACE_BEFORE.sub(r"\1", text)).strip()


class Captioner:
    """``caption(image) -> CaptionResult``: vision encoder -> map -> decoder (see module doc).

    Build it with :func:`load_captioner`. Safe to call from several threads (inference only).

    Parameters
    ----------
    vision : prh.encoders.Encoder
        The frozen image encoder; its last layer (unpadded) is the image feature.
    projector : VisionProjector
        PCA and map into the text JEPA's space.
    normalizer : ConditionNormalizer
        The decoder's condition space.
    decoder : prh.caption.decoder.PrefixDecoder or None
        The text-only decoder; ``None`` for a nearest-caption captioner (the caption is the
        closest gallery caption).
    tokenizer : prh.views.TextTokenizer
        Decodes token ids.
    gallery : list of str
        Captions ranked by ``nearest``.
    gallery_embeddings : np.ndarray
        ``(G, E)`` their normalised embeddings.
    beam : int
        Default beam width (1 = greedy).
    alpha : float
        Beam-search length-penalty exponent.
    k : int
        How many nearest captions to return.
    info : dict
        The manifest (``caption.json``).
    folder : Path, optional
        The ``caption/`` folder it was loaded from.
    """

    def __init__(
        self,
        vision: Any,
        projector: VisionProjector,
        normalizer: ConditionNormalizer,
        decoder: Any,
        tokenizer: Any,
        gallery: Sequence[str],
        gallery_embeddings: np.ndarray,
        *,
        beam: int = 1,
        alpha: float = 0.6,
        k: int = 5,
        info: dict[str, Any] | None = None,
        folder: Path | None = None,
    ) -> None:
        self.vision = vision
        self.projector = projector
        self.normalizer = normalizer
        self.decoder = decoder
        self.tokenizer = tokenizer
        self.gallery = list(gallery)
        self.gallery_embeddings = np.asarray(gallery_embeddings, dtype=np.float32)
        self.beam = beam
        self.alpha = alpha
        self.k = k
        self.info = dict(info or {})
        self.folder = folder

    @property
    def kind(self) -> str:
        """``decoder`` (generates) or ``nearest`` (retrieves the closest gallery caption)."""
        return "nearest" if self.decoder is None else "decoder"

    @property
    def label(self) -> str:
        """What the captioner is, in words (for pages and command output)."""
        return KIND_LABELS[self.kind]

    # -- the steps ----------------------------------------------------------------------------
    def image_features(self, images: Sequence[np.ndarray], batch_size: int = 32) -> np.ndarray:
        """The vision encoder's last layer of each image, ``(N, D_v)`` float32."""
        from prh.encoders import unpad_layer

        images = [check_image(im) for im in images]
        feats = self.vision.encode_images(images, batch_size=batch_size)  # (N, L, D)
        dims = self.vision.layer_dims or None
        return unpad_layer(feats, feats.shape[1] - 1, dims)

    def conditions(self, features: np.ndarray) -> np.ndarray:
        """Image features ``(N, D_v)`` -> normalised mapped embeddings ``(N, E)``."""
        return self.normalizer.transform(self.projector.transform(features))

    def embed_images(self, images: Sequence[np.ndarray]) -> np.ndarray:
        """Images -> normalised mapped embeddings ``(N, E)`` in the decoder's condition space."""
        return self.conditions(self.image_features(images))

    def generate(self, cond: np.ndarray, beam: int | None = None) -> list[str]:
        """Decode captions from conditions ``(N, E)`` (greedy for ``beam=1``)."""
        import torch

        from prh.caption.decoder import beam_search, greedy_decode

        beam = self.beam if beam is None else int(beam)
        if beam < 1:
            raise InputError(f"--beam must be >= 1, got {beam}")
        if self.decoder is None:  # a nearest-caption captioner: retrieve, do not generate
            return [near[0][0] for near in self.nearest(cond, k=1)]
        tok = self.tokenizer
        out: list[str] = []
        for i in range(0, len(cond), 256):
            c = torch.from_numpy(np.ascontiguousarray(cond[i : i + 256], dtype=np.float32))
            if beam == 1:
                ids = greedy_decode(self.decoder, c, tok.bos_id, tok.eos_id)
            else:
                ids = beam_search(self.decoder, c, tok.bos_id, tok.eos_id, beam, self.alpha)
            out.extend(detokenize(tok.decode(row)) for row in ids)
        return out

    def nearest(self, cond: np.ndarray, k: int | None = None) -> list[list[tuple[str, float]]]:
        """The ``k`` gallery captions of highest cosine with each row of ``cond (N, E)``."""
        k = min(self.k if k is None else k, len(self.gallery))
        sims = np.asarray(cond, dtype=np.float32) @ self.gallery_embeddings.T  # (N, G)
        top = np.argsort(-sims, axis=1, kind="stable")[:, :k]  # (N, k)
        return [[(self.gallery[j], float(sims[i, j])) for j in row] for i, row in enumerate(top)]

    # -- the contract -------------------------------------------------------------------------
    def caption(self, image: np.ndarray, beam: int | None = None) -> CaptionResult:
        """Caption one ``(H, W, 3)`` uint8 image."""
        return self.caption_batch([image], beam=beam)[0]

    def caption_batch(
        self, images: Sequence[np.ndarray], beam: int | None = None
    ) -> list[CaptionResult]:
        """Caption several images (``seconds`` is the batch's wall time per image)."""
        t0 = time.perf_counter()
        cond = self.embed_images(images)
        texts = self.generate(cond, beam)
        near = self.nearest(cond)
        per = (time.perf_counter() - t0) / max(1, len(texts))
        return [CaptionResult(t, n, per) for t, n in zip(texts, near)]

    def __repr__(self) -> str:
        return (
            f"Captioner(kind={self.kind!r}, vision={self.info.get('vision')!r}, "
            f"map={self.projector.map_kind!r}, gallery={len(self.gallery)}, beam={self.beam})"
        )


# -- files ------------------------------------------------------------------------------------


def caption_folder(run_dir: str | os.PathLike[str]) -> Path:
    """The folder holding ``caption.json``: ``RUN/caption`` (or ``RUN`` itself).

    Raises
    ------
    InputError
        When ``run_dir`` does not exist or holds no caption model.
    """
    run = Path(run_dir)
    if not run.exists():
        raise InputError(f"--run {run}: no such folder")
    if not run.is_dir():
        raise InputError(f"--run {run}: is a file, expected a run folder")
    for folder in (run / CAPTION_DIR, run):
        if (folder / MANIFEST).is_file():
            return folder
    raise InputError(
        f"--run {run}: not a caption run (no {CAPTION_DIR}/{MANIFEST}); make one with "
        "`prh caption --build` or `prh demo`"
    )


def read_manifest(folder: Path) -> dict[str, Any]:
    try:
        info = read_json(folder / MANIFEST)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{folder / MANIFEST}: not valid JSON ({e})") from None
    if not isinstance(info, dict) or info.get("format") != FORMAT:
        got = info.get("format") if isinstance(info, dict) else type(info).__name__
        raise CheckpointError(f"{folder / MANIFEST}: format {got!r}, expected {FORMAT!r}")
    return info


def resolve_text_run(folder: Path, info: dict[str, Any]) -> Path:
    """The text run a caption folder was built from (stored relative to the folder if possible)."""
    p = Path(info["text_run"])
    return p if p.is_absolute() else (folder / p).resolve()


def load_captioner(
    run_dir: str | os.PathLike[str],
    *,
    beam: int = 1,
    threads: int | None = None,
    vision: Any = None,
) -> Captioner:
    """Load the captioner of a run directory made by :func:`build_caption_run` (or ``prh demo``).

    Parameters
    ----------
    run_dir : path-like
        The run (holding ``caption/``) or the ``caption/`` folder itself.
    beam : int
        Default beam width of :meth:`Captioner.caption`.
    threads : int, optional
        Torch threads of the vision encoder.
    vision : prh.encoders.Encoder, optional
        An already loaded vision encoder (else built from the recorded spec).

    Raises
    ------
    InputError
        No such folder, or no caption model in it.
    CheckpointError
        A missing, corrupt or inconsistent file.
    """
    import torch

    from prh.caption.decoder import DecoderConfig, PrefixDecoder
    from prh.views import TextTokenizer

    folder = caption_folder(run_dir)
    info = read_manifest(folder)
    try:
        dcfg = DecoderConfig.from_dict(info["decoder"])
        spec = str(info["vision"])
    except (KeyError, TypeError, InputError) as e:
        raise CheckpointError(f"{folder / MANIFEST}: bad decoder or vision entry ({e})") from None
    kind = info.get("captioner", "decoder")
    if kind not in KIND_LABELS:
        raise CheckpointError(f"{folder / MANIFEST}: unknown captioner {kind!r}")
    decoder = None if kind == "nearest" else PrefixDecoder(dcfg)
    if decoder is not None:
        state = {
            k: torch.from_numpy(v) for k, v in read_tensors(folder / "decoder.safetensors").items()
        }
        try:
            decoder.load_state_dict(state)
        except RuntimeError as e:
            first = str(e).splitlines()[0]
            raise CheckpointError(
                f"{folder}/decoder.safetensors: does not fit the config ({first})"
            ) from None
        decoder.eval()
    normalizer = ConditionNormalizer.from_state_dict(
        read_tensors(folder / "normalizer.safetensors")
    )
    projector = VisionProjector.load(folder)
    gallery_emb = read_tensors(folder / "gallery.safetensors")["embeddings"]
    try:
        gallery = read_json(folder / "gallery.json")
    except (OSError, ValueError) as e:
        raise CheckpointError(f"{folder}/gallery.json: unreadable ({e})") from None
    if len(gallery) != len(gallery_emb) or gallery_emb.shape[1] != dcfg.cond_dim:
        raise CheckpointError(
            f"{folder}: gallery of {len(gallery)} captions but embeddings {gallery_emb.shape}"
        )
    if (
        normalizer.mean_.shape[0] != dcfg.cond_dim
        or projector.map_.n_features_out_ != dcfg.cond_dim
    ):
        raise CheckpointError(f"{folder}: map, normalizer and decoder disagree on E")
    tokenizer = TextTokenizer.load(folder / "tokenizer.json")
    if tokenizer.vocab_size != dcfg.vocab_size:
        raise CheckpointError(
            f"{folder}: tokenizer has {tokenizer.vocab_size} ids, decoder {dcfg.vocab_size}"
        )
    if vision is None:
        from prh.encoders import load_encoder

        vision = load_encoder(spec, efficientnet_layers="head", threads=threads)
    return Captioner(
        vision,
        projector,
        normalizer,
        decoder,
        tokenizer,
        gallery,
        gallery_emb,
        beam=beam,
        alpha=float(info.get("alpha", 0.6)),
        info=info,
        folder=folder,
    )
