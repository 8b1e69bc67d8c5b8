"""Renderer of the cave world: shaded 3-D-looking objects on textured backgrounds (numpy + PIL).

Every object is a small polygon mesh (cube, cylinder, cone, pyramid, torus, bevelled star,
octahedron "diamond") or an analytic sphere, rotated by a yaw and a camera elevation, projected
orthographically, back-face culled, sorted back to front (painter's algorithm) and shaded with
Lambert diffuse + Blinn-Phong specular light:

    c = albedo * (ambient + diffuse * max(0, n . l)) + specular * max(0, n . h) ** shininess

Everything is drawn at twice the output resolution and box-filtered down (anti-aliasing).

Nuisance (all drawn from one generator seeded by ``(world seed, scene, nuisance seed)``): light
direction and strength, camera elevation, object yaw, position jitter inside the cell, scale
jitter, albedo jitter, background colours, texture (value noise, checker floor, stripes), soft
shadows, pixel noise. The content (shape, colour, size class, cell) is fixed by the scene.

Layer: pure functions (arrays in, arrays out).
"""

from __future__ import annotations

import colorsys
from dataclasses import dataclass
from functools import cache, cached_property

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

from prh.world.scenes import COLOURS, SHAPES, Scene

ALBEDO: dict[str, tuple[float, float, float]] = {
    "red": (0.86, 0.10, 0.09),
    "orange": (0.97, 0.50, 0.06),
    "yellow": (0.96, 0.86, 0.10),
    "green": (0.13, 0.66, 0.18),
    "cyan": (0.08, 0.78, 0.82),
    "blue": (0.10, 0.24, 0.88),
    "purple": (0.50, 0.16, 0.72),
    "pink": (0.98, 0.48, 0.72),
    "brown": (0.52, 0.30, 0.12),
    "gray": (0.58, 0.58, 0.58),
}
SIZE_RADIUS = (0.1, 0.14, 0.18)  # object radius as a fraction of the image side
CELL_X = (0.21, 0.5, 0.79)
CELL_Y = (0.27, 0.52, 0.77)
SS = 2  # supersampling factor


