"""Loaders of real caption corpora into one :class:`~prh.data.CaptionCorpus`.

Formats (``format=`` names; detected from the path when omitted):

- ``coco``: COCO caption annotations JSON, ``{"images": [{"id", "file_name"}], "annotations":
  [{"image_id", "caption"}]}`` (image ids are file names when ``images`` lists them), or a
  COCO-layout folder whose ``annotations/captions_<name>.json`` files are its splits (``<name>``
  without trailing digits: ``captions_train2017.json`` is split ``train``; an image in two of them
  is refused).
- ``karpathy``: Karpathy split JSON,
  ``{"images": [{"filename", "split", "sentences": [{"raw"}]}]}``;
  splits ``train`` (``restval`` included), ``val``, ``test``.
- ``flickr``: Flickr8k/Flickr30k token files, ``img.jpg#i<TAB>caption``. Split files named
  ``*trainImages.txt``, ``*devImages.txt``, ``*testImages.txt`` beside it become splits ``train``,
  ``val``, ``test``. A known defect of the Flickr8k file, an image named ``x.jpg.1``, is read as
  ``x.jpg``.
- ``csv``: a header row and an image column (``image``, ``image_name``, ``filename``, ...) and a
  caption column (``caption``, ``comment``, ``raw``, ...), delimiter ``,``, ``|``, tab or ``;``;
  a caption cell may be a JSON list (the Hugging Face Flickr30k CSV); an optional ``split`` column.
- ``jsonl``: one object a line, ``{"image", "caption"}`` or ``{"image", "captions": [...]}``, an
  optional ``"split"`` (``{"scene", "captions"}`` lines of ``prh world sample`` read as
  ``scene_{i}``).
- ``hf``: a Hugging Face ``datasets`` folder written by ``save_to_disk`` (a ``DatasetDict``'s keys
  become splits).
- ``parquet``: a ``.parquet`` file or a folder of them, with the same column names as ``csv``.

Every problem is an :class:`~prh.errors.InputError` naming the file and the line or row: invalid
UTF-8, malformed JSON, missing columns, empty captions, images with too few captions
(``min_captions``, ``on_few``).

Layer: orchestration (these functions alone read files).
"""

from __future__ import annotations

import csv
import itertools
import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from prh.data.corpus import CaptionCorpus
from prh.errors import InputError
from prh.jsonio import loads

FORMATS = ("coco", "karpathy", "flickr", "csv", "jsonl", "hf", "parquet")
ID_COLUMNS = (
    "image",
    "image_id",
    "image_name",
    "filename",
    "file_name",
    "img_id",
    "imgid",
    "cocoid",
    "id",
)
CAPTION_COLUMNS = ("captions", "caption", "sentences", "raw", "sentences_raw", "comment", "text")
# Line formats are streamed one line at a time and no line may exceed MAX_LINE_BYTES (a caption
# row is a few hundred bytes; /dev/zero or a binary file has no line break at all). Whole-file
# JSON formats (COCO, Karpathy: ~100-150 MB for COCO) are read up to MAX_JSON_BYTES.
MAX_LINE_BYTES = 1 << 20
MAX_JSON_BYTES = 1 << 30
_FLICKR_DUP = re.compile(r"^(.+\.(?:jpg|jpeg|png))\.\d+$", re.IGNORECASE)
COCO_CAPTIONS = "captions_*.json"  # a COCO-layout folder's caption files, under annotations/

Row = tuple[int, str, object, "str | None"]  # (line or row number, image id, captions, split)


# ---------------------------------------------------------------------------------------------
def load_corpus(
    path: str | os.PathLike[str],
    format: str | None = None,
    *,
    min_captions: int = 2,
    on_few: str = "error",
) -> CaptionCorpus:
    """Load a caption corpus.

    Parameters
    ----------
    path : path-like
        A file or a folder (see the module docstring for formats).
    format : str, optional
        One of :data:`FORMATS`; detected from the path when omitted.
    min_captions : int
        Images with fewer captions are reported (2 are needed for good views).
    on_few : {"error", "drop", "keep"}
        What to do with such images: fail with one line saying how many, drop them, keep them.

    Returns
    -------
    CaptionCorpus
        Images in file order, captions stripped of surrounding whitespace.
    """
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file or folder")
    fmt = format or detect_format(p)
    if fmt not in FORMATS:
        raise InputError(f"{p}: unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    reader = {
        "coco": _read_coco,
        "karpathy": _read_karpathy,
        "flickr": _read_flickr,
        "csv": _read_csv,
        "jsonl": _read_jsonl,
        "hf": _read_hf,
        "parquet": _read_parquet,
    }[fmt]
    rows, splits = reader(p)
    corpus = _assemble(rows, p, splits)
    if len(corpus) == 0:
        raise InputError(f"{p}: no captions found (format {fmt})")
    return corpus.with_min_captions(min_captions, on_few)


