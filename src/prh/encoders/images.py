"""Reading user images for ``prh embed``: the file of an id (``--corpus --images``) and the
Image cells of a data set (``--dataset``), both decoded by :mod:`prh.imageio`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from prh.errors import InputError
from prh.imageio import FILE_LIMITS, decode_image, read_image

EXTENSIONS = (".jpg", ".jpeg", ".png", ".webp", ".bmp")


def image_cell_to_array(cell: Any, where: str) -> np.ndarray:
    """A ``datasets`` Image cell (``{"bytes", "path"}``, or a PIL image) as ``(H, W, 3)`` uint8.

    Bytes go through :func:`prh.imageio.decode_image` (size limit read from the header before any
    pixel is decoded, EXIF orientation, alpha on white), like every other image prh reads.

    Raises
    ------
    InputError
        A cell that is no image, or any refusal of the decoder, naming ``where`` (data set, row).
    """
    import io

    if isinstance(cell, dict) and cell.get("bytes") is not None:
        data = cell["bytes"]
    elif isinstance(cell, dict) and cell.get("path"):
        return read_image(cell["path"])  # a data set that stores file paths
    elif hasattr(cell, "save") and hasattr(cell, "width"):  # an already decoded PIL image
        buf = io.BytesIO()
        cell.save(buf, format="PNG")
        data = buf.getvalue()
    else:
        raise InputError(f"{where}: expected an image, got {type(cell).__name__}")
    try:
        return decode_image(data, FILE_LIMITS)
    except InputError as e:
        raise InputError(f"{where}: {e}") from None


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
