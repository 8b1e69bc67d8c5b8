"""``prh world spectrum`` and ``prh world trajectory`` as one library call on the moving world:
:func:`moving_world_command` prints the top eigenvalues of its pair kernel ``p Q^D`` (or of one
modality's own theory, with its ceiling and predicted correlations), plots them, writes a theory
embedding as a feature file, or draws one run of the chain.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from prh.errors import InputError

MAX_EIGS = 200
MAX_FRAMES = 24


@dataclass(frozen=True)
class MovingWorldRequest:
    """One ``prh world spectrum`` or ``trajectory``, a field per flag (a field of the other
    action keeps its default)."""

    action: str
    out: str | None = None
    seed: int = 0
    lag: int | None = None
    chain_seed: int = 0
    world: str = "moving"
    k: int = 8
    eigs: int = 16
    scenes: str = "test"
    plot: str | None = None
    modality: str | None = None
    frames: int = 8
    every: int | None = None
    traj_seed: int = 0
    size: int = 128


def _world(req: MovingWorldRequest):
    from prh.world import make_world

    opts = {"chain_seed": req.chain_seed}
    if req.lag is not None:
        opts["lag"] = req.lag
    return make_world(req.world, seed=req.seed, **opts)


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


def _check_outputs(req: MovingWorldRequest) -> None:
    from prh.io import guard_outputs
    from prh.world.figure import figure_format

    outs = {}
    if req.action == "spectrum":
        if not 1 <= req.eigs <= MAX_EIGS or req.k >= req.eigs:
            raise InputError(f"--eigs {req.eigs}, --k {req.k}: expected k < eigs <= {MAX_EIGS}")
        if req.out is not None:
            from prh.features import check_feature_suffix

            check_feature_suffix(req.out)
            outs["--out"] = req.out
        if req.plot is not None:
            figure_format(req.plot)
            outs["--plot"] = req.plot
    else:
        if req.frames > MAX_FRAMES or not 16 <= req.size <= 512:
            raise InputError(f"--frames <= {MAX_FRAMES} and --size 16 to 512 expected")
        figure_format(req.out)
        outs["--out"] = req.out
    guard_outputs(outs)


def moving_world_command(req: MovingWorldRequest) -> None:
    """Print the moving world's ``spectrum`` (and plot it, write a theory embedding) or draw a
    ``trajectory``; the outputs checked before the world is built."""
    _check_outputs(req)
    world = _world(req)
    if req.action == "spectrum":
        _spectrum(world, req)
    else:
        _trajectory(world, req)


def _spectrum(world, req: MovingWorldRequest) -> None:
    from prh.theory.markov import theory_embedding

    ids = _scene_ids(world, req.scenes) if req.out is not None else None  # refused first
    if req.modality is not None:
        _modality(world, req, ids)
        return
    spec = world.spectrum(req.eigs)
    ev = spec.nontrivial()
    print(f"moving world: {world.num_scenes} states, lag D = {spec.lag}")
    print("eigenvalues of p Q^D (constant left out): " + " ".join(f"{v:.4f}" for v in ev))
    print(f"k = {req.k}: min separation {spec.separation(req.k):.4f}, gap {spec.gap(req.k):.4f}")
    if req.plot is not None:
        from prh.world.trajectory_figure import save_spectrum_plot

        save_spectrum_plot(ev, req.k, req.plot)
        print(f"wrote {req.plot}")
    if req.out is not None:
        from prh.features import save_features

        G = theory_embedding(spec, req.k)[ids]
        meta = {"world": req.world, "config": str(world.config.to_dict()), "k": str(req.k),
                "eigenvalues": " ".join(f"{v:.17g}" for v in ev[: req.k + 1])}  # fmt: skip
        save_features(req.out, G, [world.image_id(i) for i in ids], meta)
        print(f"wrote {req.out}: {len(ids)} states x {req.k}")


def _modality(world, req: MovingWorldRequest, ids: np.ndarray | None) -> None:
    """``--modality``: the modality's own spectrum, ceilings and predicted correlations."""
    from prh.world.observation import MODALITIES, modality_theory, predicted_cc

    m, k = req.modality, req.k
    th = modality_theory(world, m, k)
    ev = th.spectrum.eigenvalues
    print(f"{req.world} world, {m}: {th.O.shape[1]} contents an observation can show")
    print("eigenvalues of O^T p Q^D O (constant left out): " + " ".join(f"{v:.4f}" for v in ev))
    for other in ("g*", *(x for x in MODALITIES if x != m)):
        cc = predicted_cc(world, m, other, k)["observation"]
        print(f"predicted cc with {other}: mean {np.mean(cc):.3f} | " +
              " ".join(f"{v:.3f}" for v in cc))  # fmt: skip
    if ids is not None:  # --out given: its states were checked before any work
        _write_modality(world, req, th, ids)


def _write_modality(world, req: MovingWorldRequest, th, ids: np.ndarray) -> None:
    from prh.features import save_features
    from prh.world.observation import theory_of_captions, theory_of_observations

    if req.modality == "text":  # the caption prh train --eval-theory embeds for each state
        texts = [world.captions(int(i), 1, seed=req.seed + 1)[0] for i in ids]
        G = theory_of_captions(world, ids, texts, req.k)
    else:
        G = theory_of_observations(world, req.modality, ids, req.k)
    ev = th.spectrum.eigenvalues[: req.k + 1]
    meta = {
        "world": req.world, "config": str(world.config.to_dict()), "k": str(req.k),
        "modality": req.modality, "eigenvalues": " ".join(f"{v:.17g}" for v in ev),
    }  # fmt: skip
    save_features(req.out, G, [world.image_id(i) for i in ids], meta)
    print(f"wrote {req.out}: {len(ids)} states x {req.k} ({req.modality}'s own theory)")


def _trajectory(world, req: MovingWorldRequest) -> None:
    from prh.world.trajectory_figure import save_trajectory_figure

    every = req.every or max(1, world.config.lag // 4)
    traj = world.trajectory(every * (req.frames - 1), seed=req.traj_seed)
    times = np.arange(req.frames) * every
    save_trajectory_figure(world, traj[times], times, req.out, size=req.size)
    print(f"wrote {req.out}: {req.frames} frames, {every} steps apart")
