"""The one schedule and the one AdamW set-up equal the three copies they replaced."""

from __future__ import annotations

import math
from itertools import pairwise

import pytest
import torch
from torch import nn

from prh.caption.decoder import DecoderTrainConfig
from prh.caption.decoder import lr_at as decoder_lr_at
from prh.optim import adamw, warmup_cosine_lr, warmup_steps
from prh.training.config import OptimConfig, TrainConfig
from prh.training.loop import lr_at as train_lr_at


# The three schedules as they were written before the merge (references, copied verbatim).
def old_train_lr(step: int, train: TrainConfig) -> float:
    total, cfg = train.steps, train.optim
    warm = max(1, round(cfg.warmup_frac * total)) if cfg.warmup_frac > 0 else 0
    if step < warm:
        return cfg.lr * (step + 1) / warm
    progress = (step - warm) / max(1, total - warm)
    floor = cfg.min_lr_frac * cfg.lr
    return floor + (cfg.lr - floor) * 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))


def old_decoder_lr(step: int, cfg: DecoderTrainConfig) -> float:
    warm = max(1, round(cfg.optim.warmup_frac * cfg.steps))
    if step < warm:
        return cfg.optim.lr * (step + 1) / warm
    frac = (step - warm) / max(1, cfg.steps - warm)
    return cfg.optim.lr * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * frac)))


def old_learner_factor(t: int, total: int, ratio: float) -> float:
    return ratio + (1 - ratio) * 0.5 * (1 + math.cos(math.pi * min(t, total) / max(total, 1)))


@pytest.mark.parametrize(
    "cfg",
    [
        TrainConfig(),
        TrainConfig(
            samples=37 * 128, optim=OptimConfig(lr=3e-4, warmup_frac=0.1, min_lr_frac=0.05)
        ),
        TrainConfig(samples=50 * 128, optim=OptimConfig(warmup_frac=0.0)),
    ],
)
def test_train_schedule_equals_the_old_one_bitwise(cfg: TrainConfig) -> None:
    # bitwise: AdamW divides the rate by its bias correction in float64 before rounding, so an
    # ulp of difference here can change a float32 weight
    for step in range(cfg.steps + 5):
        assert train_lr_at(step, cfg) == old_train_lr(step, cfg)


@pytest.mark.parametrize(
    "cfg",
    [
        DecoderTrainConfig(),
        DecoderTrainConfig(steps=41, optim=OptimConfig(lr=2e-3, warmup_frac=0.2)),
    ],
)
def test_decoder_schedule_equals_the_old_one(cfg: DecoderTrainConfig) -> None:
    for step in range(cfg.steps):
        new, old = decoder_lr_at(step, cfg), old_decoder_lr(step, cfg)
        assert new == pytest.approx(old, rel=1e-14)  # the same up to float rounding


@pytest.mark.parametrize(("total", "ratio"), [(1500, 0.01), (7, 0.5), (1, 0.01)])
def test_learner_schedule_equals_the_old_one(total: int, ratio: float) -> None:
    for t in range(total + 3):
        new = warmup_cosine_lr(t, 1.0, total, 0, ratio)
        assert new == pytest.approx(old_learner_factor(t, total, ratio), rel=1e-14)


def test_schedule_shape() -> None:
    lrs = [warmup_cosine_lr(s, 2.0, 100, warmup_steps(0.1, 100), 0.1) for s in range(120)]
    assert lrs[9] == 2.0 and max(lrs) == 2.0  # the peak is reached at the end of the warm-up
    assert all(a <= b for a, b in pairwise(lrs[:10]))  # rising during warm-up
    assert all(a >= b for a, b in pairwise(lrs[10:]))  # then never rising
    assert lrs[100:] == [pytest.approx(0.2)] * 20  # floor reached at `total` and kept


def test_adamw_groups_decay_matrices_only() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4), nn.Linear(4, 2))
    model[2].bias.requires_grad_(False)
    opt = adamw(model, lr=1e-3, weight_decay=0.1)
    decay, no_decay = opt.param_groups
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert {id(p) for p in decay["params"]} == {id(model[0].weight), id(model[2].weight)}
    assert {id(p) for p in no_decay["params"]} == {
        id(model[0].bias),
        id(model[1].weight),
        id(model[1].bias),
    }
    assert decay["betas"] == (0.9, 0.95) and decay["foreach"] is False


def test_adamw_steps_like_torch_adamw_with_the_same_groups() -> None:
    """Reference: the hand-written groups both trainers used before the merge."""

    def build() -> nn.Module:
        torch.manual_seed(1)
        return nn.Sequential(nn.Linear(5, 6), nn.LayerNorm(6), nn.Linear(6, 1))

    a, b = build(), build()
    opt_a = adamw(a, lr=1e-2, weight_decay=0.05)
    opt_b = torch.optim.AdamW(
        [
            {"params": [p for p in b.parameters() if p.ndim >= 2], "weight_decay": 0.05},
            {"params": [p for p in b.parameters() if p.ndim < 2], "weight_decay": 0.0},
        ],
        lr=1e-2,
        betas=(0.9, 0.95),
    )
    x = torch.randn(16, 5, generator=torch.Generator().manual_seed(2))
    for model, opt in ((a, opt_a), (b, opt_b)):
        for _ in range(5):
            opt.zero_grad()
            model(x).square().mean().backward()
            opt.step()
    for pa, pb in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(pa, pb, rtol=0, atol=0)


def test_the_decoder_records_its_optimiser_flat_as_before() -> None:
    """A caption run's ``decoder_train`` record keeps its keys (the floor only when changed)."""
    assert list(DecoderTrainConfig().to_dict()) == [
        "steps", "batch_size", "lr", "weight_decay", "warmup_frac", "grad_clip", "noise_std",
        "seed",
    ]  # fmt: skip
    floor = DecoderTrainConfig(optim=OptimConfig(min_lr_frac=0.5))
    assert floor.to_dict()["min_lr_frac"] == 0.5
    assert decoder_lr_at(floor.steps - 1, floor) == pytest.approx(0.5 * floor.optim.lr, rel=1e-3)
