"""Feature files: the one format every command exchanges.

A feature file holds ``features`` of shape ``(N, D)`` or ``(N, L, D)`` (rows are samples, ``L``
layers) and optionally ``ids``, one string per row, so two files can be joined by id.

Formats read: ``.npy``, ``.npz`` (key ``features`` or the only array; optional ``ids``),
``.safetensors`` (tensor ``features``; ``ids`` in the metadata as a JSON list), ``.pt`` (a tensor
or a dict with ``features``, read only with ``torch.load(weights_only=True)``: never unpickled).

``.pt`` files of the PRH benchmark (``minyoungg/platonic-rep``, ``extract_features.py``) are read
too: a dict whose ``feats`` is an ``(N, L, D)`` tensor, or a list of per-layer ``(N, D_l)`` tensors
(convnet stages of different widths), beside ``num_params``, ``mask``, ``loss``, ``bpb``. A list is
zero-padded to ``max D_l`` with the true widths in ``layer_dims`` and marked ``layer_storage =
list``: the reference clamps each listed layer on its own threshold, and so does ``prh measure``.
A ``.pt`` file holding anything but tensors, dicts, lists, strings and numbers is refused unread.

Formats written, atomically: by :func:`save_features`, by the name's suffix, ``.safetensors``
(features, ids and metadata), ``.npz`` (``features`` and ``ids``) and ``.npy`` (the features
alone); by :func:`save_platonic_rep`, the benchmark's ``.pt`` layout.
"""

from __future__ import annotations

import json
import os
import pickle
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from prh.errors import InputError
from prh.io import atomic_write, canonical_safetensors

SUFFIXES = (".npy", ".npz", ".safetensors", ".pt")
_PICKLE_PROTO = 0x80  # first byte of a pickle of protocol >= 2 (a legacy torch.save file)
WRITE_SUFFIXES = (".safetensors", ".npz", ".npy")


@dataclass(frozen=True)
class FeatureSet:
    """Features read from a file.

    Attributes
    ----------
    features : np.ndarray
        ``(N, L, D)`` float32; a file holding ``(N, D)`` is read as ``L = 1``.
    ids : list of str or None
        One id per row, when the file (or an ids file) has them.
    path : str
        Where the features came from, for error messages.
    metadata : dict
        Free-form string metadata (the encoder spec, the world seed, ...).
    """

    features: np.ndarray
    ids: list[str] | None = None
    path: str = ""
    metadata: dict[str, str] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.features.shape[0])

    @property
    def layers(self) -> int:
        return int(self.features.shape[1])

    @property
    def layer_dims(self) -> list[int] | None:
        """True width of each layer when narrower layers were zero-padded to ``D`` (metadata
        ``layer_dims``, written by ``prh embed``), else ``None``."""
        raw = self.metadata.get("layer_dims")
        if not raw:
            return None
        try:
            dims = [int(d) for d in json.loads(raw)]
        except (ValueError, TypeError):
            raise InputError(f"{self.path}: metadata layer_dims is not a list of ints") from None
        if len(dims) != self.layers or not all(0 < d <= self.features.shape[2] for d in dims):
            raise InputError(
                f"{self.path}: metadata layer_dims {dims} does not fit shape {self.features.shape}"
            )
        return dims

    @property
    def per_layer(self) -> bool:
        """Whether each layer is clamped on its own threshold (the reference's rule for a list of
        layers): the file stored its layers separately, or their widths differ."""
        if self.metadata.get("layer_storage") == "list":
            return True
        dims = self.layer_dims
        return dims is not None and len(set(dims)) > 1


def check_feature_suffix(path: str | os.PathLike[str], what: str = "--out") -> Path:
    """Refuse, before any work, an output name whose suffix :func:`save_features` cannot write."""
    p = Path(path)
    if p.suffix.lower() not in WRITE_SUFFIXES:
        raise InputError(
            f"{what} {p}: cannot write features as {p.suffix or 'a name without a suffix'!r}; "
            f"use one of {', '.join(WRITE_SUFFIXES)}"
        )
    return p


