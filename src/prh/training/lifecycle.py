"""One trainer for every modality: :func:`fit` runs a :class:`Task` through a run directory's life.

A task says what a modality adds (model, dataset, loss, evaluation inputs, stored config, how to
rebuild its model from a stored run): :class:`prh.training.api.TextTask` (text JEPAs and the
next-token LM), :class:`prh.training.image.ImageTask` (image and sketch JEPAs). :func:`fit` holds
the rest once: the resume rule (stored configs and thread count), the output checks, device and
processes, the latest checkpoint, the ``config.json`` / ``meta.json`` / ``metrics.jsonl`` files,
the checkpoint and log callbacks of :func:`~prh.training.loop.run_loop`, the final
``model.safetensors``. :func:`load_run` reads any run folder back as a :class:`Run`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

from prh.device import resolve_device
from prh.errors import CheckpointError, InputError, TrainingError
from prh.io import atomic_write, canonical_safetensors, write_json
from prh.jsonio import read_json
from prh.locks import output_lock
from prh.models import ModelConfig
from prh.training import checkpoint as ckpt
from prh.training.config import TrainConfig
from prh.training.distributed import DistInfo, default_threads, init_distributed
from prh.training.loop import LossContext, make_optimizer, run_loop
from prh.training.rundir import (
    CHECKPOINTS,
    MODEL_FILE,
    MODEL_FORMAT,
    MetricsLog,
    finish_meta,
    read_meta,
    run_state,
    write_meta,
)
from prh.training.sinks import RunLog, check_sinks, open_sinks, parse_sinks
from prh.training.theory_eval import theory_eval, theory_target

Callback = Callable[[int], None]
LogFn = Callable[[dict[str, Any]], None]
Barrier = Callable[[], None]
Encode = Callable[[Sequence[Any]], np.ndarray]
LossFn = Callable[..., tuple[torch.Tensor, dict[str, float]]]


@dataclass
class Run:
    """A trained run of any modality: model (eval mode), configs, the ``step`` it was saved at.

    :meth:`encode` is the canonical way to its features, whatever the modality; the subclasses'
    modality-named methods (``encode_texts``, ``embed_texts``, ``encode_images``,
    ``embed_images``) are kept for compatibility.
    """

    model: nn.Module
    config: TrainConfig
    model_config: ModelConfig
    path: Path
    step: int
    device: torch.device

    @property
    def modality(self) -> str:
        """``"text"``, ``"image"`` or ``"sketch"``."""
        raise NotImplementedError

    def encode(self, items: Sequence[Any], batch_size: int | None = None) -> np.ndarray:
        """``(N, L, D)`` float32: every layer's pooled feature of ``items`` (texts, or images as
        (H, W, 3) uint8 arrays), the trained embedding zero-padded to ``D`` as the last layer."""
        raise NotImplementedError


class Task(Protocol):
    """What one modality adds to :func:`fit` (``cfg``: the run's :class:`TrainConfig`)."""

    loss: LossFn | None  # the batch loss; None: prh.training.loop.compute_loss

    def restored(self, stored: dict[str, Any]) -> tuple[Task, TrainConfig]:
        """Task and config of a stored ``config.json`` (KeyError, TypeError, InputError: none)."""

    def check(self, cfg: TrainConfig) -> None:
        """Refuse a config this task cannot train (:class:`InputError`), before any work."""

    def inputs(self, cfg: TrainConfig) -> dict[str, str | None]:
        """Input paths by option name (a run folder about to be cleared must not hold one)."""

    def prepare(self, cfg: TrainConfig, run_dir: Path, info: DistInfo, wait: Barrier) -> Any:
        """What model and dataset need, rank 0 first (text: tokenizer and views; image: None)."""

    def model(self, cfg: TrainConfig, prepared: Any) -> tuple[nn.Module, ModelConfig]:
        """The model to train, initialised from ``cfg.seed``."""

    def dataset(
        self, cfg: TrainConfig, prepared: Any, model: nn.Module, run_dir: Path, info: DistInfo,
        wait: Barrier,
    ) -> Any:  # fmt: skip
        """This rank's data: ``dataset.batch(i)`` is its share of global batch ``i``."""

    def eval_items(self, cfg: TrainConfig, ids: list[str]) -> Sequence[Any]:
        """The inputs to embed for evaluation, one per id of ``cfg.eval_features``."""

    def encoder(self, cfg: TrainConfig, prepared: Any, model: nn.Module, dev: Any) -> Encode:
        """``items -> (N, L, D)`` features of the model in training (for evaluation)."""

    def stored(self, cfg: TrainConfig, mcfg: ModelConfig) -> dict[str, Any]:
        """``config.json`` (and every checkpoint's config): what :meth:`restored` reads."""

    def kind(self, cfg: TrainConfig) -> str:
        """The ``kind`` metadata of the final ``model.safetensors``."""

    def rebuild(self, cfg: TrainConfig, mcfg: ModelConfig) -> nn.Module:
        """The model of a stored run, before its weights are loaded."""

    def as_run(
        self, model: nn.Module, cfg: TrainConfig, mcfg: ModelConfig, path: Path, step: int,
        dev: torch.device,
    ) -> Run:  # fmt: skip
        """The loaded run (its weights in ``model``)."""


RESUME = ("auto", "never", "restart")
"""The values of :func:`fit`'s ``resume``: the one rule for what a run folder already holds."""


def resume_mode(resume: bool | str) -> str:
    """``resume`` as one of :data:`RESUME` (``True`` is ``"auto"``, ``False`` ``"never"``)."""
    if isinstance(resume, bool):
        return "auto" if resume else "never"
    if resume not in RESUME:
        raise InputError(f"resume {resume!r}: expected one of {', '.join(RESUME)}")
    return resume


def fit(
    task: Task,
    cfg: TrainConfig | None,
    out: str | os.PathLike[str],
    progress: bool = True,
    *,
    resume: bool | str = "never",
    device: str | None = None,
    threads: int | None = None,
    stop_after: int | None = None,
) -> tuple[Path, nn.Module]:
    """Train ``task`` with ``cfg`` into the run folder ``out``; return it and this rank's model.

    ``resume`` is the one rule for what ``out`` already holds (every caller, the cell runners
    of :mod:`prh.scaling` included, goes through it; nothing else deletes a run folder):

    - ``"never"`` (the default, ``False``): a fresh start. A run with checkpoints or weights,
      a file and a foreign folder are refused; the leftovers of a start that stopped before
      its first checkpoint (``run_state`` ``"incomplete"``) are cleared.
    - ``"auto"``: a finished run is loaded; a started one continues from its latest
      checkpoint with its stored task, config and thread count, bitwise identical to an
      uninterrupted run on CPU; anything else as ``"never"``. With ``cfg=None`` (``prh train
      --resume``) the stored config must be there, and a folder with a config but no
      checkpoint starts that config from step 0.
    - ``"restart"``: whatever prh run the folder holds is cleared, then a fresh start.
    - ``True`` (what ``--resume RUN`` passes): ``"auto"`` on the stored config, ``cfg`` ignored.

    ``stop_after`` stops after that many steps without a checkpoint (a simulated kill).
    """
    run_dir = Path(out)
    if resume is True:
        cfg = None  # the stored run, whatever cfg says
    task, cfg, threads, action = _resume_rule(task, cfg, run_dir, resume_mode(resume), threads)
    dev, info = start_processes(device, threads)
    # one writer per run folder: the main rank holds its lock for every rank (prh.locks)
    with output_lock(run_dir) if info.is_main else contextlib.nullcontext():
        return _fit_locked(task, cfg, run_dir, dev, info, threads, action, progress, stop_after)


def _fit_locked(task, cfg, run_dir, dev, info, threads, action, progress, stop_after):
    """:func:`fit` once the run folder is this process's (or the rank's main process's);
    ``action``: ``"continue"``, ``"clear"`` (then start) or ``"start"``."""
    if action == "continue" and (run_dir / MODEL_FILE).exists():
        return run_dir, load_run(run_dir, str(dev), lambda _: task).model  # already finished
    task.check(cfg)
    check_sinks(parse_sinks(cfg.log))  # a missing package: its install hint, before the folder
    if cfg.batch_size % info.world_size:
        raise InputError(
            f"batch size {cfg.batch_size} not divisible by {info.world_size} processes"
        )
    evals = eval_target(task, cfg)  # a bad file fails before any work
    theory = theory_target(task, cfg)
    if info.is_main:
        if action == "clear":
            clear_run(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
    barrier(info)
    return _train_run(task, cfg, run_dir, dev, info, threads, (evals, theory), progress,
                      action == "continue", stop_after)  # fmt: skip


def _resume_rule(
    task: Task, cfg: TrainConfig | None, run_dir: Path, mode: str, threads: int | None
) -> tuple[Task, TrainConfig, int, str]:
    """``(task, cfg, threads, action)`` of :func:`fit`'s ``resume`` rule: continuing, the
    stored task and config and the run's own thread count (which keeps it bitwise identical on
    CPU); else the given ones once the folder passes :func:`check_fresh` (every rank checks
    before any rank writes)."""
    state = run_state(run_dir)
    if cfg is None and mode != "auto":
        raise InputError(f"resume {mode!r} starts a run: give its config (or resume 'auto')")
    if cfg is None or (mode == "auto" and state in ("started", "finished")):
        task, cfg = restored(task, read_stored(run_dir), run_dir, "training config")
        threads = read_meta(run_dir).get("threads") or threads
        return task, cfg, threads or default_threads(), "continue"
    if not (mode == "restart" and state in ("incomplete", "started", "finished")):
        state = check_fresh(run_dir)
    if state in ("incomplete", "started", "finished"):
        refuse_inputs_inside(run_dir, task.inputs(cfg))
        return task, cfg, threads or default_threads(), "clear"
    return task, cfg, threads or default_threads(), "start"


def clear_run(run_dir: Path) -> None:
    """Delete the files of a prh run folder (``run_state`` ``"incomplete"``, ``"started"`` or
    ``"finished"``: nothing but a run's own files); the folder itself stays. Only :func:`fit`
    calls it, by its ``resume`` rule."""
    if run_state(run_dir) not in ("incomplete", "started", "finished"):
        raise ValueError(f"{run_dir}: not a prh run folder")
    for e in run_dir.iterdir():
        shutil.rmtree(e) if e.is_dir() else e.unlink()


def _train_run(
    task: Task, cfg: TrainConfig, run_dir: Path, dev: torch.device, info: DistInfo, threads: int,
    evals: tuple[Any, Any], progress: bool, resume: bool, stop_after: int | None,
) -> tuple[Path, nn.Module]:  # fmt: skip
    """The run itself, from the latest checkpoint (if any) to the final weights."""
    folder = run_dir / CHECKPOINTS
    state = latest_state(folder, resume)  # fail before data work
    prepared = task.prepare(cfg, run_dir, info, lambda: barrier(info))
    model, mcfg = task.model(cfg, prepared)
    dataset = task.dataset(cfg, prepared, model, run_dir, info, lambda: barrier(info))
    model.to(dev)
    optimizer = make_optimizer(model, cfg.optim)
    start = restore(model, optimizer, state)
    stored = task.stored(cfg, mcfg)
    log = open_run_files(run_dir, stored, cfg, dev, threads, info, start, resume)
    ddp = model  # DistributedDataParallel under torchrun
    if info.enabled:
        ddp = nn.parallel.DistributedDataParallel(
            model, [dev.index] if dev.type == "cuda" else None
        )
    ctx = LossContext(cfg, info, dev, make_sigreg(cfg, dev), loss_fn=task.loss)
    on_checkpoint, on_log = callbacks(folder, model, optimizer, stored, log, info)
    on_eval = evaluators(task.encoder(cfg, prepared, model, dev), *evals, info)
    with contextlib.closing(log):  # the sinks flushed and closed, however the run ends
        try:
            step = run_loop(
                ddp, optimizer, dataset, start, ctx, on_log=on_log, on_checkpoint=on_checkpoint,
                on_eval=on_eval, progress=progress, stop_after=stop_after,
            )  # fmt: skip
        except TrainingError as e:  # diverged: one error naming the last good checkpoint
            raise stopped(e, folder, on_log) from None
        if step >= cfg.steps:  # else stopped early (a simulated kill)
            finish(run_dir, model, task.kind(cfg), cfg, step, info, on_log, on_eval)
    return run_dir, model


def read_stored(run_dir: Path) -> dict[str, Any]:
    """The ``config.json`` of a run folder to resume.

    Raises
    ------
    InputError
        ``run_dir`` is missing, a file, or a start that stopped before writing its config.
    CheckpointError
        ``config.json`` is missing from a foreign folder, or unreadable.
    """
    state = run_state(run_dir)
    if state == "absent":
        raise InputError(f"{run_dir}: no such run folder to resume")
    if state == "file":
        raise InputError(f"{run_dir}: is a file, expected a run folder to resume")
    path = run_dir / "config.json"
    if not path.is_file():
        if state in ("empty", "incomplete"):
            raise InputError(
                f"{run_dir}: its first start stopped before writing config.json, so "
                f"there is nothing to resume; start it again with --out {run_dir}"
            )
        raise CheckpointError(f"{run_dir}: not a prh run directory (no config.json)")
    try:
        return read_json(path)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path}: unreadable ({e})") from None


def restored(
    task: Task, stored: dict[str, Any], run_dir: Path, what: str
) -> tuple[Task, TrainConfig]:
    """:meth:`Task.restored`, any problem one :class:`CheckpointError` ("not a prh ``what``")."""
    try:
        return task.restored(stored)
    except (KeyError, TypeError, AttributeError, InputError) as e:
        raise CheckpointError(f"{run_dir}: not a prh {what} ({e})") from None


def check_fresh(run_dir: Path) -> str:
    """Refuse a fresh start over a run or a foreign folder; return :func:`run_state`.

    An ``"incomplete"`` folder (a start that stopped before its first checkpoint) is allowed:
    :func:`fit` clears it.
    """
    state = run_state(run_dir)
    if state == "file":
        raise InputError(f"--out {run_dir}: is a file, expected a new run folder")
    if state in ("started", "finished"):
        what = "a finished run" if state == "finished" else "a run with checkpoints"
        hint = "choose another --out" if state == "finished" else f"use --resume {run_dir}"
        raise InputError(f"--out {run_dir}: folder holds {what}; {hint}")
    if state == "foreign":
        raise InputError(
            f"--out {run_dir}: folder exists, is not empty and holds files that are not a prh "
            "run; choose a new folder"
        )
    return state


def refuse_inputs_inside(run_dir: Path, inputs: dict[str, str | None]) -> None:
    """An input inside a folder about to be cleared would be deleted with it."""
    for name, path in inputs.items():
        if path is not None and Path(path).resolve().is_relative_to(run_dir.resolve()):
            flag = "--" + name.replace("_", "-")
            raise InputError(f"{flag} {path}: is inside the run folder {run_dir}; move it out")


def eval_target(task: Task, cfg: TrainConfig) -> tuple[Any, Sequence[Any]] | None:
    """The features of ``cfg.eval_features`` and the task's input for each of their ids (None
    without ``eval_features``)."""
    if not cfg.eval_features:
        return None
    from prh.features import load_features

    where = f"--eval-features {cfg.eval_features}"
    target = load_features(cfg.eval_features)
    if target.ids is None:
        raise InputError(f"{where}: the file has no ids")
    feats = np.asarray(target.features)
    if feats.shape[0] < 2:
        raise InputError(f"{where}: {feats.shape[0]} row(s); alignment needs at least 2")
    bad = ~np.isfinite(feats.reshape(feats.shape[0], -1)).all(1)
    if bad.any():
        raise InputError(f"{where}: row {int(bad.argmax())} holds NaN or infinity")
    return target, task.eval_items(cfg, list(target.ids))


def alignment_eval(
    encode: Encode, target: Any, items: Sequence[Any], info: DistInfo
) -> Callable[[int], dict[str, float]]:
    """Mutual-kNN (k = 10) of ``encode(items)`` with ``target``'s features, on rank 0."""
    from prh.metrics import measure

    def evaluate(step: int) -> dict[str, float]:
        if not info.is_main:
            return {}
        res = measure(
            encode(items), target.features, metric="mutual_knn", k=min(10, len(items) - 1)
        )
        return {"eval_mutual_knn": float(res.score)}

    return evaluate


def evaluators(
    encode: Encode, alignment: tuple[Any, Sequence[Any]] | None, theory: Any, info: DistInfo
) -> Callable[[int], dict[str, float]] | None:
    """One evaluation callback: mutual-kNN against ``eval_features`` (:func:`alignment_eval`)
    and the theory's held-out cc against ``eval_theory`` (:func:`theory_eval`), either or both;
    None with neither."""
    parts = [alignment_eval(encode, *alignment, info)] if alignment is not None else []
    if theory is not None:
        parts.append(theory_eval(encode, theory, info))
    if not parts:
        return None

    def evaluate(step: int) -> dict[str, float]:
        return {k: v for part in parts for k, v in part(step).items()}

    return evaluate


def load_run(
    run_dir: str | os.PathLike[str],
    device: str | None,
    task_of: Callable[[dict[str, Any]], Task],
    readout: bool = True,
) -> Run:
    """Load a run folder with the task ``task_of(stored config)``: the final
    ``model.safetensors`` or, for an unfinished run, the latest checkpoint
    (:func:`prh.training.load_run` picks the task its ``config.json`` names); read through its
    ``readout.safetensors`` when it has one and ``readout`` is true
    (:func:`prh.training.readout.read_out`).

    Raises
    ------
    CheckpointError
        Not a run directory, missing or corrupt weights, weights of another model, a read-out of
        other weights.
    """
    run = Path(run_dir)
    try:
        stored = read_json(run / "config.json")
        mcfg = ModelConfig.from_dict(stored["model"])
    except (OSError, json.JSONDecodeError, KeyError, TypeError, InputError) as e:
        raise CheckpointError(f"{run}: not a prh run directory ({e})") from None
    task, cfg = restored(task_of(stored), stored, run, "run directory")
    model = task.rebuild(cfg, mcfg)
    step = load_trained(model, run, cfg.steps)
    dev = resolve_device(device)
    model.to(dev).eval()
    loaded = task.as_run(model, cfg, mcfg, run, step, dev)
    if not readout:
        return loaded
    from prh.training.readout import read_out

    return read_out(loaded)


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


def latest_state(folder: Path, resume: bool) -> ckpt.Checkpoint | None:
    """The latest checkpoint of a resumed run, loaded (None when fresh or none yet); loaded
    early so that a corrupt one fails before any data work."""
    last = ckpt.latest_checkpoint(folder) if resume else None
    return ckpt.load_checkpoint(last) if last is not None else None


def restore(
    model: nn.Module, optimizer: torch.optim.Optimizer, state: ckpt.Checkpoint | None
) -> int:
    """Put a checkpoint's weights, optimizer state and RNG state back; return the data position
    to start from (0 without a checkpoint)."""
    if state is None:
        return 0
    ckpt.restore_model(model, state.model, state.path)
    try:
        optimizer.load_state_dict(state.optimizer)
    except (ValueError, KeyError, RuntimeError) as e:
        raise CheckpointError(
            f"{state.path}: optimizer state does not fit the model ({e})"
        ) from None
    ckpt.set_rng_state(state.rng)
    return state.data_position


def open_run_files(
    run_dir: Path, stored: dict[str, Any], cfg: TrainConfig, dev: torch.device, threads: int,
    info: DistInfo, start: int, resume: bool,
) -> RunLog:  # fmt: skip
    """Write ``config.json`` (``stored``) and ``meta.json`` on rank 0 and open the metrics log
    (emptied on a fresh start, cut back to ``start`` on resume) with, on rank 0, the sinks of
    ``cfg.log`` (:mod:`prh.training.sinks`)."""
    if info.is_main:
        write_json(run_dir / "config.json", stored)
        write_meta(
            run_dir, seed=cfg.seed, device=str(dev), threads=threads, world_size=info.world_size,
            resumed_from=start if resume else None,
        )  # fmt: skip
        if resume:
            print(f"prh train: resuming {run_dir} from step {start}", file=sys.stderr)
    log = MetricsLog(run_dir / "metrics.jsonl", resume_step=start if resume else None)
    if not resume and info.is_main:
        log.path.write_text("")
    if not info.is_main:
        return RunLog(log)
    return RunLog(log, open_sinks(parse_sinks(cfg.log), run_dir, stored, start if resume else None))


def make_sigreg(cfg: TrainConfig, dev: torch.device) -> nn.Module | None:
    """The SIGReg statistic of a JEPA's ``sigreg`` objective (None for any other, and for a
    next-token run)."""
    if cfg.objective != "sigreg" or cfg.is_lm:
        return None
    from prh.losses import SIGReg

    return SIGReg(num_slices=cfg.sigreg_slices).to(dev)


def callbacks(
    folder: Path, model: nn.Module, optimizer: torch.optim.Optimizer, stored: dict[str, Any],
    log: RunLog, info: DistInfo,
) -> tuple[Callback, LogFn]:  # fmt: skip
    """``(on_checkpoint, on_log)`` for :func:`run_loop`: rank 0 saves a checkpoint carrying
    ``stored`` (after :func:`check_finite_weights`, which refuses a diverged model, so every
    checkpoint kept holds finite weights) and writes the metrics log and its sinks."""

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


def finish(
    run_dir: Path, model: nn.Module, kind: str, cfg: TrainConfig, step: int, info: DistInfo,
    on_log: LogFn, on_eval: Callable[[int], dict[str, float]] | None,
) -> None:  # fmt: skip
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
        finish_meta(run_dir, step)
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
