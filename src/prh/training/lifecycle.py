"""The life of a run directory, shared by text runs (:mod:`prh.training.api`) and image runs
(:mod:`prh.training.image`): device and processes, restoring the latest checkpoint, the
``config.json`` / ``meta.json`` / ``metrics.jsonl`` files, the checkpoint and log callbacks of
:func:`~prh.training.loop.run_loop`, and the final ``model.safetensors``.

Each step is a small function so that both trainers call the same code in their own order.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from prh.device import resolve_device
from prh.errors import CheckpointError, TrainingError
from prh.io import atomic_write, canonical_safetensors, write_json
from prh.training import checkpoint as ckpt
from prh.training.config import TrainConfig
from prh.training.distributed import DistInfo, init_distributed
from prh.training.loop import LossContext, run_loop
from prh.training.rundir import CHECKPOINTS, MODEL_FILE, MODEL_FORMAT, MetricsLog, write_meta

Callback = Callable[[int], None]
LogFn = Callable[[dict[str, Any]], None]


def barrier(info: DistInfo) -> None:
    """Wait for every rank (a no-op in a single process)."""
    if info.enabled:
        torch.distributed.barrier()


def check_finite_weights(model: nn.Module, step: int) -> None:
    """Refuse to save weights that hold NaN or infinity (the last good checkpoint stays)."""
    for name, p in model.named_parameters():
        if not bool(torch.isfinite(p).all()):
            raise TrainingError(
                f"non-finite weights ({name}) after step {step}: training diverged "
                "(try a smaller learning rate)"
            )


def start_processes(device: str | None, threads: int) -> tuple[torch.device, DistInfo]:
    """Set torch's ``threads``, join the process group, and pick this rank's device."""
    torch.set_num_threads(threads)
    dev = resolve_device(device)
    info = init_distributed(dev.type)
    if dev.type == "cuda":
        dev = torch.device("cuda", info.local_rank)
        torch.cuda.set_device(dev)
    return dev, info


def latest_state(folder: Path, resume: bool) -> tuple[Path | None, ckpt.Checkpoint | None]:
    """The latest checkpoint of a resumed run and its loaded state (``(None, None)`` when fresh
    or none yet); loaded early so that a corrupt one fails before any data work."""
    last = ckpt.latest_checkpoint(folder) if resume else None
    return last, (ckpt.load_checkpoint(last) if last is not None else None)


def restore(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    last: Path | None,
    state: ckpt.Checkpoint | None,
) -> int:
    """Put a checkpoint's weights, optimizer state and RNG state back; return the data position
    to start from (0 without a checkpoint)."""
    if state is None or last is None:
        return 0
    ckpt.restore_model(model, state.model, last)
    try:
        optimizer.load_state_dict(state.optimizer)
    except (ValueError, KeyError, RuntimeError) as e:
        raise CheckpointError(f"{last}: optimizer state does not fit the model ({e})") from None
    ckpt.set_rng_state(state.rng)
    return state.data_position


def open_run_files(
    run_dir: Path,
    stored: dict[str, Any],
    cfg: TrainConfig,
    dev: torch.device,
    threads: int,
    info: DistInfo,
    start: int,
    resume: bool,
) -> MetricsLog:
    """Write ``config.json`` (``stored``) and ``meta.json`` on rank 0 and open the metrics log
    (emptied on a fresh start, cut back to ``start`` on resume)."""
    if info.is_main:
        write_json(run_dir / "config.json", stored)
        write_meta(
            run_dir, seed=cfg.seed, device=str(dev), threads=threads, world_size=info.world_size
        )
    log = MetricsLog(run_dir / "metrics.jsonl", resume_step=start if resume else None)
    if not resume and info.is_main:
        log.path.write_text("")
    return log


def data_parallel(model: nn.Module, info: DistInfo, dev: torch.device) -> nn.Module:
    """``model`` wrapped in DistributedDataParallel under ``torchrun``, else ``model`` itself."""
    if not info.enabled:
        return model
    return nn.parallel.DistributedDataParallel(
        model, device_ids=[dev.index] if dev.type == "cuda" else None
    )


def make_sigreg(cfg: TrainConfig, dev: torch.device) -> nn.Module | None:
    """The SIGReg statistic of a JEPA's ``sigreg`` objective (None for any other, and for a
    next-token run)."""
    if cfg.objective != "sigreg" or cfg.is_lm:
        return None
    from prh.losses import SIGReg

    return SIGReg(num_slices=cfg.sigreg_slices).to(dev)


def callbacks(
    folder: Path,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    stored: dict[str, Any],
    log: MetricsLog,
    info: DistInfo,
) -> tuple[Callback, LogFn]:
    """``(on_checkpoint, on_log)`` for :func:`run_loop`: rank 0 saves a checkpoint carrying
    ``stored`` (after :func:`check_finite_weights`, which refuses a diverged model, so every
    checkpoint kept holds finite weights) and writes the metrics log."""

    def on_checkpoint(step: int) -> None:
        check_finite_weights(model, step)
        if info.is_main:
            ckpt.save_checkpoint(folder, step, step, model, optimizer, stored)
        barrier(info)

    def on_log(record: dict[str, Any]) -> None:
        if info.is_main:
            log.write(record)

    return on_checkpoint, on_log


def stopped(e: TrainingError, folder: Path, on_log: LogFn) -> TrainingError:
    """Log ``e`` and return it naming the last good checkpoint (the caller raises it)."""
    good = ckpt.latest_checkpoint(folder)
    where = f"last good checkpoint: {good}" if good else "no checkpoint was written yet"
    on_log({"error": str(e)})
    return TrainingError(f"{e}; stopped ({where})")


def run_steps(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    dataset: Any,
    start: int,
    ctx: LossContext,
    folder: Path,
    on_log: LogFn,
    on_checkpoint: Callback,
    on_eval: Callable[[int], dict[str, float]] | None,
    progress: bool,
    stop_after: int | None,
) -> int:
    """:func:`run_loop`; a diverged run raises one :class:`TrainingError` naming its last good
    checkpoint."""
    try:
        return run_loop(
            model, optimizer, dataset, start, ctx, on_log=on_log, on_checkpoint=on_checkpoint,
            on_eval=on_eval, progress=progress, stop_after=stop_after,
        )  # fmt: skip
    except TrainingError as e:
        raise stopped(e, folder, on_log) from None


def finish(
    run_dir: Path,
    model: nn.Module,
    kind: str,
    cfg: TrainConfig,
    step: int,
    info: DistInfo,
    on_log: LogFn,
    on_eval: Callable[[int], dict[str, float]] | None,
) -> None:
    """Rank 0 writes the final ``model.safetensors`` (metadata ``kind``) and, unless the loop
    just evaluated at ``step``, a last evaluation; then every rank waits.

    Raises
    ------
    TrainingError
        Non-finite weights (logged, naming the last good checkpoint): no model is written.
    """
    try:
        check_finite_weights(model, step)
    except TrainingError as e:
        raise stopped(e, run_dir / CHECKPOINTS, on_log) from None
    if info.is_main:
        from safetensors.torch import save

        blob = save(
            {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()},
            metadata={"format": MODEL_FORMAT, "kind": kind},
        )
        with atomic_write(run_dir / MODEL_FILE, "wb") as f:
            f.write(canonical_safetensors(blob))
        if on_eval is not None and (not cfg.eval_every or step % cfg.eval_every):
            on_log({"step": step, "samples": step * cfg.batch_size, **on_eval(step)})
    barrier(info)


def load_trained(model: nn.Module, run: Path, final_step: int) -> int:
    """Load a run's final weights into ``model`` (or, for an unfinished run, its latest
    checkpoint's); return the step they were saved at."""
    if (run / MODEL_FILE).is_file():
        ckpt.restore_model(model, ckpt.load_weights(run / MODEL_FILE), run / MODEL_FILE)
        return final_step
    last = ckpt.latest_checkpoint(run / "checkpoints")
    if last is None:
        raise CheckpointError(f"{run}: no {MODEL_FILE} and no checkpoint")
    state = ckpt.load_checkpoint(last)
    ckpt.restore_model(model, state.model, last)
    return state.step
