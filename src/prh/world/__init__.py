"""The cave world: scenes of shaded objects, seen as images (and sketches) and told as captions.

See ``docs/world.md``. Public API: :func:`make_world` (a world by name and seed, the one way
prh builds one), :class:`World` (what a world provides), :class:`SpectralWorld` (what a world
with a pair kernel and a gap adds; ``isinstance`` is the check, :func:`has_theory`,
:func:`gap_k`, :func:`world_lag`, :func:`moves` read it), the default world's naming rule
(:func:`is_default_world`, :func:`world_tag`, :func:`without_default_world`,
:func:`world_title`), :func:`register_world`, :class:`WorldConfig`, :class:`CaveWorld`,
:class:`Scene`, :data:`SHAPES`, :data:`COLOURS`, :data:`SIZES`.
"""

from prh.world.cave import CaveWorld, WorldConfig
from prh.world.registry import (
    SpectralWorld,
    World,
    gap_k,
    has_theory,
    is_default_world,
    make_world,
    moves,
    register_world,
    without_default_world,
    world_lag,
    world_names,
    world_offers,
    world_tag,
    world_title,
)
from prh.world.scenes import COLOURS, SHAPES, SIZES, Relation, Scene, SceneObject

__all__ = [
    "COLOURS",
    "SHAPES",
    "SIZES",
    "CaveWorld",
    "Relation",
    "Scene",
    "SceneObject",
    "SpectralWorld",
    "World",
    "WorldConfig",
    "gap_k",
    "has_theory",
    "is_default_world",
    "make_world",
    "moves",
    "register_world",
    "without_default_world",
    "world_lag",
    "world_names",
    "world_offers",
    "world_tag",
    "world_title",
]
