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

    ``pooled`` is ``(B, E)``, ``layers`` ``(B, S + 1, D)`` (stem and every stage, pooled).
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
            nn.Linear(c, c), nn.GELU(), nn.Linear(c, cfg.embed_dim, bias=False)
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
        return EncoderOutput(self.head(layers[:, -1]), layers)

    def encode(self, images: torch.Tensor) -> EncoderOutput:
        return self.forward(images)
