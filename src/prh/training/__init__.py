"""Training: text JEPAs (whitened, soft, SIGReg) and the next-token baseline, resumable, DDP-ready.

Public API: :class:`TrainConfig`, :func:`train_config`, :func:`train`, :func:`load_run`,
:class:`LoadedRun`; lower layers in :mod:`.loop` (``compute_loss``, ``train_step``, ``run_loop``),
:mod:`.checkpoint` and :mod:`.rundir`.
"""

from prh.training.api import LoadedRun, build_model, encode_texts, load_run, train
from prh.training.config import OBJECTIVES, PRESET_DEFAULTS, VIEWS, TrainConfig, train_config

__all__ = [
    "OBJECTIVES",
    "PRESET_DEFAULTS",
    "VIEWS",
    "LoadedRun",
    "TrainConfig",
    "build_model",
    "encode_texts",
    "load_run",
    "train",
    "train_config",
]
