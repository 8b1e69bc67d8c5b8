"""The torch device a command asks for, checked: one clear line for a device this machine lacks.

Used by training (``prh train --device``), the ``hf:``/MiniLM encoders (``prh embed --device``) and
the torch kNN backend (``prh measure --device``).
"""

from __future__ import annotations

import torch

from prh.errors import InputError


def resolve_device(name: str | None = None) -> torch.device:
    """``name`` (``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"auto"``) as a usable :class:`torch.device`.

    ``None`` and ``"auto"`` pick CUDA when available, else the CPU.

    Raises
    ------
    InputError
        An unknown device (``"tpu"``), CUDA on a machine without it, or a GPU index this machine
        does not have.
    """
    if name is None or str(name).strip().lower() == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    name = str(name).strip().lower()
    try:
        dev = torch.device(name)
    except (RuntimeError, TypeError, ValueError):
        dev = None
    if dev is None or dev.type not in ("cpu", "cuda"):
        raise InputError(f"--device {name}: unknown device; expected cpu, cuda, cuda:N or auto")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            why = "torch was built without CUDA" if torch.version.cuda is None else "no GPU found"
            raise InputError(
                f"--device {name}: CUDA is not available on this machine ({why}); use cpu"
            )
        count = torch.cuda.device_count()
        if dev.index is not None and dev.index >= count:
            raise InputError(f"--device {name}: this machine has {count} CUDA device(s)")
    return dev
