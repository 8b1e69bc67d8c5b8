"""A small pre-LayerNorm transformer trunk, used two ways.

- :class:`TextEncoder`: bidirectional attention over valid tokens; returns the JEPA embedding
  (a projection head on the mean-pooled last layer) and every layer's mean-pooled hidden state.
- :class:`CausalLM`: the same trunk with causal attention and a tied output layer, the next-token
  baseline; ``encode`` returns the same per-layer mean-pooled states for measurement.

Mean pooling over valid tokens follows the Platonic Representation Hypothesis protocol for language
models (Huh et al., ICML 2024): every layer is averaged over the non-padding tokens.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from prh.models.config import ModelConfig


class EncoderOutput(NamedTuple):
    """What an encoder returns.

    Attributes
    ----------
    pooled : Tensor
        ``(B, E)`` the embedding trained by the objective (JEPA projection, or the mean-pooled last
        layer for a causal LM).
    layers : Tensor
        ``(B, L + 1, D)`` every layer's hidden state mean-pooled over valid tokens; index 0 is the
        embedding layer, index ``L`` the final (normalised) layer.
    """

    pooled: torch.Tensor
    layers: torch.Tensor


def layers_with_embedding(out: EncoderOutput) -> torch.Tensor:
    """Every layer and then the embedding as one more layer, in float32: ``(B, L + 2, D)``.

    The embedding ``(B, E)`` is zero-padded to ``D`` (padding changes no cosine or inner
    product); one wider than the layers (``E > D``) is left out: ``(B, L + 1, D)``.
    """
    layers = out.layers.float()  # (B, L + 1, D)
    pooled = out.pooled.float()  # (B, E)
    D = layers.shape[-1]
    if pooled.shape[-1] > D:
        return layers
    pad = F.pad(pooled, (0, D - pooled.shape[-1]))  # (B, D)
    return torch.cat([layers, pad[:, None]], 1)  # (B, L + 2, D)


def masked_mean(h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``h`` ``(B, T, D)`` over positions where ``mask`` ``(B, T)`` is true -> ``(B, D)``.

    A row with no valid token gives zeros (not NaN).
    """
    m = mask.to(h.dtype).unsqueeze(-1)  # (B, T, 1)
    return (h * m).sum(1) / m.sum(1).clamp_min(1.0)  # (B, D)


class SelfAttention(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.n_heads = cfg.n_heads
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.out = nn.Linear(cfg.d_model, cfg.d_model)
        self.dropout = cfg.dropout

    def forward(
        self, x: torch.Tensor, attn_mask: torch.Tensor | None, causal: bool
    ) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)  # 3 x (B, T, C)
        q = q.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2)  # (B, nh, T, hs)
        y = F.scaled_dot_product_attention(
            q,
            k,
            v,
            attn_mask=attn_mask,
            dropout_p=self.dropout if self.training else 0.0,
            is_causal=causal and attn_mask is None,
        )  # (B, nh, T, hs)
        return self.out(y.transpose(1, 2).reshape(B, T, C))  # (B, T, C)


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.attn = SelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.d_model, cfg.d_ff), nn.GELU(), nn.Linear(cfg.d_ff, cfg.d_model)
        )
        self.drop = nn.Dropout(cfg.dropout)

    def forward(
        self, x: torch.Tensor, attn_mask: torch.Tensor | None, causal: bool
    ) -> torch.Tensor:
        x = x + self.drop(self.attn(self.ln1(x), attn_mask, causal))  # (B, T, D)
        return x + self.drop(self.mlp(self.ln2(x)))  # (B, T, D)


