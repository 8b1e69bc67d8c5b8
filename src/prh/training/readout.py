"""A JEPA wider than its world's gap, read through its own top-``k`` cross-view components.

A whitened JEPA of width ``w`` learns, at its optimum, the top-``w`` eigenspace of its pair
kernel, which contains the top ``k`` for every ``k <= w``. An 8-wide encoder on the moving cave
must give each of its eight directions to one mode, and a finite learner gives the last one to
whichever mode near the cut is simplest to compute (a mode below the cut, docs/training.md "The
last direction"); a wider one has room for both, and its top-``k`` subspace is recovered without
any theory: diagonalise the cross-view covariance of the run's own positive pairs, whitened by
their marginal (:func:`prh.bridge.spectral.cross_view_spectrum`), and keep the ``k`` components
with the largest eigenvalues.

:func:`prh.training.readout_fit.fit_readout` measures that read-out on fresh pairs of the
run's training law (:func:`prh.training.moving.run_positive_pairs`); :func:`save_readout` stores
it beside the weights as ``readout.safetensors``, tied to them by their sha256;
:func:`prh.training.load_run` then returns the run read through it (its head ends in a
:class:`ReadoutLayer`), so ``prh embed``, the bridge and the demo see the ``k``-wide encoder.
``prh readout RUN --k K`` is the command.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from prh.errors import CheckpointError, InputError
from prh.training.rundir import MODEL_FILE

FILE = "readout.safetensors"
DRAW = 123  # the pairs' seed: fixed, so one run gives one read-out
PAIRS = 8192  # positive pairs the spectrum is measured on, by default
MIN_PAIRS_PER_DIM = 16  # pairs per output direction below which the spectrum is refused


@dataclass(frozen=True)
class Readout:
    """``(x - mean) @ projection``: ``mean`` ``(w,)``, ``projection`` ``(w, k)`` (whitener times the
    top ``k`` cross-view eigenvectors), ``eigenvalues`` ``(w,)`` descending (the cross-view
    spectrum of the embedding), measured on ``pairs`` pairs drawn with seed ``draw``."""

    mean: np.ndarray
    projection: np.ndarray
    eigenvalues: np.ndarray
    pairs: int
    draw: int

    @property
    def width(self) -> int:
        """The embedding width ``w`` it reads."""
        return int(self.projection.shape[0])

    @property
    def k(self) -> int:
        """Its output width."""
        return int(self.projection.shape[1])

    def apply(self, x: np.ndarray) -> np.ndarray:
        """``(n, k)``: embeddings ``x`` ``(n, w)`` read through it."""
        return (np.asarray(x, dtype=np.float64) - self.mean) @ self.projection


def readout_of_pairs(a: np.ndarray, b: np.ndarray, k: int, draw: int = DRAW) -> Readout:
    """The top-``k`` cross-view read-out of positive pairs ``a``, ``b`` (``(n, w)`` each): the
    marginal's whitener times the top ``k`` eigenvectors of the whitened cross-view covariance
    (:func:`prh.bridge.spectral.cross_view_spectrum`). On the pairs, its output has identity
    covariance and cross-view covariance ``diag(eigenvalues[:k])``."""
    from prh.bridge.spectral import cross_view_spectrum

    spec = cross_view_spectrum(np.asarray(a, np.float64), np.asarray(b, np.float64))
    projection = spec.whiten @ spec.vectors[:, :k]
    return Readout(spec.mean, projection, np.asarray(spec.eigenvalues), len(a), draw)


def weights_file(run_dir: Path) -> Path:
    """The weights a read-out belongs to: ``model.safetensors`` (a finished run only)."""
    path = run_dir / MODEL_FILE
    if not path.is_file():
        raise InputError(f"{run_dir}: no model.safetensors (an unfinished run); finish it "
                         "before reading it out")  # fmt: skip
    return path


def save_readout(run_dir: str | os.PathLike[str], readout: Readout) -> Path:
    """Write ``RUN/readout.safetensors`` atomically, tied to the run's weights by their sha256."""
    from prh.io import write_tensors
    from prh.provenance import sha256_file

    run_dir = Path(run_dir)
    meta = {"k": str(readout.k), "width": str(readout.width), "pairs": str(readout.pairs),
            "draw": str(readout.draw),
            "weights_sha256": sha256_file(weights_file(run_dir))}  # fmt: skip
    arrays = {"mean": readout.mean, "projection": readout.projection,
              "eigenvalues": readout.eigenvalues}  # fmt: skip
    write_tensors(run_dir / FILE, arrays, meta)
    return run_dir / FILE


