"""Worlds by name: one place where ``--world NAME`` and every library call build a world.

A world is anything with the :class:`World` interface: a finite set of scenes (the shared latent
states of every modality), a train/test split, and three observations of a scene (a render, a
sketch, captions). ``make_world("cave", seed=0)`` builds :class:`~prh.world.cave.CaveWorld`;
another world registers a factory with :func:`register_world` and is then reachable by name from
every command.

Worlds are deterministic functions of their options, so :func:`make_world` returns one shared
instance per ``(name, options)`` (the cave world draws its 20,000 scenes once per process).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from prh.errors import InputError
from prh.world.cave import CaveWorld, WorldConfig


@runtime_checkable
class World(Protocol):
    """What prh needs of a world (:class:`~prh.world.cave.CaveWorld` is the reference)."""

    config: Any

    @property
    def num_scenes(self) -> int: ...

    def split(self, name: str) -> np.ndarray:
        """Scene indices of ``"train"``, ``"test"`` or ``"all"``."""
        ...

    def train_scenes(self, n: int = 0) -> np.ndarray:
        """The first ``n`` training scenes (0: all); ``n`` beyond the split is refused."""
        ...

    def scene(self, i: int) -> Any:
        """Scene ``i``'s latent state."""
        ...

    def render(self, i: int, nuisance_seed: int = 0, size: int | None = None) -> np.ndarray:
        """An ``(H, W, 3)`` uint8 image of scene ``i`` under nuisance ``nuisance_seed``."""
        ...

    def sketch(self, i: int, nuisance_seed: int = 0, size: int | None = None) -> np.ndarray:
        """An ``(H, W, 3)`` uint8 line drawing of scene ``i``."""
        ...

    def captions(self, i: int, n: int = 5, seed: int = 0) -> list[str]:
        """``n`` true captions of scene ``i`` (wording drawn from ``seed``)."""
        ...

    def corpus(self, scene_ids: Any = None, captions_per_scene: int = 5, seed: int = 0) -> Any:
        """A :class:`prh.data.CaptionCorpus` of the given scenes."""
        ...


@runtime_checkable
class SpectralWorld(Protocol):
    """A world whose good views have a pair kernel with a gap (the moving cave): what the theory
    steps need beyond :class:`World`. ``isinstance(world, SpectralWorld)`` is the one check."""

    gap_k: int

    @property
    def lag(self) -> int:
        """``D``: the steps between a good view's two frames (0: two views of one state)."""
        ...

    @property
    def chain(self) -> Any:
        """The reversible chain ``Q`` with stationary law ``chain.p`` (``(N,)``)."""
        ...

    def check_ids(self, scene_ids: Any) -> np.ndarray:
        """``scene_ids`` as int64 state indices, each in range (one line otherwise)."""
        ...

    def spectrum(self, m: int = 12, lag: int | None = None) -> Any:
        """The constant and ``m`` largest other eigenpairs of the pair kernel."""
        ...

    def pair_kernel(self, lag: int | None = None) -> np.ndarray:
        """The dense ``(N, N)`` pair law on states."""
        ...

    def theory_embedding(self, scene_ids: Any, k: int = 8) -> np.ndarray:
        """``g*`` of the given states, ``(n, k)``."""
        ...


def has_theory(world: Any) -> bool:
    """Whether ``world`` has a spectral gap to compare encoders with (a :class:`SpectralWorld`
    whose ``gap_k`` is set)."""
    return isinstance(world, SpectralWorld) and world.gap_k is not None


def gap_k(world: Any) -> int | None:
    """The width ``k`` of ``world``'s gap (the theorem's JEPA width), ``None`` without one."""
    return int(world.gap_k) if has_theory(world) else None


def world_lag(world: Any) -> int:
    """``D`` of ``world``'s good views: its lag for a :class:`SpectralWorld`, 0 for a still
    world (two observations of one state)."""
    return int(world.lag) if isinstance(world, SpectralWorld) else 0


def moves(world: Any) -> bool:
    """Whether ``world``'s good views are two different states (a :class:`SpectralWorld` at a
    lag above 0), so its own pairs have a kernel with a gap."""
    return world_lag(world) > 0


# Compatibility: the still cave was the only world before worlds had names, so a config whose
# world is unset means it, and the names it gave to files, caches and cells (which carry no
# world) stay its names. Every such rule reads these two functions.
DEFAULT_WORLD = "cave"
WORLD_TITLES = {"cave": "cave", "moving": "moving cave", "moving-literal": "moving cave"}


def is_default_world(name: str | None) -> bool:
    """Whether the world named ``name`` (``None``: unset) is the default, still cave, whose
    file names, cache keys and cell ids omit the world (as written before there were others)."""
    return name is None or name == DEFAULT_WORLD


def without_default_world(options: dict[str, Any], key: str = "world") -> dict[str, Any]:
    """``options`` without ``key`` when it names the default world: a cell's or cache's options
    as written before the world became an option, so their ids stay those of older sweeps."""
    if key in options and is_default_world(options[key]):
        return {k: v for k, v in options.items() if k != key}
    return options


def world_tag(name: str | None, sep: str = "-") -> str:
    """What a file name or key adds for the world ``name``: ``""`` for the default world (its
    names as before), ``name + sep`` for any other."""
    return "" if is_default_world(name) else f"{name}{sep}"


def world_title(name: str | None) -> str:
    """A world's name for a reader (``moving cave``); ``None`` is the default world."""
    name = DEFAULT_WORLD if name is None else name
    return WORLD_TITLES.get(name, name)


