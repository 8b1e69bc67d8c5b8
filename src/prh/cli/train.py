"""Train a text model on the cave world or a caption corpus: a JEPA on good, bad or mixed views
(whitened, soft-whitened or SIGReg), or the next-token language-model baseline, at a budget of
samples seen. The run directory holds the resolved config, git revision, versions, metrics,
checkpoints and final weights; ``--resume RUN`` continues a stopped run exactly.

Multi-process: ``torchrun --nproc-per-node N -m prh train ...`` (gloo on CPU, NCCL on GPU).
"""

from __future__ import annotations

import argparse

from prh.cli._args import fraction, nonnegative_int, positive_float, positive_int
from prh.cli.train_image import add_image_arguments, image_run_requested, run_image


def add_arguments(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group()
    src.add_argument("--world", choices=["cave"], help="train on the embedded world's train scenes")
    src.add_argument("--corpus", metavar="PATH", help="train on a caption corpus file")
    p.add_argument(
        "--views",
        choices=["good", "bad", "next-token", "mixture"],
        default="good",
        help="positive pairs: two captions of one scene (good), two distortions of "
        "one caption (bad), a mixture with fraction --rho of good, or next-token LM",
    )
    p.add_argument(
        "--rho",
        type=fraction,
        default=None,
        help="fraction of good views for --views mixture (0..1)",
    )
    p.add_argument(
        "--samples",
        type=positive_int,
        default=None,
        help="budget: pairs (JEPA) or sequences (LM) seen (default 64000)",
    )
    p.add_argument(
        "--preset",
        choices=["tiny", "small", "base"],
        default="tiny",
        help="model size: tiny (2 layers, d=128), small (~33M), base (~109M)",
    )
    p.add_argument("--seed", type=nonnegative_int, default=0, help="seed (init and data order)")
    p.add_argument("--out", metavar="RUN", help="new run directory to create")
    p.add_argument("--resume", metavar="RUN", help="continue the run in RUN from its checkpoint")
    p.add_argument(
        "--batch-size",
        type=positive_int,
        default=None,
        help="global batch in pairs/sequences per step (preset default)",
    )
    p.add_argument("--lr", type=positive_float, default=None, help="peak learning rate")
    p.add_argument("--max-len", type=positive_int, default=None, help="tokens per sequence")
    p.add_argument(
        "--objective",
        choices=["whitened", "soft", "sigreg"],
        default=None,
        help="JEPA anti-collapse: batch whitening (default), soft penalty, SIGReg",
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
        help="evaluate every N steps (0: only at the end)",
    )
    p.add_argument(
        "--checkpoint-every",
        type=nonnegative_int,
        default=None,
        help="checkpoint every N steps (default 200)",
    )
    p.add_argument(
        "--threads",
        type=positive_int,
        default=None,
        help="CPU threads for torch (default: OMP_NUM_THREADS, else the cores split among ranks)",
    )
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    p.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    add_image_arguments(p)  # --modality image|sketch and its flags (prh.cli.train_image)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from prh.errors import InputError
    from prh.training import train, train_config

    if image_run_requested(args):
        return run_image(args)
    progress = not args.no_progress
    if args.resume:
        if args.out and Path(args.out) != Path(args.resume):
            raise InputError("--out and --resume name different folders; give only --resume")
        run_dir = train(
            None, args.resume, progress, resume=True, device=args.device, threads=args.threads
        )
    else:
        if not args.out:
            raise InputError("give --out RUN (a new folder) or --resume RUN")
        if args.views == "mixture" and args.rho is None:
            raise InputError("--views mixture needs --rho")
        sigreg_flags = args.sigreg_lambda is not None or args.sigreg_slices is not None
        if sigreg_flags and args.objective != "sigreg":
            raise InputError("--sigreg-lambda and --sigreg-slices need --objective sigreg")
        rho = {"good": 1.0, "bad": 0.0}.get(args.views, args.rho)
        cfg = train_config(
            args.preset,
            world=args.world if (args.world or args.corpus) else "cave",
            corpus=args.corpus,
            views=args.views,
            rho=rho if rho is not None else 1.0,
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
        )
        if args.eval_features and not Path(args.eval_features).is_file():
            raise InputError(f"--eval-features {args.eval_features}: no such file")
        run_dir = train(cfg, args.out, progress, device=args.device, threads=args.threads)
    print(run_dir)
    return 0