def save_features(
    path: str | os.PathLike[str],
    features: np.ndarray,
    ids: Sequence[str] | None = None,
    metadata: dict[str, str] | None = None,
) -> None:
    """Write ``features`` (``(N, D)`` or ``(N, L, D)``) and ``ids``, atomically, by suffix.

    ``.safetensors`` keeps ids and metadata, ``.npz`` keeps ids (metadata dropped), ``.npy``
    holds the array alone (what :func:`numpy.save` writes); any other suffix is refused.
    """
    p = check_feature_suffix(path, "feature file")
    arr = np.ascontiguousarray(np.asarray(features, dtype=np.float32))
    if arr.ndim not in (2, 3):
        raise InputError(f"{path}: features must be (N, D) or (N, L, D), got shape {arr.shape}")
    if ids is not None:
        ids = [str(i) for i in ids]
        if len(ids) != arr.shape[0]:
            raise InputError(f"{path}: {len(ids)} ids for {arr.shape[0]} rows")
    suffix = p.suffix.lower()
    with atomic_write(p, "wb") as f:
        if suffix == ".npy":
            np.save(f, arr, allow_pickle=False)
        elif suffix == ".npz":
            extra = {} if ids is None else {"ids": np.array(ids, dtype=str)}
            np.savez(f, features=arr, **extra)
        else:
            from safetensors.numpy import save

            meta = {k: str(v) for k, v in (metadata or {}).items()}
            if ids is not None:
                meta["ids"] = json.dumps(ids)
            f.write(canonical_safetensors(save({"features": arr}, metadata=meta)))


def save_platonic_rep(
    path: str | os.PathLike[str],
    features: np.ndarray,
    ids: Sequence[str] | None = None,
    metadata: dict[str, str] | None = None,
    layer_dims: Sequence[int] | None = None,
    num_params: int | None = None,
    quality: dict[str, float] | None = None,
) -> None:
    """Write features in the PRH benchmark's ``.pt`` layout, atomically.

    ``torch.save({"feats": ..., "num_params": ...})`` as ``minyoungg/platonic-rep`` writes it:
    ``feats`` is one ``(N, L, D)`` float32 tensor when every layer has width ``D``, else a list of
    ``(N, D_l)`` tensors (padding dropped), which the reference clamps layer by layer. prh adds
    ``ids`` (list of str) and ``prh_metadata`` (str to str); the reference ignores both.

    Parameters
    ----------
    features : np.ndarray
        ``(N, D)`` or ``(N, L, D)``; narrower layers zero-padded to ``D``.
    layer_dims : sequence of int, optional
        True width of each layer (``Encoder.layer_dims``); ``None``: every layer is ``D`` wide.
    num_params : int, optional
        The encoder's parameter count (the reference plots alignment against it).
    quality : dict, optional
        ``{"loss": ..., "bpb": ...}`` of a language model, stored as the reference stores them
        (0-d float tensors beside ``feats``).
    """
    import torch

    arr = np.asarray(features, dtype=np.float32)
    if arr.ndim == 2:
        arr = arr[:, None, :]
    if arr.ndim != 3:
        raise InputError(f"{path}: features must be (N, D) or (N, L, D), got shape {arr.shape}")
    n, n_layers, d = arr.shape
    dims = [int(w) for w in layer_dims] if layer_dims is not None else [d] * n_layers
    if len(dims) != n_layers or not all(0 < w <= d for w in dims):
        raise InputError(f"{path}: layer_dims {dims} does not fit shape {arr.shape}")
    if all(w == d for w in dims):
        feats: object = torch.from_numpy(np.ascontiguousarray(arr))  # (N, L, D)
    else:
        feats = [torch.from_numpy(np.ascontiguousarray(arr[:, i, :w])) for i, w in enumerate(dims)]
    blob: dict[str, object] = {"feats": feats}
    if num_params is not None:
        blob["num_params"] = int(num_params)
    if ids is not None:
        ids = [str(i) for i in ids]
        if len(ids) != n:
            raise InputError(f"{path}: {len(ids)} ids for {n} rows")
        blob["ids"] = ids
    for k, v in (quality or {}).items():
        blob[k] = torch.tensor(float(v))
    blob["prh_metadata"] = {str(k): str(v) for k, v in (metadata or {}).items()}
    with atomic_write(path, "wb") as f:
        torch.save(blob, f)


