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


def world_options(cfg: DemoConfig) -> dict[str, str]:
    """The options of the demo's world beyond its seed: a corpus's path (``spec``), else none."""
    return {"spec": cfg.corpus} if cfg.corpus else {}


def demo_world(cfg: DemoConfig):
    """The world ``cfg.world`` of ``cfg.world_seed`` (the moving cave by default; a corpus's
    photos with ``cfg.corpus``)."""
    from prh.world import make_world

    return make_world(cfg.world, seed=cfg.world_seed, **world_options(cfg))


def check_world_sizes(cfg: DemoConfig) -> None:
    """Refuse, in one line, scene counts the world (and the control's) cannot give, and wide
    image runs (``image_embed_dim``) on a world whose pairs cannot read them out.

    Raises
    ------
    InputError
        Naming the setting, the world and its split's size.
    """
    from prh.errors import InputError
    from prh.world.registry import moves

    configs = (cfg, cfg.control_config()) if cfg.control else (cfg,)
    for c in configs:
        world = demo_world(c)
        n_train, n_test = len(world.split("train")), len(world.split("test"))
        settings = c.to_dict()  # the refusal names the setting
        asks = {"eval_scenes": (settings["eval_scenes"], n_test, "test")}
        # a corpus's text runs train on its whole train split: no train_scenes to check
        per_run = () if c.corpus else ("train_scenes", "image_train_scenes")
        for f in ("bridge_scenes", "decoder_scenes", *per_run):
            asks[f] = (settings[f], n_train, "train")
        where = f"corpus {c.corpus}" if c.corpus else f"world {c.world!r}"
        for f, (want, have, split) in asks.items():
            if want > have:
                raise InputError(f"demo: {f} {want} > the {have} {split} scenes of {where}")
    if cfg.reads_out_images() and cfg.image.modalities and not moves(demo_world(cfg)):
        raise InputError(
            f"demo: image_embed_dim {cfg.image.embed_dim} needs a moving world (each wide run is "
            f"read out by its own lag pairs); world {cfg.world!r} has none"
        )


def scene_ids(cfg: DemoConfig, world) -> tuple[list[int], list[int]]:
    """Held-out scenes (``eval_scenes`` of the test split) and bridge-fit scenes
    (``bridge_scenes`` of the train split), each a fair sample
    (:func:`prh.world.registry.split_sample`): on the cave world the first held-out scenes and
    the last training scenes, beyond the ``train_scenes`` its encoders saw; on the moving cave
    evenly spaced states (its encoders see every training state: the bridge states are not held
    out from them, only the test states are)."""
    from prh.world.registry import split_sample

    return (
        split_sample(world, "test", cfg.measure.eval_scenes),
        split_sample(world, "train", cfg.measure.bridge_scenes, from_end=True),
    )


def random_init_encoder(good_run: Path, seed: int) -> Any:
    """The control: a text encoder of the good run's preset and tokenizer, weights drawn afresh
    from ``seed + 777`` (never trained)."""
    import dataclasses

    import torch

    from prh.encoders.stored import RunEncoder
    from prh.models import TextEncoder
    from prh.training import load_run

    run = load_run(good_run)
    torch.manual_seed(seed + 777)
    fresh = dataclasses.replace(run, model=TextEncoder(run.model_config).eval())
    return RunEncoder.of_run(fresh, f"random-init:{good_run.name}")


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
