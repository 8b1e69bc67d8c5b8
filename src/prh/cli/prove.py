"""Run executable checks of every theorem statement in docs/theory.md on finite worlds.

Each check states a theorem (or its failure when an assumption breaks), measures it, and passes
or fails: closed-form, uniqueness, platonic, bound, views, next-token, training. The exit status
is 0 only when every selected check passes (1 when one fails, 2 for bad input).
"""

from __future__ import annotations

import argparse

from prh.cli._args import as_request, positive_int, seed
from prh.prove.command import MAX_WORLDS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--worlds", type=positive_int, default=None, metavar="N",
                        help=f"worlds for the bound check (1..{MAX_WORLDS}; default 300, or 60 "
                        "with --quick)")  # fmt: skip
    parser.add_argument("--seed", type=seed, default=0,
                        help="base random seed (integer in [0, 2**32 - 1])")  # fmt: skip
    parser.add_argument("--only", default=None, metavar="NAME[,NAME]",
                        help="run only these checks (comma-separated names, "
                        "e.g. bound,views)")  # fmt: skip
    parser.add_argument("--json", default=None, metavar="PATH",
                        help="also write the results as JSON to PATH")  # fmt: skip
    parser.add_argument("--quick", action="store_true",
                        help="fewer worlds and training steps (for prh demo); the statements are "
                        "unchanged")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """The flags as a :class:`~prh.prove.command.ProveRequest`, checked by
    :func:`~prh.prove.command.prove_command`; exit 1 when a check fails."""
    from prh.prove.command import ProveRequest, prove_command

    return 0 if prove_command(as_request(ProveRequest, args)) else 1