@dataclass(frozen=True, eq=False)
class Mesh:
    """A polygon mesh: ``vertices`` (V, 3), ``faces`` (list of vertex index tuples) and, per
    face, a reference point inside the solid used to orient normals outwards ``(F, 3)``."""

    vertices: np.ndarray
    faces: tuple[tuple[int, ...], ...]
    inner: np.ndarray

    @cached_property
    def corners(self) -> np.ndarray:
        """(F, 3) vertex indices of three corners a third of the way apart on each face."""
        return np.array([(f[0], f[len(f) // 3], f[2 * len(f) // 3]) for f in self.faces])

    @cached_property
    def padded(self) -> tuple[np.ndarray, np.ndarray]:
        """(F, K) vertex indices padded with the face's first vertex, and (F, K) centroid weights
        (``1 / len(face)`` on real corners, 0 on padding)."""
        K = max(len(f) for f in self.faces)
        idx = np.array([list(f) + [f[0]] * (K - len(f)) for f in self.faces])
        w = np.array([[1.0 / len(f)] * len(f) + [0.0] * (K - len(f)) for f in self.faces])
        return idx, w


def _prism(profile: np.ndarray, y0: float, y1: float) -> Mesh:
    n = len(profile)
    bottom = np.c_[profile[:, 0], np.full(n, y0), profile[:, 1]]
    top = np.c_[profile[:, 0], np.full(n, y1), profile[:, 1]]
    v = np.vstack([bottom, top])
    faces = [(i, (i + 1) % n, n + (i + 1) % n, n + i) for i in range(n)]
    faces += [tuple(range(n)), tuple(range(n, 2 * n))]
    return Mesh(v, tuple(faces), np.zeros((len(faces), 3)))


def _circle(n: int, r: float) -> np.ndarray:
    t = np.linspace(0, 2 * np.pi, n, endpoint=False)
    return np.c_[r * np.cos(t), r * np.sin(t)]


@cache
def mesh(shape: str) -> Mesh:
    """The unit mesh of ``shape`` (fits in the unit ball, resting on ``y = -1``)."""
    if shape == "cube":
        return _prism(np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]) * 0.72, -0.72, 0.72)
    if shape == "cylinder":
        return _prism(_circle(40, 0.72), -0.85, 0.85)
    if shape == "cone":
        n = 40
        base = np.c_[_circle(n, 0.9)[:, 0], np.full(n, -0.8), _circle(n, 0.9)[:, 1]]
        v = np.vstack([base, [[0.0, 1.0, 0.0]]])
        faces = [(i, n, (i + 1) % n) for i in range(n)] + [tuple(range(n))]
        return Mesh(v, tuple(faces), np.tile([0.0, -0.4, 0.0], (len(faces), 1)))
    if shape == "pyramid":
        sq = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]) * 0.85
        v = np.vstack([np.c_[sq[:, 0], np.full(4, -0.8), sq[:, 1]], [[0.0, 0.95, 0.0]]])
        faces = [(i, 4, (i + 1) % 4) for i in range(4)] + [(0, 1, 2, 3)]
        return Mesh(v, tuple(faces), np.tile([0.0, -0.4, 0.0], (len(faces), 1)))
    if shape == "diamond":
        v = np.array(
            [[0.8, 0, 0], [-0.8, 0, 0], [0, 1.0, 0], [0, -1.0, 0], [0, 0, 0.8], [0, 0, -0.8]]
        )
        faces = [(a, b, c) for a in (0, 1) for b in (2, 3) for c in (4, 5)]
        return Mesh(v, tuple(faces), np.zeros((len(faces), 3)))
    if shape == "star":
        k = np.arange(10)
        r = np.where(k % 2 == 0, 1.0, 0.45)
        t = np.pi / 2 + k * np.pi / 5
        rim = np.c_[r * np.cos(t), r * np.sin(t), np.zeros(10)]
        v = np.vstack([rim, [[0, 0, 0.38], [0, 0, -0.38]]])
        faces = [(i, (i + 1) % 10, 10) for i in range(10)]
        faces += [((i + 1) % 10, i, 11) for i in range(10)]
        return Mesh(v, tuple(faces), np.zeros((len(faces), 3)))
    if shape == "torus":
        nu, nv, big, small = 30, 12, 0.68, 0.3
        u = np.linspace(0, 2 * np.pi, nu, endpoint=False)
        w = np.linspace(0, 2 * np.pi, nv, endpoint=False)
        uu, ww = np.meshgrid(u, w, indexing="ij")
        x = (big + small * np.cos(ww)) * np.cos(uu)
        z = (big + small * np.cos(ww)) * np.sin(uu)
        y = small * np.sin(ww)
        v = np.c_[x.ravel(), y.ravel(), z.ravel()]
        faces, inner = [], []
        for i in range(nu):
            for j in range(nv):
                a, b = i * nv + j, ((i + 1) % nu) * nv + j
                c, d = ((i + 1) % nu) * nv + (j + 1) % nv, i * nv + (j + 1) % nv
                faces.append((a, b, c, d))
                um = u[i] + np.pi / nu
                inner.append([big * np.cos(um), 0.0, big * np.sin(um)])
        return Mesh(v, tuple(faces), np.array(inner))
    raise ValueError(f"no mesh for shape {shape!r}")


def _rotation(yaw: float, pitch: float, roll: float = 0.0) -> np.ndarray:
    cy, sy = np.cos(yaw), np.sin(yaw)
    cp, sp = np.cos(pitch), np.sin(pitch)
    cr, sr = np.cos(roll), np.sin(roll)
    ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rx = np.array([[1, 0, 0], [0, cp, -sp], [0, sp, cp]])  # tilts the top towards the camera
    rz = np.array([[cr, -sr, 0], [sr, cr, 0], [0, 0, 1]])
    return rx @ rz @ ry


