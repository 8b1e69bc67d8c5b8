"""Text runs: :class:`TextTask` for :func:`~prh.training.lifecycle.fit`; ``train`` a run folder
(fresh or resumed) and ``load_run`` it back (:func:`~prh.training.lifecycle.load_run`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from prh.errors import CheckpointError, InputError
from prh.models import CausalLM, ModelConfig, TextEncoder, layers_with_embedding, model_config
from prh.training.config import TrainConfig, check_batch
from prh.training.data import (
    TOKENIZER_FILE,
    check_corpus_unchanged,
    corpus_record,
    default_data_factory,
    eval_texts,
    world_model_defaults,
)
from prh.training.distributed import DistInfo
from prh.training.lifecycle import Barrier, Encode, Run, Task, fit, read_stored, restored
from prh.training.lifecycle import load_run as load_task_run
from prh.training.loop import length_groups, trim

DataFactory = Callable[..., tuple[Any, Any]]

__all__ = ["LoadedRun", "TextTask", "build_model", "encode_texts", "load_run", "train"]


def build_model(cfg: TrainConfig, vocab_size: int) -> tuple[nn.Module, ModelConfig]:
    """The model a config trains (a :class:`TextEncoder`, or a :class:`CausalLM` for next-token),
    initialised from ``cfg.seed``."""
    fields = {**world_model_defaults(cfg), **cfg.model_overrides}  # the run's own win
    mcfg = model_config(cfg.preset, vocab_size, max_len=cfg.max_len, **fields)
    torch.manual_seed(cfg.seed)
    check_batch(cfg, mcfg)
    model = CausalLM(mcfg) if cfg.is_lm else TextEncoder(mcfg)
    return model, mcfg


@dataclass(frozen=True)
class TextTask:
    """Text JEPAs and the next-token LM as a :class:`prh.training.lifecycle.Task`.

    ``data_factory(cfg, run_dir, rank, world_size, is_main, barrier) -> (tokenizer, dataset)``
    (default :func:`prh.training.data.default_data_factory`); ``tokenizer_loader(path)`` reads a
    stored run's tokenizer (default :meth:`prh.views.TextTokenizer.load`).
    """

    data_factory: DataFactory | None = None
    tokenizer_loader: Callable[[Path], Any] | None = None
    loss = None  # prh.training.loop.compute_loss

    def restored(self, stored: dict[str, Any]) -> tuple[TextTask, TrainConfig]:
        return replace(self), TrainConfig.from_dict(stored["train"])

    def check(self, cfg: TrainConfig) -> None:
        check_batch(cfg)

    def inputs(self, cfg: TrainConfig) -> dict[str, str | None]:
        return {
            "corpus": cfg.corpus,
            "eval_features": cfg.eval_features,
            "eval_theory": cfg.eval_theory,
        }

    def prepare(self, cfg: TrainConfig, run_dir: Path, info: DistInfo, wait: Barrier) -> Any:
        if (run_dir / "config.json").is_file():  # a resume: the corpus must be the same bytes
            check_corpus_unchanged(cfg, read_stored(run_dir))
        factory = self.data_factory or default_data_factory
        return factory(cfg, run_dir, info.rank, info.world_size, info.is_main, wait)

    def model(self, cfg: TrainConfig, prepared: Any) -> tuple[nn.Module, ModelConfig]:
        return build_model(cfg, prepared[0].vocab_size)

    def dataset(self, cfg: TrainConfig, prepared: Any, *_: Any) -> Any:
        return prepared[1]

    def eval_items(self, cfg: TrainConfig, ids: list[str]) -> list[str]:
        return eval_texts(cfg, ids)

    def encoder(
        self, cfg: TrainConfig, prepared: Any, model: nn.Module, dev: torch.device
    ) -> Encode:
        tokenizer = prepared[0]
        return lambda texts: encode_texts(model, tokenizer, texts, cfg.max_len, dev)

    def stored(self, cfg: TrainConfig, mcfg: ModelConfig) -> dict[str, Any]:
        out = {"train": cfg.to_dict(), "model": mcfg.to_dict()}
        record = corpus_record(cfg)  # a corpus run names the bytes it read; a world run: none
        return out if record is None else {**out, "corpus": record}

    def kind(self, cfg: TrainConfig) -> str:
        return "causal-lm" if cfg.is_lm else "text-encoder"

    def rebuild(self, cfg: TrainConfig, mcfg: ModelConfig) -> nn.Module:
        return CausalLM(mcfg) if cfg.is_lm else TextEncoder(mcfg)

    def as_run(
        self, model: nn.Module, cfg: TrainConfig, mcfg: ModelConfig, path: Path, step: int,
        dev: torch.device,
    ) -> LoadedRun:  # fmt: skip
        if not (path / TOKENIZER_FILE).is_file():
            raise CheckpointError(f"{path}: no {TOKENIZER_FILE}")
        if (load := self.tokenizer_loader) is None:
            from prh.views import TextTokenizer

            load = TextTokenizer.load
        return LoadedRun(model, cfg, mcfg, path, step, dev, load(path / TOKENIZER_FILE))


def train(
    cfg: TrainConfig,
    out_dir: str | os.PathLike[str],
    progress: bool = True,
    *,
    resume: bool | str = False,
    device: str | None = None,
    threads: int | None = None,
    stop_after: int | None = None,
    data_factory: DataFactory | None = None,
) -> Path:
    """Train ``cfg`` into the run directory ``out_dir`` and return its path: :func:`fit` of a
    :class:`TextTask` (its resume rule, output checks and bitwise resume on CPU).

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
    resume: bool | str,
    device: str | None,
    threads: int | None,
    stop_after: int | None,
    data_factory: DataFactory | None,
) -> tuple[Path, nn.Module]:
    """:func:`train`, also returning this rank's model (for tests of data parallelism)."""
    task = TextTask(data_factory=data_factory)
    return fit(
        task, cfg, out_dir, progress, resume=resume, device=device, threads=threads,
        stop_after=stop_after,
    )  # fmt: skip


