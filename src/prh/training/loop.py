"""The training step, split as ``compute_loss(batch)`` -> ``train_step`` -> ``run_loop``.

Nothing here touches the disk except through the callbacks that :mod:`prh.training.api` passes in
(checkpointing, metrics, evaluation).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from prh.errors import TrainingError
from prh.losses import (
    SIGReg,
    next_token_loss,
    sigreg_jepa_loss,
    soft_whitening_loss,
    whitened_jepa_loss,
)
from prh.optim import adamw
from prh.progress import Progress
from prh.training.config import OptimConfig, TrainConfig
from prh.training.distributed import DistInfo, all_reduce_sum, gather_rows


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate at ``step`` (0-based): linear warm-up, then cosine decay to ``min_lr_frac``."""
    return cfg.optim.lr_at(step, cfg.steps)


def make_optimizer(model: nn.Module, optim: OptimConfig) -> torch.optim.AdamW:
    """AdamW (:func:`prh.optim.adamw`); no weight decay on 1-D tensors (biases, norms)."""
    return adamw(model, optim.lr, optim.weight_decay)


def _pad_to(x: torch.Tensor, T: int, value: int | bool) -> torch.Tensor:
    return F.pad(x, (0, T - x.shape[1]), value=value) if x.shape[1] < T else x


