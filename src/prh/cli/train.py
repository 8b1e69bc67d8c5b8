"""Train a text model on the cave world or a caption corpus: a JEPA on good, bad or mixed views
(whitened, soft-whitened or SIGReg), or the next-token language-model baseline, at a budget of
samples seen. The run directory holds the resolved config, git revision, versions, metrics,
checkpoints and final weights; ``--resume RUN`` continues a stopped run exactly (with its own
config and thread count: a flag that would change the run is refused).

Multi-process: ``torchrun --nproc-per-node N -m prh train ...`` (gloo on CPU, NCCL on GPU).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from prh.cli._args import DEVICE_HELP, MAX_THREADS, bounded_int, fraction, positive_int, seed
from prh.cli.config_flags import add_field_flags, given_field_flags
from prh.cli.train_flags import (
    MODEL_KNOBS,
    TRAIN_KNOBS,
    check_resume_flags,
    check_resume_model_flags,
    check_resume_out,
    check_resume_threads,
    shared_overrides,
    views_and_rho,
)
from prh.cli.train_image import add_image_arguments, image_run_requested, run_image
from prh.cli.train_restarts import add_restart_arguments, check_restart_flags
from prh.errors import InputError
from prh.models.config import PRESETS
from prh.training.config import MAX_LEN, PRESET_DEFAULTS, VIEWS, TrainConfig
from prh.world.registry import world_names


def max_len(text: str) -> int:
    """Tokens per sequence: an integer in [2, MAX_LEN]."""
    value = positive_int(text)
    if not 2 <= value <= MAX_LEN:
        raise argparse.ArgumentTypeError(f"expected 2 to {MAX_LEN} tokens, got {value}")
    return value


thread_count = bounded_int(MAX_THREADS, "threads")  # CPU threads: an integer in [1, 1024]


# The help groups of the config's parts (a derived knob's part rides in its field's metadata).
PARTS = {"data": "data: what the model reads", "model": "model",
         "optimiser": "optimiser and objective",
         "world": "world and documents (next-token views)", "evaluation": "evaluation",
         "output": "output and machine"}  # fmt: skip


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``prh train``, in help groups by part (none over 12 flags)."""
    d = TrainConfig  # defaults come from the config, so the help cannot drift from it
    groups = {part: p.add_argument_group(title) for part, title in PARTS.items()}
    data = groups["data"]
    src = data.add_mutually_exclusive_group()
    src.add_argument("--world", choices=world_names(), help="train on a world's train scenes "
                     "(cave)")  # fmt: skip
    src.add_argument("--corpus", metavar="PATH", help="train on a caption corpus file")
    data.add_argument(
        "--views",
        choices=VIEWS,
        default=None,
        help="positive pairs: two captions of one scene (good), two distortions of "
        "one caption (bad), a mixture with fraction --rho of good, or next-token LM "
        f"(default {d.views})",
    )
    data.add_argument("--rho", type=fraction, help="fraction of good views, for --views mixture "
                      "only (0..1)")  # fmt: skip
    data.add_argument(
        "--seed", type=seed, default=None, help=f"seed (init and data order; default {d.seed})"
    )
    data.add_argument("--max-len", type=max_len, default=None, help="tokens per sequence "
                      f"(default {d.max_len}, at most {MAX_LEN})")  # fmt: skip
    groups["model"].add_argument(
        "--preset",
        choices=list(PRESET_DEFAULTS),
        default=None,
        help=f"model size: tiny (2 layers, d=128), small (~33M), base (~109M) (default {d.preset})",
    )
    _run_flags(groups["evaluation"], groups["output"])
    per_preset = {k: "default per preset: " + ", ".join(f"{n} {v[k]:g}" for n, v in
                  PRESET_DEFAULTS.items()) for k in ("batch_size", "lr")}  # fmt: skip
    for part, group in groups.items():  # the knobs derived from the configs, by their part
        add_field_flags(group, [f for f in TRAIN_KNOBS if f.part == part], None, per_preset)
    add_image_arguments(p.add_argument_group("images and sketches (--modality image|sketch)"))
    add_restart_arguments(p.add_argument_group("best of N seeds (a moving world, good views)"))
    _config_flags(p)


def _preset_shapes(name: str, default: Any) -> str:
    """``default per preset: tiny 128, small 384, base 768`` of a model field."""
    return "default per preset: " + ", ".join(
        f"{k} {v.get(name, default):g}" for k, v in PRESETS.items()
    )


def _config_flags(p: argparse.ArgumentParser) -> None:
    """--config, --set and the knobs derived from the config dataclasses' fields."""
    g = p.add_argument_group("config files and keys")
    g.add_argument(
        "--config",
        metavar="FILE",
        default=None,
        help="JSON or YAML (.yaml, .yml) config to start from (a run's config.json as it is, or "
        "flat keys as --set names them); order: preset < --config < --set < flags",
    )
    g.add_argument(
        "--print-config",
        action="store_true",
        help="print the resolved config (flat keys, JSON: a --config file) and exit; no run",
    )
    g.add_argument(
        "--set",
        metavar="KEY=VALUE",
        action="append",
        default=None,
        help="set one config key (repeatable; model.d_model etc. for the model), the value "
        "parsed by the key's type",
    )
    shape = {f.dest: _preset_shapes(f.dest, f.default) for f in MODEL_KNOBS}
    add_field_flags(p, MODEL_KNOBS, "model shape (text; overrides --preset's)", shape)


