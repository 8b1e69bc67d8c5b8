"""Folded convolutions compute the frozen EfficientNet-Lite modules they were folded from."""

from __future__ import annotations

import pytest
import torch
from torch import nn

pytest.importorskip("efficientnet_lite_pytorch")

from prh.models.efficientnet import build_efficientnet_lite0
from prh.models.folded import fold_block, fold_conv


@pytest.fixture(scope="module")
def net():
    """A seeded Lite0 whose batch norms have non-trivial statistics and gains (at their initial
    values folding would be nearly the identity and prove little)."""
    net = build_efficientnet_lite0(pretrained=False, seed=3).eval()
    g = torch.Generator().manual_seed(4)
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, nn.BatchNorm2d):
                n = m.num_features
                m.running_mean.copy_(0.2 * torch.randn(n, generator=g))
                m.running_var.copy_(0.3 + torch.rand(n, generator=g))
                m.weight.copy_(0.5 + torch.rand(n, generator=g))
                m.bias.copy_(0.2 * torch.randn(n, generator=g))
    return net


def _close(got: torch.Tensor, want: torch.Tensor) -> None:
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5 * float(want.abs().max()))


def test_every_block_and_the_stem_fold_to_the_same_function(net):
    x = torch.randn(3, 3, 40, 40, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        want = net._swish(net._bn0(net._conv_stem(x)))
        got = fold_conv(net._conv_stem, net._bn0, net._swish)(x)
        _close(got, want)
        h = want
        for block in net._blocks:  # strides 1 and 2, kernels 3 and 5, residual or not
            want = block(h)
            _close(fold_block(block)(h), want)
            _close(fold_block(block)(h.contiguous(memory_format=torch.channels_last)), want)
            h = want
        head = fold_conv(net._conv_head, net._bn1, net._swish)(h)
        _close(head, net._swish(net._bn1(net._conv_head(h))))
    pads = {fold_conv(b._depthwise_conv, b._bn1, b._swish).pad for b in net._blocks}
    assert any(p[0] != p[1] for p in pads) and any(p[0] == p[1] > 0 for p in pads)


def test_folding_reads_the_current_statistics(net):
    """A folded form is a snapshot: changed statistics give another function when folded again."""
    conv, bn = net._conv_stem, nn.BatchNorm2d(net._bn0.num_features).eval()
    x = torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    before = fold_conv(conv, bn, None)(x)
    with torch.no_grad():
        bn.running_var.fill_(4.0)
        _close(fold_conv(conv, bn, None)(x), bn(conv(x)))
    _close(before / 2.0, fold_conv(conv, bn, None)(x))  # 1 / sqrt(4 + eps) vs 1 / sqrt(1 + eps)


def test_layers_it_cannot_fold_are_refused(net):
    block = net._blocks[1]
    with pytest.raises(ValueError, match="expected ReLU6"):
        fold_conv(block._depthwise_conv, block._bn1, nn.SiLU())
    block.has_se = True
    try:
        with pytest.raises(ValueError, match="squeeze-excitation"):
            fold_block(block)
    finally:
        block.has_se = False
