"""The flags text and image runs of ``prh train`` share: a config's view and objective flags, and
the ``--resume`` rule (a flag that would change the stored run is refused).

Used by :mod:`prh.cli.train` (text runs) and :mod:`prh.cli.train_image` (image/sketch runs).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from prh.cli.config_flags import field_flags
from prh.errors import InputError
from prh.models.config import ModelConfig
from prh.training.config import OPTIM_FIELDS, OptimConfig, TrainConfig

# Flags derived from the configs' fields (prh.cli.config_flags): the optimiser and whitening
# knobs (both modalities), the vocabulary and the model's shape (text only, but for the JEPA's
# output width, --embed-dim, which image runs take too).
TRAIN_KNOBS = (*field_flags(OptimConfig), *field_flags(TrainConfig))
MODEL_KNOBS = field_flags(ModelConfig, "model.")
TEXT_ONLY_KNOBS = ("vocab_size", *(f.dest for f in MODEL_KNOBS if f.dest != "embed_dim"))
# Text-world knobs an image run refuses unless left out or at the value that changes nothing.
TEXT_WORLD_KNOBS = {"world_themes": 0, "theme_strength": None, "doc_captions": 1,
                    "doc_style": None, "narration_len": 0, "narration_stride": None}  # fmt: skip

# The flags both modalities pass to ``train_config`` as given (None: the preset's default).
SHARED_OVERRIDES = (
    "seed",
    "eval_features",
    "eval_theory",
    *(f.dest for f in TRAIN_KNOBS if f.dest not in TEXT_ONLY_KNOBS),
)


# Flags that shape the run, by their argparse dest (= TrainConfig field). Their parser default is
# None so that ``--resume`` can tell a flag the user typed from one left out.
RUN_FLAGS = (
    "world",
    "corpus",
    "views",
    "rho",
    "preset",
    "max_len",
    *SHARED_OVERRIDES,
    "vocab_size",
)

# Flags naming a file or folder: the same path spelled another way is the same flag.
PATH_FLAGS = ("corpus", "eval_features", "eval_theory", "render_cache")


def views_and_rho(
    args: argparse.Namespace, lower: Mapping[str, Any] | None = None
) -> tuple[str, float | None]:
    """``(views, rho)`` of the flags (good: rho 1, bad: rho 0, mixture: ``--rho``); refuses
    ``--rho`` off a mixture, a mixture without it, and SIGReg flags without ``--objective
    sigreg``. ``lower``: the keys of ``--config`` / ``--set``, under the flags."""
    lower = lower or {}
    views = args.views or lower.get("views") or TrainConfig.views  # flags left out are None
    if views == "mixture" and args.rho is None and "rho" not in lower:
        raise InputError("--views mixture needs --rho")
    if views != "mixture" and args.rho is not None:
        raise InputError(
            f"--rho {args.rho:g}: only --views mixture mixes good and bad views; "
            f"--views {views} takes no --rho"
        )
    sigreg_flags = args.sigreg_lambda is not None or args.sigreg_slices is not None
    objective = args.objective or lower.get("objective") or TrainConfig.objective
    if sigreg_flags and objective != "sigreg":
        raise InputError("--sigreg-lambda and --sigreg-slices need --objective sigreg")
    return views, {"good": 1.0, "bad": 0.0}.get(
        views, args.rho if args.rho is not None else lower.get("rho")
    )


def shared_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The :data:`SHARED_OVERRIDES` flags as ``train_config`` keyword arguments."""
    return {dest: getattr(args, dest) for dest in SHARED_OVERRIDES}


def check_resume_out(args: argparse.Namespace) -> None:
    """``--out`` beside ``--resume`` must name the same folder."""
    if args.out and Path(args.out) != Path(args.resume):
        raise InputError("--out and --resume name different folders; give only --resume")


def check_resume_flags(
    args: argparse.Namespace,
    stored: Any,
    run: str,
    flags: Sequence[str] = RUN_FLAGS,
    fields: Mapping[str, str] | None = None,
) -> None:
    """Refuse a flag given with ``--resume`` that differs from the run's stored config: the
    resumed run continues exactly the run that was started, so such a flag cannot apply.

    ``flags`` are argparse dests; ``fields`` maps a dest to the attribute of ``stored`` it sets
    when the two names differ.
    """
    for dest in flags:
        given = getattr(args, dest, None)
        if given is None:
            continue
        name = (fields or {}).get(dest, dest)
        optim = isinstance(stored, TrainConfig) and name in OPTIM_FIELDS
        have = getattr(stored.optim if optim else stored, name)
        same = (
            Path(given).resolve() == Path(have).resolve()
            if dest in PATH_FLAGS and have is not None
            else given == have
        )
        if not same:
            flag = "--" + dest.replace("_", "-")
            raise InputError(
                f"{flag} {given}: the run in {run} was started with {have}; --resume continues "
                "it unchanged (leave the flag out, or start a new run with --out)"
            )


def check_resume_threads(threads: int | None, run: str) -> None:
    """Refuse a ``--threads`` other than the count the run used (stored in its ``meta.json``)."""
    from prh.training.rundir import read_meta

    stored = read_meta(Path(run)).get("threads")
    if threads is not None and stored is not None and threads != stored:
        raise InputError(
            f"--threads {threads}: the run in {run} used {stored} threads; a resumed run keeps "
            "its thread count so that it stays bit-identical (leave --threads out)"
        )


def check_resume_model_flags(args: argparse.Namespace, stored: dict[str, Any], run: str) -> None:
    """The ``--resume`` rule for the model-shape flags (``--d-model``, ...): a value other than
    the stored run's ``config.json`` ``"model"`` is refused."""
    model = stored.get("model", {}) if isinstance(stored, dict) else {}
    for f in MODEL_KNOBS:
        given = getattr(args, f.dest, None)
        if given is not None and given != model.get(f.dest):
            raise InputError(
                f"{f.flag} {given}: the run in {run} was started with {model.get(f.dest)}; "
                "--resume continues it unchanged (leave the flag out, or start a new run with "
                "--out)"
            )
