"""A caption corpus with its photos: every image id resolved to one file, checked before use.

Layouts (the corpus spec is a path; its image folder is found from it):

- ``coco``: a COCO-layout folder, ``annotations/captions_<name>.json`` with the photos of each in
  ``<name>/`` (COCO 2017: ``train2017/``, ``val2017/``; ``prh world export --format coco``
  writes ``train/`` and ``test/``), or one such ``captions_<name>.json`` whose photos are in
  ``<name>/`` beside its folder or beside it; each JSON's ``images`` give the file names.
- ``flickr``: a token file (``img.jpg#i<TAB>caption``) and, beside it, the folder holding its
  images (Flickr8k's ``Flicker8k_Dataset/``, Flickr30k's ``flickr30k-images/``).
- ``jsonl``: one image a line, ``{"image": path, "captions": [...]}`` (an optional
  ``"split"``), paths relative to the file's folder.
- ``hf``: a Hugging Face ``save_to_disk`` folder with one ``Image`` column (the photo, stored in
  the dataset: :class:`DatasetImage`), a caption column (a list of captions, or one a row) and
  an id column (``filename``, ``img_id``, ...; see :mod:`prh.data.loaders`); its splits are a
  ``DatasetDict``'s keys or a ``split`` column. A row whose image repeats an earlier row's id (a
  table of one caption a row) adds captions, not a photo.

Refused, each in one line naming the file and the row: an image listed twice, a missing image
file, a caption whose image is not listed, an empty caption, an image in two splits, a
captions-only corpus (no image folder beside it).

Layer: orchestration (these functions read the corpus's files; the pixels are read on demand).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from prh.data.corpus import CaptionCorpus
from prh.data.loaders import (
    coco_caption_files,
    detect_format,
    flickr_image_name,
    hf_parts,
    load_corpus,
    media_columns,
    read_corpus_json,
    table_rows,
)
from prh.errors import InputError
from prh.jsonio import loads

IMAGE_FORMATS = ("coco", "flickr", "jsonl", "hf")


@dataclass(frozen=True)
class DatasetImage:
    """A photo stored in a Hugging Face dataset: row ``row`` of part ``split`` (``None``: a
    single ``Dataset``) of the ``save_to_disk`` folder ``folder``, column ``column``."""

    folder: Path
    split: str | None
    row: int
    column: str

    def __str__(self) -> str:
        part = "" if self.split is None else f" split {self.split}"
        return f"{self.folder}{part} row {self.row} column {self.column!r}"


@dataclass(frozen=True)
class Listed:
    """Where one image is listed: ``where`` (file and row), its corpus id, its file (or its
    row of a dataset)."""

    where: str
    image_id: str
    file: Path | DatasetImage


@dataclass(frozen=True, eq=False)
class ImageCorpus:
    """A :class:`CaptionCorpus` whose image ``j`` is the photo ``files[j]``.

    Attributes
    ----------
    corpus : CaptionCorpus
        Image ids, captions, splits (disjoint).
    files : tuple of Path or DatasetImage
        ``files[j]`` is the photo of ``corpus.image_ids[j]`` (each file exists; a dataset's
        rows are read by :func:`read_photo`).
    spec : str
        The path the corpus was loaded from.
    format : str
        One of :data:`IMAGE_FORMATS`.
    """

    corpus: CaptionCorpus
    files: tuple[Path | DatasetImage, ...]
    spec: str
    format: str


def load_image_corpus(spec: str | os.PathLike[str]) -> ImageCorpus:
    """Load a caption corpus with its images (layouts in the module docstring).

    Raises
    ------
    InputError
        Any problem of the module docstring's list, in one line naming the file and row.
    """
    p = Path(spec)
    if not p.exists():
        raise InputError(f"--corpus {p}: no such file or folder")
    fmt = detect_format(p)
    if fmt not in IMAGE_FORMATS:
        raise InputError(
            f"--corpus {p}: a {fmt} corpus names no image files; a corpus with images is a "
            "COCO folder or captions_*.json, a Flickr token file, a JSONL of "
            '{"image": path, "captions": [...]} or a Hugging Face dataset folder with an Image '
            "column"
        )
    listed = {"coco": _coco_listed, "flickr": _flickr_listed, "jsonl": _jsonl_listed,
              "hf": _hf_listed}[fmt](p)  # fmt: skip
    corpus = load_corpus(p, fmt)  # empty captions, captions of unlisted images: one line each
    check_disjoint_splits(corpus, p)
    return ImageCorpus(corpus, image_files(corpus, listed, p), str(p), fmt)


def listed_once(rows: list[Listed]) -> dict[str, Listed]:
    """``rows`` by image id; an id listed twice is refused, naming both rows."""
    out: dict[str, Listed] = {}
    for row in rows:
        first = out.setdefault(row.image_id, row)
        if first is not row:
            raise InputError(
                f"{row.where}: image {row.image_id!r} listed twice (first at {first.where})"
            )
    return out


def image_files(corpus: CaptionCorpus, listed: dict[str, Listed], p: Path) -> tuple[Path, ...]:
    """The file of every image of ``corpus``; a captioned image not listed, or a listed file
    that is missing, is refused."""
    files = []
    for image in corpus.image_ids:
        row = listed.get(image)
        if row is None:
            raise InputError(f"{p}: captions of image {image!r}, which no row lists")
        if isinstance(row.file, Path) and not row.file.is_file():
            raise InputError(f"{row.where}: image file {row.file} is missing")
        files.append(row.file)
    return tuple(files)


def check_disjoint_splits(corpus: CaptionCorpus, p: Path) -> None:
    """Refuse an image in two splits, naming it and both splits."""
    seen: dict[str, str] = {}
    for name, ids in corpus.splits.items():
        for image in ids:
            other = seen.setdefault(image, name)
            if other != name:
                raise InputError(
                    f"{p}: image {image!r} is in split {other!r} and in split {name!r}; "
                    "splits must not overlap"
                )


def coco_image_folder(captions: Path, root: Path | None = None) -> Path:
    """Where a COCO caption file's photos are: ``<name>/`` (``captions_<name>.json``) under
    ``root`` (a COCO-layout folder), else beside the file's folder, else beside the file; the
    file's own folder when there is no such ``<name>/``."""
    stem = captions.stem
    name = stem[len("captions_") :] if stem.startswith("captions_") else stem
    bases = [root] if root is not None else [captions.parent.parent, captions.parent]
    for base in bases:
        if (base / name).is_dir():
            return base / name
    return captions.parent


