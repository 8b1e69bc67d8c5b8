"""``prh world spectrum`` and ``prh world trajectory``: the moving world's theory and frames.

``spectrum`` prints the top eigenvalues of the moving world's pair kernel ``p Q^D`` (the
constant left out), their smallest separation and the gap after ``--k``; ``--plot`` draws them,
``--out`` writes the theory embedding ``g*`` of ``--scenes`` to a feature file (ids
``scene_{i}``). With ``--modality image|text|sketch`` it is that modality's own theory instead
(the kernel on what its observations show, :mod:`prh.world.observation`): its eigenvalues, its
ceiling against ``g*`` and the canonical correlations it is predicted to reach with each other
modality; ``--out`` then writes its theory embedding (text: of each state's evaluation caption,
wording seed ``--seed + 1``, as ``prh train --eval-theory`` embeds it). ``--world moving-literal``
has literal captions. ``trajectory`` draws one run of the chain, a frame every ``--every`` steps.
"""

from __future__ import annotations

import argparse

from prh.cli._args import as_request, nonnegative_int, positive_int, seed
from prh.world.moving_commands import MAX_EIGS, MAX_FRAMES


def _moving_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=seed, default=0, help="world seed (split, renders, captions)")
    p.add_argument("--lag", type=nonnegative_int, default=None, help="steps D between views")
    p.add_argument("--chain-seed", type=nonnegative_int, default=0, help="seed of the chain")
    p.add_argument("--world", choices=("moving", "moving-literal"), default="moving",
                   help="moving (partial captions) or moving-literal (all "
                   "factors named)")  # fmt: skip


def add_parsers(sub) -> None:
    """Register the two actions on ``prh world``'s sub-parsers."""
    s = sub.add_parser("spectrum", help="the moving world's spectrum and theory embedding")
    _moving_args(s)
    s.add_argument("--k", type=positive_int, default=8, help="embedding dimension (default 8)")
    s.add_argument("--eigs", type=positive_int, default=16,
                   help=f"eigenvalues shown (<= {MAX_EIGS})")  # fmt: skip
    s.add_argument("--scenes", default="test", help="train, test, all, or ids like 0,5,17")
    s.add_argument("--plot", default=None, help="bar plot of the spectrum (.png, .pdf, .svg)")
    s.add_argument("--out", default=None, help="theory embedding feature file (.safetensors ...)")
    s.add_argument("--modality", choices=("image", "text", "sketch"), default=None,
                   help="that modality's own theory (the kernel on what it observes)")  # fmt: skip
    t = sub.add_parser("trajectory", help="draw one trajectory of the moving world")
    _moving_args(t)
    t.add_argument("--frames", type=positive_int, default=8, help=f"frames (<= {MAX_FRAMES})")
    t.add_argument("--every", type=positive_int, default=None, help="steps per frame (D / 4)")
    t.add_argument("--traj-seed", type=nonnegative_int, default=0, help="trajectory seed")
    t.add_argument("--size", type=positive_int, default=128, help="frame side in pixels")
    t.add_argument("--out", required=True, help="image file (.png, .jpg, .pdf, .svg)")


def run(args: argparse.Namespace) -> int:
    """The flags as a :class:`~prh.world.moving_commands.MovingWorldRequest`, done by
    :func:`~prh.world.moving_commands.moving_world_command`."""
    from prh.world.moving_commands import MovingWorldRequest, moving_world_command

    moving_world_command(as_request(MovingWorldRequest, args))
    return 0
