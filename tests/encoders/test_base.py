"""Pure helpers of prh.encoders.base, spec errors, and lazy imports."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from prh.encoders import SPECS, load_encoder, stack_layers, unpad_layer
from prh.encoders.base import as_rgb_uint8, images_to_tensor_input, resize_center_crop
from prh.errors import InputError


def test_as_rgb_uint8_conversions_and_errors():
    grey = np.arange(12, dtype=np.uint8).reshape(3, 4)
    rgb = as_rgb_uint8(grey)
    assert rgb.shape == (3, 4, 3)
    assert (rgb[:, :, 0] == grey).all() and (rgb[:, :, 2] == grey).all()
    rgba = np.zeros((2, 2, 4), np.uint8)
    assert as_rgb_uint8(rgba).shape == (2, 2, 3)
    with pytest.raises(InputError, match="image 5: expected dtype uint8, got float32"):
        as_rgb_uint8(np.zeros((2, 2, 3), np.float32), 5)
    with pytest.raises(InputError, match=r"expected shape \(H, W, 3\), got \(2, 2, 2\)"):
        as_rgb_uint8(np.zeros((2, 2, 2), np.uint8))
    with pytest.raises(InputError, match="empty image"):
        as_rgb_uint8(np.zeros((0, 2, 3), np.uint8))


def test_resize_center_crop():
    from PIL import Image

    rng = np.random.default_rng(0)
    square = rng.integers(0, 256, (40, 40, 3), dtype=np.uint8)
    ref = np.asarray(Image.fromarray(square).resize((16, 16), Image.Resampling.BICUBIC))
    np.testing.assert_array_equal(resize_center_crop(square, 16), ref)
    assert resize_center_crop(square, 40) is square
    wide = np.zeros((20, 60, 3), np.uint8)
    wide[:, 14:46] = 255  # white around the centre third, black at the sides
    out = resize_center_crop(wide, 10)
    assert out.shape == (10, 10, 3)
    assert out.min() >= 250  # the crop keeps the centre only


def test_images_to_tensor_input_formula():
    im = np.array([[[0, 255, 51]]], dtype=np.uint8)  # one pixel
    x = images_to_tensor_input([im], 1)
    assert x.shape == (1, 3, 1, 1) and x.dtype == np.float32
    np.testing.assert_allclose(x[0, :, 0, 0], [-1.0, 1.0, (0.2 - 0.5) / 0.5], atol=1e-6)


def test_stack_and_unpad_layers():
    a = np.ones((2, 3), np.float32)
    b = np.full((2, 5), 2.0, np.float32)
    out = stack_layers([a, b])
    assert out.shape == (2, 2, 5)
    assert (out[:, 0, 3:] == 0).all()
    np.testing.assert_array_equal(unpad_layer(out, 0, [3, 5]), a)
    np.testing.assert_array_equal(unpad_layer(out, 1, [3, 5]), b)
    # zero padding keeps inner products
    np.testing.assert_allclose(out[:, 0] @ out[:, 0].T, a @ a.T)


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("resnet-50", "unknown encoder spec 'resnet-50'; expected one of: efficientnet-lite0"),
        ("random:minilm", "random: applies to efficientnet-lite0 and hf: specs"),
        ("./no/such/run", "no such run directory ./no/such/run"),
        ("onnx:/no/such.onnx", "no such file /no/such.onnx"),
        ("features:/no/such.safetensors", "no such file"),
    ],
)
def test_spec_errors(spec, match):
    with pytest.raises(InputError, match=match):
        load_encoder(spec)


def test_folder_that_is_not_a_run(tmp_path):
    with pytest.raises(InputError, match="not a prh run directory"):
        load_encoder(str(tmp_path))
    (tmp_path / "config.json").write_text('{"model_type": "bert"}')
    with pytest.raises(InputError, match="use hf:"):
        load_encoder(str(tmp_path))


def test_specs_listed():
    assert "efficientnet-lite0" in SPECS and "minilm" in SPECS


def test_imports_are_lazy():
    code = (
        "import argparse, sys, prh.encoders, prh.cli.embed\n"
        "prh.cli.embed.add_arguments(argparse.ArgumentParser())\n"
        "heavy = [m for m in ('torch', 'transformers', 'onnxruntime', 'efficientnet_lite_pytorch')"
        " if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_one_registry_dispatches_every_spec_and_load_encoder_is_its_thin_name(tmp_path):
    """create_encoder walks ENCODERS in order; the last kind refuses whatever is left, and
    options go only to the kinds that take them."""
    from prh.encoders import ENCODERS, EncoderOptions, EncoderSpec, create_encoder
    from prh.errors import InputError
    from prh.features import save_features

    assert [k.name for k in ENCODERS][:2] == ["hf", "minilm"] and ENCODERS[-1].name == "unknown"
    path = tmp_path / "f.safetensors"
    save_features(path, np.ones((2, 1, 3), np.float32), ["a", "b"])
    enc = create_encoder(EncoderSpec(f" features:{path} "))
    assert type(enc) is type(load_encoder(f"features:{path}"))
    with pytest.raises(InputError, match="apply to hf: and minilm encoders only"):
        create_encoder(EncoderSpec(f"features:{path}", options=EncoderOptions(device="cuda")))
    with pytest.raises(InputError, match=r"^unknown encoder spec 'nope'"):
        create_encoder(EncoderSpec("nope"))
