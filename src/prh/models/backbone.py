"""An image encoder on a pretrained backbone: a frozen trunk, a fine-tuned tail, a JEPA head.

The backbone (EfficientNet-Lite0, Tan & Le 2019, arXiv:1905.11946) is split after block
``freeze_until``: the stem and blocks ``0 .. freeze_until`` (the *trunk*) stay frozen, so their
output map is a pure function of the image and a training run computes it once per cached render
(:func:`trunk_maps`); blocks ``freeze_until + 1 ..``, the head convolution (the *tail*) and a JEPA
projection are trained. Batch-norm layers keep their ImageNet statistics (always in eval mode: the
result depends neither on the batch nor on the number of data-parallel ranks); their affine gains
are trained.

``scratch`` optionally adds prh's own from-scratch :class:`~prh.models.ImageEncoder` stages on the
render itself, whose pooled last stage is concatenated with the tail's feature before the
projection: a path that sees the render's colours directly, which an ImageNet classifier's late
blocks keep weakly. ``cfg.image_pool`` pools both maps for the projection
(:func:`prh.models.image.pool_map`: the spatial mean, or with ``"moments"`` also its first
moments along the rows and columns, so that where the object is stays linearly readable).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from prh.models.config import ModelConfig
from prh.models.folded import fold_block, fold_conv
from prh.models.image import ImageEncoder, pool_map, pooled_width
from prh.models.transformer import EncoderOutput


def frozen_bn_eval(module: nn.Module) -> None:
    """Put every batch-norm layer of ``module`` in eval mode (running statistics, no updates)."""
    for m in module.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.eval()


class Trunk(nn.Module):
    """Stem and blocks ``0 .. cut`` of an EfficientNet, frozen: ``(B, 3, S, S)`` in [0, 1] ->
    ``(B, C, S / r, S / r)`` after resizing to ``size`` px and normalising as the backbone was
    trained (``(x - 0.5) / 0.5``). It runs channels-last as folded convolutions
    (:mod:`prh.models.folded`: batch norm folded into each convolution, the symmetric padding
    inside it, ReLU6 in place; folded from the current weights at every call, so a loaded
    checkpoint is always what runs) and returns a contiguous map. On 2 CPU cores that runs the
    demo's image encoder several times faster than the module-by-module NCHW forward
    (``benchmarks/bench_trunk.py``), with the same values up to float rounding."""

    def __init__(self, net: nn.Module, cut: int, size: int) -> None:
        super().__init__()
        self.size = size
        self.conv_stem, self.bn0, self.act = net._conv_stem, net._bn0, net._swish
        self.blocks = nn.ModuleList(net._blocks[: cut + 1])
        for p in self.parameters():
            p.requires_grad_(False)
        self.to(memory_format=torch.channels_last)
        self.train(False)

    def train(self, mode: bool = True) -> Trunk:
        return super().train(False)  # frozen: always eval

    @torch.no_grad()
    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = images
        if x.shape[-1] != self.size or x.shape[-2] != self.size:
            x = F.interpolate(x, size=(self.size, self.size), mode="bilinear", antialias=True)
        h = (x * 2.0 - 1.0).contiguous(memory_format=torch.channels_last)
        h = fold_conv(self.conv_stem, self.bn0, self.act)(h)  # (B, 32, S/2, S/2)
        for block in self.blocks:
            h = fold_block(block)(h)  # (B, C_i, H_i, W_i)
        return h.contiguous()


class BackboneEncoder(nn.Module):
    """``forward(images (B, 3, H, W) in [0, 1], maps=None) -> EncoderOutput``.

    ``maps``: the trunk's output for ``images`` when already computed (a training run's cache);
    ``None`` computes it. ``pooled`` is ``(B, E)``; ``layers`` ``(B, L, D)``: the trunk's map,
    every tail block and the head feature (and the scratch path's feature), spatially averaged
    and zero-padded to the widest ``D``.
    """

    def __init__(
        self, cfg: ModelConfig, net: nn.Module, cut: int, size: int, scratch: bool = False
    ) -> None:
        super().__init__()
        self.cfg = cfg
        self.trunk = Trunk(net, cut, size)
        self.tail = nn.ModuleList(net._blocks[cut + 1 :])
        self.conv_head, self.bn1, self.act = net._conv_head, net._bn1, net._swish
        for p in [*self.tail.parameters(), *self.conv_head.parameters(), *self.bn1.parameters()]:
            p.requires_grad_(True)
        width = pooled_width(int(self.bn1.num_features), cfg.image_pool)
        self.scratch = ImageEncoder(cfg) if scratch else None
        if self.scratch is not None:
            self.scratch.head = nn.Identity()  # its pooled last stage feeds the shared head
            width += pooled_width(cfg.d_model, cfg.image_pool)
        self.norm = nn.LayerNorm(width)
        hidden = max(cfg.embed_dim, 512)
        self.head = nn.Sequential(
            nn.Linear(width, hidden), nn.GELU(), nn.Linear(hidden, cfg.embed_dim, bias=False)
        )

    def train(self, mode: bool = True) -> BackboneEncoder:
        super().train(mode)
        frozen_bn_eval(self)
        return self

    def forward(self, images: torch.Tensor, maps: torch.Tensor | None = None) -> EncoderOutput:
        if images.ndim != 4 or images.shape[1] != 3:
            raise ValueError(f"expected images (B, 3, H, W), got {tuple(images.shape)}")
        h = self.trunk(images) if maps is None else maps.float()  # (B, C, h, w)
        pooled = [h.mean((2, 3))]
        for block in self.tail:
            h = block(h)
            pooled.append(h.mean((2, 3)))  # (B, C_i)
        top = self.act(self.bn1(self.conv_head(h)))  # (B, 1280, h, w)
        pooled.append(top.mean((2, 3)))
        feat = pool_map(top, self.cfg.image_pool)  # (B, 1280) or (B, 3 x 1280) with moments
        if self.scratch is not None:
            own = self.scratch(images).pooled  # the scratch CNN's last stage, pooled alike
            pooled.append(own[:, : self.cfg.d_model])  # its spatial mean
            feat = torch.cat([feat, own], 1)
        D = max(p.shape[1] for p in pooled)
        layers = torch.stack([F.pad(p, (0, D - p.shape[1])) for p in pooled], 1)  # (B, L, D)
        return EncoderOutput(self.head(self.norm(feat)), layers)

    def encode(self, images: torch.Tensor) -> EncoderOutput:
        return self.forward(images)
