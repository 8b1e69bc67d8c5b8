"""A render cache: ``V`` views of ``N`` scenes drawn once, then image pairs at memory speed.

A render (or sketch) of the cave world is a pure function of ``(world seed, scene, nuisance
seed, size)`` (:meth:`prh.world.CaveWorld.render`), so view ``v`` of scene ``s`` is drawn with
nuisance seed ``v`` and stored as one uint8 array ``(N, V, S, S, 3)``. Drawing costs ~10-20 ms
per 64 px image on one core, two orders of magnitude more than a training step needs per image;
a cache built once with worker processes, then indexed, keeps the network busy
(``benchmarks/bench_train.py --image``).

Pairs from the cache:

- ``good``: two *distinct* cached views of one scene (independent nuisance, same state);
- ``bad``: one cached view, two random resized crops with colour jitter
  (:func:`prh.views.image.crop_and_jitter`): shared nuisance;
- ``mixture``: each row good with probability ``rho``, else bad.

On a moving world (``pairs``, :class:`prh.views.lag.LagPairs`) a good row is a cached view of
``s`` and a distinct cached view of its lag partner ``s'`` (another row of the same cache: a cache
of the training states holds every lag pair inside them, so none is rendered twice); a bad row
is as above. The cache of a world other than the cave is named after it.

``batch(i)`` is a pure function of ``(seed, i)`` with the same rank slicing and the same keys as
:class:`prh.views.image.ImageViewDataset`, so a resumed run sees the same batches.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from prh.errors import InputError
from prh.io import write_json
from prh.views.image import crop_and_jitter
from prh.views.lag import lag_rows
from prh.world.registry import without_default_world, world_tag

MODALITIES = ("image", "sketch")
PAIR_KINDS = ("good", "bad", "mixture")


@dataclass(frozen=True)
class CacheKey:
    """What a cache holds: ``views`` draws (nuisance seeds ``0 .. views - 1``) of ``scenes``."""

    world_seed: int
    modality: str
    size: int
    views: int
    scenes_digest: str
    n_scenes: int
    world: str = "cave"

    @property
    def file_name(self) -> str:
        where = world_tag(self.world)  # the cave's names as before
        return (
            f"{where}{self.modality}-w{self.world_seed}-{self.size}px-{self.n_scenes}x{self.views}"
            f"-{self.scenes_digest}.npy"
        )


def cache_key(
    world_seed: int,
    modality: str,
    size: int,
    views: int,
    scene_ids: Sequence[int],
    world: str = "cave",
) -> CacheKey:
    ids = np.asarray(scene_ids, dtype=np.int64)
    digest = hashlib.sha256(ids.tobytes()).hexdigest()[:12]
    return CacheKey(int(world_seed), modality, int(size), int(views), digest, len(ids), world)


def _draw_chunk(args: tuple[int, str, int, int, list[int], str]) -> np.ndarray:
    """Worker: ``(len(scenes), V, S, S, 3)`` uint8 for a chunk of scenes."""
    from prh.world import make_world

    world_seed, modality, size, views, scenes, name = args
    world = make_world(name, seed=world_seed)
    draw = world.render if modality == "image" else world.sketch
    return np.stack([np.stack([draw(s, v, size) for v in range(views)]) for s in scenes])


def render_views(
    world_seed: int,
    modality: str,
    size: int,
    views: int,
    scene_ids: Sequence[int],
    workers: int = 1,
    world: str = "cave",
) -> np.ndarray:
    """Draw ``views`` nuisance seeds of every scene of ``world``: ``(N, V, size, size, 3)``.

    The result does not depend on ``workers`` (every image is a pure function of its key).
    """
    if modality not in MODALITIES:
        raise InputError(f"render cache: modality must be image or sketch, got {modality!r}")
    if views < 1:
        raise InputError(f"render cache: need >= 1 view per scene, got {views}")
    ids = [int(s) for s in scene_ids]
    step = max(1, min(64, -(-len(ids) // max(1, 4 * workers))))
    jobs = [
        (world_seed, modality, size, views, ids[i : i + step], world)
        for i in range(0, len(ids), step)
    ]
    if workers <= 1 or len(jobs) == 1:
        parts = [_draw_chunk(j) for j in jobs]
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            parts = list(pool.map(_draw_chunk, jobs))
    if not parts:
        return np.zeros((0, views, size, size, 3), dtype=np.uint8)
    return np.concatenate(parts)


def load_or_build(
    folder: str | os.PathLike[str],
    key: CacheKey,
    scene_ids: Sequence[int],
    workers: int = 1,
) -> np.ndarray:
    """The cache array for ``key`` in ``folder`` (memory-mapped), drawing and saving it first
    when absent. The file is written to a temporary name and renamed: a killed build leaves no
    half cache, and concurrent builders of one key write identical bytes."""
    path = Path(folder) / key.file_name
    if not path.is_file():
        arr = render_views(
            key.world_seed, key.modality, key.size, key.views, scene_ids, workers, key.world
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            np.save(f, arr)
        os.replace(tmp, path)
        meta = without_default_world(asdict(key))  # the cave's metadata as before
        write_json(path.with_suffix(".json"), {**meta, "shape": list(arr.shape)})
    arr = np.load(path, mmap_mode="r")
    want = (key.n_scenes, key.views, key.size, key.size, 3)
    if arr.shape != want or arr.dtype != np.uint8:
        raise InputError(f"{path}: render cache has shape {arr.shape} {arr.dtype}, expected {want}")
    return arr


class CachedViewDataset:
    """Batches of image pairs from a render cache (same keys as ``ImageViewDataset.batch``).

    Parameters
    ----------
    cache : np.ndarray
        ``(N, V, S, S, 3)`` uint8; row ``j`` is scene ``scene_ids[j]``.
    scene_ids : sequence of int, length N
        World scene index of each cache row (reported as ``state``).
    kind : {"good", "bad", "mixture"}
        Pair policy (see the module docstring); ``good`` needs ``V >= 2``.
    batch_size : int
        Global batch; rank ``r`` keeps rows ``r::world_size``.
    seed : int
        ``batch(i)`` is a pure function of ``(seed, i)``.
    rho : float
        Probability of a good row (``mixture`` only).
    """

    def __init__(
        self,
        cache: np.ndarray,
        scene_ids: Sequence[int],
        kind: str = "good",
        batch_size: int = 64,
        seed: int = 0,
        *,
        rho: float = 1.0,
        rank: int = 0,
        world_size: int = 1,
        pairs=None,
    ) -> None:
        if kind not in PAIR_KINDS:
            raise InputError(f"cached views: unknown kind {kind!r}; expected {list(PAIR_KINDS)}")
        if cache.ndim != 5 or cache.shape[-1] != 3 or len(cache) != len(scene_ids):
            raise InputError(
                f"cached views: cache shape {cache.shape} does not fit {len(scene_ids)} scenes"
            )
        if kind != "bad" and cache.shape[1] < 2:
            raise InputError("cached views: good pairs need >= 2 cached views per scene")
        if world_size < 1 or not 0 <= rank < world_size:
            raise InputError(f"cached views: need 0 <= rank < world_size, got {rank}, {world_size}")
        self.cache = cache
        self.scene_ids = np.asarray(scene_ids, dtype=np.int64)
        self.kind = kind
        self.batch_size = batch_size
        self.seed = seed
        self.rho = rho if kind == "mixture" else float(kind == "good")
        self.rank = rank
        self.world_size = world_size
        self.pairs = pairs
        if pairs is not None and not np.array_equal(pairs.scene_ids, self.scene_ids):
            raise InputError("cached views: lag pairs are over other states than the cache's")
        self.start = 0

    def batch(self, i: int) -> dict:
        """Batch ``i``: ``a``, ``b`` FloatTensor (b, 3, S, S) in [0, 1]; ``good``, ``state``,
        ``nuisance_a``, ``nuisance_b`` (cached view indices), ``index``. With ``pairs``
        (:class:`~prh.views.lag.LagPairs` over the cache's states, a moving world), a good
        row's ``b`` is a view of the lag partner, reported as ``state_b``."""
        import torch

        if i < 0:
            raise InputError(f"cached views: batch index must be >= 0, got {i}")
        rng = np.random.default_rng([self.seed, int(i), 0xCAC4E])
        B, (N, V) = self.batch_size, self.cache.shape[:2]
        items = rng.integers(0, N, size=B)  # (B,)
        good = rng.random(B) < self.rho  # (B,)
        va = rng.integers(0, V, size=B)  # (B,)
        vb = (va + rng.integers(1, max(V, 2), size=B)) % V  # (B,) != va when V >= 2
        vb = np.where(good, vb, va)
        crop_seeds = rng.integers(0, 2**62, size=B)
        rows = np.arange(self.rank, B, self.world_size)
        items, second = lag_rows(self.pairs, items, self.seed, i)  # (B,) each
        partner = np.where(good, second, items)  # (B,) the state b shows
        a = self.cache[items[rows], va[rows]].astype(np.float32) / 255.0  # (b, S, S, 3)
        b = self.cache[partner[rows], vb[rows]].astype(np.float32) / 255.0  # (b, S, S, 3)
        for j, r in enumerate(rows):
            if not good[r]:
                rr = np.random.default_rng(int(crop_seeds[r]))
                img = self.cache[items[r], va[r]]
                a[j], b[j] = crop_and_jitter(img, rr), crop_and_jitter(img, rr)

        def to(x: np.ndarray) -> torch.Tensor:
            return torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))  # (b, 3, S, S)

        out = {
            "a": to(a),
            "b": to(b),
            "good": torch.from_numpy(good[rows].copy()),
            "state": torch.from_numpy(self.scene_ids[items[rows]]),
            "nuisance_a": torch.from_numpy(va[rows].astype(np.int64)),
            "nuisance_b": torch.from_numpy(vb[rows].astype(np.int64)),
            "index": torch.from_numpy(rows.astype(np.int64)),
        }
        if self.pairs is not None:
            out["state_b"] = torch.from_numpy(self.scene_ids[partner[rows]])
        return out


class Prefetched:
    """``ds.batch(i)`` made ahead by ``workers`` processes (:func:`prh.views.loader.prefetch`),
    for datasets whose batches are expensive (renders drawn on the fly).

    Batches must be asked in order (as the training loop does); any other index restarts the
    workers at that index, so the result always equals ``ds.batch(i)``.
    """

    def __init__(self, ds, workers: int = 2) -> None:
        self.ds = ds
        self.workers = workers
        self._next: int | None = None
        self._it = None

    def batch(self, i: int) -> dict:
        from prh.views.loader import prefetch

        if self._it is None or i != self._next:
            self._it = prefetch(self.ds, start=i, num_workers=self.workers)
        self._next = i + 1
        return next(self._it)
