"""Losses: whitened JEPA (hard and soft), SIGReg (LeJEPA), next-token cross-entropy."""

from prh.losses.lm import next_token_loss
from prh.losses.sigreg import (
    EppsPulley,
    SIGReg,
    lejepa_loss,
    random_directions,
    sigreg_jepa_loss,
)
from prh.losses.whitening import (
    batch_covariance,
    soft_whitening_loss,
    whiten,
    whitened_jepa_loss,
    whitening_matrix,
)

__all__ = [
    "EppsPulley",
    "SIGReg",
    "batch_covariance",
    "lejepa_loss",
    "next_token_loss",
    "random_directions",
    "sigreg_jepa_loss",
    "soft_whitening_loss",
    "whiten",
    "whitened_jepa_loss",
    "whitening_matrix",
]
