"""Image and sketch JEPAs: ``train_image`` a run directory, ``load_image_run`` it back.

The same run directory, checkpoints, bitwise resume, metrics, evaluation hook and ``torchrun``
data parallelism as text runs (:mod:`prh.training.api`), through the one trainer
(:func:`prh.training.lifecycle.fit`, with :class:`ImageTask`), with an
:class:`~prh.models.ImageEncoder` on pairs of renders (or sketches) of the cave world:

- ``good``: two renders of one scene under independent nuisance (light, camera, jitter,
  background, noise);
- ``bad``: two crops / colour jitters of ONE render (shared nuisance).

``config.json`` holds ``{"modality", "train", "image", "model"}``; a text run's has no
``modality`` key (it is ``"text"``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from prh.errors import CheckpointError, InputError
from prh.jsonio import read_json
from prh.models import BackboneEncoder, ImageEncoder, ModelConfig, layers_with_embedding
from prh.training.config import TrainConfig, check_batch
from prh.training.distributed import DistInfo, gather_rows
from prh.training.image_config import ImageConfig, check_image_run, image_model_config
from prh.training.lifecycle import Barrier, Encode, Run, fit, load_run
from prh.training.loop import LossContext, jepa_objective
from prh.world.ids import scene_ids_of


def image_loss(
    model: nn.Module, batch: dict[str, torch.Tensor], step: int, ctx: LossContext
) -> tuple[torch.Tensor, dict[str, float]]:
    """JEPA loss of a batch of image pairs (``a``, ``b``: (b, 3, S, S) in [0, 1])."""
    dev = ctx.device
    a = batch["a"].to(dev, non_blocking=True)
    b = batch["b"].to(dev, non_blocking=True)
    x = torch.cat([a, b])  # (2b, 3, S, S): one forward for both sides (GroupNorm: per image)
    # Backbone runs: the frozen trunk's cached maps of both sides (BatchNorm frozen: per image).
    kw = {"maps": torch.cat([batch["ma"], batch["mb"]]).to(dev)} if "ma" in batch else {}
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=dev.type == "cuda"):
        pooled = model(x, **kw).pooled  # (2b, E)
    n = a.shape[0]
    za = gather_rows(pooled[:n].float(), ctx.dist)  # (B, E) global
    zb = gather_rows(pooled[n:].float(), ctx.dist)  # (B, E) global
    return jepa_objective(za, zb, step, ctx)


def train_scene_ids(train: TrainConfig) -> np.ndarray:
    """The world's training scenes a run draws from (the first ``train_scenes``; 0 = all)."""
    return run_world(train).train_scenes(train.train_scenes)


def run_world(train: TrainConfig) -> Any:
    """The run's world (``train.world``, from the registry; the cave world by default)."""
    from prh.world import make_world

    return make_world(train.world or "cave", seed=train.world_seed)


def lag_pairs(train: TrainConfig, ids: np.ndarray) -> Any:
    """Good pairs of a moving world over ``ids`` (:class:`prh.views.lag.LagPairs`); ``None``
    for a still world (one state per pair, as before)."""
    from prh.views.lag import LagPairs
    from prh.world import SpectralWorld

    world = run_world(train)
    return LagPairs(world, ids) if isinstance(world, SpectralWorld) else None


