"""What a shared embedding buys: cross-modal retrieval and zero-shot classification.

Both use cosine similarity on L2-normalised rows. Ranks are pessimistic on ties: the true item's
rank is ``1 + #{j != true : s_j >= s_true}``, so a constant embedding scores 0, never 1.

References
----------
.. [1] A. Radford et al., "Learning Transferable Visual Models From Natural Language Supervision"
   (CLIP), ICML 2021: zero-shot classification from class prompts, prompt ensembling.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from prh.errors import InputError

__all__ = ["RetrievalResult", "ZeroShotResult", "recall_at_k", "retrieval", "zero_shot"]


def _normalise(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=np.float32)
    return a / np.maximum(np.linalg.norm(a, axis=-1, keepdims=True), 1e-12)


def true_ranks(
    queries: np.ndarray, items: np.ndarray, target: np.ndarray, block: int = 4096
) -> np.ndarray:
    """1-based rank of ``items[target[i]]`` for query ``i`` (cosine similarity, ties pessimistic).

    Parameters
    ----------
    queries : np.ndarray
        ``(Q, D)``.
    items : np.ndarray
        ``(C, D)``.
    target : np.ndarray
        ``(Q,)`` index of the correct item for each query.
    block : int
        Queries scored per block, bounding memory to ``block * C`` floats.

    Returns
    -------
    np.ndarray
        ``(Q,)`` int64 ranks in ``[1, C]``.
    """
    q, c = _normalise(queries), _normalise(items)
    target = np.asarray(target, dtype=np.int64)
    ranks = np.empty(len(q), dtype=np.int64)
    for s in range(0, len(q), block):
        sim = q[s : s + block] @ c.T  # (b, C)
        rows = np.arange(sim.shape[0])
        true = sim[rows, target[s : s + block]]  # (b,)
        ranks[s : s + block] = (sim >= true[:, None]).sum(1)  # counts the true item itself once
    return ranks


def recall_at_k(ranks: np.ndarray, ks: Sequence[int] = (1, 5, 10)) -> dict[int, float]:
    """Fraction of queries whose true item ranks within the top ``k``, for each ``k``."""
    ranks = np.asarray(ranks)
    return {int(k): float((ranks <= k).mean()) for k in ks}


@dataclass(frozen=True)
class RetrievalResult:
    """Recall@k both ways: ``x_to_y[k]`` (query X, retrieve Y) and ``y_to_x[k]``."""

    x_to_y: dict[int, float]
    y_to_x: dict[int, float]
    n: int

    def to_dict(self) -> dict[str, object]:
        return {
            "n": self.n,
            "x_to_y": {f"R@{k}": v for k, v in self.x_to_y.items()},
            "y_to_x": {f"R@{k}": v for k, v in self.y_to_x.items()},
        }


def retrieval(x: np.ndarray, y: np.ndarray, ks: Sequence[int] = (1, 5, 10)) -> RetrievalResult:
    """Recall@k both ways for paired rows ``x (N, D)`` and ``y (N, D)`` (row ``i`` pairs row ``i``).

    ``x`` must already live in ``y``'s space (for example after a fitted map's ``transform``).
    """
    x = np.asarray(x)
    y = np.asarray(y)
    if x.ndim != 2 or y.ndim != 2 or x.shape != y.shape:
        raise InputError(
            f"retrieval needs paired (N, D) arrays of one shape, got {x.shape} and {y.shape}"
        )
    idx = np.arange(len(x))
    return RetrievalResult(
        x_to_y=recall_at_k(true_ranks(x, y, idx), ks),
        y_to_x=recall_at_k(true_ranks(y, x, idx), ks),
        n=len(x),
    )


@dataclass(frozen=True)
class ZeroShotResult:
    """Zero-shot classification accuracy: ``top1``, ``top5`` over ``n`` samples and ``classes``."""

    top1: float
    top5: float
    n: int
    classes: int

    def to_dict(self) -> dict[str, float | int]:
        return {"top1": self.top1, "top5": self.top5, "n": self.n, "classes": self.classes}


def zero_shot(
    embeddings: np.ndarray, class_embeddings: np.ndarray, labels: np.ndarray
) -> ZeroShotResult:
    """Classify each row by its most similar class prompt embedding.

    Parameters
    ----------
    embeddings : np.ndarray
        ``(N, D)`` samples (e.g. images mapped into the text space).
    class_embeddings : np.ndarray
        ``(C, D)`` one prompt per class, or ``(C, P, D)`` ``P`` prompts per class, averaged after
        L2 normalisation (prompt ensembling [1]_).
    labels : np.ndarray
        ``(N,)`` int class index in ``[0, C)``.
    """
    emb = np.asarray(embeddings)
    cls = np.asarray(class_embeddings)
    labels = np.asarray(labels)
    if cls.ndim == 3:
        cls = _normalise(cls).mean(1)  # (C, D)
    if emb.ndim != 2 or cls.ndim != 2 or emb.shape[1] != cls.shape[1]:
        raise InputError(
            f"zero-shot needs embeddings (N, D) and class prompts (C, D) or (C, P, D), got "
            f"{emb.shape} and {np.shape(class_embeddings)}"
        )
    if labels.shape != (len(emb),):
        raise InputError(f"expected {len(emb)} labels, got shape {labels.shape}")
    if labels.min(initial=0) < 0 or labels.max(initial=0) >= len(cls):
        raise InputError(
            f"labels must lie in [0, {len(cls)}), got range [{labels.min()}, {labels.max()}]"
        )
    ranks = true_ranks(emb, cls, labels)
    return ZeroShotResult(
        top1=float((ranks <= 1).mean()),
        top5=float((ranks <= 5).mean()),
        n=len(emb),
        classes=len(cls),
    )