def load_features(
    path: str | os.PathLike[str], ids_path: str | os.PathLike[str] | None = None
) -> FeatureSet:
    """Read a feature file; see the module docstring for formats.

    Raises
    ------
    InputError
        Missing file, unknown suffix, not an array, wrong rank, or an ids file of the wrong length.
    """
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{p}: is a folder, expected a feature file ({', '.join(SUFFIXES)})")
    if p.exists() and not p.is_file():
        raise InputError(f"{p}: not a regular file (a device or a pipe?), expected a feature file")
    if not p.is_file():
        raise InputError(f"{p}: no such file")
    suffix = p.suffix.lower()
    ids: list[str] | None = None
    metadata: dict[str, str] = {}
    try:
        if suffix == ".npy":
            arr = np.load(p, allow_pickle=False)
        elif suffix == ".npz":
            arr, ids = _load_npz(p)
        elif suffix == ".safetensors":
            arr, ids, metadata = _load_safetensors(p)
        elif suffix == ".pt":
            arr, ids, metadata = _load_pt(p)
        else:
            raise InputError(f"{p}: unknown feature format {suffix!r}, expected one of {SUFFIXES}")
    except (InputError, ModuleNotFoundError):  # a .pt file without torch: the CLI names the extra
        raise
    except Exception as e:  # numpy/safetensors/torch each raise their own types on bad bytes
        first = (str(e).strip().splitlines() or [""])[0]  # torch's messages run to many lines
        raise InputError(f"{p}: not a readable array file ({type(e).__name__}: {first})") from None
    arr = np.asarray(arr)
    if arr.dtype.kind not in "fiub":
        raise InputError(f"{p}: expected a numeric array, got dtype {arr.dtype}")
    if arr.ndim == 2:
        arr = arr[:, None, :]
    if arr.ndim != 3:
        raise InputError(f"{p}: expected shape (N, D) or (N, L, D), got {arr.shape}")
    if ids_path is not None:
        ids = read_ids(ids_path)
    if ids is not None and len(ids) != arr.shape[0]:
        raise InputError(f"{p}: {len(ids)} ids for {arr.shape[0]} rows")
    with np.errstate(over="ignore"):  # values beyond float32 become inf; commands refuse them
        arr = arr.astype(np.float32, copy=False)
    return FeatureSet(arr, ids, str(p), metadata)


def read_ids(path: str | os.PathLike[str], what: str = "ids file") -> list[str]:
    """Read one id (or label) per line (blank lines at the end ignored).

    Raises
    ------
    InputError
        When the file is missing, a folder, or not UTF-8 text (a binary file, say).
    """
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{what} {p}: is a folder, expected a text file with one entry per line")
    if p.exists() and not p.is_file():
        raise InputError(f"{what} {p}: not a regular file (a device or a pipe?), expected text")
    if not p.is_file():
        raise InputError(f"{what} {p}: no such file")
    data = p.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        bad = f"byte {e.start}: {data[e.start]:#04x}"
        msg = f"{what} {p}: not UTF-8 text ({bad}), expected one line per entry"
        raise InputError(msg) from None
    if "\x00" in text:
        raise InputError(f"{what} {p}: binary data (a NUL byte at byte {data.index(0)}), not text")
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    return [line.strip() for line in lines]


