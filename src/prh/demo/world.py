"""The demo's world, its scene splits and its text encoders (trained runs, MiniLM, control)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prh.demo.config import DemoConfig

TEXT_ENCODERS = ("good", "bad", "next-token", "next-token-last", "minilm", "random-init")
"""Every text encoder the demo measures. ``next-token`` pools each layer by the mean over real
tokens (how the PRH benchmark measures language models); ``next-token-last`` is the same run
pooled by its last real token."""

RUN_OF = {"random-init": "good", "next-token-last": "next-token"}
"""The trained run a text encoder is made from, where it is not its own name (MiniLM has none)."""


def demo_world(cfg: DemoConfig):
    """The cave world of ``cfg.world_seed``."""
    from prh.world import make_world

    return make_world("cave", seed=cfg.world_seed)


def scene_ids(cfg: DemoConfig, world) -> tuple[list[int], list[int]]:
    """Held-out scenes (first ``eval_scenes`` of the test split) and bridge-fit scenes (the last
    ``bridge_scenes`` of the train split, beyond the ``train_scenes`` the encoders saw)."""
    test = [int(i) for i in world.split("test")[: cfg.eval_scenes]]
    train = [int(i) for i in world.split("train")[-cfg.bridge_scenes :]]
    return test, train


def random_init_encoder(good_run: Path, seed: int) -> Any:
    """The control: a text encoder of the good run's preset and tokenizer, weights drawn afresh
    from ``seed + 777`` (never trained)."""
    import torch

    from prh.encoders.stored import RunEncoder
    from prh.models import TextEncoder

    enc = RunEncoder(good_run)
    torch.manual_seed(seed + 777)
    enc.run.model = TextEncoder(enc.run.model_config).eval()
    enc.spec = f"random-init:{good_run.name}"
    return enc


def text_encoder(cfg: DemoConfig, name: str, runs: dict[str, Path]) -> Any:
    """One of :data:`TEXT_ENCODERS`; ``runs`` maps the trained ones to their run folders."""
    from prh.encoders import load_encoder

    if name == "minilm":
        return load_encoder(cfg.text_baseline)
    if name == "random-init":
        return random_init_encoder(runs[RUN_OF[name]], cfg.seed)
    if name == "next-token-last":
        from prh.encoders.stored import RunEncoder

        return RunEncoder(runs[RUN_OF[name]], pool="last")
    return load_encoder(str(runs[name]))
