"""decode_image: accepted formats decode to the right pixels; hostile input is refused."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image
from serve_helpers import png_bytes, png_with_header_size, solid

from prh.errors import InputError
from prh.imageio import ImageLimits, ImageRejected, decode_image, encode_png


def test_png_roundtrip_is_exact():
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, size=(31, 17, 3), dtype=np.uint8)
    out = decode_image(png_bytes(img))
    assert out.dtype == np.uint8 and out.shape == (31, 17, 3)
    np.testing.assert_array_equal(out, img)
    np.testing.assert_array_equal(decode_image(encode_png(img)), img)


@pytest.mark.parametrize("fmt", ["JPEG", "GIF", "WEBP", "BMP"])
def test_other_formats_decode_close_to_the_source(fmt):
    img = solid((200, 40, 30), (40, 24))
    out = decode_image(png_bytes(img, fmt))
    assert out.shape == (24, 40, 3)
    # Lossy formats (JPEG, WebP, GIF palette) stay within a few levels on a flat colour.
    assert np.abs(out.astype(int) - img.astype(int)).max() <= 12


def test_modes_become_rgb_and_alpha_becomes_white():
    rgba = Image.new("RGBA", (4, 4), (255, 0, 0, 0))  # fully transparent red
    np.testing.assert_array_equal(decode_image(png_bytes(rgba)), solid((255, 255, 255), (4, 4)))
    grey = Image.new("L", (5, 3), 77)
    np.testing.assert_array_equal(decode_image(png_bytes(grey)), solid((77, 77, 77), (5, 3)))
    deep = Image.fromarray(np.full((2, 2), 65535, np.uint16))  # 16-bit grey, full scale
    assert decode_image(png_bytes(deep)).min() == 255


def test_exif_orientation_is_applied():
    img = Image.fromarray(solid((10, 200, 10), (30, 10)))  # wide
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to display
    out = decode_image(png_bytes(img, "JPEG", exif=exif.tobytes()))
    assert out.shape[:2] == (30, 10)  # shown tall


def test_large_images_are_shrunk_to_max_side():
    img = solid((9, 9, 9), (300, 150))
    out = decode_image(png_bytes(img), ImageLimits(max_side=100))
    assert out.shape == (50, 100, 3)


def test_same_bytes_give_identical_arrays():
    data = png_bytes(np.random.default_rng(1).integers(0, 256, (20, 20, 3), dtype=np.uint8), "JPEG")
    np.testing.assert_array_equal(decode_image(data), decode_image(data))


def test_not_an_image_is_415():
    with pytest.raises(ImageRejected, match="not an image") as e:
        decode_image(b"%PDF-1.4 this is a document, not a picture " * 10)
    assert e.value.status == 415
    assert isinstance(e.value, InputError)


def test_refused_format_is_415():
    buf = io.BytesIO()
    Image.new("RGB", (4, 4)).save(buf, format="TIFF")
    with pytest.raises(ImageRejected, match="not an image") as e:
        decode_image(buf.getvalue())
    assert e.value.status == 415


def test_empty_is_400():
    with pytest.raises(ImageRejected, match="empty upload") as e:
        decode_image(b"")
    assert e.value.status == 400


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_truncated_image_is_400(fmt):
    rng = np.random.default_rng(2)
    data = png_bytes(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8), fmt)
    with pytest.raises(ImageRejected, match="truncated or corrupt") as e:
        decode_image(data[: len(data) // 2])
    assert e.value.status == 400


def test_too_many_bytes_is_413():
    data = png_bytes(solid((1, 2, 3)))
    with pytest.raises(ImageRejected, match=f"upload is {len(data)} bytes") as e:
        decode_image(data, ImageLimits(max_bytes=len(data) - 1))
    assert e.value.status == 413


def test_bomb_header_is_refused_before_decoding():
    data = png_with_header_size(30_000, 30_000)  # 9e8 pixels claimed, about 70 bytes sent
    assert len(data) < 100
    with pytest.raises(ImageRejected, match="decompression bomb") as e:
        decode_image(data)
    assert e.value.status == 413


@pytest.mark.parametrize("side", [10_000, 60_000])  # PIL's warning zone, then its error zone
def test_pils_own_bomb_guard_is_an_error_too(side):
    # Our pixel limit lifted: PIL's DecompressionBombWarning / Error must still refuse it.
    with pytest.raises(ImageRejected, match="decompression bomb") as e:
        decode_image(png_with_header_size(side, side), ImageLimits(max_pixels=10**12))
    assert e.value.status == 413


def test_encode_png_checks_its_input():
    with pytest.raises(InputError, match=r"expected an \(H, W, 3\) uint8 image"):
        encode_png(np.zeros((4, 4), np.uint8))
