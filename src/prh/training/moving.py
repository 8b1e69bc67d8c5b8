"""A text encoder against the moving world's theory: held-out CCA with ``g*`` (issue 21); a
run's own positive pairs, embedded by it (:func:`run_positive_pairs`, issue 22: what spectral
pair-free alignment, :mod:`prh.bridge.spectral`, takes from each modality).

One caption per state (wording seed ``seed``), encoded by a text JEPA; canonical directions are
fitted on the world's train states and scored on its test states
(:func:`prh.metrics.theory_cca`) against :meth:`~prh.world.moving.MovingWorld.theory_embedding`
at the world's ``gap_k``. Any layer is measurable (``layer``: an index into
:func:`prh.training.api.encode_texts`'s layers; ``-1``: the JEPA embedding).

Layer: glue over :mod:`prh.training.api` and :mod:`prh.metrics`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from prh.errors import InputError
from prh.metrics.theory_cca import TheoryCCA, theory_cca
from prh.world.ids import scene_id
from prh.world.registry import SpectralWorld, moves, world_lag

if TYPE_CHECKING:
    from prh.training.config import TrainConfig


def state_texts(world: Any, scene_ids: np.ndarray, seed: int = 1) -> list[str]:
    """One caption of each state, worded from ``seed``."""
    return [world.captions(int(i), 1, seed=seed)[0] for i in scene_ids]


def text_theory_cca(
    model: Any,
    tokenizer: Any,
    world: Any,
    *,
    max_len: int = 48,
    layer: int = -1,
    k: int | None = None,
    seed: int = 1,
) -> TheoryCCA:
    """Held-out theory CCA of a text model's ``layer`` on ``world`` (see the module).

    Parameters
    ----------
    model, tokenizer : TextEncoder, TextTokenizer
        The encoder (trained or not) and its tokenizer.
    world : MovingWorld
        A world with ``theory_embedding`` (one with a gap at ``k``).
    max_len, layer, k, seed : int
        Tokens per caption; which layer (``-1``: the JEPA embedding, trimmed to its width);
        the theory's width (default: the world's ``gap_k``); the captions' wording seed.
    """
    from prh.training.api import encode_texts

    if not isinstance(world, SpectralWorld):
        raise InputError(f"theory CCA: world {type(world).__name__} has no theory embedding")
    k = int(k or world.gap_k)
    parts = []
    for split in ("train", "test"):
        ids = world.split(split)
        feats = encode_texts(model, tokenizer, state_texts(world, ids, seed), max_len)
        x = feats[:, layer]
        if layer == -1 and hasattr(model, "cfg"):
            x = x[:, : model.cfg.embed_dim]  # the zero padding carries nothing
        parts += [x, world.theory_embedding(ids, k)]
    return theory_cca(*parts, n_boot=200)


@dataclass(frozen=True, eq=False)
class RunPairs:
    """A run's own positive pairs on its moving world, embedded by the run.

    Attributes
    ----------
    a, b : np.ndarray
        ``(n, L, D)`` float32: the run's features (every layer, as :meth:`Run.encode` gives
        them; the last layer is the JEPA embedding zero-padded to ``D``) of the first and the
        second half of each pair.
    states_a, states_b : np.ndarray
        ``(n,)`` int64: the two states of each pair (``s ~ m``, ``s' ~ Q^D(s, .)`` inside the
        run's training states).
    nuisance_a, nuisance_b : np.ndarray
        ``(n,)`` int64: each half's own wording seed (text) or render seed (image, sketch),
        drawn independently.
    modality : str
        ``text``, ``image`` or ``sketch``.
    lag : int
        ``D``, the world's lag.
    embed_dim : int
        ``E``, the JEPA embedding's width.
    """

    a: np.ndarray
    b: np.ndarray
    states_a: np.ndarray
    states_b: np.ndarray
    nuisance_a: np.ndarray
    nuisance_b: np.ndarray
    modality: str
    lag: int
    embed_dim: int

    def embedding(self) -> tuple[np.ndarray, np.ndarray]:
        """``(n, E)`` each: the JEPA embedding of both halves (what
        :func:`prh.bridge.spectral.spectral_align` takes as one side's pairs)."""
        return self.a[:, -1, : self.embed_dim], self.b[:, -1, : self.embed_dim]

    def save(self, prefix: str | Path) -> tuple[Path, Path]:
        """Write ``PREFIX_a.safetensors`` and ``PREFIX_b.safetensors`` (ids ``scene_<state>``),
        the two files ``prh match --method spectral --pairs-x`` reads."""
        from prh.features import save_features

        paths = (Path(f"{prefix}_a.safetensors"), Path(f"{prefix}_b.safetensors"))
        for path, x, s in ((paths[0], self.a, self.states_a), (paths[1], self.b, self.states_b)):
            save_features(path, x, ids=[scene_id(i) for i in s])
        return paths


class StillPairs:
    """A still world's good views as pairs: two observations of one training state (lag 0,
    the pair kernel ``diag(p)``), states uniform over ``scene_ids``."""

    def __init__(self, scene_ids: np.ndarray) -> None:
        self.scene_ids = np.asarray(scene_ids)

    def draw(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        first = rng.integers(0, len(self.scene_ids), n)
        return first, first


def lag_pairs_of(cfg: TrainConfig, still: bool = False) -> tuple[Any, Any]:
    """The world of a run's config and its :class:`~prh.views.lag.LagPairs` over the run's
    training states, or one line saying the world does not move (no lag, so no gap); with
    ``still``, a still world's :class:`StillPairs` instead of the refusal."""
    from prh.training.data import build_world
    from prh.views.lag import LagPairs

    world = build_world(cfg)
    if not moves(world):
        if still:
            return world, StillPairs(world.train_scenes(cfg.train_scenes))
        raise InputError(
            f"positive pairs: the run's world {cfg.world or 'cave'!r} does not move (no lag): "
            "its good views are two observations of one state, whose kernel has no spectral "
            "gap, so its own pairs cannot pin a rotation; train with --world moving"
        )
    return world, LagPairs(world, world.train_scenes(cfg.train_scenes))


def run_positive_pairs(
    run: Any,
    n: int,
    *,
    seed: int = 0,
    batch_size: int | None = None,
    device: str | None = None,
) -> RunPairs:
    """Draw ``n`` positive pairs of a moving-world run's training states at the world's lag and
    embed both halves with the run itself.

    A pair is two states ``D`` steps apart (:class:`~prh.views.lag.LagPairs` over the run's
    training states, the law its good views were drawn from), each observed under its own,
    independent nuisance: a caption with a fresh wording seed (text runs), or a render / sketch
    with a fresh render seed (image and sketch runs). No cross-modal pair is made. On a still
    world (the cave) a pair is the run's own good view there: two observations of one state
    (:class:`StillPairs`, lag 0), whose kernel ``diag(p)`` has every eigenvalue 1, so
    :func:`prh.bridge.spectral.spectral_align` reports that they cannot pin a rotation.

    Parameters
    ----------
    run : path or Run
        A run folder (``prh train --world moving`` or an image / sketch run on it) or a loaded
        :class:`~prh.training.lifecycle.Run`.
    n : int
        Pairs to draw (>= 1).
    seed : int
        Seeds the states and the nuisance (a pure function of the run and the seed).
    batch_size : int, optional
        Rows per forward pass (the run's default when None).
    device : str, optional
        Where a run folder is loaded (``cpu`` when None).

    Raises
    ------
    InputError
        ``n`` < 1: one line.
    CheckpointError
        Not a run folder.
    """
    from prh.training.api import load_run

    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise InputError(f"positive pairs: n must be a positive integer, got {n!r}")
    if isinstance(run, str | Path):
        run = load_run(run, device=device or "cpu")
    world, pairs = lag_pairs_of(run.config, still=True)
    rng = np.random.default_rng([int(seed), 0x9A125])
    first, second = pairs.draw(int(n), rng)
    states = (pairs.scene_ids[first].astype(np.int64), pairs.scene_ids[second].astype(np.int64))
    nuisance = (rng.integers(0, 2**31, n), rng.integers(0, 2**31, n))  # independent per half
    modality = run.modality
    feats = []
    for s, w in zip(states, nuisance):
        if modality == "text":
            items = [world.captions(int(i), 1, seed=int(v))[0] for i, v in zip(s, w)]
        else:
            draw = world.render if modality == "image" else world.sketch
            size = run.image.image_size
            items = [draw(int(i), int(v), size) for i, v in zip(s, w)]
        feats.append(run.encode(items, batch_size))
    return RunPairs(
        a=feats[0], b=feats[1], states_a=states[0], states_b=states[1],
        nuisance_a=nuisance[0].astype(np.int64), nuisance_b=nuisance[1].astype(np.int64),
        modality=modality, lag=world_lag(world),
        embed_dim=int(run.model_config.embed_dim),
    )  # fmt: skip
