"""Finding the image file of an id, for ``prh embed --corpus --images`` (decoded by
:func:`prh.imageio.read_image`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from prh.errors import InputError
from prh.imageio import read_image

EXTENSIONS = (".jpg", ".jpeg", ".png", ".webp", ".bmp")


def read_image_for_id(folder: str | Path, image_id: str) -> np.ndarray:
    """The image of ``image_id``: ``folder/image_id``, else with a common extension added."""
    base = Path(folder)
    if not base.is_dir():
        raise InputError(f"--images {base}: no such folder")
    if Path(image_id).is_absolute() or ".." in Path(image_id).parts:
        raise InputError(f"image id {image_id!r}: must be a file name inside --images {base}")
    candidates = [base / image_id] + [base / f"{image_id}{ext}" for ext in EXTENSIONS]
    for c in candidates:
        if c.is_file():
            return read_image(c)
    raise InputError(f"--images {base}: no file for image id {image_id!r}")
