"""Torch helpers shared by the encoders (imported only when a torch-backed encoder is built)."""

from __future__ import annotations

import torch


def masked_mean(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of token states over valid tokens: ``sum_t m_t h_t / sum_t m_t``.

    Parameters
    ----------
    hidden : torch.Tensor
        ``(B, T, D)`` token states (or ``(L, B, T, D)``: every layer at once).
    mask : torch.Tensor
        ``(B, T)``, 1 for real tokens, 0 for padding.

    Returns
    -------
    torch.Tensor
        ``(B, D)`` (or ``(L, B, D)``), float32. A row with no valid token gives zeros.
    """
    m = mask.to(torch.float32).unsqueeze(-1)  # (B, T, 1)
    total = (hidden.to(torch.float32) * m).sum(dim=-2)  # (..., B, D)
    count = m.sum(dim=-2).clamp(min=1.0)  # (B, 1)
    return total / count


def spatial_mean(x: torch.Tensor) -> torch.Tensor:
    """Global average pool of a feature map ``(B, C, H, W) -> (B, C)``."""
    return x.to(torch.float32).mean(dim=(2, 3))


def set_threads(threads: int | None) -> None:
    """Use ``threads`` intra-op threads (``None``: leave torch's current setting)."""
    if threads is not None:
        torch.set_num_threads(max(1, int(threads)))
