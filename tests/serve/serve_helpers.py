"""Helpers for the serve tests: small images as bytes, a PNG header that claims a huge size."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
from PIL import Image


def png_bytes(image: np.ndarray | Image.Image, fmt: str = "PNG", **kw: object) -> bytes:
    """Encode an array or PIL image in ``fmt``."""
    im = Image.fromarray(image) if isinstance(image, np.ndarray) else image
    buf = io.BytesIO()
    im.save(buf, format=fmt, **kw)
    return buf.getvalue()


def solid(rgb: tuple[int, int, int], size: tuple[int, int] = (48, 32)) -> np.ndarray:
    """A ``(H, W, 3)`` uint8 image of one colour; ``size`` is (width, height)."""
    w, h = size
    return np.broadcast_to(np.array(rgb, np.uint8), (h, w, 3)).copy()


def png_with_header_size(width: int, height: int) -> bytes:
    """A tiny valid 1x1 PNG whose IHDR claims ``width x height`` (a decompression-bomb header)."""
    data = png_bytes(Image.new("L", (1, 1)))
    # Signature (8) + length (4) + b"IHDR" (4), then width, height as big-endian uint32.
    ihdr = bytearray(data[12:29])  # type + 13 bytes of IHDR data
    ihdr[4:12] = struct.pack(">II", width, height)
    crc = struct.pack(">I", zlib.crc32(bytes(ihdr)) & 0xFFFFFFFF)
    return data[:12] + bytes(ihdr) + crc + data[33:]