def join_by_ids(a: FeatureSet, b: FeatureSet) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Rows of ``a`` and ``b`` paired by id, in ``a``'s order.

    Raises
    ------
    InputError
        When either side has no ids, ids repeat, or an id of ``a`` is missing from ``b``.
    """
    return a.features, b.features[join_rows(a, b)], list(a.ids)


def join_rows(a: FeatureSet, b: FeatureSet) -> np.ndarray:
    """``(N_a,)`` int64: the row of ``b`` that carries each id of ``a``, in ``a``'s order.

    Raises
    ------
    InputError
        As :func:`join_by_ids`.
    """
    if a.ids is None or b.ids is None:
        missing = a.path if a.ids is None else b.path
        raise InputError(f"{missing}: no ids to join on (pass --ids-a/--ids-b)")
    first_a: dict[str, int] = {}
    for row, i in enumerate(a.ids):
        if i in first_a:
            raise InputError(f"{a.path}: id {i!r} appears twice (rows {first_a[i]} and {row})")
        first_a[i] = row
    index_b = {}
    for row, i in enumerate(b.ids):
        if i in index_b:
            raise InputError(f"{b.path}: id {i!r} appears twice (rows {index_b[i]} and {row})")
        index_b[i] = row
    missing_ids = [i for i in a.ids if i not in index_b]
    if missing_ids:
        raise InputError(
            f"{b.path}: {len(missing_ids)} ids of {a.path} are missing, first {missing_ids[0]!r}"
        )
    return np.array([index_b[i] for i in a.ids], dtype=np.int64)


def _load_npz(p: Path) -> tuple[np.ndarray, list[str] | None]:
    with np.load(p, allow_pickle=False) as z:
        keys = list(z.keys())
        if "features" in z:
            arr = z["features"]
        elif len([k for k in keys if k != "ids"]) == 1:
            arr = z[next(k for k in keys if k != "ids")]
        else:
            raise InputError(f"{p}: npz has keys {keys}, expected 'features' (or a single array)")
        ids = [str(i) for i in z["ids"].tolist()] if "ids" in z else None
    return arr, ids


def _load_safetensors(p: Path) -> tuple[np.ndarray, list[str] | None, dict[str, str]]:
    from safetensors import safe_open

    with safe_open(str(p), framework="numpy") as f:
        keys = list(f.keys())
        metadata = dict(f.metadata() or {})
        if "features" in keys:
            arr = f.get_tensor("features")
        elif len(keys) == 1:
            arr = f.get_tensor(keys[0])
        else:
            raise InputError(f"{p}: safetensors has tensors {keys}, expected 'features'")
    ids = json.loads(metadata.pop("ids")) if "ids" in metadata else None
    if ids is not None and not isinstance(ids, list):
        raise InputError(f"{p}: metadata 'ids' is a JSON {type(ids).__name__}, expected a list")
    return arr, None if ids is None else [str(i) for i in ids], metadata


def _load_pt(p: Path) -> tuple[np.ndarray, list[str] | None, dict[str, str]]:
    """A tensor, a prh dict (``features``) or a benchmark dict (``feats``), never unpickled."""
    import torch

    if not zipfile.is_zipfile(p):
        with open(p, "rb") as f:
            head = f.read(1)
        if head and head[0] == _PICKLE_PROTO:
            raise InputError(f"{p}: holds pickled objects (a legacy torch file); not loaded")
        raise InputError(f"{p}: not a torch zip archive")
    try:
        obj = torch.load(p, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        # weights_only refuses any global beyond tensors and plain containers: code could run.
        raise InputError(
            f"{p}: holds pickled objects beyond tensors, dicts, lists and numbers; not loaded"
        ) from None
    if not isinstance(obj, dict):
        return _tensor(p, obj, "the file"), None, {}
    key = "features" if "features" in obj else "feats" if "feats" in obj else None
    if key is None:
        raise InputError(
            f"{p}: dict has keys {sorted(map(str, obj))}, expected 'features' (prh) "
            "or 'feats' (platonic-rep)"
        )
    ids = obj.get("ids")
    if ids is not None and not isinstance(ids, (list, tuple)):
        raise InputError(f"{p}: ids is a {type(ids).__name__}, expected a list of strings")
    ids = [str(i) for i in ids] if ids is not None else None
    meta = obj.get("prh_metadata") or {}
    metadata = {str(k): str(v) for k, v in meta.items()} if isinstance(meta, dict) else {}
    for key_ in ("num_params", "loss", "bpb"):  # the reference's scalars, when present
        if key_ in obj:
            metadata[key_] = str(float(obj[key_]) if key_ != "num_params" else obj[key_])
    feats = obj[key]
    if not isinstance(feats, (list, tuple)):
        return _tensor(p, feats, key), ids, metadata
    arr, dims = _pad_layers(p, [_tensor(p, f, f"{key}[{i}]") for i, f in enumerate(feats)])
    metadata.update(layer_dims=json.dumps(dims), layer_storage="list")
    return arr, ids, metadata


def _tensor(p: Path, obj: object, what: str) -> np.ndarray:
    import torch

    if not isinstance(obj, torch.Tensor):
        raise InputError(f"{p}: {what} is a {type(obj).__name__}, expected a tensor")
    if obj.is_complex():
        raise InputError(f"{p}: {what} holds complex numbers ({obj.dtype}), expected real ones")
    return obj.detach().float().cpu().numpy()


def _pad_layers(p: Path, layers: list[np.ndarray]) -> tuple[np.ndarray, list[int]]:
    """Per-layer ``(N, D_l)`` arrays as one zero-padded ``(N, L, max D_l)`` array and the widths."""
    if not layers:
        raise InputError(f"{p}: feats is an empty list of layers")
    for i, x in enumerate(layers):
        if x.ndim != 2 or x.shape[0] != layers[0].shape[0]:
            raise InputError(
                f"{p}: layer {i} has shape {tuple(x.shape)}, expected "
                f"({layers[0].shape[0]}, D) like layer 0"
            )
    dims = [int(x.shape[1]) for x in layers]
    out = np.zeros((layers[0].shape[0], len(layers), max(dims)), dtype=np.float32)  # (N, L, D)
    for i, x in enumerate(layers):
        out[:, i, : dims[i]] = x
    return out, dims


def last_layer(features: np.ndarray, layer_dims: Sequence[int] | None = None) -> np.ndarray:
    """The embedding that every theory and bridge read-out takes: the last layer of ``(N, L, D)``
    features as float64, cut to its true width ``layer_dims[-1]`` when the widths are given
    (``(N, D)`` features as they are).

    Returns
    -------
    np.ndarray
        ``(N, layer_dims[-1])`` or ``(N, D)`` float64.
    """
    f = np.asarray(features, dtype=np.float64)
    if f.ndim != 3:
        return f
    return f[:, -1, :] if layer_dims is None else f[:, -1, : int(layer_dims[-1])]
