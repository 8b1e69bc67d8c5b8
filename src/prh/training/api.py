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

from prh.errors import CheckpointError, InputError, TrainingError
from prh.io import write_json
from prh.models import CausalLM, ModelConfig, TextEncoder, model_config
from prh.training import checkpoint as ckpt
from prh.training.config import TrainConfig
from prh.training.data import TOKENIZER_FILE, default_data_factory, eval_texts
from prh.training.distributed import DistInfo, default_threads, init_distributed
from prh.training.loop import LossContext, make_optimizer, run_loop, trim
from prh.training.rundir import MetricsLog, write_meta

MODEL_FILE = "model.safetensors"
MODEL_FORMAT = "prh-model/1"

DataFactory = Callable[..., tuple[Any, Any]]


def build_model(cfg: TrainConfig, vocab_size: int) -> tuple[nn.Module, ModelConfig]:
    """The model a config trains (a :class:`TextEncoder`, or a :class:`CausalLM` for next-token),
    initialised from ``cfg.seed``."""
    mcfg = model_config(cfg.preset, vocab_size, max_len=cfg.max_len, **cfg.model_overrides)
    torch.manual_seed(cfg.seed)
    check_batch(cfg, mcfg)
    model = CausalLM(mcfg) if cfg.is_lm else TextEncoder(mcfg)
    return model, mcfg


def check_batch(cfg: TrainConfig, mcfg: ModelConfig | None = None) -> None:
    """Refuse a JEPA batch too small to estimate an ``embed_dim`` covariance."""
    mcfg = mcfg or model_config(cfg.preset, 1, max_len=cfg.max_len, **cfg.model_overrides)
    # Whitening 2B rows in E dims overfits the batch when E is not small against 2B: with
    # E >= B the pairs can be made to coincide exactly, a batch-level collapse.
    if not cfg.is_lm and 2 * cfg.batch_size < 4 * mcfg.embed_dim:
        raise InputError(
            f"batch size {cfg.batch_size} too small to whiten a {mcfg.embed_dim}-dim embedding "
            f"(need 2 x batch >= 4 x embed_dim)"
        )


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

    Raises
    ------
    InputError
        Bad config, an existing run folder without ``resume``, a corpus smaller than the batch.
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
    threads = threads or default_threads()
    torch.set_num_threads(threads)
    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    info = init_distributed(dev.type)
    if dev.type == "cuda":
        dev = torch.device("cuda", info.local_rank)
        torch.cuda.set_device(dev)

    if resume:
        if not (run_dir / "config.json").is_file():
            raise CheckpointError(f"{run_dir}: not a prh run directory (no config.json)")
        stored = json.loads((run_dir / "config.json").read_text())
        try:
            cfg = TrainConfig.from_dict(stored["train"])
        except (KeyError, TypeError) as e:
            raise CheckpointError(
                f"{run_dir}/config.json: not a prh training config ({e})"
            ) from None
        if (run_dir / MODEL_FILE).exists():
            return run_dir, load_run(run_dir).model  # already finished
    elif run_dir.exists() and any(run_dir.iterdir()):
        raise InputError(
            f"--out {run_dir}: folder exists and is not empty (use --resume to continue)"
        )
    check_batch(cfg)
    if cfg.batch_size % info.world_size:
        raise InputError(
            f"batch size {cfg.batch_size} not divisible by {info.world_size} processes"
        )
    if info.is_main:
        run_dir.mkdir(parents=True, exist_ok=True)
    _barrier(info)

    folder = run_dir / "checkpoints"
    last = ckpt.latest_checkpoint(folder) if resume else None
    state = ckpt.load_checkpoint(last) if last is not None else None  # fail before data work
    factory = data_factory or default_data_factory
    tokenizer, dataset = factory(
        cfg, run_dir, info.rank, info.world_size, info.is_main, lambda: _barrier(info)
    )
    model, mcfg = build_model(cfg, tokenizer.vocab_size)
    model.to(dev)
    optimizer = make_optimizer(model, cfg)
    start = 0
    if state is not None and last is not None:
        ckpt.restore_model(model, state.model, last)
        try:
            optimizer.load_state_dict(state.optimizer)
        except (ValueError, KeyError, RuntimeError) as e:
            raise CheckpointError(f"{last}: optimizer state does not fit the model ({e})") from None
        ckpt.set_rng_state(state.rng)
        start = state.data_position

    if info.is_main:
        write_json(run_dir / "config.json", {"train": cfg.to_dict(), "model": mcfg.to_dict()})
        write_meta(
            run_dir, seed=cfg.seed, device=str(dev), threads=threads, world_size=info.world_size
        )
    log = MetricsLog(run_dir / "metrics.jsonl", resume_step=start if resume else None)
    if not resume and info.is_main:
        log.path.write_text("")

    ddp_model: nn.Module = model
    if info.enabled:
        ddp_model = nn.parallel.DistributedDataParallel(
            model, device_ids=[dev.index] if dev.type == "cuda" else None
        )
    sigreg = None
    if cfg.objective == "sigreg" and not cfg.is_lm:
        from prh.losses import SIGReg

        sigreg = SIGReg(num_slices=cfg.sigreg_slices).to(dev)
    ctx = LossContext(cfg, info, dev, sigreg)

    def on_checkpoint(step: int) -> None:
        if info.is_main:
            ckpt.save_checkpoint(folder, step, step, model, optimizer, cfg.to_dict())
        _barrier(info)

    def on_log(record: dict[str, Any]) -> None:
        if info.is_main:
            log.write(record)

    on_eval = _make_eval(cfg, model, tokenizer, dev, info) if cfg.eval_features else None
    try:
        step = run_loop(
            ddp_model,
            optimizer,
            dataset,
            start,
            ctx,
            on_log=on_log,
            on_checkpoint=on_checkpoint,
            on_eval=on_eval,
            progress=progress,
            stop_after=stop_after,
        )
    except TrainingError as e:
        good = ckpt.latest_checkpoint(folder)
        where = f"last good checkpoint: {good}" if good else "no checkpoint was written yet"
        on_log({"error": str(e)})
        raise TrainingError(f"{e}; stopped ({where})") from None
    if step < cfg.steps:
        return run_dir, model  # stopped early (simulated kill)
    if info.is_main:
        from safetensors.torch import save

        from prh.io import atomic_write

        blob = save(
            {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()},
            metadata={"format": MODEL_FORMAT, "kind": "causal-lm" if cfg.is_lm else "text-encoder"},
        )
        with atomic_write(run_dir / MODEL_FILE, "wb") as f:
            f.write(blob)
        if on_eval is not None and (not cfg.eval_every or step % cfg.eval_every):
            on_log({"step": step, "samples": step * cfg.batch_size, **on_eval(step)})
    _barrier(info)
    return run_dir, model


