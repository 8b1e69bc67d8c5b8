"""A third modality of the cave world: line sketches (outlines, no colour, no shading).

A sketch shares the shapes, sizes and positions of a scene with its images and captions but not
the colours: another rendering of the same state with its own nuisance (pose, jitter, line width,
paper tone). Polyhedra show their visible edges; curved solids their silhouette.

Layer: pure functions.
"""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

from prh.world.render import CELL_X, CELL_Y, SIZE_RADIUS, SS, mesh, object_rotation, visible_faces
from prh.world.scenes import SHAPES, Scene

POLYHEDRA = {"cube", "pyramid", "diamond", "star"}


def render_sketch(scene: Scene, rng: np.random.Generator, size: int = 64) -> np.ndarray:
    """Draw ``scene`` as a line sketch: ``(size, size, 3)`` uint8, dark lines on light paper."""
    if not 16 <= size <= 1024:
        raise ValueError(f"size must be in 16..1024 pixels, got {size}")
    big = size * SS
    paper = int(rng.uniform(225, 255))
    ink = int(rng.uniform(0, 60))
    width = max(1, round(rng.uniform(0.8, 1.6) * big / 64))
    pitch = rng.uniform(0.25, 0.6)
    canvas = Image.new("L", (big, big), paper)
    draw = ImageDraw.Draw(canvas)
    placed = []
    for obj in scene.objects:
        radius = SIZE_RADIUS[obj.size] * rng.uniform(0.92, 1.08) * big
        cx = (CELL_X[obj.col] + rng.uniform(-0.04, 0.04)) * big
        cy = (CELL_Y[obj.row] + rng.uniform(-0.035, 0.035)) * big
        placed.append((cy, cx, radius, obj, rng.uniform(0, 2 * np.pi)))
    placed.sort(key=lambda p: (p[0], p[1]))
    for cy, cx, radius, obj, yaw in placed:
        shape = SHAPES[obj.shape]
        mask = Image.new("L", (big, big), 0)
        md = ImageDraw.Draw(mask)
        if shape == "sphere":
            r = radius * 0.85
            md.ellipse([cx - r, cy - r, cx + r, cy + r], fill=255)
            polys = []
        else:
            polys, _ = visible_faces(
                mesh(shape), object_rotation(shape, yaw, pitch, rng), (cx, cy), radius
            )
            for xy in polys:
                md.polygon(xy, fill=255, outline=255)
        canvas.paste(paper, mask=mask)  # hide what this object occludes
        edge = mask.filter(ImageFilter.MaxFilter(2 * width + 1))
        outline = np.asarray(edge, dtype=np.int16) - np.asarray(mask, dtype=np.int16)
        canvas.paste(ink, mask=Image.fromarray((outline > 0).astype(np.uint8) * 255))
        if shape in POLYHEDRA:
            for xy in polys:
                draw.line([*xy, xy[0], xy[1]], fill=ink, width=width)
    out = np.asarray(canvas.resize((size, size), Image.Resampling.BOX), dtype=np.float32)
    out = out + rng.normal(0.0, rng.uniform(0.0, 4.0), out.shape)
    out = np.clip(out + 0.5, 0, 255).astype(np.uint8)
    return np.repeat(out[..., None], 3, axis=2)
