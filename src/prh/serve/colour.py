"""A model-free captioner: the image's mean colour, named by the nearest of a fixed palette.

It is the control that lets the server, its tests and its load test run without a trained run: it
computes something real from every pixel (so a test can tell a red upload from a blue one), answers
in microseconds (so a load test measures the server, not a model) and has the same interface as
``prh.caption.Captioner``. ``prh serve --captioner colour`` uses it; it is never the default.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from prh.errors import InputError

# Named sRGB colours (CSS names); one caption each.
PALETTE: dict[str, tuple[int, int, int]] = {
    "black": (0, 0, 0),
    "white": (255, 255, 255),
    "grey": (128, 128, 128),
    "red": (220, 20, 60),
    "orange": (255, 140, 0),
    "yellow": (255, 215, 0),
    "green": (34, 139, 34),
    "teal": (0, 128, 128),
    "blue": (30, 60, 220),
    "purple": (128, 0, 128),
    "pink": (255, 105, 180),
    "brown": (139, 69, 19),
}


@dataclass(frozen=True)
class ColourCaption:
    """Same fields as ``prh.caption.CaptionResult``.

    Attributes
    ----------
    caption : str
        The best caption.
    nearest : list of (str, float)
        The ``k`` best captions with their scores, best first.
    seconds : float
        Wall time of the call.
    """

    caption: str
    nearest: list[tuple[str, float]]
    seconds: float


class ColourCaptioner:
    """Caption an image by its mean colour.

    The score of palette colour ``c`` for an image with mean colour ``m`` (both in [0, 255]^3) is
    ``1 - ||m - c||_2 / (255 sqrt(3))``, in [0, 1]; higher is closer.

    Parameters
    ----------
    k : int
        How many nearest captions to return.
    """

    def __init__(self, k: int = 5) -> None:
        if k < 1:
            raise InputError(f"k must be >= 1, got {k}")
        self.k = k
        self.names_ = list(PALETTE)
        self.colours_ = np.array([PALETTE[n] for n in self.names_], dtype=np.float64)  # (C, 3)
        self.captions_ = [f"a mostly {n} picture" for n in self.names_]

    def caption(self, image: np.ndarray) -> ColourCaption:
        """Caption one ``(H, W, 3)`` uint8 RGB image."""
        t0 = time.perf_counter()
        if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
            raise InputError(f"expected an (H, W, 3) uint8 image, got {image.shape} {image.dtype}")
        mean = image.reshape(-1, 3).astype(np.float64).mean(axis=0)  # (3,)
        dist = np.linalg.norm(self.colours_ - mean, axis=1)  # (C,)
        score = 1.0 - dist / (255.0 * np.sqrt(3.0))  # (C,)
        order = np.argsort(-score, kind="stable")[: self.k]
        nearest = [(self.captions_[i], float(score[i])) for i in order]
        return ColourCaption(nearest[0][0], nearest, time.perf_counter() - t0)
