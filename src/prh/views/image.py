"""Image view samplers over the cave world: good and bad pairs of renders.

- ``good``: two renders of one scene under independent nuisance seeds (light, camera, jitter,
  background, noise): same state, different nuisance.
- ``bad``: one render, two random resized crops with colour jitter: same state, *shared* nuisance.

On a moving world (``pairs``, :class:`prh.views.lag.LagPairs`) a good row renders ``s`` and
its lag partner ``s'`` under independent nuisance seeds; a bad row is as above.

Images are rendered on demand (a streaming dataset); ``batch(i)`` is a pure function of
``(seed, i)`` with the same rank/world-size slicing as the text views.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image

from prh.errors import InputError
from prh.views.lag import lag_rows
from prh.views.loader import BatchStream

IMAGE_KINDS = ("good", "bad")


def crop_and_jitter(
    img: np.ndarray, rng: np.random.Generator, scale: tuple[float, float] = (0.5, 1.0)
) -> np.ndarray:
    """A random resized crop (area fraction in ``scale``, aspect 3/4..4/3) with colour jitter.

    ``img`` (H, W, 3) uint8 -> (H, W, 3) float32 in [0, 1]. Brightness, contrast and saturation
    are each scaled by a factor in [0.7, 1.3].
    """
    H, W, _ = img.shape
    area = rng.uniform(*scale) * H * W
    aspect = np.exp(rng.uniform(np.log(3 / 4), np.log(4 / 3)))
    h = int(min(H, max(4, round(np.sqrt(area / aspect)))))
    w = int(min(W, max(4, round(np.sqrt(area * aspect)))))
    y0, x0 = int(rng.integers(0, H - h + 1)), int(rng.integers(0, W - w + 1))
    crop = Image.fromarray(img[y0 : y0 + h, x0 : x0 + w]).resize((W, H), Image.Resampling.BILINEAR)
    x = np.asarray(crop, dtype=np.float32) / 255.0
    x = x * rng.uniform(0.7, 1.3)  # brightness
    mean = x.mean()
    x = (x - mean) * rng.uniform(0.7, 1.3) + mean  # contrast
    grey = x.mean(axis=2, keepdims=True)
    x = (x - grey) * rng.uniform(0.7, 1.3) + grey  # saturation
    return np.clip(x, 0.0, 1.0)


class ImageViewDataset(BatchStream):
    """Batches of image pairs from a :class:`~prh.world.CaveWorld`.

    Parameters
    ----------
    world : CaveWorld
        The world.
    kind : {"good", "bad"}
        Two renders of one scene, or two crops/colour jitters of one render.
    size : int
        Image side in pixels.
    batch_size : int
        Global batch size; rank ``r`` keeps rows ``r::world_size``.
    seed : int
        ``batch(i)`` is a pure function of ``(seed, i)``.
    scene_ids : sequence of int, optional
        Scenes to draw from (default: the world's ``"train"`` split).
    modality : {"image", "sketch"}
        Shaded renders or line sketches.
    """

    def __init__(
        self,
        world,
        kind: str = "good",
        size: int = 64,
        batch_size: int = 64,
        seed: int = 0,
        *,
        scene_ids: Sequence[int] | None = None,
        rank: int = 0,
        world_size: int = 1,
        modality: str = "image",
        pairs=None,
    ) -> None:
        if kind not in IMAGE_KINDS:
            raise InputError(f"image views: unknown kind {kind!r}; expected good or bad")
        if modality not in ("image", "sketch"):
            raise InputError(f"image views: modality must be image or sketch, got {modality!r}")
        if batch_size < 1:
            raise InputError(f"image views: batch_size must be >= 1, got {batch_size}")
        if world_size < 1 or not 0 <= rank < world_size:
            raise InputError(f"image views: need 0 <= rank < world_size, got {rank}, {world_size}")
        if not 16 <= size <= 1024:
            raise InputError(f"image views: size must be in 16..1024 pixels, got {size}")
        self.world = world
        self.kind = kind
        self.size = size
        self.batch_size = batch_size
        self.seed = seed
        self.scene_ids = np.asarray(world.split("train") if scene_ids is None else scene_ids)
        self.rank = rank
        self.world_size = world_size
        self.modality = modality
        self.pairs = pairs
        if pairs is not None and not np.array_equal(pairs.scene_ids, self.scene_ids):
            raise InputError("image views: lag pairs are over other states than scene_ids")
        self.start = 0

    def _draw(self, scene: int, nuisance: int) -> np.ndarray:
        if self.modality == "sketch":
            return self.world.sketch(scene, nuisance, self.size)
        return self.world.render(scene, nuisance, self.size)

    def batch(self, i: int) -> dict:
        """Batch ``i``: ``a``, ``b`` FloatTensor (B, 3, H, W) in [0, 1]; ``good``, ``state``
        (scene index), ``nuisance_a``, ``nuisance_b`` (render seeds), ``index``."""
        import torch

        if i < 0:
            raise InputError(f"image views: batch index must be >= 0, got {i}")
        rng = np.random.default_rng([self.seed, int(i), 0x1A6])
        B = self.batch_size
        items = rng.integers(0, len(self.scene_ids), size=B)
        row_seeds = rng.integers(0, 2**62, size=B)
        rows = list(range(self.rank, B, self.world_size))
        items, second = lag_rows(self.pairs, items, self.seed, i)  # (B,): s and s' (still: s)
        a, b, na, nb = [], [], [], []
        for r in rows:
            rr = np.random.default_rng(int(row_seeds[r]))
            scene = int(self.scene_ids[items[r]])
            n1, n2 = (int(x) for x in rr.integers(0, 2**62, size=2))
            if self.kind == "good":
                a.append(self._draw(scene, n1).astype(np.float32) / 255.0)
                b.append(self._draw(int(self.scene_ids[second[r]]), n2).astype(np.float32) / 255.0)
                na.append(n1)
                nb.append(n2)
            else:
                img = self._draw(scene, n1)
                a.append(crop_and_jitter(img, rr))
                b.append(crop_and_jitter(img, rr))
                na.append(n1)
                nb.append(n1)

        def to(xs: list[np.ndarray]) -> torch.Tensor:
            return torch.from_numpy(np.stack(xs).transpose(0, 3, 1, 2).copy())  # (B, 3, H, W)

        out = {
            "a": to(a),
            "b": to(b),
            "good": torch.full((len(rows),), self.kind == "good", dtype=torch.bool),
            "state": torch.from_numpy(self.scene_ids[items[rows]].astype(np.int64)),
            "nuisance_a": torch.tensor(na, dtype=torch.int64),
            "nuisance_b": torch.tensor(nb, dtype=torch.int64),
            "index": torch.tensor(rows, dtype=torch.int64),
        }
        if self.pairs is not None:
            partner = second[rows] if self.kind == "good" else items[rows]
            out["state_b"] = torch.from_numpy(self.scene_ids[partner].astype(np.int64))
        return out

    def stats(self, n_batches: int = 2) -> dict:
        """Pair statistics over global batches ``0 .. n_batches - 1`` (see
        :func:`prh.views.text.pair_statistics`)."""
        from prh.views.text import pair_statistics

        full = ImageViewDataset(
            self.world,
            self.kind,
            self.size,
            self.batch_size,
            self.seed,
            scene_ids=self.scene_ids,
            modality=self.modality,
            pairs=self.pairs,
        )
        return pair_statistics([full.batch(i) for i in range(n_batches)], kind=self.kind)
