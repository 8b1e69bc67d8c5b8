"""Checks a fresh training run makes before its run folder exists: its files are there, its
theory file is of its world, and its model, batch and render cache fit the machine's free memory
and disk (issue 36). ``prh train`` runs them all (:func:`preflight`, :func:`preflight_image`); a
Python caller of :func:`prh.train` may too.

Layer: above :mod:`prh.training.config`, :mod:`prh.models.budget` and :mod:`prh.memory`; used by
:mod:`prh.cli.train` and :mod:`prh.cli.train_image`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prh.errors import InputError


def preflight(cfg: Any, out: str, on_cpu: bool = True) -> None:
    """A text run's checks before ``out`` is made: its ``--log`` sinks' packages are installed,
    ``--corpus`` and the evaluation files exist, the theory file is of the run's world, the model
    and batch fit (:func:`check_fits_machine`), and ``out`` is a new or empty folder."""
    from prh.io import check_output_dir
    from prh.training.sinks import check_sinks, parse_sinks

    check_sinks(parse_sinks(cfg.log))  # --log tensorboard without tensorboard: the install hint
    check_fits_machine(cfg, on_cpu=on_cpu)  # one line, before the folder
    check_output_dir(out, "--out")
    if cfg.corpus and not Path(cfg.corpus).exists():
        raise InputError(f"--corpus {cfg.corpus}: no such file or folder")
    check_eval_files(cfg)
    check_eval_theory_world(cfg)


def preflight_image(cfg: Any, image: Any, out: str, cache: str | None) -> None:
    """An image or sketch run's checks before ``out`` is made: its scenes' render cache fits
    memory and the disk of ``cache`` (default ``out``), ``out`` is new, the files exist, the
    ``--log`` sinks' packages are installed."""
    from prh.io import check_output_dir
    from prh.training.image import train_scene_ids
    from prh.training.sinks import check_sinks, parse_sinks

    check_sinks(parse_sinks(cfg.log))
    n_scenes = len(train_scene_ids(cfg))  # beyond the world's split: refused, never clamped
    check_render_cache_fits(n_scenes, image, cache or out)
    check_output_dir(out)
    check_eval_files(cfg)


def check_eval_files(cfg: Any) -> None:
    """``--eval-features`` and ``--eval-theory`` name files (not folders) that exist."""
    for flag, given in (("--eval-features", cfg.eval_features),
                        ("--eval-theory", cfg.eval_theory)):  # fmt: skip
        if given:
            path = Path(given)
            if path.is_dir():
                raise InputError(f"{flag} {path}: is a folder, expected a feature file")
            if not path.is_file():
                raise InputError(f"{flag} {path}: no such file")


def check_fits_machine(cfg: Any, available: int | None = None, on_cpu: bool = True) -> None:
    """Refuse a model shape and batch whose training step would not fit in the free memory
    (``available`` bytes; default :func:`prh.memory.available_bytes`). ``on_cpu=False`` (a GPU
    run, whose activations live on the device): the parameters, gradients and AdamW moments
    alone, which the host builds before moving them."""
    from prh.memory import check_fits
    from prh.models import model_config
    from prh.models.budget import TRAIN_BYTES_PER_PARAM, parameter_count, train_memory_bytes

    mcfg = model_config(cfg.preset, cfg.vocab_size, max_len=cfg.max_len, **cfg.model_overrides)
    need = (
        train_memory_bytes(mcfg, cfg.batch_size, lm=cfg.is_lm)
        if on_cpu
        else TRAIN_BYTES_PER_PARAM * parameter_count(mcfg, lm=cfg.is_lm)
    )
    shape = (
        f"d_model {mcfg.d_model:,}, n_layers {mcfg.n_layers:,}, d_ff {mcfg.d_ff:,}, "
        f"vocab {mcfg.vocab_size:,}, batch {cfg.batch_size:,}"
    )
    check_fits(need, f"training a model of {shape}", available)


def check_eval_theory_world(cfg: Any) -> None:
    """Refuse an ``--eval-theory`` file whose metadata names another world than the run's (a
    moving world's ``g*`` on a still-world run measures nothing the run learns). A file
    without a recorded world is left to :func:`prh.training.theory_eval.theory_target`."""
    if not cfg.eval_theory or cfg.world is None:
        return
    from prh.features import load_features

    made_for = load_features(cfg.eval_theory).metadata.get("world")
    if made_for is not None and made_for != cfg.world:
        raise InputError(
            f"--eval-theory {cfg.eval_theory}: a theory embedding of world {made_for!r}, but "
            f"the run trains on world {cfg.world!r}; give the theory of the run's world"
        )


def check_render_cache_fits(
    n_scenes: int, image: Any, folder: str, available: int | None = None
) -> None:
    """Refuse a render cache (``n_scenes x render_views`` images of ``image_size`` px, uint8)
    that cannot be drawn in free memory (its parts and their concatenation: twice its size) or
    saved in ``folder``'s free disk space; nothing to check without one (``render_views`` 0)."""
    import shutil

    from prh.memory import GIB, check_fits

    if not image.render_views:
        return
    size = n_scenes * image.render_views * image.image_size**2 * 3
    what = (
        f"a render cache of {n_scenes:,} scenes x {image.render_views:,} views at "
        f"{image.image_size} px"
    )
    check_fits(2 * size, what, available)
    probe = Path(folder).absolute()
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if size > free:
        raise InputError(
            f"{what} needs about {size / GIB:,.1f} GiB of disk, {free / GIB:,.1f} GiB free in "
            f"{probe}"
        )
