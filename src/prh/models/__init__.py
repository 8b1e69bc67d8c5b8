"""Models: a transformer text encoder (JEPA), a causal LM of the same shape, a small image CNN, and
an image encoder on a pretrained backbone.

The names load on first use (PEP 562): ``prh.models.config`` (:class:`ModelConfig`, no torch) is
importable where torch is not, e.g. by the CLI flags derived from its fields.
"""

from __future__ import annotations

from prh.lazy import lazy_exports

_WHERE = {
    "BackboneEncoder": "prh.models.backbone",
    "PRESETS": "prh.models.config",
    "ModelConfig": "prh.models.config",
    "model_config": "prh.models.config",
    "ImageEncoder": "prh.models.image",
    "CausalLM": "prh.models.transformer",
    "EncoderOutput": "prh.models.transformer",
    "TextEncoder": "prh.models.transformer",
    "count_parameters": "prh.models.transformer",
    "layers_with_embedding": "prh.models.transformer",
    "masked_mean": "prh.models.transformer",
}

__all__ = sorted(_WHERE)


__getattr__, __dir__ = lazy_exports("prh.models", globals(), _WHERE)
