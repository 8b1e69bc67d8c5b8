"""The modality evidence: every pair of frozen encoders of the same scenes, in one result.

For a set of named feature sets of the same scenes (text JEPAs on good / bad views and next-token,
image and sketch encoders, EfficientNet-Lite0, MiniLM, random-init controls), split into training
and held-out scenes, :func:`modality_evidence` gathers

- the **alignment matrix** (:func:`prh.bridge.alignment.alignment_matrix`): held-out
  mutual-kNN@k with a bootstrap interval (best layer pair by default, as the PRH benchmark) and
  linear CKA for every pair, and the **rotation score** of every ordered pair (whitened
  orthonormal map against ridge, fitted on the training scenes, scored on the held-out ones);
- **pair-free matching** (:func:`prh.bridge.pair_free.pair_free`) of the chosen pairs on the
  held-out scenes: class level per labelled factor (shape, colour: exact or not), sample level
  with chance ``1 / N``.

Pure: arrays in, a result with ``to_dict()`` (JSON-ready) and ``heatmap_png()`` (bytes) out; the
caller reads and writes files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from prh.bridge.alignment import AlignmentMatrix, alignment_matrix
from prh.bridge.pair_free import PairFree, pair_free
from prh.errors import InputError
from prh.io import json_safe

__all__ = ["EvidenceConfig", "ModalityEvidence", "modality_evidence"]


@dataclass(frozen=True)
class EvidenceConfig:
    """Settings of :func:`modality_evidence`.

    Attributes
    ----------
    k : int
        Neighbours of mutual-kNN.
    bootstrap : int
        Resamples of the mutual-kNN and rotation-score intervals (95 %); 0: none.
    seed : int
        Seeds the bootstraps, the shuffle and the matchers.
    dims : int
        Principal dimensions per side of the rotation score's maps.
    common : bool
        The rotation score's maps in one common ``k`` for both sides (the theorem's statement).
    layer : int
        Layer of the rotation score and of the pair-free match (and of the metrics unless
        ``best_layers``).
    best_layers : bool
        Mutual-kNN and CKA at the best layer pair (the PRH benchmark's protocol).
    match_dims : int
        Principal components per side before pair-free matching.
    whiten : bool
        Whiten those components before matching.
    samples : bool
        Sample-level pair-free matching too (seconds per pair at 500 scenes).
    """

    k: int = 10
    bootstrap: int = 1000
    seed: int = 0
    dims: int = 256
    common: bool = True
    layer: int = -1
    best_layers: bool = True
    match_dims: int = 32
    whiten: bool = True
    samples: bool = True


@dataclass(frozen=True)
class ModalityEvidence:
    """The outcome of :func:`modality_evidence`.

    Attributes
    ----------
    matrix : AlignmentMatrix
        Mutual-kNN (interval), CKA, rotation score of every pair.
    pair_free : dict
        ``(x name, y name) -> PairFree`` for every pair matched without pairs.
    config : EvidenceConfig
    """

    matrix: AlignmentMatrix
    pair_free: dict[tuple[str, str], PairFree]
    config: EvidenceConfig

    def pair(self, x: str, y: str) -> dict[str, Any]:
        """The headline of one pair: mutual-kNN and its interval, CKA, the rotation score both
        ways (X -> Y and Y -> X) and the pair-free result when the pair was matched."""
        names = self.matrix.names
        for n in (x, y):
            if n not in names:
                raise InputError(f"no feature set named {n!r}; have {', '.join(names)}")
        i, j = names.index(x), names.index(y)
        m = self.matrix
        pf = self.pair_free.get((x, y))
        if pf is None and (y, x) in self.pair_free:
            pf = self.pair_free[y, x]
        out = {
            "x": x,
            "y": y,
            "n_test": m.n_test,
            "n_train": m.n_train,
            "k": m.k,
            "mutual_knn": float(m.mutual_knn[i, j]),
            "mutual_knn_ci": m.mutual_knn_ci[i, j].tolist(),
            "cka": float(m.cka[i, j]),
            "layers": m.layers[i, j].tolist(),
            "rotation_x_to_y": m.pairs[i, j].to_dict() if (i, j) in m.pairs else None,
            "rotation_y_to_x": m.pairs[j, i].to_dict() if (j, i) in m.pairs else None,
            "pair_free": pf.to_dict() if pf is not None else None,
        }
        return json_safe(out)

    def heatmap_png(self) -> bytes:
        """The matrices as one heatmap (:meth:`AlignmentMatrix.heatmap_png`)."""
        return self.matrix.heatmap_png()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN as ``None``): settings, the matrix, the pair-free results."""
        return json_safe(
            {
                "config": asdict(self.config),
                "matrix": self.matrix.to_dict(),
                "pair_free": [
                    {"x": x, "y": y, **pf.to_dict()} for (x, y), pf in self.pair_free.items()
                ],
            }
        )


def _pairs(
    names: Sequence[str], pairs: Sequence[tuple[str, str]] | str | None
) -> list[tuple[str, str]]:
    if pairs is None:
        return []
    if pairs == "all":
        return [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    if isinstance(pairs, str):
        raise InputError(f"pair-free pairs: expected 'all' or a list of (x, y), got {pairs!r}")
    out = []
    for p in pairs:
        if len(p) != 2 or p[0] == p[1]:
            raise InputError(f"pair-free pair {p!r}: expected two different names")
        for n in p:
            if n not in names:
                raise InputError(f"pair-free pair {p!r}: no feature set named {n!r}")
        out.append((str(p[0]), str(p[1])))
    return out


def _layer(a: np.ndarray, layer: int) -> np.ndarray:
    a = np.asarray(a)
    return a if a.ndim == 2 else a[:, layer, :]


def modality_evidence(
    train: Mapping[str, np.ndarray],
    test: Mapping[str, np.ndarray],
    labels: Mapping[str, np.ndarray] | None = None,
    *,
    pair_free_pairs: Sequence[tuple[str, str]] | str | None = "all",
    config: EvidenceConfig | None = None,
    layer_dims: Mapping[str, list[int] | None] | None = None,
) -> ModalityEvidence:
    """Alignment matrix, rotation scores and pair-free matching of named feature sets.

    Parameters
    ----------
    train, test : mapping name -> np.ndarray
        Each feature set's rows of the training and of the held-out scenes, ``(N, L, D)`` (all
        layers) or ``(N, D)``; row ``i`` of every set describes the same scene. Same names, same
        order.
    labels : mapping factor -> np.ndarray, optional
        ``(N_test,)`` class of each held-out scene per factor (e.g. ``{"shape": ..., "colour":
        ...}`` from :func:`prh.world.factors.scene_factors`; negative: undefined); the pair-free
        class-level matches.
    pair_free_pairs : "all", list of (str, str) or None
        Pairs matched without pairs on the held-out scenes: every unordered pair (default), the
        listed ones, or none.
    config : EvidenceConfig, optional
        Settings (default :class:`EvidenceConfig`).
    layer_dims : mapping name -> list of int, optional
        True widths of zero-padded layers (``FeatureSet.layer_dims``), for the metrics' clamp.

    Returns
    -------
    ModalityEvidence
    """
    cfg = config or EvidenceConfig()
    matrix = alignment_matrix(
        train,
        test,
        k=cfg.k,
        bootstrap=cfg.bootstrap,
        seed=cfg.seed,
        dims=cfg.dims,
        common=cfg.common,
        layer=cfg.layer,
        best_layers=cfg.best_layers,
        layer_dims=layer_dims,
    )
    for f, lab in (labels or {}).items():
        if np.shape(lab) != (matrix.n_test,):
            raise InputError(
                f"labels {f!r}: expected one per held-out scene ({matrix.n_test}), got shape "
                f"{np.shape(lab)}"
            )
    found = {}
    for x, y in _pairs(matrix.names, pair_free_pairs):
        found[x, y] = pair_free(
            _layer(test[x], cfg.layer),
            _layer(test[y], cfg.layer),
            labels,
            dims=cfg.match_dims,
            whiten=cfg.whiten,
            samples=cfg.samples,
            seed=cfg.seed,
        )
    return ModalityEvidence(matrix, found, cfg)
