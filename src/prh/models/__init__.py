"""Models: a transformer text encoder (JEPA), a causal LM of the same shape, a small image CNN, and
an image encoder on a pretrained backbone."""

from prh.models.backbone import BackboneEncoder
from prh.models.config import PRESETS, ModelConfig, model_config
from prh.models.image import ImageEncoder
from prh.models.transformer import (
    CausalLM,
    EncoderOutput,
    TextEncoder,
    count_parameters,
    layers_with_embedding,
    masked_mean,
)

__all__ = [
    "PRESETS",
    "BackboneEncoder",
    "CausalLM",
    "EncoderOutput",
    "ImageEncoder",
    "ModelConfig",
    "TextEncoder",
    "count_parameters",
    "layers_with_embedding",
    "masked_mean",
    "model_config",
]