def trim(ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Drop trailing columns where no row has a valid token (saves compute; same result)."""
    valid = mask.any(0).nonzero()
    T = int(valid.max()) + 1 if valid.numel() else 1
    return ids[:, :T], mask[:, :T]


LENGTH_GROUP_ROWS = 64
"""Rows per length group of a JEPA batch (:func:`pooled_by_length`): on the demo's batches
(256 rows, 1 thread) 32 to 128 rows per group run alike, 1.9x faster than one group."""


def length_groups(mask: torch.Tensor, rows: int) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
    """``(order, groups)``: the rows of ``mask`` (``(n, T)``) by a stable sort of their lengths,
    shortest first, and that order cut into groups of ``rows`` (a function of the mask alone)."""
    order = torch.argsort(mask.sum(1), stable=True)  # (n,)
    return order, torch.split(order, rows)


def pooled_by_length(
    model: nn.Module, ids: torch.Tensor, mask: torch.Tensor, rows: int
) -> torch.Tensor:
    """``model(ids, mask).pooled`` (``(n, E)``), computed on groups of ``rows`` sequences of
    similar length, each trimmed to its own longest.

    One padded batch costs ``n x T_max`` token positions; captions vary in length (the cave
    world's 2 to 48 tokens, mean 23), so most of that is padding. The encoder's padding is
    inert (masked keys get zero attention weight and the pooling is a masked mean), so a row's
    embedding does not depend on its neighbours: the groups give the one-batch result up to
    float rounding (~1e-8), deterministically. Rows are grouped by a stable sort of their
    lengths, so the groups are a function of the batch alone.

    Parameters
    ----------
    model : nn.Module
        A text encoder: ``model(ids, mask).pooled``.
    ids, mask : torch.Tensor
        ``(n, T)`` token ids and their validity mask.
    rows : int
        Sequences per group (``>= n``: one group, the plain forward).
    """
    if rows >= ids.shape[0]:
        return model(*trim(ids, mask)).pooled
    order, groups = length_groups(mask, rows)
    parts = [model(*trim(ids[g], mask[g])).pooled for g in groups]
    return torch.cat(parts)[torch.argsort(order)]  # (n, E) back in batch order


@dataclass
class LossContext:
    """What :func:`compute_loss` needs besides the batch."""

    cfg: TrainConfig
    dist: DistInfo
    device: torch.device
    sigreg: SIGReg | None = None
    # Rows per length group of a JEPA batch (pooled_by_length); >= the batch: one padded forward.
    group_rows: int = LENGTH_GROUP_ROWS
    # Another modality's ``compute_loss`` (same signature), e.g. prh.training.image.image_loss.
    loss_fn: Callable[..., tuple[torch.Tensor, dict[str, float]]] | None = None


def compute_loss(
    model: nn.Module, batch: dict[str, torch.Tensor], step: int, ctx: LossContext
) -> tuple[torch.Tensor, dict[str, float]]:
    """Loss of one (local) batch; for JEPAs the loss is over the global batch (see distributed).

    Returns
    -------
    (loss, logs)
        ``loss`` is what to backpropagate on this rank; ``logs["loss"]`` the global loss value.
    """
    cfg = ctx.cfg
    dev = ctx.device
    amp = torch.autocast("cuda", dtype=torch.bfloat16, enabled=dev.type == "cuda")
    if cfg.is_lm:
        ids, mask = trim(batch["tokens"], batch["tokens_mask"])
        ids, mask = ids.to(dev, non_blocking=True), mask.to(dev, non_blocking=True)
        with amp:
            logits = model(ids, mask)  # (b, T, V)
        total = next_token_loss(logits, ids, mask, reduction="sum")
        n_local = mask[:, 1:].sum().to(torch.float32)
        n_global = all_reduce_sum(n_local.detach(), ctx.dist)
        # DDP averages gradients over ranks: scale so the result is the global per-token mean.
        loss = total * ctx.dist.world_size / n_global
        value = all_reduce_sum(total.detach(), ctx.dist) / n_global
        return loss, {"loss": float(value)}
    a, am, b, bm = (batch[k].to(dev, non_blocking=True) for k in ("a", "a_mask", "b", "b_mask"))
    T = max(a.shape[1], b.shape[1])
    ids = torch.cat([_pad_to(a, T, 0), _pad_to(b, T, 0)])  # (2b, T): both sides at once
    mask = torch.cat([_pad_to(am, T, False), _pad_to(bm, T, False)])  # (2b, T)
    # DDP allows one forward per backward: a data-parallel rank runs its rows in one group.
    rows = ids.shape[0] if ctx.dist.world_size > 1 else ctx.group_rows
    with amp:
        pooled = pooled_by_length(model, ids, mask, rows)  # (2b, E)
    n = a.shape[0]
    za = gather_rows(pooled[:n].float(), ctx.dist)  # (B, E) global
    zb = gather_rows(pooled[n:].float(), ctx.dist)  # (B, E) global
    return jepa_objective(za, zb, step, ctx)


def jepa_objective(
    za: torch.Tensor, zb: torch.Tensor, step: int, ctx: LossContext
) -> tuple[torch.Tensor, dict[str, float]]:
    """The configured JEPA objective of global embeddings ``za``, ``zb`` (B, E) of the pairs."""
    cfg = ctx.cfg
    if not bool(torch.isfinite(za).all() and torch.isfinite(zb).all()):
        # Diverged weights (a learning rate far too large) reach the whitening as NaN; say so
        # here rather than let the Cholesky factorisation fail on them. The check is on the
        # global batch, so every data-parallel rank stops at the same step.
        raise TrainingError(
            f"non-finite embeddings at step {step}: the weights diverged "
            "(try a smaller learning rate)"
        )
    logs: dict[str, float] = {}
    if cfg.objective == "whitened":
        try:
            loss = whitened_jepa_loss(za, zb, eps=cfg.whiten_eps)
        except torch.linalg.LinAlgError:
            raise TrainingError(
                f"batch covariance not positive definite at step {step}: the embeddings "
                "degenerated (try a smaller learning rate)"
            ) from None
    elif cfg.objective == "soft":
        loss, penalty = soft_whitening_loss(za, zb, beta=cfg.beta)
        logs["whitening_penalty"] = float(penalty.detach())
    else:
        assert ctx.sigreg is not None
        loss, reg = sigreg_jepa_loss(za, zb, step, ctx.sigreg, lam=cfg.sigreg_lambda)
        logs["sigreg"] = float(reg.detach())
    logs["loss"] = float(loss.detach())
    return loss, logs


def train_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    batch: dict[str, torch.Tensor],
    step: int,
    ctx: LossContext,
) -> dict[str, float]:
    """One optimisation step at ``lr_at(step)``; raises :class:`TrainingError` on a non-finite
    loss or gradient BEFORE changing any weight."""
    optim = ctx.cfg.optim
    lr = optim.lr_at(step, ctx.cfg.steps)
    for group in optimizer.param_groups:
        group["lr"] = lr
    loss, logs = (ctx.loss_fn or compute_loss)(model, batch, step, ctx)
    if not math.isfinite(logs["loss"]):
        raise TrainingError(f"non-finite loss ({logs['loss']}) at step {step}")
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    params = [p for p in model.parameters() if p.grad is not None]
    if optim.grad_clip > 0:
        norm = torch.nn.utils.clip_grad_norm_(params, optim.grad_clip)
    else:
        norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params]))
    if not torch.isfinite(norm):
        raise TrainingError(f"non-finite gradient norm at step {step}")
    optimizer.step()
    logs.update(lr=lr, grad_norm=float(norm))
    return logs


def run_loop(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    dataset: Any,
    start_step: int,
    ctx: LossContext,
    *,
    on_log: Callable[[dict[str, Any]], None] = lambda r: None,
    on_checkpoint: Callable[[int], None] = lambda s: None,
    on_eval: Callable[[int], dict[str, float]] | None = None,
    progress: bool = True,
    stop_after: int | None = None,
) -> int:
    """Train from ``start_step`` to ``cfg.steps``; global batch ``i`` is ``dataset.batch(i)``.

    ``stop_after`` ends the loop after that many steps WITHOUT a checkpoint, exactly like a kill
    (used by tests of resume). Returns the next step to run.
    """
    cfg = ctx.cfg
    bar = Progress(
        cfg.steps, "train", enabled=progress and ctx.dist.is_main, unit="step", initial=start_step
    )
    step = start_step
    model.train()
    try:
        while step < cfg.steps:
            if stop_after is not None and step - start_step >= stop_after:
                break
            logs = train_step(model, optimizer, dataset.batch(step), step, ctx)
            step += 1
            bar.update(1, loss=f"{logs['loss']:.4f}")
            rate = bar.rate * cfg.batch_size  # samples/s
            if cfg.log_every and (step % cfg.log_every == 0 or step == cfg.steps):
                on_log(
                    {"step": step, "samples": step * cfg.batch_size, "samples_per_s": rate, **logs}
                )
            if on_eval is not None and cfg.eval_every and step % cfg.eval_every == 0:
                on_log({"step": step, "samples": step * cfg.batch_size, **on_eval(step)})
            if cfg.checkpoint_every and step % cfg.checkpoint_every == 0 and step < cfg.steps:
                on_checkpoint(step)
    finally:
        bar.close()  # end the progress line, so an error is printed on a line of its own
    return step
