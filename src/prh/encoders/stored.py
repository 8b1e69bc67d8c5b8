"""Precomputed features as an encoder (``features:PATH``) and ``prh train`` run directories."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from prh.encoders.base import Encoder, Features, Progress
from prh.errors import InputError


class FeatureFileEncoder(Encoder, Features):
    """Rows of a feature file (any format :func:`prh.features.load_features` reads).

    With ids (the file's own, as ``prh embed`` writes them), rows are looked up by id; without,
    the file must hold exactly as many rows as there are items, taken in order. The modality is the
    file's ``modality`` metadata when it has one, else ``"any"``.
    """

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        from prh.features import load_features

        self.spec = f"features:{path}"
        if Path(path).expanduser().is_dir():
            raise InputError(f"{self.spec}: {path} is a folder, expected a feature file")
        self.fs = load_features(path)
        self.modality = self.fs.metadata.get("modality", "any")
        if self.modality not in ("text", "image", "any"):
            self.modality = "any"
        dims = self.fs.metadata.get("layer_dims")
        self.layer_dims = json.loads(dims) if dims else [self.fs.features.shape[2]] * self.fs.layers
        names = self.fs.metadata.get("layer_names")
        self.layer_names = (
            json.loads(names) if names else [f"layer{i}" for i in range(self.fs.layers)]
        )
        self._index = None
        if self.fs.ids is not None:
            self._index = {}
            for row, i in enumerate(self.fs.ids):
                if i in self._index:
                    raise InputError(
                        f"{path}: id {i!r} appears twice (rows {self._index[i]} and {row})"
                    )
                self._index[i] = row

    def rows(self, ids: Sequence[str]) -> np.ndarray:
        """Stored rows of ``ids``, in that order: ``(N, L, D)``."""
        if self._index is None:
            raise InputError(f"{self.fs.path}: the file has no ids to look rows up by")
        missing = [i for i in ids if i not in self._index]
        if missing:
            raise InputError(
                f"{self.fs.path}: {len(missing)} of {len(ids)} ids are missing,"
                f" first {missing[0]!r}"
            )
        return self.fs.features[np.array([self._index[i] for i in ids], dtype=np.int64)]

    def _positional(self, n: int) -> np.ndarray:
        if n != self.fs.n:
            raise InputError(
                f"{self.fs.path}: {self.fs.n} rows for {n} items (pass ids to look up)"
            )
        return self.fs.features

    def encode(self, items, *, ids=None, batch_size: int = 32, progress: Progress | None = None):
        del batch_size, progress
        if ids is not None and self._index is not None:
            return self.rows(list(ids))
        return self._positional(len(items))

    def encode_texts(self, texts, *, batch_size: int = 64, progress: Progress | None = None):
        self.check_modality("text", "texts")
        return self._positional(len(texts))

    def encode_images(self, images, *, batch_size: int = 32, progress: Progress | None = None):
        self.check_modality("image", "images")
        return self._positional(len(images))


def is_run_dir(path: Path) -> bool:
    """A ``prh train`` run directory: ``config.json`` and ``meta.json`` side by side."""
    return path.is_dir() and (path / "config.json").is_file() and (path / "meta.json").is_file()


class RunEncoder(Encoder):
    """A text model trained by ``prh train``: ``prh.training.load_run(path).encode_texts``."""

    modality = "text"

    def __init__(self, path: str | Path, threads: int | None = None, pool: str = "avg") -> None:
        from prh.encoders._torch import set_threads
        from prh.training import load_run

        if pool not in ("avg", "last"):
            raise InputError(f"{path}: --pool {pool}: a prh run pools by avg or last")
        set_threads(threads)
        self._attach(load_run(path), str(path), pool)

    @classmethod
    def of_run(cls, run: Any, spec: str, pool: str = "avg") -> RunEncoder:
        """An encoder of a run already loaded (or built: the demo's random-init control),
        named ``spec``."""
        enc = cls.__new__(cls)
        enc._attach(run, spec, pool)
        return enc

    def _attach(self, run: Any, spec: str, pool: str) -> None:
        super().__init__()
        self.run, self.spec, self.pool = run, spec, pool
        if not hasattr(run, "encode_texts") and hasattr(run, "encode_images"):
            self.modality = "image"

    def _encode_text_batch(self, texts: list[str]) -> np.ndarray:
        kw = {} if self.pool == "avg" else {"pool": self.pool}  # a JEPA/LM run: avg is the default
        out = np.asarray(self.run.encode_texts(texts, batch_size=len(texts), **kw), np.float32)
        if out.ndim == 2:
            out = out[:, None, :]
        self.layer_dims = [int(out.shape[2])] * int(out.shape[1])
        self.layer_names = [f"layer{i}" for i in range(out.shape[1])]
        return out

    def _encode_image_batch(self, images: list[np.ndarray]) -> np.ndarray:
        out = np.asarray(self.run.encode_images(images, batch_size=len(images)), dtype=np.float32)
        if out.ndim == 2:
            out = out[:, None, :]
        self.layer_dims = [int(out.shape[2])] * int(out.shape[1])
        return out
