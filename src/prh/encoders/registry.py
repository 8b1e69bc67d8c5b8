"""Encoders by spec: one table of kinds, each a test of the spec and a factory.

:func:`create_encoder` walks :data:`ENCODERS` in order and builds the first kind whose
``matches`` accepts the spec (``hf:`` before ``minilm`` before a run folder ..., the last kind
refusing whatever is left), as :func:`prh.world.make_world` does for worlds. Every kind but
``hf`` and ``minilm`` refuses non-default :class:`EncoderOptions` (a run folder takes ``pool``).

Layer: a table and a dispatch; the factories import torch or transformers only when called.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from prh.encoders.base import Encoder, EncoderOptions
from prh.errors import InputError

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
MINILM_NAMES = ("minilm", "all-minilm-l6-v2", "all-MiniLM-L6-v2")
PRETRAINING = {"efficientnet-lite0": "ImageNet-1k"}
"""What a packaged encoder's weights were trained on (reports name it beside the encoder)."""
EFFICIENTNET_NAMES = ("efficientnet-lite0", "random:efficientnet-lite0")


@dataclass(frozen=True)
class EncoderSpec:
    """A spec and how to build it (the arguments of :func:`prh.encoders.load_encoder`).

    Attributes
    ----------
    spec : str
        One of :data:`SPECS` (surrounding blanks are dropped).
    seed : int
        Initialisation seed of ``random:`` specs.
    threads : int or None
        Intra-op threads for torch / onnxruntime (``None``: leave the current setting).
    image_size : int
        Input side of ONNX image models whose graph does not fix it.
    efficientnet_layers : {"stages", "blocks", "head"}
        Which EfficientNet outputs become layers.
    modality : {"text", "image"} or None
        What will be encoded: picks the tower of a two-tower ``hf:`` model.
    options : EncoderOptions
        Device, dtype, pooling and prompt of ``hf:`` and ``minilm`` encoders.
    """

    spec: str
    seed: int = 0
    threads: int | None = None
    image_size: int = 224
    efficientnet_layers: str = "stages"
    modality: str | None = None
    options: EncoderOptions = field(default_factory=EncoderOptions)

    def __post_init__(self) -> None:
        object.__setattr__(self, "spec", str(self.spec).strip())

    @property
    def path(self) -> Path:
        return Path(self.spec).expanduser()

    @property
    def default_options(self) -> bool:
        return self.options == EncoderOptions()


@dataclass(frozen=True)
class EncoderKind:
    """One row of :data:`ENCODERS`: which specs it takes, which options, and its factory."""

    name: str
    matches: Callable[[EncoderSpec], bool]
    build: Callable[[EncoderSpec], Encoder]
    takes_options: Callable[[EncoderSpec], bool] = lambda s: s.default_options


def _is_hf(s: EncoderSpec) -> bool:
    from prh.encoders.hf import is_hf_spec

    return is_hf_spec(s.spec)


def _hf(s: EncoderSpec) -> Encoder:
    from prh.encoders.hf import load_hf_encoder

    return load_hf_encoder(
        s.spec, modality=s.modality, seed=s.seed, threads=s.threads, options=s.options
    )


def _minilm(s: EncoderSpec) -> Encoder:
    from prh.encoders.minilm import MiniLMEncoder

    return MiniLMEncoder(threads=s.threads, options=s.options)


def _pooled_run(s: EncoderSpec) -> bool:
    """A prh run folder given ``--pool`` and no other option."""
    from prh.encoders.stored import is_run_dir

    o = s.options
    return o.pool is not None and o == EncoderOptions(pool=o.pool) and is_run_dir(s.path)


def _pooled_run_encoder(s: EncoderSpec) -> Encoder:
    from prh.encoders.stored import RunEncoder

    return RunEncoder(s.path, threads=s.threads, pool=s.options.pool)


def _efficientnet(s: EncoderSpec) -> Encoder:
    from prh.encoders.efficientnet import EfficientNetEncoder

    return EfficientNetEncoder(
        pretrained=not s.spec.startswith("random:"),
        seed=s.seed,
        layers=s.efficientnet_layers,
        threads=s.threads,
    )


def _onnx(s: EncoderSpec) -> Encoder:
    from prh.encoders.onnx import OnnxEncoder

    return OnnxEncoder(s.spec[len("onnx:") :], image_size=s.image_size, threads=s.threads)


def _feature_file(s: EncoderSpec) -> Encoder:
    from prh.encoders.stored import FeatureFileEncoder

    return FeatureFileEncoder(s.spec[len("features:") :])


def _run(s: EncoderSpec) -> Encoder:
    from prh.encoders.stored import RunEncoder, is_run_dir

    if is_run_dir(s.path):
        return RunEncoder(s.path, threads=s.threads)
    if (s.path / "config.json").is_file():
        raise InputError(
            f"{s.spec}: not a prh run directory (no meta.json); for a transformers model folder"
            f" use hf:{s.spec}"
        )
    raise InputError(f"{s.spec}: folder is not a prh run directory (no config.json/meta.json)")


def _unknown(s: EncoderSpec) -> Encoder:
    if s.spec.startswith("random:"):
        raise InputError(
            f"unknown encoder spec {s.spec!r}: random: applies to efficientnet-lite0 and hf: specs"
        )
    looks_like_path = "/" in s.spec or s.spec.startswith((".", "~"))
    what = (
        f"no such run directory {s.spec}" if looks_like_path else f"unknown encoder spec {s.spec!r}"
    )
    raise InputError(f"{what}; expected one of: {', '.join(SPECS)}")


def _any(s: EncoderSpec) -> bool:
    return True


ENCODERS: tuple[EncoderKind, ...] = (
    EncoderKind("hf", _is_hf, _hf, takes_options=_any),
    EncoderKind("minilm", lambda s: s.spec in MINILM_NAMES, _minilm, takes_options=_any),
    EncoderKind("pooled-run", _pooled_run, _pooled_run_encoder, takes_options=_any),
    EncoderKind("efficientnet", lambda s: s.spec in EFFICIENTNET_NAMES, _efficientnet),
    EncoderKind("onnx", lambda s: s.spec.startswith("onnx:"), _onnx),
    EncoderKind("features", lambda s: s.spec.startswith("features:"), _feature_file),
    EncoderKind("run", lambda s: s.path.is_dir(), _run),
    EncoderKind("unknown", _any, _unknown),
)


def pretraining(spec: str) -> str | None:
    """The data a packaged encoder was trained on (``ImageNet-1k``); ``None`` when unknown."""
    return PRETRAINING.get(str(spec).strip())


def create_encoder(spec: EncoderSpec) -> Encoder:
    """The frozen encoder ``spec`` names: the first kind of :data:`ENCODERS` that matches.

    Raises
    ------
    InputError
        Options the kind does not take, an unknown name or a path that does not exist, in one
        line.
    """
    for kind in ENCODERS:
        if kind.matches(spec):
            if not kind.takes_options(spec):
                raise InputError(
                    f"{spec.spec}: --device, --dtype, --pool and --prompt apply to hf: and minilm "
                    "encoders only"
                )
            return kind.build(spec)
    raise AssertionError("the last kind matches every spec")  # pragma: no cover