def _run_flags(p: Any, out: Any) -> None:
    """Evaluation flags (``p``) and the run's output and machine flags (``out``)."""
    out.add_argument("--out", metavar="RUN", help="new run directory to create")
    out.add_argument("--resume", metavar="RUN", help="continue the run in RUN from its checkpoint")
    p.add_argument("--eval-features", metavar="FILE", help="feature file (ids scene_<i>) to "
                   "measure alignment with during training")  # fmt: skip
    p.add_argument(
        "--eval-theory",
        metavar="FILE",
        default=None,
        help="theory embedding of world states (prh world spectrum --out) to measure "
        "the held-out canonical correlation with during training",
    )
    out.add_argument(
        "--threads",
        type=thread_count,
        default=None,
        help="CPU threads for torch (default: OMP_NUM_THREADS, else the cores split among ranks; "
        "a resumed run: its own)",
    )
    out.add_argument("--device", default=None, help=DEVICE_HELP)
    out.add_argument("--no-progress", action="store_true", help="no progress line on stderr")


# Text flags passed to the config as given (None: left out), besides the shared ones.
TEXT_FLAGS = ("preset", "max_len", "vocab_size")


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """The :class:`TrainConfig` a fresh ``prh train`` runs, key by key the last of: config
    defaults, the preset's, ``--config FILE``, ``--set`` (in order), the flags given."""
    from prh.cli.train_checks import check_config_kind, check_layer, check_set_kinds, flag_rules
    from prh.training.config_layers import layered_config, merge, parse_sets, read_config_file

    # each layer's values pass the rules of the flags that set the same keys (issue 36)
    lower, rules = [], flag_rules(add_arguments)
    if args.config:
        read = read_config_file(args.config, check_config_kind)
        lower.append(check_layer(read, f"--config {args.config}", rules))
    if args.set:
        check_set_kinds(args.set)
        lower.append(check_layer(parse_sets(args.set), "--set", rules))
    return layered_config([*lower, flag_layer(args, merge(lower))])


def flag_layer(args: argparse.Namespace, lower: dict[str, Any]) -> dict[str, Any]:
    """The config keys of the flags given (``lower``: the merged config file and ``--set``,
    which the view and SIGReg rules read under the flags)."""
    layer: dict[str, Any] = {}
    if args.corpus:
        layer["corpus"] = args.corpus
    elif args.world:
        layer["world"] = args.world
    views, rho = views_and_rho(args, lower)  # refusals first, whatever else is given
    if args.views or args.rho is not None:
        layer.update(views=views, **({} if rho is None else {"rho": rho}))
    given = {**shared_overrides(args), **{k: getattr(args, k) for k in TEXT_FLAGS}}
    layer.update({k: v for k, v in given.items() if v is not None})
    return {**layer, **given_field_flags(args, MODEL_KNOBS)}


def flat_config(cfg: TrainConfig) -> dict[str, Any]:
    """``cfg`` as the flat keys ``--config`` reads back (``model.*`` for its model overrides)."""
    from prh.training.config import flat_fields

    out = flat_fields(cfg)
    del out["model_overrides"]
    return {**out, **{f"model.{k}": v for k, v in cfg.model_overrides.items()}}


def run(args: argparse.Namespace) -> int:
    import sys

    from prh.device import resolve_device
    from prh.training.api import train
    from prh.training.preflight import preflight
    from prh.training.rundir import run_state

    check_restart_flags(args)
    if image_run_requested(args):
        from prh.cli.train_checks import flag_rules

        return run_image(args, flag_rules(add_arguments))
    progress = not args.no_progress
    device = resolve_device(args.device)  # one line for --device tpu, before any work
    if args.resume and args.print_config:
        raise InputError("--print-config prints a new run's config; a run's own is its"
                         " config.json")  # fmt: skip
    if args.resume:
        run_dir = _resume_text(args, progress)
    elif args.print_config:
        print(json.dumps(flat_config(config_from_args(args)), indent=2))
        return 0
    else:
        if not args.out:
            raise InputError("give --out RUN (a new folder) or --resume RUN")
        cfg = config_from_args(args)
        if args.narration_stride is not None and not cfg.narration_len:  # given at its default
            raise InputError("--narration-stride applies to narrations: give --narration-len too")
        preflight(cfg, args.out, on_cpu=device.type == "cpu")
        if args.restarts is not None:
            return _text_restarts(args, cfg, progress)
        over = run_state(Path(args.out)) == "incomplete"
        run_dir = train(cfg, args.out, progress, device=args.device, threads=args.threads)
        if over:
            print(
                f"prh train: {args.out} held an unfinished start (no checkpoint); started over",
                file=sys.stderr,
            )
    print(run_dir)
    return 0


def _resume_text(args: argparse.Namespace, progress: bool) -> Path:
    """``--resume RUN`` of a text run: the flags given must match the stored run's, then it
    continues as it was started."""
    from prh.training.api import read_run_config, train
    from prh.training.lifecycle import read_stored

    check_resume_out(args)
    if args.config or args.set:
        raise InputError("--config/--set start a new run (--out); --resume continues one as "
                         "it was started")  # fmt: skip
    check_resume_flags(args, read_run_config(args.resume), args.resume)
    check_resume_model_flags(args, read_stored(Path(args.resume)), args.resume)
    check_resume_threads(args.threads, args.resume)
    return train(None, args.resume, progress, resume=True, device=args.device,
                 threads=args.threads)  # fmt: skip


def _text_restarts(args: argparse.Namespace, cfg: TrainConfig, progress: bool) -> int:
    """``--restarts N`` of a text run: each seed an ordinary :func:`prh.training.train` run."""
    from prh.cli.train_restarts import run_restarts
    from prh.training.api import read_run_config, train

    def train_one(c: TrainConfig, folder: Path, resume: str) -> Path:
        return train(c, folder, progress, resume=resume, device=args.device, threads=args.threads)

    return run_restarts(args, [cfg], train_one, lambda folder: [read_run_config(folder)],
                        lambda configs: flat_config(configs[0]))  # fmt: skip
