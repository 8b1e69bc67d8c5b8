"""Train a text model on the cave world or a caption corpus: a JEPA on good, bad or mixed views
(whitened, soft-whitened or SIGReg), or the next-token language-model baseline, at a budget of
samples seen. The run directory holds the resolved config, git revision, versions, metrics,
checkpoints and final weights; ``--resume RUN`` continues a stopped run exactly (with its own
config and thread count: a flag that would change the run is refused).

Multi-process: ``torchrun --nproc-per-node N -m prh train ...`` (gloo on CPU, NCCL on GPU).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from prh.cli._args import (
    fraction,
    nonnegative_float,
    nonnegative_int,
    positive_float,
    positive_int,
    seed,
)
from prh.cli.train_image import add_image_arguments, image_run_requested, run_image
from prh.errors import InputError
from prh.training.config import MAX_LEN, PRESET_DEFAULTS, TrainConfig, train_config

# torch.set_num_threads accepts any count, and crashes the process far above the core count.
MAX_THREADS = 1024

# Flags that shape the run, by their argparse dest (= TrainConfig field). Their parser default is
# None so that ``--resume`` can tell a flag the user typed from one left out.
RUN_FLAGS = (
    "world",
    "corpus",
    "views",
    "rho",
    "samples",
    "preset",
    "seed",
    "batch_size",
    "lr",
    "max_len",
    "objective",
    "sigreg_lambda",
    "sigreg_slices",
    "eval_features",
    "eval_every",
    "checkpoint_every",
    "world_themes",
    "theme_strength",
    "doc_captions",
    "doc_style",
)


def _per_preset(key: str) -> str:
    return ", ".join(f"{k} {v[key]:g}" for k, v in PRESET_DEFAULTS.items())


def max_len(text: str) -> int:
    """Tokens per sequence: an integer in [2, MAX_LEN]."""
    value = positive_int(text)
    if not 2 <= value <= MAX_LEN:
        raise argparse.ArgumentTypeError(f"expected 2 to {MAX_LEN} tokens, got {value}")
    return value


def thread_count(text: str) -> int:
    """CPU threads: an integer in [1, MAX_THREADS]."""
    value = positive_int(text)
    if value > MAX_THREADS:
        raise argparse.ArgumentTypeError(f"expected 1 to {MAX_THREADS} threads, got {value}")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    d = TrainConfig  # defaults come from the config, so the help cannot drift from it
    src = p.add_mutually_exclusive_group()
    src.add_argument(
        "--world", choices=["cave"], default=None, help="train on the embedded world's train scenes"
    )
    src.add_argument("--corpus", metavar="PATH", help="train on a caption corpus file")
    p.add_argument(
        "--views",
        choices=["good", "bad", "next-token", "mixture"],
        default=None,
        help="positive pairs: two captions of one scene (good), two distortions of "
        "one caption (bad), a mixture with fraction --rho of good, or next-token LM "
        f"(default {d.views})",
    )
    p.add_argument(
        "--rho",
        type=fraction,
        default=None,
        help="fraction of good views, for --views mixture only (0..1)",
    )
    p.add_argument(
        "--samples",
        type=positive_int,
        default=None,
        help=f"budget: pairs (JEPA) or sequences (LM) seen (default {d.samples})",
    )
    p.add_argument(
        "--preset",
        choices=list(PRESET_DEFAULTS),
        default=None,
        help=f"model size: tiny (2 layers, d=128), small (~33M), base (~109M) (default {d.preset})",
    )
    p.add_argument(
        "--seed", type=seed, default=None, help=f"seed (init and data order; default {d.seed})"
    )
    p.add_argument("--out", metavar="RUN", help="new run directory to create")
    p.add_argument("--resume", metavar="RUN", help="continue the run in RUN from its checkpoint")
    p.add_argument(
        "--batch-size",
        type=positive_int,
        default=None,
        help="global batch in pairs/sequences per step (default per preset: "
        f"{_per_preset('batch_size')})",
    )
    p.add_argument(
        "--lr",
        type=positive_float,
        default=None,
        help=f"peak learning rate (default per preset: {_per_preset('lr')})",
    )
    p.add_argument(
        "--max-len",
        type=max_len,
        default=None,
        help=f"tokens per sequence (default {d.max_len}, at most {MAX_LEN})",
    )
    p.add_argument(
        "--objective",
        choices=["whitened", "soft", "sigreg"],
        default=None,
        help=f"JEPA anti-collapse: batch whitening, soft penalty, SIGReg (default {d.objective})",
    )
    p.add_argument(
        "--sigreg-lambda",
        type=fraction,
        default=None,
        help="SIGReg weight lam: (1-lam) pred + lam SIGReg, 0..1 (default 0.05)",
    )
    p.add_argument(
        "--sigreg-slices",
        type=positive_int,
        default=None,
        help="SIGReg random directions per step (default 256)",
    )
    p.add_argument(
        "--eval-features",
        metavar="FILE",
        default=None,
        help="feature file (ids scene_<i>) to measure alignment with during training",
    )
    p.add_argument(
        "--eval-every",
        type=nonnegative_int,
        default=None,
        help=f"evaluate every N steps (0: only at the end; default {d.eval_every})",
    )
    p.add_argument(
        "--checkpoint-every",
        type=nonnegative_int,
        default=None,
        help=f"checkpoint every N steps (0: never; default {d.checkpoint_every})",
    )
    p.add_argument(
        "--threads",
        type=thread_count,
        default=None,
        help="CPU threads for torch (default: OMP_NUM_THREADS, else the cores split among ranks; "
        "a resumed run: its own)",
    )
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    p.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    p.add_argument(
        "--world-themes",
        metavar="T",
        type=nonnegative_int,
        default=None,
        help=f"scene themes of the world (0: none; default {d.world_themes}; docs/world.md)",
    )
    p.add_argument(
        "--theme-strength",
        metavar="X",
        type=nonnegative_float,
        default=None,
        help=f"how narrow a theme is (default {d.theme_strength})",
    )
    p.add_argument(
        "--doc-captions",
        metavar="D",
        type=positive_int,
        default=None,
        help=f"next-token: captions of one scene per document (default {d.doc_captions}; "
        "give --max-len about 48 D)",
    )
    p.add_argument(
        "--doc-style",
        action="store_const",
        const=True,
        default=None,
        help="next-token: a document's captions share one style (register, vocabulary, order)",
    )
    add_image_arguments(p)  # --modality image|sketch and its flags (prh.cli.train_image)


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """The :class:`TrainConfig` a fresh ``prh train`` runs: config defaults, then the preset's,
    then the flags given."""
    views = args.views or TrainConfig.views
    if views == "mixture" and args.rho is None:
        raise InputError("--views mixture needs --rho")
    if views != "mixture" and args.rho is not None:
        raise InputError(
            f"--rho {args.rho:g}: only --views mixture mixes good and bad views; "
            f"--views {views} takes no --rho"
        )
    sigreg_flags = args.sigreg_lambda is not None or args.sigreg_slices is not None
    if sigreg_flags and (args.objective or TrainConfig.objective) != "sigreg":
        raise InputError("--sigreg-lambda and --sigreg-slices need --objective sigreg")
    rho = {"good": 1.0, "bad": 0.0}.get(views, args.rho)
    return train_config(
        args.preset or TrainConfig.preset,
        world=args.world if (args.world or args.corpus) else "cave",
        corpus=args.corpus,
        views=views,
        rho=rho,
        samples=args.samples,
        seed=args.seed,
        batch_size=args.batch_size,
        lr=args.lr,
        max_len=args.max_len,
        objective=args.objective,
        sigreg_lambda=args.sigreg_lambda,
        sigreg_slices=args.sigreg_slices,
        eval_features=args.eval_features,
        eval_every=args.eval_every,
        checkpoint_every=args.checkpoint_every,
        world_themes=args.world_themes,
        theme_strength=args.theme_strength,
        doc_captions=args.doc_captions,
        doc_style=args.doc_style,
    )


def check_resume_flags(args: argparse.Namespace, stored: TrainConfig, run: str) -> None:
    """Refuse a flag given with ``--resume`` that differs from the run's stored config: the
    resumed run continues exactly the run that was started, so such a flag cannot apply."""
    for dest in RUN_FLAGS:
        given = getattr(args, dest)
        if given is None:
            continue
        have = getattr(stored, dest)
        same = (
            Path(given).resolve() == Path(have).resolve()
            if dest in ("corpus", "eval_features") and have is not None
            else given == have
        )
        if not same:
            flag = "--" + dest.replace("_", "-")
            raise InputError(
                f"{flag} {given}: the run in {run} was started with {have}; --resume continues "
                "it unchanged (leave the flag out, or start a new run with --out)"
            )


def _check_resume_threads(threads: int | None, run: str) -> None:
    from prh.training.rundir import read_meta

    stored = read_meta(Path(run)).get("threads")
    if threads is not None and stored is not None and threads != stored:
        raise InputError(
            f"--threads {threads}: the run in {run} used {stored} threads; a resumed run keeps "
            "its thread count so that it stays bit-identical (leave --threads out)"
        )


def run(args: argparse.Namespace) -> int:
    import sys

    from prh.io import check_output_dir
    from prh.training.api import read_run_config, train
    from prh.training.device import resolve_device
    from prh.training.rundir import run_state

    if image_run_requested(args):
        return run_image(args)
    progress = not args.no_progress
    resolve_device(args.device)  # one line for --device tpu, before any work
    if args.resume:
        if args.out and Path(args.out) != Path(args.resume):
            raise InputError("--out and --resume name different folders; give only --resume")
        stored = read_run_config(args.resume)
        check_resume_flags(args, stored, args.resume)
        _check_resume_threads(args.threads, args.resume)
        run_dir = train(
            None, args.resume, progress, resume=True, device=args.device, threads=args.threads
        )
    else:
        if not args.out:
            raise InputError("give --out RUN (a new folder) or --resume RUN")
        cfg = config_from_args(args)
        check_output_dir(args.out, "--out")
        if args.corpus and not Path(args.corpus).exists():
            raise InputError(f"--corpus {args.corpus}: no such file or folder")
        if args.eval_features:
            path = Path(args.eval_features)
            if path.is_dir():
                raise InputError(f"--eval-features {path}: is a folder, expected a feature file")
            if not path.is_file():
                raise InputError(f"--eval-features {path}: no such file")
        over = run_state(Path(args.out)) == "incomplete"
        run_dir = train(cfg, args.out, progress, device=args.device, threads=args.threads)
        if over:
            print(
                f"prh train: {args.out} held an unfinished start (no checkpoint); started over",
                file=sys.stderr,
            )
    print(run_dir)
    return 0