@dataclass(frozen=True)
class Light:
    """Directional light: unit ``direction`` (towards the light), strengths, specular shininess."""

    direction: np.ndarray
    ambient: float
    diffuse: float
    specular: float
    shininess: float


def _shade(albedo: np.ndarray, normals: np.ndarray, light: Light) -> np.ndarray:
    """Blinn-Phong shading of unit ``normals`` (..., 3) -> RGB (..., 3) in [0, 1]."""
    ndl = np.clip(normals @ light.direction, 0.0, None)[..., None]
    half = light.direction + np.array([0.0, 0.0, 1.0])
    half = half / np.linalg.norm(half)
    spec = np.clip(normals @ half, 0.0, None)[..., None] ** light.shininess
    c = albedo * (light.ambient + light.diffuse * ndl) + light.specular * spec
    return np.clip(c, 0.0, 1.0)


def visible_faces(
    m: Mesh, rot: np.ndarray, centre: tuple[float, float], radius: float
) -> tuple[list[list[float]], np.ndarray]:
    """Project ``m`` and keep its front faces, back to front.

    Returns the screen polygons as flat ``[x0, y0, x1, y1, ...]`` lists (x right, y down) and
    their unit normals ``(F, 3)``.
    """
    v = m.vertices @ rot.T  # (V, 3) camera coordinates, z towards the viewer
    inner = m.inner @ rot.T  # (F, 3)
    a, b, c = m.corners.T  # (F,) each: three corners spanning the face plane
    n = np.cross(v[b] - v[a], v[c] - v[a])  # (F, 3)
    n /= np.linalg.norm(n, axis=1, keepdims=True) + 1e-12
    idx, w = m.padded
    centroid = np.einsum("fkd,fk->fd", v[idx], w)  # (F, 3)
    flip = np.einsum("fd,fd->f", n, centroid - inner) < 0
    n[flip] *= -1
    front = np.flatnonzero(n[:, 2] > 1e-6)
    front = front[np.argsort(centroid[front, 2], kind="stable")]
    cx, cy = centre
    xy = np.c_[cx + radius * v[:, 0], cy - radius * v[:, 1]]  # (V, 2)
    # Padding repeats a face's first corner: a zero-length edge, harmless to the fill.
    polys = xy[idx[front]].reshape(len(front), -1).tolist()
    return polys, n[front]


def _draw_mesh(
    draw: ImageDraw.ImageDraw,
    m: Mesh,
    rot: np.ndarray,
    centre: tuple[float, float],
    radius: float,
    albedo: np.ndarray,
    light: Light,
) -> None:
    polys, normals = visible_faces(m, rot, centre, radius)
    if not polys:
        return
    colours = (_shade(albedo, normals, light) * 255 + 0.5).astype(np.int64).tolist()  # (F, 3)
    for xy, c in zip(polys, colours):
        rgb = tuple(c)
        draw.polygon(xy, fill=rgb, outline=rgb)  # the outline closes seams between faces


def object_rotation(shape: str, yaw: float, pitch: float, rng: np.random.Generator) -> np.ndarray:
    """The pose of one object: stars face the camera, rings tilt to show their hole."""
    if shape == "star":
        return _rotation(rng.uniform(-0.6, 0.6), rng.uniform(-0.3, 0.3), rng.uniform(-0.3, 0.3))
    if shape == "torus":
        return _rotation(yaw, pitch + rng.uniform(0.5, 0.9))
    return _rotation(yaw, pitch)


def _sphere_patch(
    radius: float, albedo: np.ndarray, light: Light
) -> tuple[np.ndarray, np.ndarray, int]:
    """RGB patch (h, w, 3) uint8, alpha (h, w) uint8 and its half-width for a shaded sphere."""
    half = int(np.ceil(radius)) + 1
    g = (np.arange(2 * half) - half + 0.5) / radius
    x, y = np.meshgrid(g, -g)
    r2 = x**2 + y**2
    z = np.sqrt(np.clip(1.0 - r2, 0.0, None))
    normals = np.stack([x, y, z], axis=-1)  # (h, w, 3)
    rgb = _shade(albedo, normals, light)
    alpha = np.clip((1.0 - np.sqrt(r2)) * radius + 0.5, 0.0, 1.0)  # one-pixel soft edge
    return (rgb * 255 + 0.5).astype(np.uint8), (alpha * 255 + 0.5).astype(np.uint8), half


