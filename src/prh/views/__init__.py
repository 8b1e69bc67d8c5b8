"""View samplers: tokenised text pairs (good, bad, next-token, mixture) and image pairs.

See ``docs/world.md``. Public API: :class:`TextTokenizer`, :func:`make_view_dataset`,
:class:`ViewDataset`, :class:`ViewConfig`, :class:`ImageViewDataset`, :class:`WorldCaptionSource`,
:class:`CorpusSource`, :func:`pair_statistics`, :func:`prefetch`.
"""

from prh.views.image import ImageViewDataset, crop_and_jitter
from prh.views.loader import prefetch
from prh.views.sources import CaptionSource, CorpusSource, WorldCaptionSource, as_source
from prh.views.text import (
    KINDS,
    ViewConfig,
    ViewDataset,
    distort,
    make_view_dataset,
    pair_statistics,
)
from prh.views.tokenizer import TextTokenizer

__all__ = [
    "KINDS",
    "CaptionSource",
    "CorpusSource",
    "ImageViewDataset",
    "TextTokenizer",
    "ViewConfig",
    "ViewDataset",
    "WorldCaptionSource",
    "as_source",
    "crop_and_jitter",
    "distort",
    "make_view_dataset",
    "pair_statistics",
    "prefetch",
]
