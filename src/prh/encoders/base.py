"""The one interface every frozen encoder implements, and the pure helpers they share.

An encoder maps a batch of texts or images to every layer's feature, ``(N, L, D)`` float32, the
layout of the PRH protocol (Huh et al. 2024, ``minyoungg/platonic-rep``), where alignment is taken
as the maximum over layer pairs. Layers narrower than ``D`` are zero-padded on the right; their true
widths are kept in :attr:`Encoder.layer_dims` (and in the feature file's metadata), so that a
consumer can drop the padding (:func:`unpad_layer`).

This module imports numpy and PIL only; torch and transformers are imported by the concrete
encoders when they are built.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from prh.errors import InputError

MODALITIES = ("text", "image")

# ImageNet-style preprocessing shared by the EfficientNet and ONNX image paths: RGB/255, then
# (x - 0.5) / 0.5, i.e. [-1, 1] (the convention of the TF-Lite EfficientNet-Lite checkpoints).
IMAGE_MEAN = 0.5
IMAGE_STD = 0.5

Progress = Callable[[int, int], None]  # (done, total) -> None

POOLS = ("avg", "last", "cls")
DEVICES = ("cpu", "cuda", "auto")  # and cuda:N
DTYPE_NAMES = ("float32", "bfloat16", "float16")


@dataclass(frozen=True)
class EncoderOptions:
    """How a torch-backed ``transformers`` encoder (``hf:``, ``minilm``) runs and pools.

    Attributes
    ----------
    device : str
        ``cpu``, ``cuda``, ``cuda:N`` or ``auto`` (CUDA when present).
    dtype : {"float32", "bfloat16", "float16"}
        Weights and activations; features are returned as float32 whatever this is.
    pool : {"avg", "last", "cls"} or None
        Token pooling of every layer; ``None``: ``avg`` for text models, ``cls`` for vision
        transformers (the PRH reference's choices).
    prompt : str
        Template of each text, ``{}`` standing for the text (``"{}"``: the text as is).
    revision : str or None
        Hub branch, tag or commit of an ``hf:`` model (``None``: the default branch).
    device_map : {"auto"} or None
        ``"auto"``: transformers places the layers over every GPU (needs accelerate).
    load_in_4bit : bool
        4-bit (NF4) weights through bitsandbytes, computing in ``dtype`` (CUDA only).
    lm_loss : bool
        A causal language model (``hf:``) also measures its next-token loss and bits per byte on
        the texts it encodes (:attr:`prh.encoders.hf.HFTextEncoder.lm_stats`).
    """

    device: str = "cpu"
    dtype: str = "float32"
    pool: str | None = None
    prompt: str = "{}"
    revision: str | None = None
    device_map: str | None = None
    load_in_4bit: bool = False
    lm_loss: bool = False

    def __post_init__(self) -> None:
        if self.pool is not None and self.pool not in POOLS:
            raise InputError(f"--pool {self.pool}: expected one of {', '.join(POOLS)}")
        if self.dtype not in DTYPE_NAMES:
            raise InputError(f"--dtype {self.dtype}: expected one of {', '.join(DTYPE_NAMES)}")
        if "{}" not in self.prompt:
            raise InputError(f"--prompt {self.prompt!r}: must contain {{}} where the text goes")

    def apply_prompt(self, text: str) -> str:
        """The text inside the prompt template (a plain substitution: other braces are kept)."""
        return text if self.prompt == "{}" else self.prompt.replace("{}", text)


DEFAULT_OPTIONS = EncoderOptions()


class Encoder(ABC):
    """A frozen encoder named by a spec (see :func:`prh.encoders.load_encoder`).

    Attributes
    ----------
    spec : str
        The spec it was loaded from (written into feature files).
    modality : str
        ``"text"`` or ``"image"`` (``"any"`` for precomputed features).
    layer_names : list of str
        One name per layer of the output, in order (empty until known for some encoders).
    layer_dims : list of int
        True width of each layer before zero-padding to ``D = max(layer_dims)``.
    """

    spec: str = ""
    modality: str = "text"
    layer_names: list[str]
    layer_dims: list[int]

    def __init__(self) -> None:
        self.layer_names = []
        self.layer_dims = []

    # -- public API ------------------------------------------------------------------------------

    def encode_texts(
        self, texts: Sequence[str], *, batch_size: int = 64, progress: Progress | None = None
    ) -> np.ndarray:
        """Every layer's feature of each text.

        Parameters
        ----------
        texts : sequence of str, length N
        batch_size : int
            Texts per forward pass.
        progress : callable, optional
            Called as ``progress(done, total)`` after each batch.

        Returns
        -------
        np.ndarray
            ``(N, L, D)`` float32.
        """
        self.check_modality("text", "texts")
        texts = list(texts)
        for row, t in enumerate(texts):
            if not isinstance(t, str):
                raise InputError(f"text {row}: expected a string, got {type(t).__name__}")
        # Batch texts of similar length together (less padding, as sentence-transformers does);
        # pooling ignores padding, so only the speed changes. Rows come back in input order.
        order = np.argsort([-len(t) for t in texts], kind="stable")
        feats = self._batched(
            [texts[i] for i in order], self._encode_text_batch, batch_size, progress
        )
        out = np.empty_like(feats)
        out[order] = feats
        return out

    def encode_images(
        self,
        images: Sequence[np.ndarray],
        *,
        batch_size: int = 32,
        progress: Progress | None = None,
    ) -> np.ndarray:
        """Every layer's feature of each image.

        Parameters
        ----------
        images : sequence of np.ndarray, length N
            Each ``(H, W, 3)`` uint8 RGB (``(H, W)`` grey and ``(H, W, 4)`` RGBA are converted);
            sizes may differ, each encoder resizes to its own input size.
        batch_size : int
            Images per forward pass.
        progress : callable, optional
            Called as ``progress(done, total)`` after each batch.

        Returns
        -------
        np.ndarray
            ``(N, L, D)`` float32.
        """
        self.check_modality("image", "images")
        images = [as_rgb_uint8(im, row) for row, im in enumerate(images)]
        return self._batched(images, self._encode_image_batch, batch_size, progress)

    def encode(
        self,
        items: Sequence,
        *,
        ids: Sequence[str] | None = None,
        batch_size: int = 32,
        progress: Progress | None = None,
    ) -> np.ndarray:
        """Encode texts or images according to :attr:`modality`.

        ``ids`` is used only by encoders that hold precomputed rows (``features:PATH``).
        """
        del ids
        if self.modality == "image":
            return self.encode_images(items, batch_size=batch_size, progress=progress)
        return self.encode_texts(items, batch_size=batch_size, progress=progress)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(spec={self.spec!r}, modality={self.modality!r})"

    # -- for subclasses ----------------------------------------------------------------------------

    def _encode_text_batch(self, texts: list[str]) -> np.ndarray:  # (B, L, D)
        raise NotImplementedError  # pragma: no cover - guarded by check_modality

    def _encode_image_batch(self, images: list[np.ndarray]) -> np.ndarray:  # (B, L, D)
        raise NotImplementedError  # pragma: no cover - guarded by check_modality

    def check_modality(self, wanted: str, what: str | None = None) -> None:
        """Raise :class:`InputError` unless this encoder takes ``wanted`` inputs (text/image)."""
        what = what or ("texts" if wanted == "text" else "images")
        if self.modality not in (wanted, "any"):
            raise InputError(
                f"encoder {self.spec!r} takes {self.modality}s, not {what} (modality mismatch)"
            )

    @staticmethod
    def _batched(
        items: list,
        fn: Callable[[list], np.ndarray],
        batch_size: int,
        progress: Progress | None,
    ) -> np.ndarray:
        if batch_size < 1:
            raise InputError(f"batch size must be >= 1, got {batch_size}")
        if not items:
            raise InputError("nothing to encode: got 0 items")
        out = []
        for start in range(0, len(items), batch_size):
            out.append(np.asarray(fn(items[start : start + batch_size]), dtype=np.float32))
            if progress is not None:
                progress(min(start + batch_size, len(items)), len(items))
        return np.concatenate(out, axis=0)


class Features(ABC):
    """Marker for encoders that return stored rows looked up by id."""

    @abstractmethod
    def rows(self, ids: Sequence[str]) -> np.ndarray:  # (N, L, D)
        """The stored rows of ``ids``, in that order."""


# -- pure helpers ----------------------------------------------------------------------------------


def as_rgb_uint8(image: np.ndarray, row: int = 0) -> np.ndarray:
    """Check and convert one image to ``(H, W, 3)`` uint8.

    Accepts ``(H, W, 3)`` uint8, ``(H, W)`` grey (replicated) and ``(H, W, 4)`` RGBA (alpha
    dropped).

    Raises
    ------
    InputError
        Anything else (wrong rank, channels, dtype, or an empty image), naming ``row``.
    """
    arr = np.asarray(image)
    if arr.dtype != np.uint8:
        raise InputError(f"image {row}: expected dtype uint8, got {arr.dtype}")
    if arr.ndim == 2:
        arr = np.repeat(arr[:, :, None], 3, axis=2)
    if arr.ndim != 3 or arr.shape[2] not in (3, 4):
        raise InputError(f"image {row}: expected shape (H, W, 3), got {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise InputError(f"image {row}: empty image of shape {arr.shape}")
    return arr[:, :, :3]


def resize_center_crop(image: np.ndarray, size: int) -> np.ndarray:
    """Resize the shorter side to ``size`` (bicubic, PIL) and crop the centre square.

    Parameters
    ----------
    image : np.ndarray
        ``(H, W, 3)`` uint8.
    size : int
        Output side in pixels.

    Returns
    -------
    np.ndarray
        ``(size, size, 3)`` uint8. A square input is a plain resize.
    """
    from PIL import Image

    h, w = image.shape[:2]
    if (h, w) == (size, size):
        return image
    scale = size / min(h, w)
    nh, nw = max(size, round(h * scale)), max(size, round(w * scale))
    pil = Image.fromarray(image).resize((nw, nh), Image.Resampling.BICUBIC)
    top, left = (nh - size) // 2, (nw - size) // 2
    return np.asarray(pil)[top : top + size, left : left + size]


def images_to_tensor_input(
    images: Sequence[np.ndarray], size: int, mean: float = IMAGE_MEAN, std: float = IMAGE_STD
) -> np.ndarray:
    """Stack images into a model input: ``x = (RGB / 255 - mean) / std``.

    Parameters
    ----------
    images : sequence of np.ndarray
        Each ``(H, W, 3)`` uint8.
    size : int
        Side in pixels after :func:`resize_center_crop`.

    Returns
    -------
    np.ndarray
        ``(B, 3, size, size)`` float32, in ``[-1, 1]`` with the default mean and std.
    """
    batch = np.stack([resize_center_crop(im, size) for im in images])  # (B, S, S, 3)
    x = batch.astype(np.float32) / 255.0
    x = (x - mean) / std
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))  # (B, 3, S, S)


def stack_layers(layers: Sequence[np.ndarray]) -> np.ndarray:
    """Stack per-layer features ``[(B, d_l)]`` into ``(B, L, max d_l)``, zero-padding on the right.

    Zero columns change no inner product or norm, so cosine kNN, linear and RBF CKA are the same as
    on the unpadded layer; use :func:`unpad_layer` for statistics that are not (coordinate
    quantiles).
    """
    if not layers:
        raise ValueError("no layers to stack")
    b = layers[0].shape[0]
    d = max(int(x.shape[1]) for x in layers)
    out = np.zeros((b, len(layers), d), dtype=np.float32)
    for i, x in enumerate(layers):
        out[:, i, : x.shape[1]] = x
    return out


def unpad_layer(features: np.ndarray, layer: int, layer_dims: Sequence[int] | None) -> np.ndarray:
    """Layer ``layer`` of ``(N, L, D)`` features without its zero padding.

    Returns
    -------
    np.ndarray
        ``(N, layer_dims[layer])`` (``(N, D)`` when ``layer_dims`` is None).
    """
    x = features[:, layer, :]
    if layer_dims is None:
        return x
    return x[:, : int(layer_dims[layer])]
