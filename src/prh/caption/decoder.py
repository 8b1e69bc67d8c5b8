"""A small prefix-conditioned transformer decoder, trained on text only (CapDec-style).

The decoder reads a conditioning vector ``c`` (``E``-dim: the text JEPA's embedding of a caption,
centred, whitened and L2-normalised by :class:`prh.caption.condition.ConditionNormalizer`), maps it
to ``P`` prefix tokens with a small MLP (ClipCap [2]_), and predicts the caption token by token
with causal attention over ``[prefix, BOS, w_1, ..., w_t]``. It is trained on captions alone; at
inference ``c`` comes from an image through one map into the JEPA space. Training adds Gaussian
noise ``c + n, n ~ N(0, sigma^2 I)`` to the condition (CapDec [1]_), with ``sigma^2`` of the order
of the gap between mapped image embeddings and caption embeddings, so the decoder tolerates the
rotated image embedding it will see at inference.

Decoding: :func:`greedy_decode` and :func:`beam_search` (beam search with the GNMT length penalty
[3]_: a finished hypothesis ``Y`` scores ``log P(Y | c) / lp(Y)`` with
``lp(Y) = ((5 + |Y|) / 6) ** alpha``, ``|Y|`` counting the generated tokens including EOS;
``alpha = 0`` ranks by raw log-probability, which favours short captions, ``alpha = 1`` by
per-token log-probability). An EOS only finishes a hypothesis when it is among the ``K`` best
candidates of its step, and an image is done once no live beam's normalised score so far beats
its best finished hypothesis, so ``beam=1`` is exactly greedy decoding, and with ``alpha = 0`` a
beam as wide as every continuation is an exhaustive search.

References
----------
.. [1] D. Nukrai, R. Mokady, A. Globerson, "Text-Only Training for Image Captioning using
   Noise-Injected CLIP", Findings of EMNLP 2022 (CapDec).
.. [2] R. Mokady, A. Hertz, A. H. Bermano, "ClipCap: CLIP Prefix for Image Captioning", 2021.
.. [3] Y. Wu et al., "Google's Neural Machine Translation System", arXiv:1609.08144, 2016.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from prh.errors import InputError
from prh.models.config import ModelConfig
from prh.models.transformer import Block, init_weights
from prh.optim import adamw
from prh.training.config import OptimConfig

__all__ = [
    "DecoderConfig",
    "DecoderTrainConfig",
    "PrefixDecoder",
    "beam_search",
    "caption_loss",
    "greedy_decode",
    "length_penalty",
    "train_decoder",
]


@dataclass(frozen=True)
class DecoderConfig:
    """Shape of the caption decoder.

    Attributes
    ----------
    vocab_size : int
        Token ids (the text run's tokenizer).
    cond_dim : int
        Size ``E`` of the conditioning embedding.
    d_model, n_layers, n_heads, d_ff : int
        Transformer width, depth, heads, MLP width (the ``tiny`` preset's trunk by default).
    max_len : int
        Longest caption in tokens, BOS and EOS included.
    prefix_len : int
        Number ``P`` of prefix tokens the condition is projected to.
    dropout : float
        Dropout probability (0 keeps training bitwise reproducible).
    """

    vocab_size: int
    cond_dim: int
    d_model: int = 128
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 512
    max_len: int = 48
    prefix_len: int = 2
    dropout: float = 0.0

    def __post_init__(self) -> None:
        for name in ("vocab_size", "cond_dim", "prefix_len"):
            if int(getattr(self, name)) < 1:
                raise InputError(f"DecoderConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.max_len < 2:
            raise InputError(f"DecoderConfig.max_len must be >= 2, got {self.max_len}")
        self.trunk_config()  # validates widths and heads

    def trunk_config(self) -> ModelConfig:
        """The :class:`prh.models.ModelConfig` of the shared transformer blocks."""
        return ModelConfig(
            vocab_size=self.vocab_size,
            d_model=self.d_model,
            n_layers=self.n_layers,
            n_heads=self.n_heads,
            d_ff=self.d_ff,
            max_len=self.prefix_len + self.max_len,
            embed_dim=self.cond_dim,
            dropout=self.dropout,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DecoderConfig:
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


class PrefixDecoder(nn.Module):
    """Causal transformer language model conditioned on a prefix built from ``c (B, E)``.

    ``forward(cond (B, E), ids (B, T)) -> logits (B, T, V)``: ``logits[:, t]`` predicts token
    ``t + 1``. The output layer is tied to the token embeddings. Padding must be on the right
    (causal attention never lets a real token see a later pad).
    """

    def __init__(self, cfg: DecoderConfig) -> None:
        super().__init__()
        self.cfg = cfg
        tcfg = cfg.trunk_config()
        D, P = cfg.d_model, cfg.prefix_len
        self.prefix = nn.Sequential(nn.Linear(cfg.cond_dim, D), nn.GELU(), nn.Linear(D, P * D))
        self.tok = nn.Embedding(cfg.vocab_size, D)
        self.pos = nn.Embedding(P + cfg.max_len, D)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(tcfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(D)
        init_weights(self)

    def forward(self, cond: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        return self.hidden(cond, ids) @ self.tok.weight.T  # (B, T, V)

    def hidden(self, cond: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """Final hidden states of the caption positions, ``(B, T, D)``."""
        B, T = ids.shape
        P = self.cfg.prefix_len
        if T > self.cfg.max_len:
            raise ValueError(f"sequence length {T} > decoder max_len {self.cfg.max_len}")
        if cond.shape != (B, self.cfg.cond_dim):
            raise ValueError(f"expected cond ({B}, {self.cfg.cond_dim}), got {tuple(cond.shape)}")
        prefix = self.prefix(cond).view(B, P, -1)  # (B, P, D)
        x = torch.cat([prefix, self.tok(ids)], dim=1)  # (B, P + T, D)
        x = self.drop(x + self.pos(torch.arange(P + T, device=ids.device)))  # (B, P + T, D)
        for block in self.blocks:
            x = block(x, None, True)  # (B, P + T, D)
        return self.ln_f(x[:, P:])  # (B, T, D)


def caption_loss(
    model: PrefixDecoder, cond: torch.Tensor, ids: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """Mean next-token cross-entropy over real target tokens.

    ``ids (B, T)`` are ``[BOS] w_1 ... w_n [EOS]`` right-padded, ``mask (B, T)`` true on real
    tokens; inputs are ``ids[:, :-1]``, targets ``ids[:, 1:]``.
    """
    h = model.hidden(cond, ids[:, :-1])  # (B, T - 1, D)
    valid = mask[:, 1:]  # (B, T - 1)
    # The output layer (D x V) dominates the cost: apply it to real target positions only.
    logits = h[valid] @ model.tok.weight.T  # (M, V)
    return F.cross_entropy(logits.float(), ids[:, 1:][valid])


# -- decoding ---------------------------------------------------------------------------------


def length_penalty(n_tokens: int, alpha: float) -> float:
    """GNMT length penalty ``((5 + n) / 6) ** alpha`` ([3]_)."""
    return ((5.0 + n_tokens) / 6.0) ** alpha


def _check_cond(model: PrefixDecoder, cond: torch.Tensor) -> torch.Tensor:
    if cond.ndim != 2 or cond.shape[1] != model.cfg.cond_dim:
        raise InputError(
            f"expected conditions (N, {model.cfg.cond_dim}), got shape {tuple(cond.shape)}"
        )
    return cond.float()


def _max_new(model: PrefixDecoder, max_new: int | None) -> int:
    cap = model.cfg.max_len - 1  # the BOS takes one position
    return cap if max_new is None else max(1, min(int(max_new), cap))


@torch.no_grad()
def greedy_decode(
    model: PrefixDecoder, cond: torch.Tensor, bos: int, eos: int, max_new: int | None = None
) -> list[list[int]]:
    """Greedy decoding of each row of ``cond (N, E)``.

    Returns
    -------
    list of list of int
        The generated tokens of each row, BOS and EOS excluded (cut at ``max_new`` tokens when no
        EOS came).
    """
    cond = _check_cond(model, cond)
    steps = _max_new(model, max_new)
    N = cond.shape[0]
    ids = torch.full((N, 1), bos, dtype=torch.long, device=cond.device)  # (N, 1)
    done = torch.zeros(N, dtype=torch.bool, device=cond.device)
    for _ in range(steps):
        nxt = model(cond, ids)[:, -1].argmax(-1)  # (N,)
        nxt = nxt.masked_fill(done, eos)
        ids = torch.cat([ids, nxt[:, None]], dim=1)  # (N, t + 1)
        done |= nxt == eos
        if bool(done.all()):
            break
    out = []
    for row in ids[:, 1:].tolist():
        out.append(row[: row.index(eos)] if eos in row else row)
    return out


@torch.no_grad()
def beam_search(
    model: PrefixDecoder,
    cond: torch.Tensor,
    bos: int,
    eos: int,
    beam: int = 3,
    alpha: float = 0.6,
    max_new: int | None = None,
) -> list[list[int]]:
    """Beam search for each row of ``cond (N, E)``, all rows batched together.

    Parameters
    ----------
    beam : int
        Beam width ``K`` (1 gives exactly :func:`greedy_decode`).
    alpha : float
        Length-penalty exponent (see :func:`length_penalty`); a finished hypothesis of ``n``
        tokens (EOS included) scores ``log P / lp(n)``.
    max_new : int, optional
        Most tokens generated; unfinished beams at that point compete with their
        penalised score.

    Returns
    -------
    list of list of int
        Best hypothesis of each row, BOS and EOS excluded.
    """
    if beam < 1:
        raise InputError(f"beam must be >= 1, got {beam}")
    cond = _check_cond(model, cond)
    steps = _max_new(model, max_new)
    N, K = cond.shape[0], int(beam)
    dev = cond.device
    seqs = torch.full((N, K, 1), bos, dtype=torch.long, device=dev)  # (N, K, t)
    scores = torch.full((N, K), -math.inf, device=dev)  # (N, K) summed log-probabilities
    scores[:, 0] = 0.0  # one live beam at the start, so the K beams do not start as copies
    finished: list[list[tuple[float, list[int]]]] = [[] for _ in range(N)]
    done = [False] * N
    cond_k = cond.repeat_interleave(K, dim=0)  # (N K, E)
    for t in range(steps):
        logits = model(cond_k, seqs.view(N * K, -1))[:, -1]  # (N K, V)
        logp = F.log_softmax(logits.float(), dim=-1)  # (N K, V)
        V = logp.shape[-1]
        cand = (scores[..., None] + logp.view(N, K, V)).view(N, K * V)  # (N, K V)
        top_s, top_i = cand.topk(min(2 * K, K * V), dim=1)  # (N, 2K), best first
        new_seqs = torch.full((N, K, t + 2), eos, dtype=torch.long, device=dev)
        new_scores = torch.full((N, K), -math.inf, device=dev)
        ts, ti = top_s.tolist(), top_i.tolist()
        for b in range(N):
            if done[b]:
                continue
            n = 0
            for rank, (s, flat) in enumerate(zip(ts[b], ti[b])):
                if s == -math.inf:
                    break
                k, tok = divmod(flat, V)
                if tok == eos:
                    if rank < K:  # an EOS outside the top K never finishes a hypothesis
                        body = seqs[b, k, 1:].tolist()
                        finished[b].append((s / length_penalty(t + 1, alpha), body))
                    continue
                if n < K:
                    new_seqs[b, n, :-1] = seqs[b, k]
                    new_seqs[b, n, -1] = tok
                    new_scores[b, n] = s
                    n += 1
            if finished[b]:
                # Stop once no live beam's current normalised score beats the best finished one
                # (Hugging Face's early_stopping=False heuristic; exact when alpha = 0, where
                # scores only fall as a hypothesis grows).
                best = max(f[0] for f in finished[b])
                live = max(new_scores[b, :n].tolist(), default=-math.inf)
                if live / length_penalty(t + 1, alpha) <= best:
                    done[b] = True
            elif n == 0:
                done[b] = True
        seqs, scores = new_seqs, new_scores
        if all(done):
            break
    L = seqs.shape[-1] - 1
    out = []
    for b in range(N):
        pool = list(finished[b])
        if not done[b]:  # ran out of steps: unfinished beams compete too
            for k in range(K):
                s = float(scores[b, k])
                if s > -math.inf:
                    pool.append((s / length_penalty(L, alpha), seqs[b, k, 1:].tolist()))
        best = max(pool, key=lambda p: p[0]) if pool else (0.0, [])
        out.append(best[1])
    return out


# -- training ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class DecoderTrainConfig:
    """Optimisation of the decoder: the optimiser the encoders train with
    (:class:`~prh.training.config.OptimConfig`: AdamW, linear warm-up, then cosine decay to
    ``min_lr_frac`` of the rate, 10 % by default), for ``steps`` steps.

    Attributes
    ----------
    steps, batch_size : int
        Optimiser steps and captions per step.
    optim : OptimConfig
        AdamW and its schedule.
    noise_std : float
        Standard deviation ``sigma`` of the Gaussian noise added to each coordinate of the
        (normalised) condition during training (CapDec); 0 disables it.
    seed : int
        Initialisation, batch order and noise.
    """

    steps: int = 1500
    batch_size: int = 128
    optim: OptimConfig = field(default_factory=OptimConfig)
    noise_std: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 1:
            raise InputError(
                f"decoder steps and batch size must be >= 1, got {self.steps}, {self.batch_size}"
            )
        if not self.noise_std >= 0:
            raise InputError(f"decoder noise_std must be >= 0, got {self.noise_std}")

    def to_dict(self) -> dict[str, Any]:
        """Flat, as a caption run records it (``min_lr_frac`` only when not the default)."""
        optim = asdict(self.optim)
        if optim["min_lr_frac"] == OptimConfig.min_lr_frac:
            del optim["min_lr_frac"]  # recorded as before the decoder's floor was a setting
        return {"steps": self.steps, "batch_size": self.batch_size, **optim,
                "noise_std": self.noise_std, "seed": self.seed}  # fmt: skip


def lr_at(step: int, cfg: DecoderTrainConfig) -> float:
    """Learning rate at ``step``: linear warm-up, then cosine decay to ``min_lr_frac`` (10 %)
    of ``lr`` (:meth:`OptimConfig.lr_at`)."""
    return cfg.optim.lr_at(step, cfg.steps)


def train_decoder(
    model_cfg: DecoderConfig,
    cond: np.ndarray,
    ids: torch.Tensor,
    mask: torch.Tensor,
    cfg: DecoderTrainConfig = DecoderTrainConfig(),
    progress: Callable[[int, float], None] | None = None,
    device: torch.device | str = "cpu",
) -> tuple[PrefixDecoder, list[float]]:
    """Train a :class:`PrefixDecoder` to reproduce captions from their conditions.

    Parameters
    ----------
    model_cfg : DecoderConfig
        Decoder shape (``cond_dim`` must equal ``E``).
    cond : np.ndarray
        ``(N, E)`` conditions (normalised caption embeddings), row ``i`` for caption ``i``.
    ids, mask : torch.Tensor
        ``(N, T)`` tokenised captions ``[BOS] ... [EOS]`` right-padded, and their validity mask.
    cfg : DecoderTrainConfig
        Optimisation, noise and seed.
    progress : callable, optional
        Called as ``progress(step, loss)`` every 50 steps and at the end.
    device : torch.device or str
        Where the decoder trains (``"cuda"``); the initialisation, batch order and noise are
        drawn on the CPU whatever the device, so a device changes only the arithmetic.

    Returns
    -------
    model : PrefixDecoder
        The trained decoder in eval mode (CPU).
    losses : list of float
        Training loss of every step.

    Notes
    -----
    Bitwise deterministic for a seed on CPU: the initialisation runs under a forked global RNG
    seeded with ``cfg.seed``; batches and noise come from a ``torch.Generator`` of the same seed.
    """
    c = torch.as_tensor(np.asarray(cond, dtype=np.float32))
    if c.ndim != 2 or c.shape[1] != model_cfg.cond_dim:
        raise InputError(f"expected conditions (N, {model_cfg.cond_dim}), got {tuple(c.shape)}")
    if ids.shape[0] != c.shape[0] or mask.shape != ids.shape:
        raise InputError(
            f"{c.shape[0]} conditions but ids {tuple(ids.shape)} and mask {tuple(mask.shape)}"
        )
    if ids.shape[1] > model_cfg.max_len:
        raise InputError(f"captions of {ids.shape[1]} tokens exceed max_len {model_cfg.max_len}")
    N = c.shape[0]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        model = PrefixDecoder(model_cfg).to(device)
    gen = torch.Generator().manual_seed(cfg.seed)
    opt = adamw(model, cfg.optim.lr, cfg.optim.weight_decay)
    model.train()
    losses: list[float] = []
    perm = torch.randperm(N, generator=gen)
    pos = 0
    for step in range(cfg.steps):
        if pos + cfg.batch_size > N:  # a new epoch: reshuffle
            perm, pos = torch.randperm(N, generator=gen), 0
        idx = perm[pos : pos + cfg.batch_size]  # (B,)
        pos += cfg.batch_size
        b_ids, b_mask = ids[idx], mask[idx]  # (B, T)
        T = int(b_mask.sum(1).max())
        b_ids, b_mask = b_ids[:, :T], b_mask[:, :T]  # drop all-padding columns
        b_cond = c[idx]  # (B, E)
        if cfg.noise_std > 0:
            b_cond = b_cond + cfg.noise_std * torch.randn(b_cond.shape, generator=gen)  # (B, E)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, cfg)
        b_cond, b_ids, b_mask = (t.to(device) for t in (b_cond, b_ids, b_mask))
        loss = caption_loss(model, b_cond, b_ids, b_mask)
        if not torch.isfinite(loss):
            raise InputError(f"decoder training diverged at step {step} (loss {loss.item()})")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.optim.grad_clip > 0:
            nn.utils.clip_grad_norm_(model.parameters(), cfg.optim.grad_clip)
        opt.step()
        losses.append(loss.item())
        if progress is not None and (step % 50 == 0 or step == cfg.steps - 1):
            progress(step, losses[-1])
    return model.cpu().eval(), losses
