"""Torch helpers shared by the encoders (imported only when a torch-backed encoder is built).

Pooling functions are pure: ``(..., B, T, D)`` token states and a ``(B, T)`` mask in, ``(..., B,
D)`` out; they do not care on which side the padding is.
"""

from __future__ import annotations

import torch

from prh.encoders.base import POOLS
from prh.errors import InputError

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


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
        ``(B, D)`` (or ``(L, B, D)``), float32. A row with no valid token gives zeros. Padded
        positions are selected out, not multiplied by 0, so a NaN there (a fully masked query row
        under left padding) cannot leak in.
    """
    m = mask.to(torch.bool).unsqueeze(-1)  # (B, T, 1)
    h = torch.where(m, hidden.to(torch.float32), 0.0)  # (..., B, T, D)
    count = m.sum(dim=-2).clamp(min=1).to(torch.float32)  # (B, 1)
    return h.sum(dim=-2) / count


def first_valid_index(mask: torch.Tensor) -> torch.Tensor:
    """``(B,)`` index of the first real token of each row (0 for right padding)."""
    return mask.to(torch.int64).argmax(dim=-1)


def last_valid_index(mask: torch.Tensor) -> torch.Tensor:
    """``(B,)`` index of the last real token of each row (``T - 1`` for left padding)."""
    t = mask.shape[-1]
    return t - 1 - mask.to(torch.int64).flip(-1).argmax(dim=-1)


def gather_tokens(hidden: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Token ``index[b]`` of each row: ``(..., B, T, D), (B,) -> (..., B, D)`` float32."""
    b = torch.arange(hidden.shape[-3], device=hidden.device)
    return hidden[..., b, index.to(hidden.device), :].to(torch.float32)


def pool_tokens(hidden: torch.Tensor, mask: torch.Tensor, how: str) -> torch.Tensor:
    """Pool token states to one vector per row.

    Parameters
    ----------
    hidden : torch.Tensor
        ``(L, B, T, D)`` (or ``(B, T, D)``).
    mask : torch.Tensor
        ``(B, T)``, 1 for real tokens.
    how : {"avg", "last", "cls"}
        ``avg``: mean over real tokens (:func:`masked_mean`); ``last``: the last real token
        (a causal model's summary of the whole text); ``cls``: the first real token (BERT's
        ``[CLS]``, a ViT's class token).

    Returns
    -------
    torch.Tensor
        ``(L, B, D)`` (or ``(B, D)``) float32.
    """
    if how == "avg":
        return masked_mean(hidden, mask)
    if how == "last":
        return gather_tokens(hidden, last_valid_index(mask))
    if how == "cls":
        return gather_tokens(hidden, first_valid_index(mask))
    raise InputError(f"pool {how!r}: expected one of {', '.join(POOLS)}")


def spatial_mean(x: torch.Tensor) -> torch.Tensor:
    """Global average pool of a feature map ``(B, C, H, W) -> (B, C)``."""
    return x.to(torch.float32).mean(dim=(2, 3))


def set_threads(threads: int | None) -> None:
    """Use ``threads`` intra-op threads (``None``: leave torch's current setting)."""
    if threads is not None:
        torch.set_num_threads(max(1, int(threads)))


def resolve_dtype(name: str) -> torch.dtype:
    """``float32`` / ``bfloat16`` / ``float16`` as a torch dtype (:class:`InputError` otherwise)."""
    if name not in DTYPES:
        raise InputError(f"--dtype {name}: expected one of {', '.join(DTYPES)}")
    return DTYPES[name]
