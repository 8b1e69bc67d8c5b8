"""Orchestration: ``train`` a run directory (fresh or resumed) and ``load_run`` it back."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from prh.device import resolve_device
from prh.errors import CheckpointError, InputError
from prh.models import CausalLM, ModelConfig, TextEncoder, layers_with_embedding, model_config
from prh.training.config import TrainConfig, check_batch
from prh.training.data import TOKENIZER_FILE, default_data_factory, eval_texts
from prh.training.distributed import DistInfo, default_threads
from prh.training.lifecycle import (
    barrier,
    callbacks,
    data_parallel,
    finish,
    latest_state,
    load_trained,
    make_sigreg,
    open_run_files,
    restore,
    run_steps,
    start_processes,
)
from prh.training.loop import LossContext, make_optimizer, trim
from prh.training.rundir import MODEL_FILE, clear_incomplete, read_meta, run_state

DataFactory = Callable[..., tuple[Any, Any]]


def build_model(cfg: TrainConfig, vocab_size: int) -> tuple[nn.Module, ModelConfig]:
    """The model a config trains (a :class:`TextEncoder`, or a :class:`CausalLM` for next-token),
    initialised from ``cfg.seed``."""
    mcfg = model_config(cfg.preset, vocab_size, max_len=cfg.max_len, **cfg.model_overrides)
    torch.manual_seed(cfg.seed)
    check_batch(cfg, mcfg)
    model = CausalLM(mcfg) if cfg.is_lm else TextEncoder(mcfg)
    return model, mcfg


def train(
    cfg: TrainConfig,
    out_dir: str | os.PathLike[str],
    progress: bool = True,
    *,
    resume: bool = False,
    device: str | None = None,
    threads: int | None = None,
    stop_after: int | None = None,
    data_factory: DataFactory | None = None,
) -> Path:
    """Train ``cfg`` into the run directory ``out_dir`` and return its path.

    With ``resume=True`` the run continues from its latest checkpoint with its stored config
    (``cfg`` is ignored); the result is bitwise identical to an uninterrupted run on CPU.
    ``stop_after`` stops after that many steps without a checkpoint (a simulated kill).

    A fresh start over the leftovers of a start that stopped before its first checkpoint
    (a tokenizer, a config, no weights) clears them and starts again; ``resume=True`` on a folder
    with a config but no checkpoint starts that config from step 0. Without ``threads``, a resumed
    run uses the thread count stored in its ``meta.json``.

    Raises
    ------
    InputError
        Bad config, an unknown or unavailable device, an existing run folder without ``resume``
        (or a foreign one), nothing to resume, a corpus smaller than the batch.
    CheckpointError
        A corrupt or foreign checkpoint on resume.
    TrainingError
        A non-finite loss; the last good checkpoint is kept.
    """
    return _train(cfg, out_dir, progress, resume, device, threads, stop_after, data_factory)[0]


def _train(
    cfg: TrainConfig,
    out_dir: str | os.PathLike[str],
    progress: bool,
    resume: bool,
    device: str | None,
    threads: int | None,
    stop_after: int | None,
    data_factory: DataFactory | None,
) -> tuple[Path, nn.Module]:
    """:func:`train`, also returning this rank's model (for tests of data parallelism)."""
    run_dir = Path(out_dir)
    fresh_state = "resume"
    if resume:
        cfg = read_run_config(run_dir)
        # The run's own thread count keeps a resumed run bitwise identical on CPU.
        threads = threads or read_meta(run_dir).get("threads")
    else:
        fresh_state = _check_fresh(run_dir)  # all ranks check before any rank writes
        if fresh_state == "incomplete":
            _refuse_inputs_inside(
                run_dir, {"corpus": cfg.corpus, "eval_features": cfg.eval_features}
            )
    threads = threads or default_threads()
    dev, info = start_processes(device, threads)
    if resume and (run_dir / MODEL_FILE).exists():
        return run_dir, load_run(run_dir).model  # already finished
    check_batch(cfg)
    if cfg.batch_size % info.world_size:
        raise InputError(
            f"batch size {cfg.batch_size} not divisible by {info.world_size} processes"
        )
    evals = _eval_target(cfg) if cfg.eval_features else None  # a bad file fails before any work
    if info.is_main:
        if fresh_state == "incomplete":
            clear_incomplete(run_dir)  # no checkpoint, no weights: nothing of value to keep
        run_dir.mkdir(parents=True, exist_ok=True)
    barrier(info)

    folder = run_dir / "checkpoints"
    last, state = latest_state(folder, resume)  # fail before data work
    factory = data_factory or default_data_factory
    tokenizer, dataset = factory(
        cfg, run_dir, info.rank, info.world_size, info.is_main, lambda: barrier(info)
    )
    model, mcfg = build_model(cfg, tokenizer.vocab_size)
    model.to(dev)
    optimizer = make_optimizer(model, cfg.optim)
    start = restore(model, optimizer, last, state)
    stored = {"train": cfg.to_dict(), "model": mcfg.to_dict()}
    log = open_run_files(run_dir, stored, cfg, dev, threads, info, start, resume)
    ddp_model = data_parallel(model, info, dev)
    ctx = LossContext(cfg, info, dev, make_sigreg(cfg, dev))
    on_checkpoint, on_log = callbacks(folder, model, optimizer, cfg.to_dict(), log, info)
    on_eval = _make_eval(cfg, evals, model, tokenizer, dev, info) if evals else None
    step = run_steps(
        ddp_model, optimizer, dataset, start, ctx, folder, on_log,
        on_checkpoint, on_eval, progress, stop_after,
    )  # fmt: skip
    if step < cfg.steps:
        return run_dir, model  # stopped early (simulated kill)
    kind = "causal-lm" if cfg.is_lm else "text-encoder"
    finish(run_dir, model, kind, cfg, step, info, on_log, on_eval)
    return run_dir, model