def image_dataset(
    train: TrainConfig,
    image: ImageConfig,
    run_dir: Path,
    info: DistInfo,
    barrier: Callable[[], None],
    workers: int = 1,
    model: nn.Module | None = None,
) -> Any:
    """This rank's pair dataset: cached views (rank 0 builds the cache) or renders on the fly;
    for a backbone run (``model`` a :class:`BackboneEncoder`), cached views with their trunk
    maps (:mod:`prh.training.backbone_data`)."""
    from prh.views.image import ImageViewDataset
    from prh.views.render_cache import CachedViewDataset, Prefetched, cache_key, load_or_build

    ids = train_scene_ids(train)
    if len(ids) < 2:
        raise InputError(f"--train-scenes {train.train_scenes}: need >= 2 scenes")
    pairs = lag_pairs(train, ids)
    if image.render_views == 0:
        fly = ImageViewDataset(
            run_world(train), train.views, image.image_size, train.batch_size, train.seed,
            scene_ids=ids, rank=info.rank, world_size=info.world_size, modality=image.modality,
            pairs=pairs,
        )  # fmt: skip
        return Prefetched(fly, workers) if workers > 1 else fly
    key = cache_key(
        train.world_seed, image.modality, image.image_size, image.render_views, ids,
        train.world or "cave",
    )  # fmt: skip
    folder = Path(image.cache_dir) if image.cache_dir else run_dir / "render_cache"
    if info.is_main:
        load_or_build(folder, key, ids, workers)
    barrier()
    cache = load_or_build(folder, key, ids, workers)
    if isinstance(model, BackboneEncoder):
        lag = pairs if train.views == "good" else None  # bad views: two crops of one render
        return backbone_dataset(
            train, image, model, cache, folder / key.file_name, info, barrier, lag
        )
    return CachedViewDataset(
        cache, ids, train.views, train.batch_size, train.seed, rho=train.rho,
        rank=info.rank, world_size=info.world_size, pairs=pairs,
    )  # fmt: skip


def backbone_dataset(
    train: TrainConfig,
    image: ImageConfig,
    model: BackboneEncoder,
    cache: np.ndarray,
    cache_file: Path,
    info: DistInfo,
    barrier: Callable[[], None],
    pairs: Any = None,
) -> Any:
    """Good pairs (distinct renders; with ``pairs``, renders of two states the world's lag
    apart) or bad pairs (distinct crops of render 0) of the cache, with the frozen trunk's maps,
    computed by rank 0 once and stored beside the cache."""
    from prh.training.backbone_data import MapCachedDataset, bad_view_pool, load_or_build_maps

    views = bad_view_pool(cache) if train.views == "bad" else cache
    tag = f"{image.backbone.replace(':', '-')}-b{image.freeze_until}-{image.backbone_size}px"
    path = cache_file.with_name(f"{cache_file.stem}-{train.views}-{tag}.maps.npy")
    if info.is_main:
        load_or_build_maps(path, model.trunk, views, build=True)
    barrier()
    maps = load_or_build_maps(path, model.trunk, views, build=False)
    return MapCachedDataset(
        views, maps, train_scene_ids(train), train.batch_size, train.seed,
        rank=info.rank, world_size=info.world_size, pairs=pairs,
    )  # fmt: skip


def build_image_model(
    train: TrainConfig, image: ImageConfig | None = None, pretrained: bool | None = None
) -> tuple[nn.Module, ModelConfig]:
    """The run's encoder, initialised from ``train.seed``: the :class:`ImageEncoder` of
    ``train.preset``, or for ``image.backbone`` a :class:`BackboneEncoder` (``pretrained``:
    load the backbone's weights; default ``image.pretrained``; ``False`` when a run's own
    weights will be loaded over it)."""
    mcfg = image_model_config(train, image)
    check_batch(train, mcfg)
    torch.manual_seed(train.seed)
    if image is None or image.backbone == "none":
        return ImageEncoder(mcfg), mcfg
    from prh.models.efficientnet import build_efficientnet_lite0

    real = image.pretrained if pretrained is None else pretrained
    net = build_efficientnet_lite0(pretrained=real, seed=train.seed)
    torch.manual_seed(train.seed)
    model = BackboneEncoder(
        mcfg, net, image.freeze_until, image.backbone_size, image.scratch_branch
    )
    return model, mcfg


def read_image_config(run_dir: Path) -> tuple[TrainConfig, ImageConfig, dict[str, Any]]:
    """The stored configs of an image run (one :class:`CheckpointError` if not one)."""
    try:
        stored = read_json(run_dir / "config.json")
        task, train = ImageTask().restored(stored)
    except (OSError, json.JSONDecodeError, KeyError, TypeError, InputError) as e:
        raise CheckpointError(f"{run_dir}: not a prh image run directory ({e})") from None
    return train, task.image, stored


