"""The one learning-rate schedule and the one AdamW set-up, shared by every trainer.

Used by the JEPA / next-token loop (:mod:`prh.training.loop`), the caption decoder
(:mod:`prh.caption.decoder`) and the theory learner (:mod:`prh.theory.learner`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is imported only by the function that needs it
    import torch
    from torch import nn

__all__ = ["adamw", "warmup_cosine_lr", "warmup_steps"]


def warmup_steps(warmup_frac: float, total: int) -> int:
    """Warm-up length: ``round(warmup_frac * total)``, at least 1 when ``warmup_frac > 0``, else 0.

    >>> warmup_steps(0.05, 1500), warmup_steps(0.001, 10), warmup_steps(0.0, 10)
    (75, 1, 0)
    """
    return max(1, round(warmup_frac * total)) if warmup_frac > 0 else 0


def warmup_cosine_lr(step: int, peak: float, total: int, warmup: int, floor_frac: float) -> float:
    """Learning rate at ``step`` (0-based): linear warm-up, then cosine decay to a floor.

    ``lr = peak (step + 1) / warmup`` for ``step < warmup``; afterwards, with
    ``p = min(1, (step - warmup) / (total - warmup))`` and the floor ``f = floor_frac peak``,
    ``lr = f + (peak - f) (1 + cos(pi p)) / 2`` (SGDR [1]_ without restarts). Past ``total`` the
    rate stays at the floor. (The training loop's float order: its runs are bitwise unchanged by
    the merge of the three copies.)

    Parameters
    ----------
    step : int
        Optimiser step, 0-based.
    peak : float
        Rate reached at the end of the warm-up.
    total : int
        Steps over which the schedule runs (warm-up included).
    warmup : int
        Warm-up steps (:func:`warmup_steps`); 0 starts at ``peak``.
    floor_frac : float
        Final rate as a fraction of ``peak``.

    References
    ----------
    .. [1] I. Loshchilov and F. Hutter, "SGDR: Stochastic Gradient Descent with Warm Restarts",
       ICLR 2017.

    Examples
    --------
    >>> [round(warmup_cosine_lr(s, 1.0, 10, 2, 0.1), 3) for s in (0, 1, 2, 6, 10, 20)]
    [0.5, 1.0, 1.0, 0.55, 0.1, 0.1]
    """
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    floor = floor_frac * peak
    return floor + (peak - floor) * 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))


def adamw(model: nn.Module, lr: float, weight_decay: float) -> torch.optim.AdamW:
    """AdamW (betas 0.9, 0.95) with weight decay on matrices only.

    Biases, norm gains and other 1-D tensors get no decay (decaying a gain towards 0 fights the
    normalisation it scales). Parameters that do not require a gradient are left out. The
    single-tensor implementation (``foreach=False``) keeps results identical across devices'
    defaults.
    """
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.ndim >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95), foreach=False)
