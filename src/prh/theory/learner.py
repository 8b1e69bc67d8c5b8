"""A gradient-trained whitened JEPA on a finite world (docs/theory.md sec. 6).

The encoder sees one-hot observations (a table, or a one-hidden-layer MLP), is trained on
minibatches of positive pairs sampled from the pair law ``W``, and is kept from collapsing by
hard batch whitening (``f = (g - mu) L^-T`` with ``L L^T`` the batch covariance) or by the soft
penalty ``beta ||Cov(g) - I||_F^2``. Adam with a cosine learning-rate decay; sampling noise in
the final subspace shrinks like ``steps^-1/2``. Optional full-batch steps at the end use the
exact expectation under ``W`` instead of sampled pairs. Seeded and deterministic on CPU.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from prh.errors import InputError
from prh.optim import warmup_cosine_lr

if TYPE_CHECKING:
    import torch

# Ridge of the hard batch whitening, relative to the mean variance (keeps the Cholesky factor of a
# near-singular batch covariance finite without moving a healthy one).
HARD_EPS = 1e-9


@dataclass(frozen=True)
class LearnerConfig:
    """Configuration of :func:`train_jepa`.

    Attributes
    ----------
    k : int
        Embedding dimension.
    model : {"table", "mlp"}
        Encoder on one-hot observations.
    hidden : int
        MLP width.
    whitening : {"hard", "soft"}
        Batch whitening or the soft covariance penalty.
    beta : float
        Soft-whitening weight.
    batch_size : int
        Sampled pairs per step.
    steps : int
        Minibatch steps (cosine decay from ``lr`` to ``lr * final_lr_ratio``).
    full_batch_steps : int
        Extra steps on the exact expectation (0: sampled pairs only).
    lr : float
        Adam learning rate.
    seed : int
    """

    k: int = 3
    model: str = "table"
    hidden: int = 64
    whitening: str = "hard"
    beta: float = 1.0
    batch_size: int = 4096
    steps: int = 1500
    full_batch_steps: int = 0
    lr: float = 0.05
    final_lr_ratio: float = 0.01
    seed: int = 0

    def __post_init__(self) -> None:
        if self.model not in ("table", "mlp"):
            raise InputError(f"learner model: expected 'table' or 'mlp', got {self.model!r}")
        if self.whitening not in ("hard", "soft"):
            raise InputError(f"whitening: expected 'hard' or 'soft', got {self.whitening!r}")
        if self.k < 1 or self.batch_size < 2 or self.steps < 0 or self.full_batch_steps < 0:
            raise InputError("learner: expected k >= 1, batch_size >= 2, steps >= 0")


@dataclass(frozen=True, eq=False)
class LearnerResult:
    """The trained embedding and its loss curve."""

    embedding: np.ndarray  # (M, k) encoder output on every observation (whitened if hard)
    losses: np.ndarray  # (steps + full_batch_steps,)


def hard_whitened_loss(z: torch.Tensor, pair_w: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """``2 k - 2 tr(f^T What f)`` with ``f = whiten(z)`` under the marginal ``w`` ``(M,)`` and
    ``What`` ``(M, M)`` the (batch) pair law: ``E||f - f'||^2`` for white ``f``.

    The constant ``2 k`` counts every direction at full variance, so a direction the ridge
    flattens (variance below ``HARD_EPS`` of the mean, whitened to ~0) still costs 2, never less
    than a learned one's ``2 (1 - l)``: this form has no collapse loophole (the training loss,
    :func:`prh.losses.whitening.whitened_jepa_loss`, charges the ridge's shortfall to match).
    """
    from prh.losses.whitening import whiten

    f = whiten(z, HARD_EPS, weights=w)  # (M, k) white under the batch marginal
    return 2 * z.shape[1] - 2 * (f * (pair_w @ f)).sum()


def train_jepa(W: np.ndarray, config: LearnerConfig) -> LearnerResult:
    """Train an encoder on pairs sampled from the pair law ``W`` (M, M); see the module doc."""
    import torch

    from prh.losses.whitening import whiten
    from prh.theory.graph import check_pair_law

    W = check_pair_law(W)
    M, k = W.shape[0], config.k
    if k >= M:
        raise InputError(f"learner: expected k < M = {M}, got {k}")
    dtype = torch.float64
    model = _learner_model(M, config, dtype)
    opt = torch.optim.Adam(model.parameters(), lr=config.lr)
    total = config.steps + config.full_batch_steps
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda t: warmup_cosine_lr(t, 1.0, total, 0, config.final_lr_ratio)
    )
    Wt = torch.as_tensor(W, dtype=dtype)
    d = Wt.sum(1)  # (M,)
    batch_law = _batch_laws(W, config.batch_size, config.seed, dtype)
    all_x = torch.arange(M)
    losses = []
    for step in range(total):
        pair_w, w = batch_law() if step < config.steps else (Wt, d)
        loss = _learner_loss(model(all_x), pair_w, w, config)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    with torch.no_grad():
        z = model(all_x)  # (M, k)
        if config.whitening == "hard":
            z = whiten(z, HARD_EPS, weights=d)
    return LearnerResult(embedding=z.numpy().copy(), losses=np.asarray(losses))


def _learner_model(M: int, config: LearnerConfig, dtype):
    """A table of ``M`` vectors, or a one-hidden-layer MLP on one-hot observations, seeded."""
    import torch

    g = torch.Generator().manual_seed(config.seed)
    k = config.k
    if config.model == "table":
        model = torch.nn.Embedding(M, k, dtype=dtype)
        torch.nn.init.normal_(model.weight, std=1.0, generator=g)
        return model
    model = torch.nn.Sequential(
        torch.nn.Embedding(M, config.hidden, dtype=dtype),  # one-hot @ W1 == a lookup
        torch.nn.ReLU(),
        torch.nn.Linear(config.hidden, k, dtype=dtype),
    )
    for prm in model.parameters():
        torch.nn.init.normal_(prm, std=1.0 / math.sqrt(prm.shape[-1]), generator=g)
    return model


def _batch_laws(W: np.ndarray, batch_size: int, seed: int, dtype) -> Callable[[], tuple]:
    """Each call draws ``batch_size`` pairs from ``W`` and returns their empirical law.

    The minibatch mean of ``||f(x_a) - f(x_b)||^2`` equals ``sum_ij What_ij ||f_i - f_j||^2``
    with ``What`` the empirical (symmetrised) pair law, and the batch covariance is taken under
    its marginal. Exact, and O(M^2) instead of O(B).
    """
    import torch

    M = W.shape[0]
    probs = (W / W.sum()).ravel()  # (M * M,)
    pair_rng = np.random.default_rng(seed)  # draws the batches' pairs

    def draw() -> tuple:
        counts = torch.as_tensor(pair_rng.multinomial(batch_size, probs), dtype=dtype)
        counts = counts.reshape(M, M)  # how often each ordered pair (x_a, x_b) was drawn
        What = (counts + counts.T) / (2 * batch_size)  # (M, M)
        return What, What.sum(1)

    return draw


def _learner_loss(z, pair_w, w, config: LearnerConfig):
    """The hard-whitened loss, or prediction plus ``beta`` times the covariance's distance to I."""
    import torch

    if config.whitening == "hard":
        return hard_whitened_loss(z, pair_w, w)
    zc = z - w @ z  # (M, k)
    cov = zc.T @ (w[:, None] * zc)  # (k, k)
    pred = 2 * (w[:, None] * z * z).sum() - 2 * (z * (pair_w @ z)).sum()
    eye = torch.eye(z.shape[1], dtype=z.dtype)
    return pred + config.beta * ((cov - eye) ** 2).sum()