def _value_noise(rng: np.random.Generator, size: int, cells: int) -> np.ndarray:
    """Smooth noise in [0, 1], shape (size, size): a random grid upsampled bicubically."""
    grid = (rng.random((cells, cells)) * 255).astype(np.uint8)
    img = Image.fromarray(grid).resize((size, size), Image.Resampling.BICUBIC)
    return np.asarray(img, dtype=np.float32) / 255.0


def _background(rng: np.random.Generator, size: int) -> np.ndarray:
    """A textured background (size, size, 3) float32 in [0, 1]: wall and floor, noise, pattern."""
    hue = rng.random()
    wall = np.array(colorsys.hsv_to_rgb(hue, rng.uniform(0.0, 0.12), rng.uniform(0.55, 0.92)))
    hue2 = (hue + rng.uniform(-0.15, 0.15)) % 1.0
    floor = np.array(colorsys.hsv_to_rgb(hue2, rng.uniform(0.0, 0.15), rng.uniform(0.35, 0.8)))
    yy = (np.arange(size, dtype=np.float32) + 0.5) / size
    horizon = rng.uniform(0.3, 0.5)
    t = 1.0 / (1.0 + np.exp(-(yy - horizon) / rng.uniform(0.01, 0.06)))  # soft horizon
    shade = 1.0 - rng.uniform(0.0, 0.25) * yy  # a gentle vertical gradient
    col = ((1 - t)[:, None] * wall + t[:, None] * floor) * shade[:, None]  # (size, 3)
    bg = np.repeat(col[:, None, :], size, axis=1).astype(np.float32)  # (size, size, 3)
    noise = _value_noise(rng, size, int(rng.integers(4, 16)))
    fine = _value_noise(rng, size, int(rng.integers(24, 48)))
    bg *= (1.0 + rng.uniform(0.05, 0.18) * (noise - 0.5) + rng.uniform(0.0, 0.1) * (fine - 0.5))[
        ..., None
    ]
    pattern = rng.integers(0, 3)
    if pattern:
        xx = (np.arange(size, dtype=np.float32) + 0.5) / size
        period = rng.uniform(0.06, 0.2)
        if pattern == 1:  # checker floor below the horizon
            depth = np.clip(yy - horizon, 1e-3, None)[:, None]
            u = (xx[None, :] - 0.5) / depth * 0.15 / period
            v = 0.05 / depth / period
            chk = ((np.floor(u) + np.floor(v)) % 2).astype(np.float32) - 0.5
            bg *= (1.0 + rng.uniform(0.04, 0.12) * chk * t[:, None])[..., None]
        else:  # stripes on the wall
            ang = rng.uniform(0, np.pi)
            s = np.sin(2 * np.pi * (np.cos(ang) * xx[None, :] + np.sin(ang) * yy[:, None]) / period)
            bg *= (1.0 + rng.uniform(0.03, 0.08) * s * (1 - t)[:, None])[..., None]
    return np.clip(bg, 0.0, 1.0)


def _light(rng: np.random.Generator) -> Light:
    d = np.array([rng.uniform(-0.8, 0.8), rng.uniform(0.35, 1.0), rng.uniform(0.45, 1.0)])
    return Light(
        direction=d / np.linalg.norm(d),
        ambient=float(rng.uniform(0.22, 0.42)),
        diffuse=float(rng.uniform(0.7, 0.95)),
        specular=float(rng.uniform(0.1, 0.45)),
        shininess=float(rng.uniform(12, 40)),
    )


