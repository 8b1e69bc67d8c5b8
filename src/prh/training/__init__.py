"""Training: text JEPAs (whitened, soft, SIGReg) and the next-token baseline, resumable, DDP-ready.

Public API: :class:`TrainConfig` (its optimiser: :class:`OptimConfig`), :func:`train_config`,
:func:`train`, :func:`load_run`, :class:`LoadedRun`; lower layers in :mod:`.loop`
(``compute_loss``, ``train_step``, ``run_loop``), :mod:`.checkpoint` and :mod:`.rundir`.

The torch-backed names load on first use, so ``prh.training.config`` (what ``prh train --help``
reads its defaults from) stays importable without torch.
"""

import importlib
import inspect
from typing import Any

from prh.training.config import (
    OBJECTIVES,
    PRESET_DEFAULTS,
    VIEWS,
    OptimConfig,
    TrainConfig,
    train_config,
)

_API = ("LoadedRun", "build_model", "encode_texts", "load_run", "train")

__all__ = [
    "OBJECTIVES",
    "PRESET_DEFAULTS",
    "VIEWS",
    "LoadedRun",
    "OptimConfig",
    "TrainConfig",
    "build_model",
    "encode_texts",
    "load_run",
    "train",
    "train_config",
]


def __getattr__(name: str) -> Any:
    if name in _API:
        from prh.errors import hint_extras

        api = hint_extras(importlib.import_module)("prh.training.api")  # torch: the install hint
        value = getattr(api, name)
        return hint_extras(value) if inspect.isfunction(value) else value
    raise AttributeError(f"module 'prh.training' has no attribute {name!r}")