def read_run_config(run_dir: str | os.PathLike[str]) -> TrainConfig:
    """The stored :class:`TrainConfig` of a run folder (to resume it).

    Raises
    ------
    InputError
        ``run_dir`` is missing, a file, or a start that stopped before writing its config.
    CheckpointError
        ``config.json`` is unreadable or not a prh training config.
    """
    run_dir = Path(run_dir)
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
        stored = json.loads(path.read_text())
        return TrainConfig.from_dict(stored["train"])
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path}: unreadable ({e})") from None
    except (KeyError, TypeError, InputError) as e:
        raise CheckpointError(f"{path}: not a prh training config ({e})") from None


def _check_fresh(run_dir: Path) -> str:
    """Refuse a fresh start over a run or a foreign folder; return :func:`run_state`.

    An ``"incomplete"`` folder (a start that stopped before its first checkpoint) is allowed:
    the caller clears it.
    """
    state = run_state(run_dir)
    if state == "file":
        raise InputError(f"--out {run_dir}: is a file, expected a new run folder")
    if state in ("started", "finished"):
        what = "a finished run" if state == "finished" else "a run with checkpoints"
        hint = "choose another --out" if state == "finished" else f"use --resume {run_dir}"
        raise InputError(f"--out {run_dir}: folder holds {what}; {hint}")
    elif state == "foreign":
        raise InputError(
            f"--out {run_dir}: folder exists and holds files that are not a prh run; "
            "choose a new folder"
        )
    return state


def _refuse_inputs_inside(run_dir: Path, inputs: dict[str, str | None]) -> None:
    """An input inside a folder about to be cleared would be deleted with it."""
    for name, path in inputs.items():
        if path is not None and Path(path).resolve().is_relative_to(run_dir.resolve()):
            flag = "--" + name.replace("_", "-")
            raise InputError(f"{flag} {path}: is inside the run folder {run_dir}; move it out")


def _eval_target(cfg: TrainConfig) -> tuple[Any, list[str]]:
    """The features of ``cfg.eval_features`` and the caption to embed for each of their ids."""
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
    return target, eval_texts(cfg, list(target.ids))


def _make_eval(
    cfg: TrainConfig,
    evals: tuple[Any, list[str]],
    model: nn.Module,
    tokenizer: Any,
    dev: torch.device,
    info: DistInfo,
) -> Callable[[int], dict[str, float]]:
    """Alignment (mutual-kNN, k = 10) of the model with ``cfg.eval_features`` on rank 0."""
    from prh.metrics import measure

    target, texts = evals

    def evaluate(step: int) -> dict[str, float]:
        if not info.is_main:
            return {}
        feats = encode_texts(model, tokenizer, texts, cfg.max_len, dev, include_pooled=True)
        res = measure(feats, target.features, metric="mutual_knn", k=min(10, len(texts) - 1))
        return {"eval_mutual_knn": float(res.score)}

    return evaluate


