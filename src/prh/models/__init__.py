"""Models: a transformer text encoder (JEPA), a causal LM of the same shape, a small image CNN, and
an image encoder on a pretrained backbone.

The names load on first use (PEP 562): ``prh.models.config`` (:class:`ModelConfig`, no torch) is
importable where torch is not, e.g. by the CLI flags derived from its fields.
"""

from __future__ import annotations

import importlib
from typing import Any

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


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'prh.models' has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])
