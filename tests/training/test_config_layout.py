"""One declaration per configuration field, and saved run configs that keep loading (issue 32)."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest

from prh.training.config import (
    FLAT_KEYS,
    OPTIM_FIELDS,
    OptimConfig,
    TrainConfig,
    flat_fields,
    train_config,
)

# config.json's "train" as the layout before the optimiser nested (flat optimiser fields)
OLD_TRAIN = {
    "world": "cave", "corpus": None, "views": "good", "rho": 1.0, "samples": 2048,
    "preset": "tiny", "seed": 3, "batch_size": 64, "lr": 0.0005, "weight_decay": 0.01,
    "warmup_frac": 0.1, "min_lr_frac": 1.0, "grad_clip": 1.0, "max_len": 48,
    "objective": "whitened", "whiten_eps": 0.0001, "beta": 1.0, "sigreg_lambda": 0.05,
    "sigreg_slices": 256, "vocab_size": 2048, "world_seed": 0, "captions_per_scene": 5,
    "train_scenes": 0, "eval_features": None, "eval_every": 0, "checkpoint_every": 200,
    "log_every": 10, "model_overrides": {}, "steps": 32,
}  # fmt: skip


def test_an_old_flat_config_loads_and_writes_back_byte_identical():
    cfg = TrainConfig.from_dict(OLD_TRAIN)
    assert cfg.optim == OptimConfig(lr=5e-4, warmup_frac=0.1, min_lr_frac=1.0)
    assert json.dumps(cfg.to_dict()) == json.dumps(OLD_TRAIN)  # same keys, same order
    nested = {k: v for k, v in OLD_TRAIN.items() if k not in OPTIM_FIELDS}
    assert TrainConfig.from_dict({**nested, "optim": {"lr": 5e-4, "warmup_frac": 0.1,
                                                      "min_lr_frac": 1.0}}) == cfg  # fmt: skip


def test_the_optimiser_is_declared_once():
    optim = {f.name for f in fields(OptimConfig)}
    assert optim == set(OPTIM_FIELDS)
    assert not optim & {f.name for f in fields(TrainConfig)}
    from prh.caption.decoder import DecoderTrainConfig

    assert not optim & {f.name for f in fields(DecoderTrainConfig)}
    assert DecoderTrainConfig().optim == OptimConfig()  # the decoder's floor is the optimiser's


def test_flat_names_route_to_their_part():
    cfg = train_config("small", lr=3e-4, grad_clip=0.0, samples=512)
    assert (cfg.optim.lr, cfg.optim.grad_clip, cfg.samples) == (3e-4, 0.0, 512)
    assert list(flat_fields(cfg)) == list(FLAT_KEYS)
    with pytest.raises(Exception, match="unknown TrainConfig field"):
        train_config(learning_rate=1.0)