def _barrier(info: DistInfo) -> None:
    if info.enabled:
        torch.distributed.barrier()


def _make_eval(
    cfg: TrainConfig, model: nn.Module, tokenizer: Any, dev: torch.device, info: DistInfo
) -> Callable[[int], dict[str, float]]:
    """Alignment (mutual-kNN, k = 10) of the model with ``cfg.eval_features`` on rank 0."""
    from prh.features import load_features

    try:
        from prh.metrics import measure
    except ImportError as e:
        raise InputError(f"--eval-features needs prh.metrics ({e})") from None
    target = load_features(cfg.eval_features)
    if target.ids is None:
        raise InputError(f"--eval-features {cfg.eval_features}: the file has no ids")
    texts = eval_texts(cfg, list(target.ids))

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
        layers = enc.layers.float()  # (b, L + 1, D)
        if include_pooled and isinstance(model, TextEncoder):
            pooled = enc.pooled.float()  # (b, E)
            D = layers.shape[-1]
            if pooled.shape[-1] <= D:
                pad = torch.nn.functional.pad(pooled, (0, D - pooled.shape[-1]))  # (b, D)
                layers = torch.cat([layers, pad[:, None]], 1)  # (b, L + 2, D)
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
    if (run / MODEL_FILE).is_file():
        ckpt.restore_model(model, ckpt.load_weights(run / MODEL_FILE), run / MODEL_FILE)
        step = cfg.steps
    else:
        last = ckpt.latest_checkpoint(run / "checkpoints")
        if last is None:
            raise CheckpointError(f"{run}: no {MODEL_FILE} and no checkpoint")
        state = ckpt.load_checkpoint(last)
        ckpt.restore_model(model, state.model, last)
        step = state.step
    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    model.to(dev).eval()
    return LoadedRun(model, tokenizer, cfg, mcfg, run, step, dev)
