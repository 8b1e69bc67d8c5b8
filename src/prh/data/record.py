"""What a run trained on, recorded: a caption corpus's path, format, split, size and sha256.

:func:`corpus_record` is what a corpus run stores in its ``config.json`` (``"corpus"``), so that
the run names the exact bytes it read (a world run needs none: its seed regenerates its data).

Layer: orchestration (reads the corpus's files).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from prh.data.corpus import CaptionCorpus
from prh.data.loaders import coco_caption_files, detect_format

# Beside a Flickr token file, the split lists that :func:`prh.data.load_corpus` reads.
FLICKR_SPLIT_GLOBS = ("*trainImages.txt", "*devImages.txt", "*testImages.txt")


def corpus_files(path: str | os.PathLike[str], fmt: str) -> list[Path]:
    """The files that make up a corpus as :func:`prh.data.load_corpus` reads it, sorted: every
    file under a folder (``hf``, ``parquet``), the caption files of a COCO-layout folder (not its
    images); a Flickr token file with its split lists."""
    p = Path(path)
    if p.is_dir() and fmt == "coco":
        return coco_caption_files(p)
    if p.is_dir():
        return sorted(f for f in p.rglob("*") if f.is_file())
    files = [p]
    if fmt == "flickr":
        for pattern in FLICKR_SPLIT_GLOBS:
            found = sorted(p.parent.glob(pattern))
            files += found[:1]  # the loader reads the first match of each
    return files


def file_sha256(path: Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes, read ``chunk`` bytes at a time."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def corpus_digest(path: str | os.PathLike[str], fmt: str) -> tuple[str, dict[str, str]]:
    """``(sha256, {file: sha256})``: one digest over every file of the corpus (its name relative
    to the corpus and its own digest, in order) and each file's."""
    p = Path(path)
    root = p if p.is_dir() else p.parent
    files = {str(f.relative_to(root)): file_sha256(f) for f in corpus_files(p, fmt)}
    total = hashlib.sha256()
    for name, digest in files.items():
        total.update(f"{name}\0{digest}\n".encode())
    return total.hexdigest(), files


def corpus_record(
    path: str | os.PathLike[str], fmt: str | None, split: str | None, corpus: CaptionCorpus
) -> dict[str, Any]:
    """The record of a corpus run: ``{"path", "format", "split", "images", "captions",
    "sha256", "files"}`` (``split`` None: every image, recorded as ``"all"``; ``corpus``: the
    images trained on, for the counts)."""
    fmt = fmt or detect_format(path)
    sha, files = corpus_digest(path, fmt)
    return {
        "path": str(path),
        "format": fmt,
        "split": split or "all",
        "images": len(corpus),
        "captions": corpus.num_captions,
        "sha256": sha,
        "files": files,
    }
