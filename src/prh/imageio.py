"""The one image decoder: bytes or a file in, an ``(H, W, 3)`` uint8 RGB array out, or an error.

Used by ``prh embed --images`` (:func:`read_image`), ``prh caption --image`` and ``prh serve``
uploads (:func:`decode_image`), so every entry point applies the same pixel limit (40 megapixels,
:data:`MAX_PIXELS`: a 12-megapixel phone photo passes, a decompression bomb does not), the same EXIF
orientation and the same alpha handling. Every image is untrusted. We guard, in order:

1. the byte size (the caller enforces it while streaming the body; checked again here);
2. the container format (a short allow-list; PIL would otherwise try every plugin it knows);
3. the pixel count, read from the header *before* any pixel is decoded, so a decompression bomb
   (a few KB of PNG that inflates to gigapixels) never allocates; PIL's own
   ``DecompressionBombWarning`` / ``DecompressionBombError`` are turned into the same error as a
   second line of defence, without touching the process-wide ``Image.MAX_IMAGE_PIXELS``;
4. truncated or corrupt data (``ImageFile.LOAD_TRUNCATED_IMAGES`` stays False, so PIL raises).

The image is then turned upright (EXIF orientation), composited on white if it has alpha, converted
to RGB and, when ``max_side`` is set, shrunk so its longer side is at most ``max_side`` (encoders
resize to about 224 px; files read for ``prh embed`` keep their full size).
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from prh.errors import InputError

# Formats a browser can show (PIL's JPEG opener also reads MPO, the multi-picture JPEG of many
# phones); anything else (EPS, which shells out to Ghostscript, PSD, TIFF, ...) is refused.
ALLOWED_FORMATS: frozenset[str] = frozenset({"PNG", "JPEG", "GIF", "WEBP", "BMP"})
MAX_PIXELS = 40_000_000  # width * height read from the header; larger images are refused


class ImageRejected(InputError):
    """An upload that is not an acceptable image; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class ImageLimits:
    """Limits applied to one upload.

    Attributes
    ----------
    max_bytes : int
        Largest accepted file, in bytes (default 10 MiB).
    max_pixels : int
        Largest accepted ``width * height`` read from the header (default :data:`MAX_PIXELS`).
    max_side : int or None
        The decoded image is shrunk so that its longer side is at most this many pixels (None:
        kept at full size).
    """

    max_bytes: int = 10 * 1024 * 1024
    max_pixels: int = MAX_PIXELS
    max_side: int | None = 1024


# Files on disk (``prh embed --images``): no byte limit beyond the pixel limit's, full size kept.
FILE_LIMITS = ImageLimits(max_bytes=1 << 40, max_side=None)


# Magic bytes of the allowed formats (a WebP file is RIFF....WEBP).
SIGNATURES = {b"\x89PNG\r\n\x1a\n": "PNG", b"\xff\xd8\xff": "JPEG", b"GIF87a": "GIF",
              b"GIF89a": "GIF", b"BM": "BMP"}  # fmt: skip


def unreadable(data: bytes) -> ImageRejected:
    """The refusal of bytes PIL could not identify: 415 when they start like no allowed format,
    400 when they do (a corrupt header, a PNG of size 0x0: a bad image, not another format)."""
    fmt = next((f for sig, f in SIGNATURES.items() if data.startswith(sig)), None)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        fmt = "WEBP"
    if fmt is None:
        return ImageRejected("not an image: expected PNG, JPEG, GIF, WebP or BMP data", 415)
    if fmt == "PNG" and data[12:16] == b"IHDR" and len(data) >= 24:
        w, h = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        if w < 1 or h < 1:
            return ImageRejected(f"image has size {w}x{h}, expected at least 1x1")
    return ImageRejected(f"{fmt} data with a header that cannot be read (corrupt?)")


