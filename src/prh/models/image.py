"""A small convolutional image encoder for the world's renders.

A stride-2 stem then ``image_stages`` residual stages at constant width ``d_model``, each halving
the resolution; every stage is global-average-pooled into one layer so the output has the same
``(B, L, D)`` layout as the text encoders. GroupNorm instead of BatchNorm: no running statistics,
so the result does not depend on the batch or the number of data-parallel ranks.
"""

from __future__ import annotations

import torch
from torch import nn

from prh.models.config import ModelConfig
from prh.models.transformer import EncoderOutput, init_weights


def pool_map(x: torch.Tensor, how: str = "mean") -> torch.Tensor:
    """Pool a map ``(B, C, H, W)`` into ``(B, C)`` (``"mean"``) or ``(B, 3 C)`` (``"moments"``:
    the mean, then the means of the map times the row and the column coordinate, each in
    ``[-1, 1]`` at the cell centres): a spatial mean forgets where a feature fired, the first
    moments keep it linearly readable."""
    mean = x.mean((2, 3))
    if how == "mean":
        return mean
    h, w = x.shape[-2:]
    rows = torch.linspace(-1.0, 1.0, h, dtype=x.dtype, device=x.device) if h > 1 else x.new_zeros(1)
    cols = torch.linspace(-1.0, 1.0, w, dtype=x.dtype, device=x.device) if w > 1 else x.new_zeros(1)
    by_row = (x * rows.view(1, 1, h, 1)).mean((2, 3))
    by_col = (x * cols.view(1, 1, 1, w)).mean((2, 3))
    return torch.cat([mean, by_row, by_col], 1)


def pooled_width(c: int, how: str) -> int:
    """The width :func:`pool_map` gives a ``c``-channel map."""
    return 3 * c if how == "moments" else c


def _groups(c: int) -> int:
    for g in (8, 4, 2, 1):
        if c % g == 0:
            return g
    return 1


class ResStage(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.down = nn.Conv2d(c, c, 3, stride=2, padding=1)
        self.body = nn.Sequential(
            nn.GroupNorm(_groups(c), c),
            nn.GELU(),
            nn.Conv2d(c, c, 3, padding=1),
            nn.GroupNorm(_groups(c), c),
            nn.GELU(),
            nn.Conv2d(c, c, 3, padding=1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.down(x)  # (B, C, H/2, W/2)
        return x + self.body(x)


class ImageEncoder(nn.Module):
    """Small CNN: ``forward(images (B, 3, H, W) in [0, 1]) -> EncoderOutput``.

    ``pooled`` is ``(B, E)``, ``layers`` ``(B, S + 1, D)`` (stem and every stage, spatially
    averaged); the head reads the last map pooled by ``cfg.image_pool`` (:func:`pool_map`).
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        c = cfg.d_model
        self.stem = nn.Sequential(
            nn.Conv2d(cfg.image_channels, c, 3, stride=2, padding=1), nn.GroupNorm(_groups(c), c)
        )
        self.stages = nn.ModuleList(ResStage(c) for _ in range(cfg.image_stages))
        self.norm = nn.GroupNorm(_groups(c), c)
        self.head = nn.Sequential(
            nn.Linear(pooled_width(c, cfg.image_pool), c),
            nn.GELU(),
            nn.Linear(c, cfg.embed_dim, bias=False),
        )
        init_weights(self)

    def forward(self, images: torch.Tensor) -> EncoderOutput:
        if images.ndim != 4 or images.shape[1] != self.cfg.image_channels:
            raise ValueError(
                f"expected images (B, {self.cfg.image_channels}, H, W), got {tuple(images.shape)}"
            )
        x = self.stem(images * 2.0 - 1.0)  # (B, C, H/2, W/2)
        pooled = [x.mean((2, 3))]
        for i, stage in enumerate(self.stages):
            x = stage(x)
            if i == len(self.stages) - 1:
                x = self.norm(x)
            pooled.append(x.mean((2, 3)))  # (B, C)
        layers = torch.stack(pooled, dim=1)  # (B, S + 1, C)
        return EncoderOutput(self.head(pool_map(x, self.cfg.image_pool)), layers)

    def encode(self, images: torch.Tensor) -> EncoderOutput:
        return self.forward(images)