@torch.no_grad()
def encode_texts(
    model: nn.Module,
    tokenizer: Any,
    texts: Sequence[str],
    max_len: int,
    device: torch.device | str = "cpu",
    batch_size: int = 256,
    include_pooled: bool = True,
    pool: str = "avg",
) -> np.ndarray:
    """Every layer's pooled hidden state ``(N, L + 1, D)`` (float32).

    ``pool="avg"`` (default): the mean over real tokens (the PRH benchmark's pooling of language
    models); for a :class:`TextEncoder` with ``include_pooled``, the JEPA embedding ``(E <= D)``
    is appended as a last layer, zero-padded to ``D`` (padding changes no cosine or inner
    product). ``pool="last"``: the hidden state of the last real token (``[EOS]``) of every
    layer, no appended projection (the JEPA head is defined on the mean).
    """
    if pool not in ("avg", "last"):
        raise InputError(f"pool {pool!r}: expected avg or last")
    was_training = model.training
    model.eval()
    out = []
    for i in range(0, len(texts), batch_size):
        ids, mask = trim(*tokenizer.encode_batch(list(texts[i : i + batch_size]), max_len))
        if pool == "last":
            hs = model.trunk(ids.to(device), mask.to(device))  # L + 1 of (b, T, D)
            last = mask.to(device).long().sum(1).clamp_min(1) - 1  # (b,) last real token
            rows = torch.arange(len(last), device=last.device)
            out.append(torch.stack([h[rows, last] for h in hs], 1).float().cpu().numpy())
            continue
        enc = model.encode(ids.to(device), mask.to(device))
        if include_pooled and isinstance(model, TextEncoder):
            layers = layers_with_embedding(enc)  # (b, L + 2, D)
        else:
            layers = enc.layers.float()  # (b, L + 1, D)
        out.append(layers.cpu().numpy())
    model.train(was_training)
    if not out:
        return np.zeros((0, 0, 0), dtype=np.float32)
    return np.concatenate(out).astype(np.float32, copy=False)


@dataclass
class LoadedRun:
    """A trained run: model (eval mode), tokenizer, configs; ``step`` it was saved at."""

    model: nn.Module
    tokenizer: Any
    config: TrainConfig
    model_config: ModelConfig
    path: Path
    step: int
    device: torch.device

    def encode_texts(
        self, texts: Sequence[str], batch_size: int = 256, pool: str = "avg"
    ) -> np.ndarray:
        """``(N, L, D)`` float32: every layer mean-pooled over valid tokens (and, for a JEPA, the
        projection zero-padded to ``D`` as the last layer); ``pool="last"``: every layer's last
        real token."""
        return encode_texts(
            self.model,
            self.tokenizer,
            texts,
            self.config.max_len,
            self.device,
            batch_size,
            pool=pool,
        )

    def embed_texts(self, texts: Sequence[str], batch_size: int = 256) -> np.ndarray:
        """``(N, E)`` float32: the trained embedding (JEPA projection; LM: mean last layer)."""
        out = []
        with torch.no_grad():
            for i in range(0, len(texts), batch_size):
                ids, mask = self.tokenizer.encode_batch(
                    list(texts[i : i + batch_size]), self.config.max_len
                )
                enc = self.model.encode(ids.to(self.device), mask.to(self.device))
                out.append(enc.pooled.float().cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, 0), dtype=np.float32)


def load_run(
    run_dir: str | os.PathLike[str], device: str | None = None, tokenizer_loader: Any = None
) -> LoadedRun:
    """Load a run directory: the final ``model.safetensors`` or, for an unfinished run, the
    latest checkpoint.

    Raises
    ------
    CheckpointError
        Not a run directory, missing or corrupt weights, weights of another model.
    """
    run = Path(run_dir)
    from prh.training.image import is_image_run, load_image_run

    if is_image_run(run):
        return load_image_run(run, device)  # type: ignore[return-value]
    try:
        stored = json.loads((run / "config.json").read_text())
        cfg = TrainConfig.from_dict(stored["train"])
        mcfg = ModelConfig.from_dict(stored["model"])
    except (OSError, json.JSONDecodeError, KeyError, TypeError, InputError) as e:
        raise CheckpointError(f"{run}: not a prh run directory ({e})") from None
    if tokenizer_loader is None:
        from prh.views import TextTokenizer

        tokenizer_loader = TextTokenizer.load
    tok_path = run / TOKENIZER_FILE
    if not tok_path.is_file():
        raise CheckpointError(f"{run}: no {TOKENIZER_FILE}")
    tokenizer = tokenizer_loader(tok_path)
    model = CausalLM(mcfg) if cfg.is_lm else TextEncoder(mcfg)
    step = load_trained(model, run, cfg.steps)
    dev = resolve_device(device)
    model.to(dev).eval()
    return LoadedRun(model, tokenizer, cfg, mcfg, run, step, dev)
