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

import numpy as np

from prh.cli._args import nonnegative_int, positive_int, seed
from prh.errors import InputError

MAX_EIGS = 200
MAX_FRAMES = 24


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


def _world(args: argparse.Namespace):
    from prh.world import make_world

    opts = {"chain_seed": args.chain_seed}
    if args.lag is not None:
        opts["lag"] = args.lag
    return make_world(args.world, seed=args.seed, **opts)


def _scene_ids(world, spec: str) -> np.ndarray:
    if spec in ("train", "test", "all"):
        return world.split(spec)
    try:
        ids = [int(x) for x in spec.split(",") if x.strip()]
    except ValueError:
        raise InputError(
            f"--scenes {spec!r}: expected train, test, all or ids like 0,5,17"
        ) from None
    if not ids:  # a file of no state, which no reader accepts (issue 36)
        raise InputError(f"--scenes {spec!r}: names no state; expected ids like 0,5,17")
    seen: set[int] = set()
    for i in ids:  # a state twice would be two rows under one id
        if i in seen:
            raise InputError(f"--scenes {spec!r}: state {i} is listed twice")
        seen.add(i)
    return world.check_ids(np.asarray(ids, dtype=np.int64))


def _check_outputs(args: argparse.Namespace) -> None:
    from prh.io import guard_outputs
    from prh.world.figure import figure_format

    outs = {}
    if args.action == "spectrum":
        if not 1 <= args.eigs <= MAX_EIGS or args.k >= args.eigs:
            raise InputError(f"--eigs {args.eigs}, --k {args.k}: expected k < eigs <= {MAX_EIGS}")
        if args.out is not None:
            from prh.features import check_feature_suffix

            check_feature_suffix(args.out)
            outs["--out"] = args.out
        if args.plot is not None:
            figure_format(args.plot)
            outs["--plot"] = args.plot
    else:
        if args.frames > MAX_FRAMES or not 16 <= args.size <= 512:
            raise InputError(f"--frames <= {MAX_FRAMES} and --size 16 to 512 expected")
        figure_format(args.out)
        outs["--out"] = args.out
    guard_outputs(outs)


def run(args: argparse.Namespace) -> int:
    _check_outputs(args)
    world = _world(args)
    return _spectrum(world, args) if args.action == "spectrum" else _trajectory(world, args)


def _spectrum(world, args: argparse.Namespace) -> int:
    from prh.theory.markov import theory_embedding

    ids = _scene_ids(world, args.scenes) if args.out is not None else None  # refused first
    if args.modality is not None:
        return _modality(world, args, ids)
    spec = world.spectrum(args.eigs)
    ev = spec.nontrivial()
    print(f"moving world: {world.num_scenes} states, lag D = {spec.lag}")
    print("eigenvalues of p Q^D (constant left out): " + " ".join(f"{v:.4f}" for v in ev))
    print(f"k = {args.k}: min separation {spec.separation(args.k):.4f}, gap {spec.gap(args.k):.4f}")
    if args.plot is not None:
        from prh.world.trajectory_figure import save_spectrum_plot

        save_spectrum_plot(ev, args.k, args.plot)
        print(f"wrote {args.plot}")
    if args.out is not None:
        from prh.features import save_features

        G = theory_embedding(spec, args.k)[ids]
        meta = {"world": args.world, "config": str(world.config.to_dict()), "k": str(args.k),
                "eigenvalues": " ".join(f"{v:.17g}" for v in ev[: args.k + 1])}  # fmt: skip
        save_features(args.out, G, [world.image_id(i) for i in ids], meta)
        print(f"wrote {args.out}: {len(ids)} states x {args.k}")
    return 0


def _modality(world, args: argparse.Namespace, ids: np.ndarray | None) -> int:
    """``--modality``: the modality's own spectrum, ceilings and predicted correlations."""
    from prh.world.observation import MODALITIES, modality_theory, predicted_cc

    m, k = args.modality, args.k
    th = modality_theory(world, m, k)
    ev = th.spectrum.eigenvalues
    print(f"{args.world} world, {m}: {th.O.shape[1]} contents an observation can show")
    print("eigenvalues of O^T p Q^D O (constant left out): " + " ".join(f"{v:.4f}" for v in ev))
    for other in ("g*", *(x for x in MODALITIES if x != m)):
        cc = predicted_cc(world, m, other, k)["observation"]
        print(f"predicted cc with {other}: mean {np.mean(cc):.3f} | " +
              " ".join(f"{v:.3f}" for v in cc))  # fmt: skip
    if ids is not None:  # --out given: its states were checked before any work
        _write_modality(world, args, th, ids)
    return 0


def _write_modality(world, args: argparse.Namespace, th, ids: np.ndarray) -> None:
    from prh.features import save_features
    from prh.world.observation import theory_of_captions, theory_of_observations

    if args.modality == "text":  # the caption prh train --eval-theory embeds for each state
        texts = [world.captions(int(i), 1, seed=args.seed + 1)[0] for i in ids]
        G = theory_of_captions(world, ids, texts, args.k)
    else:
        G = theory_of_observations(world, args.modality, ids, args.k)
    ev = th.spectrum.eigenvalues[: args.k + 1]
    meta = {
        "world": args.world, "config": str(world.config.to_dict()), "k": str(args.k),
        "modality": args.modality, "eigenvalues": " ".join(f"{v:.17g}" for v in ev),
    }  # fmt: skip
    save_features(args.out, G, [world.image_id(i) for i in ids], meta)
    print(f"wrote {args.out}: {len(ids)} states x {args.k} ({args.modality}'s own theory)")


def _trajectory(world, args: argparse.Namespace) -> int:
    from prh.world.trajectory_figure import save_trajectory_figure

    every = args.every or max(1, world.config.lag // 4)
    traj = world.trajectory(every * (args.frames - 1), seed=args.traj_seed)
    times = np.arange(args.frames) * every
    save_trajectory_figure(world, traj[times], times, args.out, size=args.size)
    print(f"wrote {args.out}: {args.frames} frames, {every} steps apart")
    return 0
