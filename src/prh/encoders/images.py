"""Reading user images safely (PIL, size-limited): files for ``prh embed --corpus --images``,
Image cells for ``prh embed --dataset``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from prh.errors import InputError

MAX_PIXELS = 64_000_000  # larger files are refused (decompression bombs)
EXTENSIONS = (".jpg", ".jpeg", ".png", ".webp", ".bmp")


def read_image(path: str | Path) -> np.ndarray:
    """Decode an image file to ``(H, W, 3)`` uint8 RGB.

    Raises
    ------
    InputError
        A missing file, one PIL cannot decode, or one above :data:`MAX_PIXELS` pixels.
    """
    import warnings

    from PIL import Image

    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such image file")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(p) as im:
                if im.width * im.height > MAX_PIXELS:
                    raise InputError(
                        f"{p}: image of {im.width}x{im.height} pixels is above the limit"
                        f" of {MAX_PIXELS}"
                    )
                return np.asarray(im.convert("RGB"))
    except InputError:
        raise
    except Exception as e:  # PIL raises UnidentifiedImageError, OSError, warnings-as-errors
        raise InputError(f"{p}: not a readable image ({type(e).__name__}: {e})") from None


def image_cell_to_array(cell, where: str) -> np.ndarray:
    """A ``datasets`` Image cell (``{"bytes", "path"}``, or a PIL image) as ``(H, W, 3)`` uint8.

    ``Image.open`` reads only the header, so the size limit is checked before any pixel is
    decoded.

    Raises
    ------
    InputError
        A cell that is no image, one PIL cannot decode, or one above :data:`MAX_PIXELS` pixels,
        naming ``where`` (the data set and row).
    """
    import io
    import warnings

    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            if isinstance(cell, dict) and cell.get("bytes") is not None:
                cell = Image.open(io.BytesIO(cell["bytes"]))
            elif isinstance(cell, dict) and cell.get("path"):
                cell = Image.open(cell["path"])  # a data set that stores file paths
            if not isinstance(cell, Image.Image):
                raise InputError(f"{where}: expected an image, got {type(cell).__name__}")
            if cell.width * cell.height > MAX_PIXELS:
                raise InputError(
                    f"{where}: image of {cell.width}x{cell.height} pixels is above the limit"
                    f" of {MAX_PIXELS}"
                )
            return np.asarray(cell.convert("RGB"))
    except InputError:
        raise
    except Exception as e:  # PIL raises UnidentifiedImageError, OSError, warnings-as-errors
        raise InputError(f"{where}: not a readable image ({type(e).__name__}: {e})") from None


def read_image_for_id(folder: str | Path, image_id: str) -> np.ndarray:
    """The image of ``image_id``: ``folder/image_id``, else with a common extension added."""
    base = Path(folder)
    if base.is_file():
        raise InputError(f"--images {base}: is a file, expected the folder of the image files")
    if not base.is_dir():
        raise InputError(f"--images {base}: no such folder")
    if Path(image_id).is_absolute() or ".." in Path(image_id).parts:
        raise InputError(f"image id {image_id!r}: must be a file name inside --images {base}")
    candidates = [base / image_id] + [base / f"{image_id}{ext}" for ext in EXTENSIONS]
    for c in candidates:
        if c.is_file():
            return read_image(c)
    raise InputError(f"--images {base}: no file for image id {image_id!r}")
