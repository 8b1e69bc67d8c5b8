"""The cave world: scenes of shaded objects, seen as images (and sketches) and told as captions.

See ``docs/world.md``. Public API: :class:`WorldConfig`, :class:`CaveWorld`, :class:`Scene`,
:data:`SHAPES`, :data:`COLOURS`, :data:`SIZES`.
"""

from prh.world.cave import CaveWorld, WorldConfig
from prh.world.scenes import COLOURS, SHAPES, SIZES, Relation, Scene, SceneObject

__all__ = [
    "COLOURS",
    "SHAPES",
    "SIZES",
    "CaveWorld",
    "Relation",
    "Scene",
    "SceneObject",
    "WorldConfig",
]