def load_readout(run_dir: str | os.PathLike[str], width: int) -> Readout | None:
    """The run's stored read-out (None when it has none).

    Raises
    ------
    CheckpointError
        An unreadable file, one fitted to other weights (the run retrained since), or one whose
        width is not the run's embedding width.
    """
    from prh.io import read_tensors_and_metadata
    from prh.provenance import sha256_file

    run_dir = Path(run_dir)
    path = run_dir / FILE
    if not path.exists():
        return None
    arrays, meta = read_tensors_and_metadata(path)
    try:
        r = Readout(arrays["mean"], arrays["projection"], arrays["eigenvalues"],
                    int(meta["pairs"]), int(meta["draw"]))  # fmt: skip
        sha = meta["weights_sha256"]
    except (KeyError, ValueError) as e:
        raise CheckpointError(f"{path}: not a prh read-out ({e})") from None
    if r.projection.ndim != 2 or r.mean.shape != (r.width,):
        raise CheckpointError(f"{path}: not a prh read-out (mean {r.mean.shape}, projection "
                              f"{r.projection.shape})")  # fmt: skip
    if r.width != width:
        raise CheckpointError(f"{path}: reads a {r.width}-wide embedding; the run's is {width}")
    weights = run_dir / MODEL_FILE
    if not weights.is_file() or sha256_file(weights) != sha:
        raise CheckpointError(f"{path}: fitted to other weights than {weights} (retrained "
                              "since?); rerun prh readout or delete the file")  # fmt: skip
    return r


class ReadoutLayer(nn.Module):
    """``(x - mean) @ projection``: a :class:`Readout` as the last layer of a JEPA's head (its
    buffers are not part of the model's ``state_dict``: the weights stay the run's own)."""

    def __init__(self, readout: Readout) -> None:
        super().__init__()
        mean = torch.as_tensor(readout.mean, dtype=torch.float32)
        projection = torch.as_tensor(readout.projection, dtype=torch.float32)
        self.register_buffer("mean", mean, persistent=False)
        self.register_buffer("projection", projection, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x.float() - self.mean) @ self.projection


def attach_readout(model: nn.Module, readout: Readout) -> nn.Module:
    """``model`` (a JEPA encoder: its ``head`` an ``nn.Sequential`` giving the embedding) with
    :class:`ReadoutLayer` appended to its head and ``cfg.embed_dim = k``; changed in place, its
    type kept, so every caller of ``model`` or ``model.encode`` gets the ``k``-wide embedding."""
    from dataclasses import replace

    head = getattr(model, "head", None)
    if not isinstance(head, nn.Sequential):
        raise CheckpointError(f"{type(model).__name__}: no JEPA head to read out")
    head.append(ReadoutLayer(readout).to(next(model.parameters()).device))
    model.cfg = replace(model.cfg, embed_dim=readout.k)
    return model


def read_out(run: Any) -> Any:
    """``run`` read through its stored read-out, or ``run`` itself when it has none (a loaded
    :class:`~prh.training.lifecycle.Run`: its model gets the read-out in place, by
    :func:`attach_readout`; the returned run's ``model_config`` says ``embed_dim = k``)."""
    from dataclasses import replace

    r = load_readout(run.path, int(run.model_config.embed_dim))
    if r is None:
        return run
    attach_readout(run.model, r)
    return replace(run, model_config=replace(run.model_config, embed_dim=r.k))
