"""Next-token cross-entropy for the causal language-model baseline."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def next_token_loss(
    logits: torch.Tensor, tokens: torch.Tensor, mask: torch.Tensor, reduction: str = "mean"
) -> torch.Tensor:
    """Cross-entropy of predicting ``tokens[:, t + 1]`` from position ``t``.

    Parameters
    ----------
    logits : Tensor
        ``(B, T, V)`` outputs of a causal LM on ``tokens``.
    tokens : Tensor
        ``(B, T)`` token ids.
    mask : Tensor
        ``(B, T)`` true on valid tokens; a target counts when it is valid.
    reduction : {"mean", "sum"}
        Mean over valid targets, or their sum (for data-parallel averaging by a global count).

    Returns
    -------
    Tensor
        Scalar, in nats per token for ``"mean"``.
    """
    if logits.shape[:2] != tokens.shape or tokens.shape != mask.shape:
        raise ValueError(
            f"shapes disagree: logits {tuple(logits.shape)}, tokens {tuple(tokens.shape)}, "
            f"mask {tuple(mask.shape)}"
        )
    V = logits.shape[-1]
    pred = logits[:, :-1].reshape(-1, V).float()  # (B (T - 1), V)
    target = tokens[:, 1:].reshape(-1)  # (B (T - 1),)
    valid = mask[:, 1:].reshape(-1).to(pred.dtype)  # (B (T - 1),)
    nll = F.cross_entropy(pred, target, reduction="none")  # (B (T - 1),)
    total = (nll * valid).sum()
    if reduction == "sum":
        return total
    if reduction != "mean":
        raise ValueError(f"unknown reduction {reduction!r}")
    return total / valid.sum().clamp_min(1.0)
