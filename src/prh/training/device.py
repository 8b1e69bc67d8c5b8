"""The torch device a run asks for, checked: one clear line for a device this machine lacks."""

from __future__ import annotations

import torch

from prh.errors import InputError

DEVICE_TYPES = ("cpu", "cuda")


def resolve_device(name: str | None = None) -> torch.device:
    """``name`` (``"cpu"``, ``"cuda"``, ``"cuda:1"``) as a usable :class:`torch.device`.

    ``None`` picks CUDA when available, else the CPU.

    Raises
    ------
    InputError
        An unknown device type (``"tpu"``), CUDA on a machine without it, or a GPU index this
        machine does not have.
    """
    if name is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(name)
    except (RuntimeError, TypeError, ValueError):
        dev = None
    if dev is None or dev.type not in DEVICE_TYPES:
        raise InputError(f"--device {name}: unknown device; expected cpu, cuda or cuda:N")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise InputError(f"--device {name}: CUDA is not available on this machine; use cpu")
        count = torch.cuda.device_count()
        if dev.index is not None and dev.index >= count:
            raise InputError(f"--device {name}: this machine has {count} CUDA device(s)")
    return dev
