"""Alignment metrics of the PRH benchmark: exact, calibrated, fast at large N.

Pure functions on ``(N, D)`` arrays whose rows are paired (row ``i`` of ``A`` and of ``B`` describe
one sample), and :func:`measure` for ``(N, L, D)`` inputs with the reference protocol's layer
search, a permutation null and a bootstrap interval. See ``docs/measure.md``.
"""

from prh.linalg import l2_normalize
from prh.metrics.api import (
    METRICS,
    MeasureResult,
    MetricOptions,
    Preprocessing,
    get_metric,
    measure,
)
from prh.metrics.cca import svcca
from prh.metrics.kernel import cka, cknna
from prh.metrics.knn import knn
from prh.metrics.matrix import MatrixResult, measure_matrix
from prh.metrics.neighbors import cycle_knn, edit_distance_knn, lcs_knn, mutual_knn
from prh.metrics.preprocess import preprocess
from prh.metrics.theory_cca import TheoryCCA, theory_cca


def unbiased_cka(a, b, **kwargs) -> float:
    """CKA with the unbiased HSIC estimator (the reference's ``unbiased_cka``); see :func:`cka`."""
    return cka(a, b, unbiased=True, **kwargs)


__all__ = [
    "METRICS",
    "MatrixResult",
    "MeasureResult",
    "MetricOptions",
    "Preprocessing",
    "TheoryCCA",
    "cka",
    "cknna",
    "cycle_knn",
    "edit_distance_knn",
    "get_metric",
    "knn",
    "l2_normalize",
    "lcs_knn",
    "measure",
    "measure_matrix",
    "mutual_knn",
    "preprocess",
    "svcca",
    "theory_cca",
    "unbiased_cka",
]
