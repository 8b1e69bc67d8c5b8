"""A frozen EfficientNet-Lite run as folded convolutions: the inference form of its layers.

In eval mode a batch norm is an affine map per channel, so ``bn(conv(x))`` is one convolution
with a scaled weight and a bias (:func:`fold_conv`). The Lite networks (no squeeze-excitation,
ReLU6) then run as a chain of convolutions, each followed in place by ReLU6 where the network has
it, and the TensorFlow "same" padding (a separate zero-padding copy before every convolution in
``efficientnet_lite_pytorch``) goes inside the convolution wherever it is symmetric (every
stride-1 convolution). On 2 CPU cores the demo's whole image encoder runs 1.79x faster with its
trunk folded than with the same modules one by one channels-last, 2.93x faster than in NCHW
(``benchmarks/bench_trunk.py``); the values agree up to float rounding.

Folding reads the modules' current weights and statistics: fold again after loading new ones
(the folded form is cheap: one multiply per weight). Only frozen, eval-mode use: no gradients
reach the modules' parameters through a folded convolution.

Layer: pure functions of torch modules (no prh imports).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class FoldedConv:
    """``relu6(bn(conv(pad(x))))`` (``relu6`` optional) as one convolution: ``weight`` ``(O, I /
    groups, kh, kw)``, ``bias`` ``(O,)``, ``pad`` ``(left, right, top, bottom)`` zeros."""

    weight: torch.Tensor
    bias: torch.Tensor
    stride: tuple[int, int]
    groups: int
    pad: tuple[int, int, int, int]
    relu6: bool

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        left, right, top, bottom = self.pad
        if left == right and top == bottom:  # symmetric: the convolution pads, no copy
            y = F.conv2d(x, self.weight, self.bias, self.stride, (top, left), 1, self.groups)
        else:  # TensorFlow's extra row and column at a stride-2 convolution's far side
            y = F.conv2d(F.pad(x, self.pad), self.weight, self.bias, self.stride, 0, 1, self.groups)
        return F.hardtanh_(y, 0.0, 6.0) if self.relu6 else y


@dataclass(frozen=True)
class FoldedBlock:
    """An MBConv block of a Lite network: its convolutions in order, the input added back when
    the block is residual."""

    convs: tuple[FoldedConv, ...]
    residual: bool

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        h = x
        for conv in self.convs:
            h = conv(h)
        return h + x if self.residual else h


def _padding(conv: nn.Conv2d) -> tuple[int, int, int, int]:
    static = getattr(conv, "static_padding", None)
    if isinstance(static, nn.ZeroPad2d):
        return tuple(int(p) for p in static.padding)  # type: ignore[return-value]
    ph, pw = (int(p) for p in conv.padding)  # type: ignore[union-attr]
    return (pw, pw, ph, ph)


def fold_conv(conv: nn.Conv2d, bn: nn.BatchNorm2d, act: nn.Module | None) -> FoldedConv:
    """``act(bn(conv(x)))`` with ``bn`` in eval mode (its running statistics) as one
    :class:`FoldedConv`; ``act`` is ``nn.ReLU6`` or ``None``.

    Raises
    ------
    ValueError
        ``act`` is another activation, or ``conv`` is dilated (not an EfficientNet-Lite layer).
    """
    if act is not None and not isinstance(act, nn.ReLU6):
        raise ValueError(f"fold_conv: expected ReLU6 or no activation, got {type(act).__name__}")
    if tuple(conv.dilation) != (1, 1):
        raise ValueError(f"fold_conv: expected an undilated convolution, got {conv.dilation}")
    with torch.no_grad():
        scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)  # (O,)
        weight = conv.weight * scale[:, None, None, None]
        bias = bn.bias - bn.running_mean * scale
        if conv.bias is not None:
            bias = bias + conv.bias * scale
    return FoldedConv(
        weight=weight.contiguous(memory_format=torch.channels_last), bias=bias.contiguous(),
        stride=tuple(int(s) for s in conv.stride), groups=int(conv.groups),
        pad=_padding(conv), relu6=act is not None,
    )  # fmt: skip


def fold_block(block: nn.Module) -> FoldedBlock:
    """An ``efficientnet_lite_pytorch`` MBConv block (eval mode: drop-connect is the identity) as
    a :class:`FoldedBlock`.

    Raises
    ------
    ValueError
        The block has squeeze-excitation (a non-Lite EfficientNet).
    """
    if getattr(block, "has_se", False):
        raise ValueError("fold_block: squeeze-excitation blocks are not folded (Lite nets only)")
    args = block._block_args
    convs = []
    if args.expand_ratio != 1:
        convs.append(fold_conv(block._expand_conv, block._bn0, block._swish))
    convs.append(fold_conv(block._depthwise_conv, block._bn1, block._swish))
    convs.append(fold_conv(block._project_conv, block._bn2, None))
    residual = bool(args.id_skip and args.stride == 1 and args.input_filters == args.output_filters)
    return FoldedBlock(tuple(convs), residual)