def _cave(seed: int = 0, **options: Any) -> CaveWorld:
    try:
        return CaveWorld(WorldConfig(seed=seed, **options))
    except TypeError as e:  # an option the cave world does not have
        raise InputError(f"world cave: {e}") from None


def _moving(seed: int = 0, **options: Any) -> World:
    from prh.world.moving import MovingWorld, MovingWorldConfig

    try:
        return MovingWorld(MovingWorldConfig(seed=seed, **options))
    except TypeError as e:  # an option the moving world does not have
        raise InputError(f"world moving: {e}") from None


def _moving_literal(seed: int = 0, **options: Any) -> World:
    """The moving cave with literal captions (every factor named): text identifies the state."""
    if options.get("caption_style", "literal") != "literal":
        raise InputError("world moving-literal: its captions are literal (use world moving)")
    return _moving(seed=seed, **{**options, "caption_style": "literal"})


def _corpus(seed: int = 0, spec: str | None = None, **options: Any) -> World:
    """A caption corpus with its photos (:mod:`prh.world.corpus`): ``spec`` is its path."""
    from prh.world.corpus import CorpusWorld, CorpusWorldConfig

    if spec is None or options:
        raise InputError("world corpus: needs spec=PATH (a caption corpus with its images) and "
                         f"nothing else, got {sorted(options) or 'no spec'}")  # fmt: skip
    return CorpusWorld(CorpusWorldConfig(spec=str(spec), seed=seed))


WORLDS: dict[str, Callable[..., World]] = {
    "cave": _cave,
    "moving": _moving,
    "moving-literal": _moving_literal,
    "corpus": _corpus,
}


# What a run or the demo may ask of a world beyond the contract, by feature: ``themes`` (a
# caption theme per scene), ``doc_style`` (captions regenerated in a document style),
# ``narration`` (documents that tell a trajectory) and ``factors`` (a scene is a cave scene of
# objects with a shape and a colour: the demo's zero-shot and pair-free classes) and ``spec`` (the
# world is read from files at a path the user gives: ``make_world(name, spec=PATH)``). A config asks
# :func:`world_offers`, never a world's name.
WORLD_FEATURES: dict[str, frozenset[str]] = {
    "cave": frozenset({"themes", "doc_style", "factors"}),
    "moving": frozenset({"narration", "factors"}),
    "moving-literal": frozenset({"factors"}),
    "corpus": frozenset({"spec"}),
}


# Worlds whose scenes are another world's states rendered alike, told apart only by their
# captions: an image run of one and a text run of the other see the same scenes.
SAME_SCENES: dict[str, str] = {"moving-literal": "moving"}


def scenes_of(name: str | None) -> str:
    """The world whose states and renders world ``name`` (``None``: the default) shows: itself,
    or for a caption twin (:data:`SAME_SCENES`) the world it re-captions."""
    name = DEFAULT_WORLD if name is None else name
    return SAME_SCENES.get(name, name)


def world_offers(name: str | None, feature: str) -> bool:
    """Whether world ``name`` (``None``: the default world) offers ``feature`` (a key of
    :data:`WORLD_FEATURES`' sets)."""
    return feature in WORLD_FEATURES.get(DEFAULT_WORLD if name is None else name, frozenset())


def register_world(
    name: str, factory: Callable[..., World], features: frozenset[str] = frozenset()
) -> None:
    """Make ``factory(seed=..., **options)`` reachable as world ``name``, offering ``features``
    (see :data:`WORLD_FEATURES`)."""
    if not name or not name.replace("-", "").isalnum():
        raise InputError(f"world name {name!r}: expected letters, digits and '-'")
    WORLDS[name] = factory
    WORLD_FEATURES[name] = frozenset(features)
    _cached.cache_clear()


def world_names() -> tuple[str, ...]:
    """The registered worlds, sorted (the choices of ``--world``)."""
    return tuple(sorted(WORLDS))


def make_world(name: str = "cave", seed: int = 0, **options: Any) -> World:
    """World ``name`` with ``seed`` and ``options`` (the world's config fields).

    Raises
    ------
    InputError
        An unknown world or option.
    """
    if name not in WORLDS:
        raise InputError(f"unknown world {name!r}; expected one of {', '.join(world_names())}")
    return _cached(name, int(seed), tuple(sorted(options.items())))


@functools.lru_cache(maxsize=8)
def _cached(name: str, seed: int, options: tuple[tuple[str, Any], ...]) -> World:
    return WORLDS[name](seed=seed, **dict(options))


def split_sample(world: Any, split: str, n: int, from_end: bool = False) -> list[int]:
    """``n`` scenes of ``world``'s ``split`` that are a fair sample of it.

    A world whose scenes are drawn at random (the cave) gives the first ``n`` (or, with
    ``from_end``, the last ``n``: the cave's bridge scenes lie beyond the training scenes its
    encoders saw). A world whose states are laid out in order (``ordered_states``: the moving
    cave's index is shape-major, so its first 270 states are all one shape) gives ``n`` evenly
    spaced through the split, first and last included, so that every factor value is in it.

    Raises
    ------
    InputError
        ``n`` outside ``1..len(split)``.
    """
    ids = np.asarray(world.split(split))
    if not 1 <= n <= len(ids):
        raise InputError(f"{n} {split} scenes asked; the world's {split} split has {len(ids)}")
    if getattr(world, "ordered_states", False):
        pick = np.unique(np.linspace(0, len(ids) - 1, n).round().astype(np.int64))
        return [int(i) for i in ids[pick]]
    return [int(i) for i in (ids[-n:] if from_end else ids[:n])]
