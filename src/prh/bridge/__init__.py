"""One map between frozen encoders: fitted on pairs (Procrustes) or found without them (matching).

Estimators: :class:`OrthogonalMap`, :class:`SemiOrthogonalMap`, :class:`RidgeMap` with
:func:`save_map` / :func:`load_map`. Metrics: :func:`retrieval`, :func:`zero_shot`. Pair-free:
:func:`match_kernels`, :func:`match_classes` (class level), :func:`match_samples` (sample level).
"""

from prh.bridge.match import MatchResult, kernel_matrix, match_classes, match_kernels, match_samples
from prh.bridge.procrustes import (
    OrthogonalMap,
    RidgeMap,
    SemiOrthogonalMap,
    load_map,
    make_map,
    save_map,
)
from prh.bridge.projector import VisionProjector
from prh.bridge.retrieval import RetrievalResult, ZeroShotResult, retrieval, zero_shot
from prh.linalg import procrustes_rotation

__all__ = [
    "MatchResult",
    "OrthogonalMap",
    "RetrievalResult",
    "RidgeMap",
    "SemiOrthogonalMap",
    "VisionProjector",
    "ZeroShotResult",
    "kernel_matrix",
    "load_map",
    "make_map",
    "match_classes",
    "match_kernels",
    "match_samples",
    "procrustes_rotation",
    "retrieval",
    "save_map",
    "zero_shot",
]