def detect_format(path: str | os.PathLike[str]) -> str:
    """Guess the format of ``path`` from its name and first bytes; :class:`InputError` if unsure."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file or folder")
    if p.is_dir():
        if coco_caption_files(p):
            return "coco"
        if (p / "dataset_dict.json").is_file() or (p / "state.json").is_file():
            return "hf"
        if any(p.glob("*.parquet")):
            return "parquet"
        raise InputError(f"{p}: folder is neither a saved Hugging Face dataset nor parquet files")
    suffix = p.suffix.lower()
    if suffix == ".parquet":
        return "parquet"
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".csv":
        return "csv"
    head = _read_text(p, limit=4096)
    if suffix == ".json":
        if '"annotations"' in head or '"file_name"' in head:  # COCO lists its images first
            return "coco"
        if '"sentences"' in head:
            return "karpathy"
        if head.lstrip().startswith("{") and "\n{" in head:
            return "jsonl"
        raise InputError(f"{p}: JSON is neither COCO annotations nor a Karpathy split file")
    first = head.split("\n", 1)[0]
    if "#" in first and "\t" in first:
        return "flickr"
    if first.lstrip().startswith("{"):
        return "jsonl"
    raise InputError(f"{p}: cannot detect the format; pass one of {', '.join(FORMATS)}")


def coco_caption_files(folder: str | os.PathLike[str]) -> list[Path]:
    """The caption files of a COCO-layout folder, ``annotations/captions_*.json``, sorted (none
    for a file or a folder of another layout)."""
    return sorted((Path(folder) / "annotations").glob(COCO_CAPTIONS))


def coco_split_name(path: str | os.PathLike[str]) -> str:
    """The split a COCO caption file names: ``captions_train2017.json`` -> ``train``."""
    stem = Path(path).stem
    name = stem[len("captions_") :] if stem.startswith("captions_") else stem
    return re.sub(r"\d+$", "", name) or name


def flickr_image_name(key: str) -> str:
    """The image of a Flickr token key ``img.jpg#i`` (a Flickr8k defect, ``x.jpg.1``, is
    ``x.jpg``)."""
    image = key.rsplit("#", 1)[0].strip()
    m = _FLICKR_DUP.match(image)
    return m.group(1) if m else image


def read_split_file(path: str | os.PathLike[str]) -> list[str]:
    """Image names, one a line (Flickr ``*Images.txt``); blank lines skipped."""
    return [ln.strip() for _, ln in _lines(Path(path), "split") if ln.strip()]


# ---------------------------------------------------------------------------------------------
def _need_file(p: Path, what: str) -> None:
    if p.is_dir():
        raise InputError(f"{p}: is a folder, expected a {what} file")


def _decode(data: bytes, p: Path, line: int) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line += data[: e.start].count(b"\n")
        raise InputError(f"{p} line {line}: invalid UTF-8 (byte 0x{data[e.start]:02x})") from None


def _lines(p: Path, what: str, keepends: bool = False) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of ``p``, streamed: strict UTF-8, each line at most
    :data:`MAX_LINE_BYTES` (an over-long line is one :class:`InputError` naming file and line)."""
    _need_file(p, what)
    try:
        f = open(p, "rb")
    except OSError as e:
        raise InputError(f"{p}: cannot read ({e.strerror})") from None
    with f:
        n = 0
        while True:
            try:
                raw = f.readline(MAX_LINE_BYTES + 1)
            except OSError as e:
                raise InputError(f"{p} line {n + 1}: cannot read ({e.strerror})") from None
            if not raw:
                return
            n += 1
            if len(raw) > MAX_LINE_BYTES:
                raise InputError(
                    f"{p} line {n}: longer than the limit of {MAX_LINE_BYTES:,} bytes "
                    f"(is this a {what} file?)"
                )
            if n == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]  # a UTF-8 byte-order mark
            text = _decode(raw, p, n)
            yield n, (text if keepends else text.rstrip("\r\n"))