def decode_image(data: bytes, limits: ImageLimits = ImageLimits()) -> np.ndarray:
    """Decode untrusted image bytes into an RGB array.

    Parameters
    ----------
    data : bytes
        The uploaded file.
    limits : ImageLimits
        Byte, pixel and side limits.

    Returns
    -------
    np.ndarray
        ``(H, W, 3)`` uint8 RGB, ``max(H, W) <= limits.max_side`` (when set).

    Raises
    ------
    ImageRejected
        ``status`` 413 for too many bytes or pixels, 415 for a format outside
        :data:`ALLOWED_FORMATS`, 400 for empty, non-image, truncated or corrupt data.
    """
    from PIL import Image, UnidentifiedImageError

    if len(data) == 0:
        raise ImageRejected("empty upload: expected an image file")
    if len(data) > limits.max_bytes:
        raise ImageRejected(
            f"upload is {len(data)} bytes, the limit is {limits.max_bytes} bytes", status=413
        )
    Image.init()  # register every plugin, so the allow-list below can name them
    with warnings.catch_warnings():
        # PIL warns at MAX_IMAGE_PIXELS and raises at twice that; make the warning an error too.
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            im = Image.open(io.BytesIO(data), formats=sorted(ALLOWED_FORMATS))
        except UnidentifiedImageError:
            raise unreadable(data) from None
        except (Image.DecompressionBombError, Image.DecompressionBombWarning):
            raise ImageRejected("image has too many pixels (decompression bomb)", 413) from None
        except Exception as e:  # PIL's parsers raise many types on hostile input
            raise ImageRejected(
                f"image header is truncated or corrupt: {type(e).__name__}: {e}"
            ) from None
        with im:
            out = _load_rgb(im, limits)
    arr = np.asarray(out, dtype=np.uint8)  # (H, W, 3)
    if arr.ndim != 3 or arr.shape[2] != 3:  # pragma: no cover - _to_rgb guarantees it
        raise ImageRejected(f"decoded image has shape {arr.shape}, expected (H, W, 3)")
    return np.ascontiguousarray(arr)


def _load_rgb(im, limits: ImageLimits):
    """An opened PIL image checked against the limits, decoded, upright and RGB (a PIL image).

    Runs inside :func:`decode_image`'s warnings filter, so a decompression bomb raises here.
    """
    from PIL import Image, ImageOps

    w, h = im.size
    if w < 1 or h < 1:
        raise ImageRejected(f"image has size {w}x{h}, expected at least 1x1")
    if w * h > limits.max_pixels:
        raise ImageRejected(
            f"image is {w}x{h} = {w * h} pixels, the limit is {limits.max_pixels} "
            "(decompression bomb?)",
            status=413,
        )
    try:
        if limits.max_side is not None and im.format in ("JPEG", "MPO"):
            # Let libjpeg decode at 1/2, 1/4 or 1/8 scale when that still covers max_side.
            im.draft("RGB", (limits.max_side, limits.max_side))
        im.load()  # truncated/corrupt data raises here
        out = _to_rgb(ImageOps.exif_transpose(im))
        if limits.max_side is not None:
            out.thumbnail((limits.max_side, limits.max_side), Image.Resampling.LANCZOS)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise ImageRejected("image has too many pixels (decompression bomb)", 413) from None
    except Exception as e:  # OSError for truncated data; others on hostile input
        msg = f"image data is truncated or corrupt: {type(e).__name__}: {e}"
        raise ImageRejected(msg) from None
    return out


def read_image(path: str | Path, limits: ImageLimits = FILE_LIMITS) -> np.ndarray:
    """Decode an image file with :func:`decode_image` (full size by default).

    Raises
    ------
    InputError
        A missing file, or any refusal of :func:`decode_image`, prefixed with the path.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such file")
    size = p.stat().st_size
    if size > limits.max_bytes:
        raise InputError(f"{p}: {size} bytes, larger than the limit of {limits.max_bytes} bytes")
    try:
        return decode_image(p.read_bytes(), limits)
    except InputError as e:
        raise InputError(f"{p}: {e}") from None


def _to_rgb(im: Any) -> Any:
    """Convert any PIL mode to RGB; transparent pixels become white (how the page shows them)."""
    from PIL import Image

    if im.mode == "RGB":
        return im
    if im.mode in ("RGBA", "LA", "PA") or (im.mode == "P" and "transparency" in im.info):
        rgba = im.convert("RGBA")
        canvas = Image.new("RGB", rgba.size, (255, 255, 255))
        canvas.paste(rgba, mask=rgba.getchannel("A"))
        return canvas
    if im.mode in ("I;16", "I;16B", "I;16L", "I"):
        # 16/32-bit greyscale: scale to 8 bits rather than clip.
        a = np.asarray(im, dtype=np.float64)
        hi = float(a.max()) or 1.0
        return Image.fromarray((a / hi * 255.0).round().astype(np.uint8)).convert("RGB")
    return im.convert("RGB")


def encode_png(image: np.ndarray) -> bytes:
    """Encode an ``(H, W, 3)`` uint8 array as PNG bytes (for generated scenes)."""
    from PIL import Image

    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise InputError(f"expected an (H, W, 3) uint8 image, got {image.shape} {image.dtype}")
    buf = io.BytesIO()
    Image.fromarray(image, "RGB").save(buf, format="PNG", optimize=False)
    return buf.getvalue()