def is_image_run(run_dir: str | os.PathLike[str]) -> bool:
    """Whether ``run_dir/config.json`` describes an image or sketch run."""
    try:
        stored = read_json(Path(run_dir) / "config.json")
    except (OSError, ValueError):
        return False
    return isinstance(stored, dict) and stored.get("modality") in ("image", "sketch")


@dataclass(frozen=True)
class ImageTask:
    """Image and sketch JEPAs as a :class:`~prh.training.lifecycle.Task`: ``image`` is what a run
    adds to its :class:`TrainConfig`; ``workers`` processes build the render cache (or, with
    ``render_views = 0``, draw batches ahead)."""

    image: ImageConfig = field(default_factory=ImageConfig)
    workers: int = 1
    loss = staticmethod(image_loss)

    def restored(self, stored: dict[str, Any]) -> tuple[ImageTask, TrainConfig]:
        image = ImageConfig.from_dict(stored["image"])
        return replace(self, image=image), TrainConfig.from_dict(stored["train"])

    def check(self, cfg: TrainConfig) -> None:
        check_image_run(cfg, self.image)
        check_batch(cfg, image_model_config(cfg))

    def inputs(self, cfg: TrainConfig) -> dict[str, str | None]:
        return {"eval_features": cfg.eval_features, "eval_theory": cfg.eval_theory}

    def prepare(self, *_: Any) -> None:
        return None  # the render cache is the dataset's (a backbone run's needs the model)

    def model(self, cfg: TrainConfig, prepared: Any) -> tuple[nn.Module, ModelConfig]:
        return build_image_model(cfg, self.image)

    def dataset(
        self, cfg: TrainConfig, prepared: Any, model: nn.Module, run_dir: Path, info: DistInfo,
        wait: Barrier,
    ) -> Any:  # fmt: skip
        return image_dataset(cfg, self.image, run_dir, info, wait, self.workers, model)

    def eval_items(self, cfg: TrainConfig, ids: list[str]) -> list[np.ndarray]:
        """The ``scene_<i>`` ids' renders (sketches) under nuisance seed 0."""
        scenes = scene_ids_of(ids, "--eval-features")
        return draw_scenes(cfg, self.image, [int(i) for i in scenes])

    def encoder(
        self, cfg: TrainConfig, prepared: Any, model: nn.Module, dev: torch.device
    ) -> Encode:
        return lambda images: encode_images(model, images, self.image.image_size, dev)

    def stored(self, cfg: TrainConfig, mcfg: ModelConfig) -> dict[str, Any]:
        return {
            "modality": self.image.modality,
            "train": cfg.to_dict(),
            "image": self.image.to_dict(),
            "model": mcfg.to_dict(),
        }

    def kind(self, cfg: TrainConfig) -> str:
        return f"{self.image.modality}-encoder"

    def rebuild(self, cfg: TrainConfig, mcfg: ModelConfig) -> nn.Module:
        return build_image_model(cfg, self.image, pretrained=False)[0]  # weights: the run's own

    def as_run(
        self, model: nn.Module, cfg: TrainConfig, mcfg: ModelConfig, path: Path, step: int,
        dev: torch.device,
    ) -> LoadedImageRun:  # fmt: skip
        return LoadedImageRun(model, cfg, mcfg, path, step, dev, self.image)


def train_image(
    train: TrainConfig | None,
    image: ImageConfig | None,
    out_dir: str | os.PathLike[str],
    progress: bool = True,
    *,
    resume: bool | str = False,
    device: str | None = None,
    threads: int | None = None,
    stop_after: int | None = None,
    workers: int = 1,
) -> tuple[Path, nn.Module]:
    """Train an image/sketch JEPA into ``out_dir``; return the run path and this rank's model:
    :func:`~prh.training.lifecycle.fit` of an :class:`ImageTask` (``train``/``image`` ignored
    on resume; ``workers``: see :class:`ImageTask`)."""
    task = ImageTask(image or ImageConfig(), workers)
    return fit(
        task, train, out_dir, progress, resume=resume, device=device, threads=threads,
        stop_after=stop_after,
    )  # fmt: skip


