"""What a text model costs before it is built: parameters in closed form and the memory a
training step needs, so a shape beyond the machine is one line, not a terabyte allocation
(issue 36)."""

from __future__ import annotations

from prh.models.config import ModelConfig

FLOAT_BYTES = 4
# fp32 weights, their gradients and AdamW's two moments
TRAIN_BYTES_PER_PARAM = 4 * FLOAT_BYTES


def block_parameters(d: int, f: int) -> int:
    """One transformer block of width ``d`` and MLP width ``f``: two LayerNorms (``4d``),
    attention (``qkv`` ``3d^2 + 3d``, out ``d^2 + d``), MLP (``2df + f + d``)."""
    return 4 * d * d + 2 * d * f + 9 * d + f


def parameter_count(cfg: ModelConfig, lm: bool = False) -> int:
    """Trainable parameters of :class:`~prh.models.transformer.TextEncoder` (``lm=False``:
    trunk and projection head ``d^2 + d + dE``) or :class:`~prh.models.transformer.CausalLM`
    (the trunk; its output layer is tied to the token embedding)."""
    d = cfg.d_model
    trunk = (cfg.vocab_size + cfg.max_len) * d + cfg.n_layers * block_parameters(d, cfg.d_ff)
    trunk += 2 * d  # final LayerNorm
    return trunk if lm else trunk + d * d + d + d * cfg.embed_dim


def activation_bytes(cfg: ModelConfig, rows: int, lm: bool = False) -> int:
    """Activations a backward pass keeps for ``rows`` sequences of ``max_len`` tokens, roughly:
    per block ``T (12 d + 2 f)`` values and ``2 H T^2`` attention weights; an LM's logits
    ``T V`` besides."""
    t, d = cfg.max_len, cfg.d_model
    per_row = cfg.n_layers * (t * (12 * d + 2 * cfg.d_ff) + 2 * cfg.n_heads * t * t)
    if lm:
        per_row += t * cfg.vocab_size
    return FLOAT_BYTES * rows * per_row


def train_memory_bytes(cfg: ModelConfig, batch: int, lm: bool = False) -> int:
    """Estimated memory of one training step: parameters, gradients and AdamW moments, plus
    the activations of ``batch`` pairs (two views each) or ``batch`` LM sequences."""
    rows = batch if lm else 2 * batch
    return TRAIN_BYTES_PER_PARAM * parameter_count(cfg, lm) + activation_bytes(cfg, rows, lm)