class Trunk(nn.Module):
    """Token + position embeddings, ``n_layers`` pre-LN blocks, a final LayerNorm."""

    def __init__(self, cfg: ModelConfig, causal: bool) -> None:
        super().__init__()
        self.cfg = cfg
        self.causal = causal
        self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = nn.Embedding(cfg.max_len, cfg.d_model)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)

    def _attn_mask(self, mask: torch.Tensor) -> torch.Tensor | None:
        if bool(mask.all()):
            return None  # every token valid: let SDPA pick its fastest kernel
        T = mask.shape[1]
        keep = mask[:, None, None, :]  # (B, 1, 1, T): query i may look at valid key j
        if self.causal:
            tri = torch.ones(T, T, dtype=torch.bool, device=mask.device).tril()
            keep = keep & tri  # (B, 1, T, T)
        # A padded query that sees no valid key would give NaN; let it see itself.
        eye = torch.eye(T, dtype=torch.bool, device=mask.device)
        return keep | eye  # (B, 1, T, T) or broadcastable

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> list[torch.Tensor]:
        """Hidden states of every layer: a list of ``L + 1`` tensors ``(B, T, D)``."""
        T = ids.shape[1]
        if T > self.cfg.max_len:
            raise ValueError(f"sequence length {T} > max_len {self.cfg.max_len}")
        if mask.shape != ids.shape:
            raise ValueError(f"mask shape {tuple(mask.shape)} != ids shape {tuple(ids.shape)}")
        pos = torch.arange(T, device=ids.device)
        x = self.drop(self.tok(ids) + self.pos(pos))  # (B, T, D)
        attn_mask = self._attn_mask(mask.bool())
        hs = [x]
        for i, block in enumerate(self.blocks):
            x = block(x, attn_mask, self.causal)  # (B, T, D)
            hs.append(self.ln_f(x) if i == len(self.blocks) - 1 else x)
        if not self.blocks:
            hs[-1] = self.ln_f(x)
        return hs


def init_weights(module: nn.Module) -> None:
    """GPT-2/BERT initialisation of every linear and embedding layer: ``N(0, 0.02)``, zero bias."""
    for m in module.modules():
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, std=0.02)


class TextEncoder(nn.Module):
    """Bidirectional transformer encoder with a projection head for the JEPA embedding.

    ``forward(ids (B, T), mask (B, T)) -> EncoderOutput(pooled (B, E), layers (B, L + 1, D))``.
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.trunk = Trunk(cfg, causal=False)
        # No output bias: whitening removes the mean, so its gradient would be rounding noise
        # that Adam amplifies into lr-sized random steps.
        self.head = nn.Sequential(
            nn.Linear(cfg.d_model, cfg.d_model),
            nn.GELU(),
            nn.Linear(cfg.d_model, cfg.embed_dim, bias=False),
        )
        init_weights(self)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> EncoderOutput:
        hs = self.trunk(ids, mask)
        layers = torch.stack([masked_mean(h, mask) for h in hs], dim=1)  # (B, L + 1, D)
        pooled = self.head(layers[:, -1])  # (B, E)
        return EncoderOutput(pooled, layers)

    def encode(self, ids: torch.Tensor, mask: torch.Tensor) -> EncoderOutput:
        return self.forward(ids, mask)


class CausalLM(nn.Module):
    """Causal transformer language model of the same shape, output layer tied to the embeddings.

    ``forward(ids, mask) -> logits (B, T, V)``; ``encode(ids, mask) -> EncoderOutput`` where
    ``pooled`` is the mean-pooled final layer ``(B, D)``.
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.trunk = Trunk(cfg, causal=True)
        init_weights(self)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = self.trunk(ids, mask)[-1]  # (B, T, D)
        return h @ self.trunk.tok.weight.T  # (B, T, V)

    def encode(self, ids: torch.Tensor, mask: torch.Tensor) -> EncoderOutput:
        hs = self.trunk(ids, mask)
        layers = torch.stack([masked_mean(h, mask) for h in hs], dim=1)  # (B, L + 1, D)
        return EncoderOutput(layers[:, -1], layers)


def count_parameters(model: nn.Module) -> int:
    """Number of distinct trainable parameters (tied weights counted once)."""
    seen: set[int] = set()
    n = 0
    for p in model.parameters():
        if p.requires_grad and id(p) not in seen:
            seen.add(id(p))
            n += p.numel()
    return n