def _albedo(rng: np.random.Generator, name: str) -> np.ndarray:
    h, s, v = colorsys.rgb_to_hsv(*ALBEDO[name])
    h = (h + rng.uniform(-0.015, 0.015)) % 1.0
    s = float(np.clip(s * rng.uniform(0.9, 1.05), 0, 1))
    v = float(np.clip(v * rng.uniform(0.9, 1.05), 0, 1))
    return np.array(colorsys.hsv_to_rgb(h, s, v))


def render_scene(scene: Scene, rng: np.random.Generator, size: int = 64) -> np.ndarray:
    """Render ``scene`` with nuisance drawn from ``rng``.

    Parameters
    ----------
    scene : Scene
        What to draw.
    rng : np.random.Generator
        Source of every nuisance factor; the image is a pure function of the scene and its state.
    size : int
        Output side in pixels (16 to 1024).

    Returns
    -------
    np.ndarray
        ``(size, size, 3)`` uint8 RGB image.
    """
    if not 16 <= size <= 1024:
        raise ValueError(f"size must be in 16..1024 pixels, got {size}")
    big = size * SS
    light = _light(rng)
    pitch = rng.uniform(0.25, 0.6)  # camera elevation (radians)
    # The background is smooth: draw it at the output size and upsample (4x fewer pixels).
    bg = _background(rng, size)
    bg = Image.fromarray((bg * 255 + 0.5).astype(np.uint8)).resize(
        (big, big), Image.Resampling.BILINEAR
    )
    # Placement: cell centre + jitter; nearer objects (lower on screen) are drawn last.
    placed = []
    for obj in scene.objects:
        radius = SIZE_RADIUS[obj.size] * rng.uniform(0.92, 1.08) * big
        cx = (CELL_X[obj.col] + rng.uniform(-0.04, 0.04)) * big
        cy = (CELL_Y[obj.row] + rng.uniform(-0.035, 0.035)) * big
        placed.append(
            (cy, cx, radius, obj, rng.uniform(0, 2 * np.pi), _albedo(rng, COLOURS[obj.colour]))
        )
    placed.sort(key=lambda p: (p[0], p[1]))
    # Soft shadows on the ground, offset away from the light.
    shadow = Image.new("L", (big, big), 0)
    sd = ImageDraw.Draw(shadow)
    for cy, cx, radius, _, _, _ in placed:
        ox = -light.direction[0] * radius * 0.5
        sd.ellipse(
            [cx - radius + ox, cy + 0.55 * radius, cx + radius * 1.05 + ox, cy + 1.05 * radius],
            fill=int(rng.uniform(90, 160)),
        )
    shadow = shadow.filter(ImageFilter.GaussianBlur(radius=max(1.0, big / 80)))
    dark = 255 - (np.asarray(shadow, dtype=np.uint16) * 153 >> 8).astype(np.uint8)  # 1 - 0.6 s
    canvas = Image.fromarray(
        ((np.asarray(bg, dtype=np.uint16) * dark[..., None].astype(np.uint16)) // 255).astype(
            np.uint8
        )
    )
    draw = ImageDraw.Draw(canvas)
    for cy, cx, radius, obj, yaw, albedo in placed:
        shape = SHAPES[obj.shape]
        if shape == "sphere":
            rgb, alpha, half = _sphere_patch(radius * 0.85, albedo, light)
            box = (round(cx) - half, round(cy) - half)
            canvas.paste(Image.fromarray(rgb), box, Image.fromarray(alpha))
            continue
        rot = object_rotation(shape, yaw, pitch, rng)
        _draw_mesh(draw, mesh(shape), rot, (cx, cy), radius, albedo, light)
    img = canvas.resize((size, size), Image.Resampling.BOX)
    out = np.asarray(img, dtype=np.float32)
    sigma = rng.uniform(0.0, 6.0)
    out = out + rng.normal(0.0, sigma, out.shape).astype(np.float32)
    return np.clip(out + 0.5, 0, 255).astype(np.uint8)