def _coco_listed(p: Path) -> dict[str, Listed]:
    files = coco_caption_files(p) if p.is_dir() else [p]
    rows: list[Listed] = []
    for f in files:
        folder = coco_image_folder(f, p if p.is_dir() else None)
        data = read_corpus_json(f, "COCO JSON")
        images = data.get("images") if isinstance(data, dict) else None
        if not isinstance(images, list):
            raise InputError(f"{f}: no list 'images' of {{id, file_name}}; it names the photos")
        ids: dict[object, int] = {}
        for j, img in enumerate(images):
            ok = isinstance(img, dict) and isinstance(img.get("file_name"), str)
            if not ok or not isinstance(img.get("id"), int | str):
                raise InputError(f"{f} image {j}: expected an 'id' and a 'file_name'")
            k = ids.setdefault(img["id"], j)
            if k != j:
                raise InputError(f"{f} image {j}: id {img.get('id')!r} listed twice (first at "
                                 f"image {k})")  # fmt: skip
            rows.append(Listed(f"{f} image {j}", img["file_name"], folder / img["file_name"]))
    return listed_once(rows)


def flickr_folder(p: Path, first: str) -> Path:
    """The folder beside a Flickr token file that holds its first image ``first``."""
    for d in [p.parent, *sorted(c for c in p.parent.iterdir() if c.is_dir())]:
        if (d / first).is_file():
            return d
    raise InputError(
        f"--corpus {p}: no folder beside it holds its images (looked for {first!r}); a "
        "captions-only corpus trains text runs, captioning needs the photos"
    )


