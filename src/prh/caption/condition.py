"""The conditioning space of the caption decoder: centred, whitened, L2-normalised embeddings.

Caption embeddings (from the text JEPA) and mapped image embeddings (from the vision encoder
through the fitted map) both pass through one :class:`ConditionNormalizer`, fitted on caption
embeddings only:

``n(y) = z / ||z||,  z = (y - mu) C^{-1/2}``

with ``mu`` and ``C`` the mean and covariance of the training caption embeddings (ZCA whitening,
a relative ridge ``eps`` on the eigenvalues). Cosine similarity in this space ranks the gallery
captions, and the decoder is trained on it.

:func:`modality_gap` measures how far mapped image embeddings fall from their paired caption
embeddings in this space; CapDec's noise variance is set from it.
"""

from __future__ import annotations

import numpy as np

from prh.errors import InputError
from prh.linalg import l2_normalize, zca_whitener

__all__ = ["ConditionNormalizer", "modality_gap"]


class ConditionNormalizer:
    """Centre, optionally ZCA-whiten, then L2-normalise rows.

    Parameters
    ----------
    whiten : bool
        Whiten with the training covariance (else only centre and normalise).
    eps : float
        Ridge added to the covariance eigenvalues, relative to the largest one.

    Attributes
    ----------
    mean_ : np.ndarray
        ``(E,)`` training mean.
    whiten_ : np.ndarray
        ``(E, E)`` ZCA matrix ``C^{-1/2}`` (identity when ``whiten=False``).
    """

    def __init__(self, whiten: bool = True, eps: float = 1e-4) -> None:
        self.whiten = whiten
        self.eps = eps

    def fit(self, y: np.ndarray) -> ConditionNormalizer:
        """Fit on caption embeddings ``y (N, E)``; returns ``self``."""
        y = np.asarray(y, dtype=np.float64)
        if y.ndim != 2 or y.shape[0] < 2:
            raise InputError(f"expected at least 2 embeddings (N, E), got shape {y.shape}")
        if not np.isfinite(y).all():
            raise InputError("caption embeddings hold NaN or infinite values")
        self.mean_ = y.mean(0)
        if self.whiten:
            self.whiten_, _ = zca_whitener(y - self.mean_, self.eps)  # (E, E)
        else:
            self.whiten_ = np.eye(y.shape[1])
        return self

    def transform(self, y: np.ndarray) -> np.ndarray:
        """``n(y)`` of rows ``y (N, E)``: ``(N, E)`` float32 unit rows."""
        if not hasattr(self, "mean_"):
            raise InputError("this ConditionNormalizer is not fitted yet: call fit(Y) first")
        y = np.asarray(y, dtype=np.float64)
        if y.ndim != 2 or y.shape[1] != self.mean_.shape[0]:
            raise InputError(
                f"expected embeddings with {self.mean_.shape[0]} columns, got shape {y.shape}"
            )
        z = (y - self.mean_) @ self.whiten_  # (N, E)
        return l2_normalize(z, "embeddings", dtype=np.float64).astype(np.float32)

    def state_dict(self) -> dict[str, np.ndarray]:
        return {"mean": self.mean_, "whiten": self.whiten_}

    @classmethod
    def from_state_dict(cls, state: dict[str, np.ndarray]) -> ConditionNormalizer:
        out = cls()
        out.mean_ = np.asarray(state["mean"], dtype=np.float64)
        out.whiten_ = np.asarray(state["whiten"], dtype=np.float64)
        if out.whiten_.shape != (len(out.mean_), len(out.mean_)):
            raise InputError(
                f"normalizer: whiten {out.whiten_.shape} does not fit mean {out.mean_.shape}"
            )
        return out


def modality_gap(mapped: np.ndarray, target: np.ndarray) -> float:
    """Per-coordinate variance of the residual between paired unit rows.

    ``gap = mean_i ||a_i - b_i||^2 / E`` for ``a = mapped (N, E)``, ``b = target (N, E)`` (both
    already normalised). Gaussian noise ``N(0, gap I)`` added to a caption's condition has the same
    expected squared distance as a mapped image embedding has from its caption.
    """
    a = np.asarray(mapped, dtype=np.float64)
    b = np.asarray(target, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2:
        raise InputError(f"paired rows required, got shapes {a.shape} and {b.shape}")
    return float(((a - b) ** 2).sum(1).mean() / a.shape[1])
