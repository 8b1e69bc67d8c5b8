"""Data parallelism with ``torchrun``: process-group set-up and a gradient-exact all-gather.

Every rank computes the JEPA loss on the GLOBAL batch (whitening statistics need the whole batch),
so the loss value is identical on all ranks. The gradient of that shared loss with respect to a
rank's own embeddings is then already on the rank; :class:`GatherRows` passes it back scaled by the
world size because DDP averages gradients over ranks.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class DistInfo:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1


def default_threads(env: Mapping[str, str] | None = None) -> int:
    """CPU threads for this process when ``--threads`` is not given.

    ``OMP_NUM_THREADS`` when set (``torchrun`` sets it to 1 per rank unless the user chose a
    value; a cluster job sets it to its CPU allocation): the launcher knows how many processes
    share the machine. Otherwise the cores this process may use, divided among the
    ``LOCAL_WORLD_SIZE`` ranks on this node, so N ranks never each take every core.
    """
    env = os.environ if env is None else env
    omp = env.get("OMP_NUM_THREADS", "").strip()
    if omp.isdigit() and int(omp) > 0:
        return int(omp)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    local = env.get("LOCAL_WORLD_SIZE", "1").strip()
    ranks = int(local) if local.isdigit() and int(local) > 0 else 1
    return max(1, (cores or 1) // ranks)


def init_distributed(device_type: str) -> DistInfo:
    """Join the process group that ``torchrun`` describes in the environment (gloo on CPU, NCCL
    on GPU); a plain ``python`` launch gives a single-process :class:`DistInfo`."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        return DistInfo()
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if device_type == "cuda" else "gloo")
    return DistInfo(dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", "0")))


def leave_process_group() -> None:
    """Destroy the default process group when this process joined one (a no-op otherwise).

    torch asks every trainer process to call ``destroy_process_group`` before it exits: a
    process that leaves its group to interpreter finalization tears gloo's and the store's
    threads down in an unspecified order. ``prh`` calls this once per command, so one
    ``torchrun ... prh train`` process that ran several trainings still leaves once.
    """
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


class GatherRows(torch.autograd.Function):
    """``(b, E)`` per rank -> ``(W b, E)`` in rank order, identical on every rank."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        ctx.rank, ctx.world, ctx.n = dist.get_rank(), dist.get_world_size(), x.shape[0]
        out = [torch.empty_like(x) for _ in range(ctx.world)]
        dist.all_gather(out, x.contiguous())
        return torch.cat(out)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        # Every rank holds the same loss, so its gradient for our rows is already here; DDP will
        # divide by the world size when it averages, so multiply by it.
        own = grad[ctx.rank * ctx.n : (ctx.rank + 1) * ctx.n]
        return own * ctx.world


def gather_rows(x: torch.Tensor, info: DistInfo) -> torch.Tensor:
    return GatherRows.apply(x) if info.enabled else x


def all_reduce_sum(x: torch.Tensor, info: DistInfo) -> torch.Tensor:
    """Sum of a (detached) tensor over ranks."""
    if info.enabled:
        x = x.clone()
        dist.all_reduce(x)
    return x
