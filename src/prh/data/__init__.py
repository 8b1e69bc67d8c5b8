"""Caption corpora: :class:`CaptionCorpus` and loaders for COCO, Flickr, CSV, JSONL, HF datasets.

See ``docs/world.md``. Public API: :class:`CaptionCorpus`, :func:`load_corpus`,
:func:`detect_format`, :data:`FORMATS`, :func:`read_split_file`.
"""

from prh.data.corpus import CaptionCorpus, corpus_from_pairs
from prh.data.loaders import FORMATS, detect_format, load_corpus, read_split_file

__all__ = [
    "FORMATS",
    "CaptionCorpus",
    "corpus_from_pairs",
    "detect_format",
    "load_corpus",
    "read_split_file",
]
