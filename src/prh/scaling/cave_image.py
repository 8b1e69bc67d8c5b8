"""The ``cave-image`` cell runner: train an image or sketch encoder on the cave world's renders.

One cell (split ``run`` of a :class:`~prh.scaling.grid.RunSet`, modality ``image`` or
``sketch``, views ``good`` or ``bad``, ``samples`` pairs, seed) = one
:func:`prh.training.image.train_image` run, in the worker's own process, into
``OUT/runs/<cell id>``. The runner measures nothing (``score`` is ``None``): the demo embeds,
probes and compares its runs afterwards (:mod:`prh.demo.modalities`).

The render caches the runs read (one per modality: ``render_views`` views of each training
scene) are drawn once, by :meth:`CaveImageBackend.prepare` in the sweep's driver before any cell
starts, into ``render_cache`` (default ``OUT/render_cache``), so that parallel cells never draw
one cache twice.

What a killed sweep left in a cell's run folder is :func:`prh.training.lifecycle.fit`'s to judge
(``resume="auto"``): a run with checkpoints resumes from its latest one (bitwise identical to an
uninterrupted run on CPU: the run keeps the thread count it started with), a start killed before
its first checkpoint is cleared and started again, a finished run is reused.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from prh.errors import InputError
from prh.scaling.grid import Cell

IMAGE_CELL_MODALITIES = ("image", "sketch")
_RHO = {"good": 1.0, "bad": 0.0}  # what `prh train --views good|bad` stores as rho


@dataclass(frozen=True)
class CaveImageBackend:
    """Train-only runner of image and sketch encoders (see the module docstring).

    Attributes
    ----------
    preset : str
        Size dial of the encoder and the optimiser defaults (:func:`prh.training.train_config`).
    batch_size : int
        Pairs per step.
    lr : float
        Peak learning rate.
    train_scenes : int
        Training scenes drawn from (the first of the world's train split).
    world, world_seed : str, int
        Which world (registry name: ``cave`` or ``moving``) and its seed.
    image_size : int
        Render side in pixels.
    render_views : int
        Views per scene in the render cache.
    backbone, freeze_until, backbone_size, scratch_branch : str, int, int, bool
        The pretrained backbone and how it is fine-tuned (:class:`prh.training.ImageConfig`).
    checkpoint_every : int
        Steps between two checkpoints (what a killed run resumes from).
    threads : int
        torch intra-op threads per cell (not an option: a resumed run keeps its own).
    render_cache : str or None
        Folder of the render caches (``None``: ``OUT/render_cache``); not an option (where a
        cache lies does not change it).
    modalities : tuple of str
        The caches :meth:`prepare` draws (the modalities of the cells to come); not an option.
    cache_workers : int
        Processes that draw them; not an option.
    """

    preset: str = "tiny"
    batch_size: int = 128
    lr: float = 3e-4
    train_scenes: int = 1000
    world: str = "cave"
    world_seed: int = 0
    image_size: int = 64
    render_views: int = 2
    backbone: str = "none"
    freeze_until: int = 10
    backbone_size: int = 128
    scratch_branch: bool = False
    checkpoint_every: int = 20
    threads: int = 1
    render_cache: str | None = None
    modalities: tuple[str, ...] = IMAGE_CELL_MODALITIES
    cache_workers: int = 1
    name: str = "cave-image"

    def options(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("name", "threads", "render_cache", "modalities", "cache_workers"):
            d.pop(k)  # none of them changes a run's weights
        if d["world"] == "cave":
            del d["world"]  # the cave's cell ids as before the world became an option
        return d

    def cache_folder(self, out_dir: Path) -> Path:
        """Where the render caches lie (``render_cache``, else ``out_dir/render_cache``)."""
        return Path(self.render_cache) if self.render_cache else Path(out_dir) / "render_cache"

    def configs(self, cell: Cell, out_dir: Path):
        """``(TrainConfig, ImageConfig)`` of ``cell``: what ``prh train --modality M --views V``
        with this runner's settings as flags builds.

        Raises
        ------
        InputError
            For a cell of another modality or of views other than good and bad.
        """
        from prh.training.image_config import ImageConfig, check_image_run

        if cell.modality not in IMAGE_CELL_MODALITIES or cell.views not in _RHO:
            raise InputError(
                f"{self.name} backend: cell {cell.modality} {cell.views}: expected modality "
                f"image or sketch and views good or bad"
            )
        train = self._train_config(views=cell.views, samples=int(cell.samples), seed=cell.seed)
        image = ImageConfig(
            modality=cell.modality,
            image_size=self.image_size,
            render_views=self.render_views,
            cache_dir=str(self.cache_folder(out_dir)),
            backbone=self.backbone,
            freeze_until=self.freeze_until,
            backbone_size=self.backbone_size,
            scratch_branch=self.scratch_branch,
        )
        check_image_run(train, image)
        return train, image

    def _train_config(self, **fields: Any):
        from prh.training.config import train_config

        return train_config(
            self.preset,
            world=self.world,
            rho=_RHO.get(fields.get("views", "good")),
            batch_size=self.batch_size,
            lr=self.lr,
            checkpoint_every=self.checkpoint_every,
            train_scenes=self.train_scenes,
            world_seed=self.world_seed,
            **fields,
        )

    def prepare(self, out_dir: Path) -> None:
        """Draw the render cache of each of ``modalities`` that is not drawn yet, once per sweep."""
        from prh.training.image import train_scene_ids
        from prh.views.render_cache import cache_key, load_or_build

        folder = self.cache_folder(Path(out_dir))
        ids = train_scene_ids(self._train_config())
        for modality in sorted(set(self.modalities)):
            key = cache_key(self.world_seed, modality, self.image_size, self.render_views, ids,
                            world=self.world)  # fmt: skip
            if not (folder / key.file_name).is_file():
                load_or_build(folder, key, ids, workers=self.cache_workers)

    def __call__(self, cell: Cell, out_dir: Path) -> dict[str, Any]:
        out_dir = Path(out_dir)
        train, image = self.configs(cell, out_dir)
        run_dir = out_dir / "runs" / cell.cell_id(self.name, self.options())
        t0 = time.perf_counter()
        train_or_resume(train, image, run_dir, self.threads)
        return {
            "score": None,
            "calibrated": None,
            "train_seconds": round(time.perf_counter() - t0, 3),
            "run_dir": str(run_dir.relative_to(out_dir)),
        }


def train_or_resume(train: Any, image: Any, run_dir: Path, threads: int) -> str:
    """Finish the image run in ``run_dir`` by :func:`~prh.training.lifecycle.fit`'s one rule
    (``resume="auto"``); return what it did: ``reused`` (its weights are there), ``resumed``
    (from its stored config and latest checkpoint, with its own thread count) or ``trained``
    (from scratch; what a start killed before its first checkpoint left is cleared by fit)."""
    from prh.training.image import train_image
    from prh.training.rundir import run_state

    state = run_state(run_dir)
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    train_image(train, image, run_dir, False, resume="auto", threads=max(1, threads), workers=1)
    return {"finished": "reused", "started": "resumed"}.get(state, "trained")
