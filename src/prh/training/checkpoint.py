"""Checkpoints: tensors in safetensors, everything else in a JSON sidecar.

``checkpoints/step_00000120.safetensors`` holds the model weights (``model.*``) and the AdamW state
(``optim.<param index>.<name>``); ``step_00000120.json`` holds the format tag, the step, the data
position (the next global batch index), the optimiser's scalar state, the RNG states of torch,
numpy and Python as JSON lists, and the resolved configuration. Both files are written to a
temporary name and renamed; the sidecar is written last, so a checkpoint counts only when its
sidecar exists (a kill between the two leaves the previous checkpoint as the latest).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from prh.errors import CheckpointError
from prh.io import atomic_write, canonical_safetensors, write_json
from prh.jsonio import read_json

FORMAT = "prh-checkpoint/1"
_NAME = re.compile(r"^step_(\d{8})\.json$")


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint read back: tensors and sidecar fields."""

    step: int
    data_position: int
    model: dict[str, torch.Tensor]
    optimizer: dict[str, Any]
    rng: dict[str, Any]
    config: dict[str, Any]
    path: Path


def rng_state() -> dict[str, Any]:
    """RNG states of torch (CPU), numpy's global generator and Python, as JSON-able lists."""
    np_state = np.random.get_state()  # noqa: NPY002 (global state is what we must restore)
    py_state = random.getstate()
    return {
        "torch": torch.get_rng_state().tolist(),
        "numpy": [np_state[0], np_state[1].tolist(), *[int(x) for x in np_state[2:4]], np_state[4]],
        "python": [py_state[0], list(py_state[1]), py_state[2]],
    }


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` saved."""
    torch.set_rng_state(torch.tensor(state["torch"], dtype=torch.uint8))
    n = state["numpy"]
    np.random.set_state((n[0], np.array(n[1], dtype=np.uint32), n[2], n[3], n[4]))  # noqa: NPY002
    p = state["python"]
    random.setstate((p[0], tuple(p[1]), p[2]))


def _optimizer_split(sd: dict[str, Any]) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    tensors: dict[str, torch.Tensor] = {}
    scalars: dict[str, Any] = {"param_groups": sd["param_groups"], "state": {}}
    for idx, st in sd["state"].items():
        for name, value in st.items():
            if torch.is_tensor(value):
                tensors[f"optim.{idx}.{name}"] = value.detach().cpu().contiguous()
            else:
                scalars["state"].setdefault(str(idx), {})[name] = value
    return tensors, scalars


def _optimizer_join(tensors: dict[str, torch.Tensor], scalars: dict[str, Any]) -> dict[str, Any]:
    state: dict[int, dict[str, Any]] = {}
    for key, value in tensors.items():
        _, idx, name = key.split(".", 2)
        state.setdefault(int(idx), {})[name] = value
    for idx, st in scalars.get("state", {}).items():
        state.setdefault(int(idx), {}).update(st)
    return {"state": state, "param_groups": scalars["param_groups"]}


def save_checkpoint(
    folder: Path,
    step: int,
    data_position: int,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    config: dict[str, Any],
    keep: int = 2,
) -> Path:
    """Write ``step_{step:08d}.safetensors`` + ``.json`` atomically; keep the last ``keep``."""
    from safetensors.torch import save

    folder.mkdir(parents=True, exist_ok=True)
    tensors = {f"model.{k}": v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    opt_tensors, opt_scalars = _optimizer_split(optimizer.state_dict())
    tensors.update(opt_tensors)
    stem = folder / f"step_{step:08d}"
    with atomic_write(stem.with_suffix(".safetensors"), "wb") as f:
        f.write(canonical_safetensors(save(tensors, metadata={"format": FORMAT})))
    sidecar = {
        "format": FORMAT,
        "step": step,
        "data_position": data_position,
        "optimizer": opt_scalars,
        "rng": rng_state(),
        "config": config,
    }
    write_json(stem.with_suffix(".json"), sidecar, indent=None)
    for old in list_checkpoints(folder)[:-keep] if keep > 0 else []:
        old.unlink(missing_ok=True)
        old.with_suffix(".safetensors").unlink(missing_ok=True)
    return stem.with_suffix(".json")


def list_checkpoints(folder: Path) -> list[Path]:
    """Sidecars of complete checkpoints in ``folder``, oldest first."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if _NAME.match(p.name))


def latest_checkpoint(folder: Path) -> Path | None:
    found = list_checkpoints(folder)
    return found[-1] if found else None


def load_checkpoint(sidecar: Path) -> Checkpoint:
    """Read a checkpoint; any problem is one :class:`CheckpointError` line naming the file."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    sidecar = Path(sidecar)
    try:
        meta = read_json(sidecar)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{sidecar}: not a readable checkpoint sidecar ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        got = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise CheckpointError(f"{sidecar}: expected format {FORMAT!r}, got {got!r}")
    weights = sidecar.with_suffix(".safetensors")
    try:
        tensors = load_file(str(weights))
    except (OSError, SafetensorError, ValueError) as e:
        raise CheckpointError(f"{weights}: corrupt or missing checkpoint tensors ({e})") from None
    missing = [k for k in ("step", "data_position", "optimizer", "rng", "config") if k not in meta]
    if missing:
        raise CheckpointError(f"{sidecar}: sidecar lacks {missing}")
    model = {k[len("model.") :]: v for k, v in tensors.items() if k.startswith("model.")}
    opt = {k: v for k, v in tensors.items() if k.startswith("optim.")}
    return Checkpoint(
        step=int(meta["step"]),
        data_position=int(meta["data_position"]),
        model=model,
        optimizer=_optimizer_join(opt, meta["optimizer"]),
        rng=meta["rng"],
        config=meta["config"],
        path=sidecar,
    )


def load_weights(path: Path) -> dict[str, torch.Tensor]:
    """Model weights from a ``model.safetensors`` file (one clear error if unreadable)."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        return load_file(str(path))
    except (OSError, SafetensorError, ValueError) as e:
        raise CheckpointError(f"{path}: corrupt or missing weights ({e})") from None


def restore_model(model: torch.nn.Module, weights: dict[str, torch.Tensor], where: Path) -> None:
    """Strict ``load_state_dict``; a key or shape mismatch is one :class:`CheckpointError`."""
    own = model.state_dict()
    missing = sorted(set(own) - set(weights))
    extra = sorted(set(weights) - set(own))
    if missing or extra:
        raise CheckpointError(
            f"{where}: weights are from a different model "
            f"(missing {missing[:3]}{'...' if len(missing) > 3 else ''}, "
            f"unexpected {extra[:3]}{'...' if len(extra) > 3 else ''})"
        )
    for k, v in weights.items():
        if own[k].shape != v.shape:
            raise CheckpointError(
                f"{where}: {k} has shape {tuple(v.shape)}, the model expects {tuple(own[k].shape)}"
            )
    model.load_state_dict(weights)