def draw_scenes(
    train: TrainConfig, image: ImageConfig, scene_ids: Sequence[int], nuisance_seed: int = 0
) -> list[np.ndarray]:
    """Renders (or sketches) of ``scene_ids`` at the run's size: (S, S, 3) uint8 each."""
    world = run_world(train)
    draw = world.render if image.modality == "image" else world.sketch
    return [draw(int(i), nuisance_seed, image.image_size) for i in scene_ids]


def to_input(images: Sequence[np.ndarray], size: int) -> torch.Tensor:
    """(H, W, 3) uint8 images -> (N, 3, size, size) float32 in [0, 1] (bilinear resize if needed;
    a grey image is repeated to three channels)."""
    from PIL import Image

    out = []
    for img in images:
        x = np.asarray(img)
        if x.ndim == 2:
            x = np.repeat(x[..., None], 3, axis=2)
        x = x[..., :3].astype(np.uint8, copy=False)
        if x.shape[:2] != (size, size):
            pil = Image.fromarray(x).resize((size, size), Image.Resampling.BILINEAR)
            x = np.asarray(pil)
        out.append(x)
    if not out:
        return torch.zeros((0, 3, size, size))
    arr = np.stack(out).astype(np.float32) / 255.0  # (N, S, S, 3)
    return torch.from_numpy(np.ascontiguousarray(arr.transpose(0, 3, 1, 2)))  # (N, 3, S, S)


@torch.no_grad()
def encode_images(
    model: nn.Module,
    images: Sequence[np.ndarray],
    size: int,
    device: torch.device | str = "cpu",
    batch_size: int = 128,
) -> np.ndarray:
    """Every stage's pooled map and the JEPA embedding: ``(N, S + 2, D)`` float32.

    Layers: the stem, each stage (global-average-pooled), then the projection zero-padded to
    ``D`` (padding changes no cosine or inner product), as text runs report theirs.
    """
    was_training = model.training
    model.eval()
    out = []
    for i in range(0, len(images), batch_size):
        enc = model(to_input(images[i : i + batch_size], size).to(device))
        out.append(layers_with_embedding(enc).cpu().numpy())  # (b, S + 2, D)
    model.train(was_training)
    if not out:
        return np.zeros((0, 0, 0), dtype=np.float32)
    return np.concatenate(out).astype(np.float32, copy=False)


@dataclass
class LoadedImageRun(Run):
    """A trained image/sketch run: :class:`prh.training.lifecycle.Run` with its ``image`` config.

    :meth:`encode` is canonical; :meth:`encode_images` (the same) and :meth:`embed_images` are
    kept for compatibility.
    """

    image: ImageConfig = field(default_factory=ImageConfig)

    @property
    def modality(self) -> str:
        return self.image.modality

    def encode(self, items: Sequence[np.ndarray], batch_size: int | None = None) -> np.ndarray:
        """``(N, L, D)`` float32 (see :func:`encode_images`); images resized to the run's size."""
        return encode_images(
            self.model, items, self.image.image_size, self.device, batch_size or 128
        )

    def encode_images(self, images: Sequence[np.ndarray], batch_size: int = 128) -> np.ndarray:
        """:meth:`encode` (kept for compatibility)."""
        return self.encode(images, batch_size)

    def embed_images(self, images: Sequence[np.ndarray], batch_size: int = 128) -> np.ndarray:
        """``(N, E)`` float32: the trained JEPA embedding."""
        E = self.model_config.embed_dim
        return self.encode(images, batch_size)[:, -1, :E]


def load_image_run(
    run_dir: str | os.PathLike[str], device: str | None = None, readout: bool = True
) -> LoadedImageRun:
    """Load an image run: ``model.safetensors``, or the latest checkpoint of an unfinished run
    (:func:`prh.training.lifecycle.load_run` with an :class:`ImageTask`), read through its
    stored read-out unless ``readout`` is false."""
    run = load_run(run_dir, device, lambda _: ImageTask(), readout)
    assert isinstance(run, LoadedImageRun)
    return run