def _read_text(p: Path, limit: int | None = None, what: str = "corpus") -> str:
    """Strict UTF-8 text of ``p``: its first ``limit`` bytes, or the whole file up to
    :data:`MAX_JSON_BYTES`; invalid bytes raise with the line number."""
    _need_file(p, what)
    cap = MAX_JSON_BYTES if limit is None else limit
    try:
        with open(p, "rb") as f:
            data = f.read(cap + 1 if limit is None else cap)
    except OSError as e:
        raise InputError(f"{p}: cannot read ({e.strerror})") from None
    if limit is None and len(data) > cap:
        raise InputError(f"{p}: larger than the limit of {cap:,} bytes for a {what} file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        if limit is not None and e.start >= len(data) - 4:
            return data[: e.start].decode("utf-8-sig")  # a character cut by the limit
        line = data[: e.start].count(b"\n") + 1
        raise InputError(f"{p} line {line}: invalid UTF-8 (byte 0x{data[e.start]:02x})") from None


def _captions_of(value: object, where: str) -> list[str]:
    """Captions from a cell: a string, a JSON-list string, a list of strings or of ``{"raw"}``."""
    if isinstance(value, str):
        s = value.strip()
        if s.startswith("[") and s.endswith("]"):
            try:
                parsed = loads(s, "a list cell")
            except ValueError:
                parsed = None
            if isinstance(parsed, list):
                return _captions_of(parsed, where)
        return [value]
    if isinstance(value, dict) and "raw" in value:
        return _captions_of(value["raw"], where)
    if hasattr(value, "tolist") and not isinstance(value, str):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        out: list[str] = []
        for v in value:
            out.extend(_captions_of(v, where))
        return out
    raise InputError(
        f"{where}: expected a caption string or a list of them, got {type(value).__name__}"
    )


def _assemble(rows: Iterable[Row], p: Path, splits: dict[str, list[str]]) -> CaptionCorpus:
    groups: dict[str, list[str]] = {}
    split_of: dict[str, list[str]] = {k: list(v) for k, v in splits.items()}
    for where, image, value, split in rows:
        image = str(image).strip()
        loc = f"{p} {where}"
        if not image:
            raise InputError(f"{loc}: empty image id")
        caps = _captions_of(value, loc)
        for c in caps:
            if not isinstance(c, str):
                raise InputError(f"{loc}: caption is {type(c).__name__}, expected text")
            if not c.strip():
                raise InputError(f"{loc}: empty caption for image {image!r}")
        if image not in groups:
            groups[image] = []
            if split:
                split_of.setdefault(split, []).append(image)
        groups[image].extend(c.strip() for c in caps)
    return CaptionCorpus(list(groups), list(groups.values()), split_of, str(p))


def read_corpus_json(p: Path, what: str) -> object:
    """The JSON value of a corpus file (up to :data:`MAX_JSON_BYTES`: COCO 2017's train captions
    are 91 MB); one line naming the file and line for anything else."""
    head = _read_text(p, limit=64, what=what).lstrip()
    if head and head[0] not in "{[":
        raise InputError(f"{p}: not JSON (starts with {head[0]!r}); expected a {what} file")
    text = _read_text(p, what=what)
    try:
        return loads(text, p, max_bytes=MAX_JSON_BYTES)
    except json.JSONDecodeError as e:
        raise InputError(f"{p} line {e.lineno}: malformed JSON ({e.msg})") from None


def _read_coco_folder(p: Path) -> tuple[Iterator[Row], dict]:
    """Every ``annotations/captions_<name>.json`` of a COCO-layout folder, as split ``<name>``
    (:func:`coco_split_name`); an image in two files is refused, naming both."""
    files = coco_caption_files(p)
    if not files:
        raise InputError(
            f"{p}: is a folder, expected a COCO JSON file or a COCO-layout "
            f"folder (annotations/{COCO_CAPTIONS})"
        )

    def rows() -> Iterator[Row]:
        seen: dict[str, Path] = {}
        for f in files:
            split = coco_split_name(f)
            inner, _ = _read_coco(f)
            for where, image, caps, _ in inner:
                first = seen.setdefault(image, f)
                if first != f:
                    raise InputError(
                        f"{f} {where}: image {image!r} is also in {first.name}; the splits "
                        f"{coco_split_name(first)!r} and {split!r} overlap"
                    )
                yield f"{f.relative_to(p)} {where}", image, caps, split

    return rows(), {}


def _read_coco(p: Path) -> tuple[Iterator[Row], dict]:
    if p.is_dir():
        return _read_coco_folder(p)
    data = read_corpus_json(p, "COCO JSON")
    if not isinstance(data, dict) or not isinstance(data.get("annotations"), list):
        raise InputError(f"{p}: COCO JSON needs a list 'annotations' of {{image_id, caption}}")
    images = data.get("images")
    names: dict[object, str] | None = None
    if images is not None:
        if not isinstance(images, list):
            raise InputError(f"{p}: COCO 'images' must be a list of {{id, file_name}}")
        names = {}
        for j, img in enumerate(images):
            if not isinstance(img, dict) or not _is_id(img.get("id")):
                raise InputError(f"{p} image {j}: expected an 'id' (a number or a string)")
            names[img["id"]] = str(img.get("file_name", img["id"]))

    def rows() -> Iterator[Row]:
        for j, a in enumerate(data["annotations"]):
            if not isinstance(a, dict) or "image_id" not in a or "caption" not in a:
                raise InputError(f"{p} annotation {j}: expected keys 'image_id' and 'caption'")
            image_id = a["image_id"]
            if not _is_id(image_id):
                raise InputError(
                    f"{p} annotation {j}: image_id must be a number or a string, "
                    f"got {type(image_id).__name__}"
                )
            if names is not None and image_id not in names:
                raise InputError(
                    f"{p} annotation {j}: image_id {image_id!r} has no entry in 'images'"
                )
            yield f"annotation {j}", names[image_id] if names else str(image_id), a["caption"], None

    return rows(), {}


def _is_id(value: object) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def _read_karpathy(p: Path) -> tuple[Iterator[Row], dict]:
    data = read_corpus_json(p, "Karpathy JSON")
    if not isinstance(data, dict) or not isinstance(data.get("images"), list):
        raise InputError(f"{p}: Karpathy JSON needs a list 'images' of {{filename, sentences}}")

    def rows() -> Iterator[Row]:
        for j, img in enumerate(data["images"]):
            if not isinstance(img, dict) or "sentences" not in img:
                raise InputError(f"{p} image {j}: expected keys 'filename' and 'sentences'")
            image = img.get("filename", img.get("cocoid", img.get("imgid", j)))
            split = img.get("split")
            split = "train" if split == "restval" else split
            yield f"image {j}", str(image), img["sentences"], split

    return rows(), {}


def _read_flickr(p: Path) -> tuple[Iterator[Row], dict]:
    _need_file(p, "Flickr token")
    splits: dict[str, list[str]] = {}
    for name, key in (("train", "train"), ("dev", "val"), ("test", "test")):
        found = sorted(p.parent.glob(f"*{name}Images.txt"))
        if found:
            splits[key] = read_split_file(found[0])

    def rows() -> Iterator[Row]:
        for n, line in _lines(p, "Flickr token"):
            if not line.strip():
                continue
            if "\t" not in line or "#" not in line.split("\t", 1)[0]:
                raise InputError(
                    f"{p} line {n}: expected 'image.jpg#i<TAB>caption', got {line[:60]!r}"
                )
            key, cap = line.split("\t", 1)
            yield f"line {n}", flickr_image_name(key), cap, None

    return rows(), splits


def _pick(
    columns: list[str], wanted: tuple[str, ...], p: Path, what: str, skip: set[str] = frozenset()
) -> str:
    lower = {c.lower().strip(): c for c in columns if c not in skip}
    for w in wanted:
        if w in lower:
            return lower[w]
    raise InputError(
        f"{p}: no {what} column; expected one of {', '.join(wanted)}, got {', '.join(columns)}"
    )


def _read_csv(p: Path) -> tuple[Iterator[Row], dict]:
    lines = (text for _, text in _lines(p, "CSV", keepends=True))
    first = next(lines, "")
    delim = max(",|\t;", key=first.count)
    reader = csv.DictReader(itertools.chain([first], lines), delimiter=delim, skipinitialspace=True)
    try:
        columns = [c for c in (reader.fieldnames or [])]
    except csv.Error as e:
        raise InputError(f"{p} line 1: malformed CSV ({e})") from None
    if not columns:
        raise InputError(f"{p}: empty CSV (no header row)")
    cap_col = _pick(columns, CAPTION_COLUMNS, p, "caption")
    id_col = _pick(columns, ID_COLUMNS, p, "image id", skip={cap_col})
    split_col = next((c for c in columns if c.strip().lower() == "split"), None)

    def rows() -> Iterator[Row]:
        records = iter(reader)
        while True:
            try:
                rec = next(records)
            except StopIteration:
                return
            except csv.Error as e:
                raise InputError(f"{p} line {reader.line_num + 1}: malformed CSV ({e})") from None
            n = reader.line_num
            cap, image = rec.get(cap_col), rec.get(id_col)
            if cap is None or image is None:
                raise InputError(f"{p} line {n}: expected {len(columns)} fields")
            yield f"line {n}", image, cap, (rec.get(split_col) or None) if split_col else None

    return rows(), {}


def _read_jsonl(p: Path) -> tuple[Iterator[Row], dict]:
    _need_file(p, "JSONL")

    def rows() -> Iterator[Row]:
        for n, line in _lines(p, "JSONL"):
            if not line.strip():
                continue
            try:
                rec = loads(line, f"{p} line {n}")
            except json.JSONDecodeError as e:
                raise InputError(f"{p} line {n}: malformed JSON ({e.msg})") from None
            if isinstance(rec, dict) and "image" not in rec and "scene" in rec:
                rec["image"] = f"scene_{rec['scene']}"  # ``prh world sample``'s captions.jsonl
            if (
                not isinstance(rec, dict)
                or "image" not in rec
                or not ("caption" in rec or "captions" in rec)
            ):
                raise InputError(f"{p} line {n}: expected keys 'image' and 'caption' or 'captions'")
            value = rec["captions"] if "captions" in rec else rec["caption"]
            yield f"line {n}", rec["image"], value, rec.get("split")

    return rows(), {}


def table_rows(
    columns: list[str], get_column, n_rows: int, p: Path, split: str | None, skip: set[str]
) -> Iterator[Row]:
    """``(where, image id, captions, split)`` of each row of a table (a Hugging Face dataset, a
    parquet file): the first caption and image-id columns of :data:`CAPTION_COLUMNS` and
    :data:`ID_COLUMNS` not in ``skip`` (no id column: ``row_<j>``, one image a row)."""
    cap_col = _pick(columns, CAPTION_COLUMNS, p, "caption", skip=skip)
    try:
        id_col = _pick(columns, ID_COLUMNS, p, "image id", skip=skip | {cap_col})
        ids = [str(x) for x in get_column(id_col)]
    except InputError:
        ids = [f"row_{j}" for j in range(n_rows)]  # one image per row when no id column
    caps = get_column(cap_col)
    split_col = next((c for c in columns if c.lower() == "split" and c not in skip), None)
    splits = get_column(split_col) if split_col else [split] * n_rows
    for j in range(n_rows):
        yield f"row {j}", ids[j], caps[j], splits[j]


def media_columns(d: Any) -> set[str]:
    """The columns of a Hugging Face dataset ``d`` that hold images or audio (never captions)."""
    return {c for c, f in d.features.items() if type(f).__name__ in ("Image", "Audio")}


def hf_parts(p: Path) -> dict[str | None, Any]:
    """The parts of the ``save_to_disk`` folder ``p``: a ``DatasetDict``'s by split name, else
    ``{None: dataset}`` (memory-mapped; nothing decoded)."""
    try:
        import datasets
    except ImportError:
        raise InputError(
            f"{p}: reading Hugging Face datasets needs `pip install datasets`"
        ) from None
    if not p.is_dir():
        raise InputError(f"{p}: is a file, expected a Hugging Face dataset folder (save_to_disk)")
    try:
        ds = datasets.load_from_disk(str(p))
    except Exception as e:  # datasets raises several unrelated types for a bad folder
        raise InputError(
            f"{p}: not a saved Hugging Face dataset ({type(e).__name__}: {e})"
        ) from None
    return dict(ds.items()) if isinstance(ds, datasets.DatasetDict) else {None: ds}


def _read_hf(p: Path) -> tuple[Iterator[Row], dict]:
    parts = hf_parts(p)

    def rows() -> Iterator[Row]:
        for name, d in parts.items():
            skip = media_columns(d)
            yield from table_rows(list(d.column_names), lambda c, d=d: d[c], len(d), p, name, skip)

    return rows(), {}


def _read_parquet(p: Path) -> tuple[Iterator[Row], dict]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(f"{p}: reading parquet needs `pip install pyarrow`") from None
    files = sorted(p.glob("*.parquet")) if p.is_dir() else [p]

    def rows() -> Iterator[Row]:
        for f in files:
            try:
                table = pq.read_table(f)
            except (pa.ArrowInvalid, OSError) as e:
                raise InputError(f"{f}: not a parquet file ({e})") from None
            skip = {
                fld.name
                for fld in table.schema
                if pa.types.is_struct(fld.type) or pa.types.is_binary(fld.type)
            }
            yield from table_rows(
                table.column_names,
                lambda c, t=table: t.column(c).to_pylist(),
                table.num_rows,
                f,
                None,
                skip,
            )

    return rows(), {}
