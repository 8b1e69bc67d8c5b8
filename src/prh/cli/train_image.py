"""``prh train --modality image|sketch``: the image flags and the image branch of ``prh train``.

Kept apart from :mod:`prh.cli.train` (text runs), which calls :func:`add_image_arguments` and
hands over to :func:`run_image` when :func:`image_run_requested` says so.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from prh.cli._args import local_workers, nonnegative_int
from prh.cli.config_flags import add_field_flags, field_flags, given_field_flags
from prh.cli.train_flags import (
    TEXT_ONLY_KNOBS,
    TEXT_WORLD_KNOBS,
    check_resume_flags,
    check_resume_out,
    check_resume_threads,
    shared_overrides,
    views_and_rho,
)
from prh.errors import InputError
from prh.training.config import TrainConfig, check_batch
from prh.training.image_config import DEFAULT_TRAIN_SCENES, ImageConfig

# Flags derived from ImageConfig's fields (prh.cli.config_flags): render size and views, and the
# backbone; the cache folder (--render-cache: a path, cache_dir) and the run's scenes and
# workers are the hand-written ones.
IMAGE_KNOBS = field_flags(ImageConfig)
BACKBONE_FLAGS = ("backbone", "freeze_until", "backbone_size", "scratch_branch")
IMAGE_FLAGS = (*(f.dest for f in IMAGE_KNOBS), "render_cache", "render_workers", "train_scenes")
# Image flags that shape the run (--render-workers only sets how many processes draw), by dest,
# and the ImageConfig field a dest sets where the names differ.
IMAGE_RUN_FLAGS = (*(f.dest for f in IMAGE_KNOBS), "render_cache")
IMAGE_FIELDS = {"render_cache": "cache_dir"}


def add_image_arguments(p: argparse.ArgumentParser) -> None:
    """The image/sketch flags in help group ``p``: the modality, the derived :data:`IMAGE_KNOBS`
    (defaults and help from :class:`~prh.training.ImageConfig`), the cache and the scenes."""
    p.add_argument("--modality", choices=["text", "image", "sketch"], default="text",
                   help="what the model reads: captions (default), rendered images, or line "
                   "sketches")  # fmt: skip
    add_field_flags(p, IMAGE_KNOBS[:2], None)  # --image-size, --render-views
    p.add_argument("--render-cache", metavar="DIR", help="image/sketch runs: folder of the render "
                   "cache, shareable by runs (default RUN/render_cache)")  # fmt: skip
    p.add_argument("--render-workers", type=local_workers, metavar="N", help="image/sketch runs: "
                   "processes that draw the render cache (default: the CPUs)")  # fmt: skip
    p.add_argument("--train-scenes", type=nonnegative_int, metavar="N", help="image/sketch runs: "
                   f"training scenes drawn from (default {DEFAULT_TRAIN_SCENES}; 0 = all "
                   "18000)")  # fmt: skip
    add_field_flags(p, IMAGE_KNOBS[2:], None)  # the backbone


def image_run_requested(args: argparse.Namespace) -> bool:
    """True for ``--modality image|sketch`` or ``--resume`` of an image run; refuses image flags
    on a text run."""
    from prh.training.image import is_image_run

    if args.resume:
        return is_image_run(args.resume)
    if args.modality != "text":
        return True
    given = [f for f in IMAGE_FLAGS if getattr(args, f, None) is not None]
    if given:
        flag = "--" + given[0].replace("_", "-")
        raise InputError(f"{flag} applies to --modality image or sketch, not text")
    return False


def run_image(args: argparse.Namespace, rules: Mapping[str, Any] | None = None) -> int:
    import os

    from prh.training.image import train_image

    progress = not args.no_progress
    workers = args.render_workers or len(os.sched_getaffinity(0))
    if args.resume and (args.print_config or args.config or args.set):
        raise InputError("--print-config, --config and --set start a new run (--out); --resume "
                         "continues one as it was started")  # fmt: skip
    if args.resume:
        check_image_resume(args)
        kw = {"device": args.device, "threads": args.threads, "workers": workers}
        run_dir, _ = train_image(None, None, args.resume, progress, resume=True, **kw)
        print(run_dir)
        return 0
    train, image = image_configs(args, rules)
    if args.print_config:
        from prh.training.image_layers import print_image_config

        return print_image_config(train, image)
    if not args.out:
        raise InputError("give --out RUN (a new folder) or --resume RUN")
    from prh.training.preflight import preflight_image

    preflight_image(train, image, args.out, args.render_cache)  # issue 36
    kw = {"device": args.device, "threads": args.threads, "workers": workers}
    if args.restarts is not None:
        return _image_restarts(args, train, image, progress, kw)
    run_dir, _ = train_image(train, image, args.out, progress, **kw)
    print(run_dir)
    return 0


def _image_restarts(args, train, image, progress: bool, kw: dict[str, Any]) -> int:
    """``--restarts N`` of an image or sketch run: each seed an ordinary image run (one render
    cache for all when ``--render-cache`` is given: renders do not depend on the seed)."""
    from prh.cli.train_restarts import run_restarts
    from prh.training.image import read_image_config, train_image
    from prh.training.image_layers import flat_image_config

    def train_one(t: TrainConfig, folder, resume: str):
        return train_image(t, image, folder, progress, resume=resume, **kw)[0]

    return run_restarts(args, [train, image], train_one, lambda f: read_image_config(f)[:2],
                        lambda configs: flat_image_config(*configs))  # fmt: skip


def check_image_resume(args: argparse.Namespace) -> None:
    """The text path's ``--resume`` rule for an image run: ``--out`` must name the run, and a
    flag (text or image) or ``--threads`` that differs from the stored run is refused."""
    from pathlib import Path

    from prh.training.image import read_image_config
    from prh.training.image_config import image_model_config

    check_resume_out(args)
    train, image, _ = read_image_config(Path(args.resume))
    check_resume_flags(args, train, args.resume)
    check_resume_flags(args, train, args.resume, flags=("train_scenes",))
    check_resume_flags(args, image, args.resume, flags=IMAGE_RUN_FLAGS, fields=IMAGE_FIELDS)
    stored = image_model_config(train, image).embed_dim
    if args.embed_dim is not None and args.embed_dim != stored:
        raise InputError(
            f"--embed-dim {args.embed_dim}: the run in {args.resume} was started "
            f"with {stored}; --resume continues it unchanged (leave the flag out)"
        )
    if args.modality != "text" and args.modality != image.modality:
        raise InputError(
            f"--modality {args.modality}: the run in {args.resume} was started with "
            f"{image.modality}; --resume continues it unchanged (leave the flag out)"
        )
    check_resume_threads(args.threads, args.resume)


def refuse_text_only(args: argparse.Namespace) -> None:
    """The text-only knobs (vocabulary, model shape but the output width): refused on an image
    run."""
    m = args.modality
    text_only = [k for k in TEXT_ONLY_KNOBS if getattr(args, k, None) is not None]
    if text_only:
        flag = "--" + text_only[0].replace("_", "-")
        raise InputError(f"{flag} applies to text runs; --modality {m} takes the image flags")


def _refuse_text_only_flags(args: argparse.Namespace, image_views, default_views: str) -> None:
    """Refuse flags of text runs on an image or sketch run, each in one line."""
    m = args.modality
    views = args.views or default_views  # flags left out are None (see cli/train.py)
    if views not in image_views:
        raise InputError(f"--views {views} is text-only; --modality {m} takes good, bad, mixture")
    if args.corpus:
        raise InputError(
            f"--corpus {args.corpus}: a caption corpus is text-only; --modality {m} trains on "
            "the cave world's renders (use --world cave)"
        )
    if args.max_len is not None:
        raise InputError(f"--max-len is text-only; --modality {m} reads images")
    refuse_text_only(args)
    # text-world flags: refused unless left out or at the value that changes nothing
    for flag, inert in TEXT_WORLD_KNOBS.items():
        if getattr(args, flag, None) not in (None, inert):
            raise InputError(
                f"--{flag.replace('_', '-')} applies to text runs only; --modality {m} trains on "
                "the plain cave world's renders (themed worlds are not rendered yet)"
            )


def image_configs(args: argparse.Namespace, rules: Mapping[str, Any] | None = None):
    """``(TrainConfig, ImageConfig)`` from the layers (the image run's defaults < ``--config`` <
    ``--set`` < flags); every refusal happens here, before work. ``rules``: ``prh train``'s
    flags by dest (:func:`prh.cli.train_checks.flag_rules`), whose checks a layer's keys pass
    too (without them, the configs' own)."""
    from prh.training.config_layers import merge
    from prh.training.image_config import IMAGE_VIEWS, check_image_run, image_model_config
    from prh.training.image_layers import WIDTH, image_layered_configs

    _refuse_text_only_flags(args, IMAGE_VIEWS, TrainConfig.views)
    lower = _image_layers(args, rules or {})
    views, rho = views_and_rho(args, merge(lower))
    given = given_field_flags(args, IMAGE_KNOBS)  # the flags left out: the layers' values
    flags = {"world": args.world, "train_scenes": args.train_scenes, **shared_overrides(args),
             "modality": args.modality, "cache_dir": args.render_cache, **given,
             WIDTH: args.embed_dim}  # fmt: skip
    if args.views or args.rho is not None:
        flags.update(views=views, rho=rho)
    layer = {k: v for k, v in flags.items() if v is not None}
    train, image = image_layered_configs([*lower, layer])
    if args.backbone is None and image.backbone == "none":  # no backbone named anywhere
        extra = [f for f in BACKBONE_FLAGS[1:]
                 if f in given or getattr(image, f) != getattr(ImageConfig, f)]  # fmt: skip
        if extra:
            flag = "--" + extra[0].replace("_", "-")
            raise InputError(f"{flag} applies to a backbone run (give --backbone)")
    check_image_run(train, image)
    check_batch(train, image_model_config(train))
    if image.pretrained and image.backbone != "none":
        from prh.models.efficientnet import build_efficientnet_lite0

        build_efficientnet_lite0(pretrained=True)  # refuses missing weights before any work
    return train, image


def _image_layers(args: argparse.Namespace, rules: Mapping[str, Any]) -> list[dict]:
    """The ``--config`` and ``--set`` layers of an image run, each key checked by its flag's
    rules (so ``--set image_size=8`` is refused as ``--image-size 8`` would be)."""
    from prh.cli.train_checks import check_layer
    from prh.training.config_layers import read_config_file
    from prh.training.image_layers import check_image_kind, flatten_image, parse_image_sets

    lower: list[dict] = []
    rules = {**rules, **({"cache_dir": rules["render_cache"]} if "render_cache" in rules else {})}
    if args.config:
        read = read_config_file(args.config, check_image_kind, flatten_image)
        lower.append(check_layer(read, f"--config {args.config}", rules))
    if args.set:
        lower.append(check_layer(parse_image_sets(args.set), "--set", rules))
    return lower
