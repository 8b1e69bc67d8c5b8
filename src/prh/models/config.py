"""Model configuration: one size dial (``preset``) from which every width and depth follows.

Presets (parameter counts with a BERT vocabulary of 30,522 tokens, projection head included):

========  ======  =======  =====  =====  ======  ===========
preset    layers  d_model  heads  d_ff   embed   parameters
========  ======  =======  =====  =====  ======  ===========
tiny      2       128      4      512    32      ~4.3M (0.5M with a 2k vocabulary)
small     12      384      12     1536   64      ~33M (MiniLM-L12-H384 shape)
base      12      768      12     3072   128     ~110M (BERT-base shape)
========  ======  =======  =====  =====  ======  ===========
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from prh.errors import InputError

IMAGE_POOLS = ("mean", "moments")
"""How an image encoder pools its last map (:func:`prh.models.image.pool_map`)."""


@dataclass(frozen=True)
class ModelConfig:
    """Shape of a transformer trunk (shared by :class:`TextEncoder` and :class:`CausalLM`) and of
    the :class:`ImageEncoder`.

    Attributes
    ----------
    vocab_size : int
        Number of token ids (from the tokenizer).
    d_model : int
        Hidden width ``D``.
    n_layers : int
        Number of transformer blocks ``L``; encoders report ``L + 1`` pooled layers.
    n_heads : int
        Attention heads; ``d_model`` must be divisible by it.
    d_ff : int
        Width of the MLP inside each block.
    max_len : int
        Longest sequence (size of the learned position table).
    embed_dim : int
        Size ``E`` of the JEPA embedding produced by the projection head.
    dropout : float
        Dropout probability (0 keeps training bitwise reproducible without RNG bookkeeping).
    image_channels : int
        Input channels of the image encoder.
    image_stages : int
        Stride-2 stages of the image encoder (each one pooled into a layer).
    image_pool : {"mean", "moments"}
        How the image encoder's last map becomes the head's input
        (:func:`prh.models.image.pool_map`): its spatial mean (translation invariant: where the
        object is survives only through the padding), or the mean and the first moments along
        each axis (the means of the map times the row and the column coordinate): a linear
        read-out of position.
    """

    vocab_size: int = 2048
    d_model: int = field(default=128, metadata={"help": "hidden width D"})
    n_layers: int = field(default=2, metadata={"help": "transformer blocks (depth)"})
    n_heads: int = field(default=4, metadata={"help": "attention heads, dividing --d-model"})
    d_ff: int = field(default=512, metadata={"help": "MLP width inside each block"})
    max_len: int = 64
    embed_dim: int = field(
        default=64,
        metadata={"help": "JEPA embedding width E of the projection head"},
    )
    dropout: float = field(
        default=0.0,
        metadata={"help": "dropout probability, 0..1 (0 keeps runs bitwise reproducible)"},
    )
    image_channels: int = 3
    image_stages: int = 4
    image_pool: str = "mean"

    def __post_init__(self) -> None:
        for name in (
            "vocab_size",
            "d_model",
            "n_layers",
            "n_heads",
            "d_ff",
            "max_len",
            "embed_dim",
        ):
            if int(getattr(self, name)) < 1:
                raise InputError(f"ModelConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.d_model % self.n_heads:
            raise InputError(
                f"ModelConfig: d_model {self.d_model} is not divisible by n_heads {self.n_heads}"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise InputError(f"ModelConfig.dropout must be in [0, 1), got {self.dropout}")
        if self.image_pool not in IMAGE_POOLS:
            raise InputError(
                f"ModelConfig.image_pool {self.image_pool!r}: expected one of "
                f"{', '.join(IMAGE_POOLS)}"
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelConfig:
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        return cls(**known)


PRESETS: dict[str, dict[str, int]] = {
    "tiny": {"d_model": 128, "n_layers": 2, "n_heads": 4, "d_ff": 512, "embed_dim": 32},
    "small": {"d_model": 384, "n_layers": 12, "n_heads": 12, "d_ff": 1536, "embed_dim": 64},
    "base": {"d_model": 768, "n_layers": 12, "n_heads": 12, "d_ff": 3072, "embed_dim": 128},
}


def model_config(preset: str, vocab_size: int, **overrides: Any) -> ModelConfig:
    """The :class:`ModelConfig` of a named preset, with ``vocab_size`` and any field overridden.

    Raises
    ------
    InputError
        For an unknown preset or an unknown override.
    """
    if preset not in PRESETS:
        raise InputError(f"unknown model preset {preset!r}; expected one of {sorted(PRESETS)}")
    unknown = set(overrides) - set(ModelConfig.__dataclass_fields__)
    if unknown:
        raise InputError(f"unknown ModelConfig field(s) {sorted(unknown)}")
    cfg = ModelConfig(vocab_size=vocab_size, **PRESETS[preset])
    return replace(cfg, **overrides)