def _flickr_listed(p: Path) -> dict[str, Listed]:
    keys: dict[str, int] = {}
    rows: dict[str, Listed] = {}
    folder = None
    with open(p, encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            if "\t" not in line:
                continue  # a malformed line: load_corpus names it
            key = line.split("\t", 1)[0].strip()
            first = keys.setdefault(key, n)
            if first != n:
                raise InputError(f"{p} line {n}: {key!r} listed twice (first on line {first})")
            image = flickr_image_name(key)
            folder = folder or flickr_folder(p, image)
            rows.setdefault(image, Listed(f"{p} line {n}", image, folder / image))
    return rows


def _jsonl_listed(p: Path) -> dict[str, Listed]:
    rows: list[Listed] = []
    with open(p, encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = loads(line, f"{p} line {n}")
            except ValueError:
                continue  # malformed: load_corpus names the line
            image = rec.get("image") if isinstance(rec, dict) else None
            if not isinstance(image, str) or not image.strip():
                raise InputError(f"{p} line {n}: expected 'image' (a path to the photo)")
            rows.append(Listed(f"{p} line {n}", image.strip(), p.parent / image.strip()))
    return listed_once(rows)


def _hf_listed(p: Path) -> dict[str, Listed]:
    """Every image id of a dataset folder, at the first row that names it (the rows and ids of
    :func:`prh.data.loaders.table_rows`, as :func:`load_corpus` reads them)."""
    rows: dict[str, Listed] = {}
    for name, d in hf_parts(p).items():
        media = sorted(c for c, f in d.features.items() if type(f).__name__ == "Image")
        part = "" if name is None else f" split {name}"
        if len(media) != 1:
            raise InputError(f"{p}{part}: expected one Image column (the photos), got "
                             f"{media or 'none'} among {list(d.column_names)}")  # fmt: skip
        cols = list(d.column_names)
        for j, (_, image, _, _) in enumerate(
            table_rows(cols, lambda c, d=d: d[c], len(d), p, name, media_columns(d))
        ):
            where = f"{p}{part} row {j}"
            rows.setdefault(
                str(image), Listed(where, str(image), DatasetImage(p, name, j, media[0]))
            )
    return rows


@functools.lru_cache(maxsize=4)
def _undecoded(folder: Path, split: str | None, column: str):
    """Part ``split`` of ``folder`` with ``column`` left as stored bytes (memory-mapped)."""
    from datasets import Image

    return hf_parts(folder)[split].cast_column(column, Image(decode=False))


def read_photo(source: Path | DatasetImage, limits) -> np.ndarray:
    """The ``(H, W, 3)`` uint8 photo of a corpus image (a file, or a dataset row's stored bytes
    or path), through :func:`prh.imageio.decode_image`'s limits.

    Raises
    ------
    InputError
        An unreadable photo or an empty row, naming the file or the row.
    """
    from prh.imageio import decode_image, read_image

    if isinstance(source, Path):
        return read_image(source, limits)
    cell = _undecoded(source.folder, source.split, source.column)[source.row][source.column]
    data = (cell or {}).get("bytes")
    if data is None and (cell or {}).get("path"):
        return read_image(Path(cell["path"]), limits)
    if data is None:
        raise InputError(f"{source}: no image stored in this row")
    try:
        return decode_image(data, limits)
    except InputError as e:
        raise InputError(f"{source}: {e}") from None


__all__ = [
    "IMAGE_FORMATS",
    "DatasetImage",
    "ImageCorpus",
    "check_disjoint_splits",
    "coco_image_folder",
    "load_image_corpus",
    "read_photo",
]