def read_run_config(run_dir: str | os.PathLike[str]) -> TrainConfig:
    """The stored :class:`TrainConfig` of a run folder to resume (an :class:`InputError` or a
    :class:`CheckpointError` as :func:`~prh.training.lifecycle.read_stored` says)."""
    run_dir = Path(run_dir)
    return restored(TextTask(), read_stored(run_dir), run_dir, "training config")[1]


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
    out, where = [], []
    for rows_of_batch, ids, mask in _by_length(tokenizer, texts, max_len, batch_size):
        where.append(rows_of_batch)
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
    feats = np.concatenate(out).astype(np.float32, copy=False)
    back = np.empty_like(feats)
    back[np.concatenate(where)] = feats  # in the order of ``texts``
    return back


def _by_length(tokenizer: Any, texts: Sequence[str], max_len: int, batch_size: int) -> Any:
    """``(rows, ids, mask)``: batches of ``batch_size`` texts of similar length (a stable sort
    by token count within each block of 16 batches), each trimmed to its longest; ``rows`` are
    the batch's indices into ``texts``. Captions in their given order pad most rows to the
    longest caption of their batch; the padding is inert, so a row's features do not depend on
    its batch, up to rounding (:func:`prh.training.loop.pooled_by_length`)."""
    block = 16 * batch_size
    for start in range(0, len(texts), block):
        ids, mask = tokenizer.encode_batch(list(texts[start : start + block]), max_len)
        for g in length_groups(mask, batch_size)[1]:
            yield start + g.numpy(), *trim(ids[g], mask[g])


@dataclass
class LoadedRun(Run):
    """A trained text run: :class:`prh.training.lifecycle.Run` with its ``tokenizer``.

    :meth:`encode` is canonical; :meth:`encode_texts` (the same, with ``pool``) and
    :meth:`embed_texts` are kept for compatibility.
    """

    tokenizer: Any = None

    @property
    def modality(self) -> str:
        return "text"

    def encode(self, items: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        return self.encode_texts(items, batch_size or 256)

    def encode_texts(
        self, texts: Sequence[str], batch_size: int = 256, pool: str = "avg"
    ) -> np.ndarray:
        """``(N, L, D)`` float32: every layer mean-pooled over valid tokens (and, for a JEPA, the
        projection zero-padded to ``D`` as the last layer); ``pool="last"``: every layer's last
        real token."""
        return encode_texts(
            self.model, self.tokenizer, texts, self.config.max_len, self.device, batch_size,
            pool=pool,
        )  # fmt: skip

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
    run_dir: str | os.PathLike[str],
    device: str | None = None,
    tokenizer_loader: Any = None,
    readout: bool = True,
) -> Run:
    """Load a run folder of any modality as one :class:`~prh.training.lifecycle.Run` (a
    :class:`LoadedRun` or a :class:`~prh.training.image.LoadedImageRun`): the final
    ``model.safetensors`` or, for an unfinished run, the latest checkpoint; read through its
    stored read-out (``prh readout``, :mod:`prh.training.readout`) unless ``readout`` is false.

    Raises
    ------
    CheckpointError
        Not a run directory, missing or corrupt weights, weights of another model, a read-out of
        other weights.
    """
    return load_task_run(run_dir, device, lambda s: task_for(s, tokenizer_loader), readout)


def task_for(stored: Any, tokenizer_loader: Any = None) -> Task:
    """The task of a stored ``config.json``: image/sketch when its ``modality`` says so."""
    if isinstance(stored, dict) and stored.get("modality") in ("image", "sketch"):
        from prh.training.image import ImageTask

        return ImageTask()
    return TextTask(tokenizer_loader=tokenizer_loader)
