"""A Hugging Face ``datasets`` table as embedding input: images and captions, read in slices.

The PRH benchmark's data set is ``datasets.load_dataset("minhuh/prh", revision="wit_1024",
split="train")``: an ``image`` column (the ``Image`` feature, decoded to PIL) and a ``text``
column holding a list of captions per row, of which the reference's ``--caption_idx`` picks one.
:func:`open_hf_dataset` opens such a table from

- a folder written by ``Dataset.save_to_disk`` / ``DatasetDict.save_to_disk``, or
- a dataset name (``minhuh/prh``) through ``datasets.load_dataset``, which reads the local cache
  (``HF_DATASETS_CACHE`` or ``cache_dir``) and, when the hub is reachable and
  ``HF_DATASETS_OFFLINE`` is not set, downloads.

:class:`DatasetRows` then reads any slice ``[start, stop)`` of one column: the table stays a memory
mapped Arrow file, and only the images of the slice being embedded are decoded.

Layer: orchestration (this module alone opens the files).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from prh.errors import InputError

DEFAULT_SPLIT = "train"


@dataclass(frozen=True)
class DatasetSpec:
    """Which table and which cells.

    Attributes
    ----------
    source : str
        A ``save_to_disk`` folder or a dataset name (``minhuh/prh``).
    revision : str, optional
        Hub revision of a named dataset (``wit_1024``); not for a folder.
    split : str, optional
        Split of a ``DatasetDict`` or of a named dataset (default ``train``, or a folder's only
        split).
    image_column, text_column : str
        Column names of the images and of the captions.
    caption_index : int
        Which caption of a list-of-captions cell (a plain string cell is caption 0).
    cache_dir : str, optional
        ``datasets`` cache folder of a named dataset (default: ``HF_DATASETS_CACHE``).
    """

    source: str
    revision: str | None = None
    split: str | None = None
    image_column: str = "image"
    text_column: str = "text"
    caption_index: int = 0
    cache_dir: str | None = None

    def __post_init__(self) -> None:
        if not str(self.source).strip():
            raise InputError("--dataset: empty; expected a save_to_disk folder or a dataset name")
        if self.caption_index < 0:
            raise InputError(f"--caption-index {self.caption_index}: expected an integer >= 0")


def open_hf_dataset(spec: DatasetSpec):
    """Open the split ``spec`` names, without reading its rows.

    Returns
    -------
    dataset : datasets.Dataset
        Memory-mapped; nothing decoded yet.
    description : str
        ``source[@revision] split=...`` for feature-file metadata.

    Raises
    ------
    InputError
        A missing folder, a file, a folder that is no saved dataset, a name absent from the cache
        when offline, an unknown split (listing those available), in one line.
    """
    try:
        import datasets
    except ImportError:
        raise InputError("--dataset needs the package datasets (pip install datasets)") from None
    local = Path(spec.source).expanduser()
    looks_like_path = spec.source.startswith(("/", "./", "../", "~")) or local.exists()
    if looks_like_path:
        ds, split = _open_folder(local, spec, datasets)
        return ds, f"dataset:{local} split={split}"
    ds = _open_named(spec, datasets)
    at = f"@{spec.revision}" if spec.revision else ""
    commit = check_cached_revision(ds, spec)
    at += f" commit={commit}" if commit else ""
    return ds, f"dataset:{spec.source}{at} split={spec.split or DEFAULT_SPLIT}"


def _open_folder(local: Path, spec: DatasetSpec, datasets):
    if not local.exists():
        raise InputError(f"--dataset {local}: no such folder")
    if not local.is_dir():
        raise InputError(
            f"--dataset {local}: is a file; expected a folder written by save_to_disk"
            " or a dataset name in the local cache"
        )
    if not ((local / "dataset_dict.json").is_file() or (local / "state.json").is_file()):
        raise InputError(
            f"--dataset {local}: not a saved Hugging Face dataset (no dataset_dict.json or"
            " state.json)"
        )
    if spec.revision:
        raise InputError(f"--revision {spec.revision}: applies to a dataset name, not a folder")
    if spec.cache_dir:
        raise InputError(f"--cache-dir {spec.cache_dir}: applies to a dataset name, not a folder")
    try:
        ds = datasets.load_from_disk(str(local))
    except Exception as e:  # datasets raises several unrelated types for a damaged folder
        raise InputError(f"--dataset {local}: cannot be read ({_first_line(e)})") from None
    if isinstance(ds, datasets.DatasetDict):
        names = list(ds.keys())
        split = spec.split or (names[0] if len(names) == 1 else DEFAULT_SPLIT)
        if split not in ds:
            raise InputError(
                f"--dataset {local}: no split {split!r}; available: {', '.join(names)}"
            )
        return ds[split], split
    own = str(ds.split) if getattr(ds, "split", None) is not None else None
    if spec.split and spec.split != own:
        holds = f"split {own!r} only" if own else "one table with no split name"
        raise InputError(f"--dataset {local}: holds {holds}, not split {spec.split!r}")
    return ds, own or "all"


def _open_named(spec: DatasetSpec, datasets):
    name = spec.source
    if spec.cache_dir and not Path(spec.cache_dir).expanduser().is_dir():
        what = "is a file" if Path(spec.cache_dir).exists() else "no such folder"
        raise InputError(
            f"--cache-dir {spec.cache_dir}: {what}; expected the datasets cache folder"
        )
    where = f" in {spec.cache_dir}" if spec.cache_dir else ""
    try:
        return datasets.load_dataset(
            name,
            revision=spec.revision,
            split=spec.split or DEFAULT_SPLIT,
            cache_dir=spec.cache_dir,
        )
    except Exception as e:  # offline misses, unknown splits, bad names: many unrelated types
        text = _first_line(e)
        if "split" in text.lower():
            raise InputError(f"--dataset {name}: {text}") from None
        offline = datasets.config.HF_HUB_OFFLINE
        hint = " (offline: only the local cache is read)" if offline else ""
        raise InputError(f"--dataset {name}: cannot be loaded{where}{hint}; {text}") from None


def cached_commit(ds) -> str | None:
    """The commit a hub data set's cached Arrow files were built from (their folder's name).

    ``load_dataset`` caches a hub data set under ``<cache>/<namespace>___<name>/<config>/<version>/
    <commit>/``; ``None`` for tables not read from such a folder.
    """
    files = getattr(ds, "cache_files", None) or []
    if not files:
        return None
    folder = Path(files[0]["filename"]).parent.name
    return folder if folder and all(c in "0123456789abcdef" for c in folder.lower()) else None


def revision_commit(name: str, revision: str) -> str | None:
    """The commit the local hub cache maps ``revision`` to (``refs/<revision>``), if it knows."""
    if len(revision) == 40 and all(c in "0123456789abcdef" for c in revision.lower()):
        return revision.lower()
    try:
        from huggingface_hub import constants
    except ImportError:
        return None
    ref = Path(constants.HF_HUB_CACHE) / f"datasets--{name.replace('/', '--')}" / "refs" / revision
    try:
        return ref.read_text().strip() or None
    except OSError:
        return None


def check_cached_revision(ds, spec: DatasetSpec) -> str | None:
    """Refuse a cached copy that is known to be another revision than ``--revision``.

    Offline, ``load_dataset`` does not resolve a revision: it reads the most recent cached copy
    of the name, whatever revision that was. When the hub cache says which commit the revision
    is, the copy read must be that commit.

    Returns
    -------
    str or None
        The commit of the copy read (recorded in the feature file's ``source``).
    """
    commit = cached_commit(ds)
    if commit and spec.revision:
        want = revision_commit(spec.source, spec.revision)
        if want and want != commit:
            raise InputError(
                f"--dataset {spec.source} --revision {spec.revision}: the cached copy is commit"
                f" {commit}, but {spec.revision} is commit {want}; load that revision once with"
                " the hub reachable"
            )
    return commit


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


class DatasetRows:
    """Slices of the caption or image column of an open table.

    Parameters
    ----------
    dataset : datasets.Dataset
    spec : DatasetSpec
    n : int, optional
        Use the first ``n`` rows only (default: all).

    Attributes
    ----------
    ids : list of str
        ``"row_{i}"``: the row index, the same for every modality and every ``n``, so that an
        image file and a text file of one table pair row by row and by id.
    """

    def __init__(self, dataset, spec: DatasetSpec, n: int | None = None) -> None:
        self.dataset, self.spec = dataset, spec
        total = len(dataset)
        if n is not None and n > total:
            raise InputError(f"--n {n}: {spec.source} has only {total} rows")
        self.n = total if n is None else n
        if self.n == 0:
            raise InputError(f"--dataset {spec.source}: no rows to embed")
        self.ids = [f"row_{i}" for i in range(self.n)]
        self._undecoded = None  # the image column with decoding off, made on first use

    def __len__(self) -> int:
        return self.n

    @property
    def columns(self) -> list[str]:
        return list(self.dataset.column_names)

    def check(self, modality: str) -> None:
        """Fail before any model loads: a missing column, or a caption index row 0 lacks."""
        column = self.column(modality)
        if column not in self.columns:
            flag = "--text-column" if modality == "text" else "--image-column"
            raise InputError(
                f"{flag} {column!r}: no such column in {self.spec.source}; available:"
                f" {', '.join(self.columns)}"
            )
        if modality == "text":
            self.texts(0, 1)
        else:
            kind = type(self.dataset.features[column]).__name__
            if kind != "Image":
                raise InputError(
                    f"--image-column {column!r}: holds {kind} cells, expected the Image feature"
                )

    def column(self, modality: str) -> str:
        return self.spec.text_column if modality == "text" else self.spec.image_column

    def _cells(self, column: str, start: int, stop: int) -> list:
        # select_columns first: slicing the whole table would decode every image of the slice.
        return self.dataset.select_columns([column])[start:stop][column]

    def texts(self, start: int, stop: int) -> list[str]:
        """Caption ``caption_index`` of rows ``[start, stop)``."""
        k, out = self.spec.caption_index, []
        for row, cell in enumerate(self._cells(self.spec.text_column, start, stop), start):
            caps = [cell] if isinstance(cell, str) else cell
            if not isinstance(caps, list) or not all(isinstance(c, str) for c in caps):
                raise InputError(
                    f"{self.spec.source} row {row}: column {self.spec.text_column!r} holds"
                    f" {type(cell).__name__}, expected a string or a list of strings"
                )
            if k >= len(caps):
                raise InputError(
                    f"--caption-index {k}: {self.spec.source} row {row} has {len(caps)} caption(s)"
                )
            out.append(caps[k])
        return out

    def image_cells(self, start: int, stop: int) -> list:
        """Undecoded image cells of rows ``[start, stop)``: ``{"bytes", "path"}`` dicts.

        Decoding is left to the caller (:func:`prh.encoders.images.image_cell_to_array`), which
        checks the size before decoding and names the row of a cell that does not decode; inside
        ``datasets`` a corrupt image would fail the whole slice with no row named.
        """
        if self._undecoded is None:
            import datasets

            column = self.spec.image_column
            table = self.dataset.select_columns([column])
            if isinstance(table.features[column], datasets.Image):
                table = table.cast_column(column, datasets.Image(decode=False))
            self._undecoded = table
        return self._undecoded[start:stop][self.spec.image_column]
