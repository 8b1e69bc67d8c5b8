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
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from prh.errors import InputError
from prh.scaling.cave import CELL_KEYS
from prh.scaling.grid import Cell
from prh.training.config import TrainConfig, flat_fields, train_config
from prh.training.image_config import ImageConfig, check_image_run

IMAGE_CELL_MODALITIES = ("image", "sketch")
_RHO = {"good": 1.0, "bad": 0.0}  # what `prh train --views good|bad` stores as rho


def _default_train() -> TrainConfig:
    return train_config("tiny", lr=3e-4, train_scenes=1000, checkpoint_every=20)


# Cell ids (compatibility): the options a runner had before it carried its configs, by name.
TRAIN_KEYS = ("preset", "batch_size", "lr", "train_scenes", "world", "world_seed",
              "checkpoint_every")  # fmt: skip
PER_CELL_IMAGE = ("modality", "cache_dir")  # set by each cell, and where caches lie


@dataclass(frozen=True)
class CaveImageBackend:
    """Train-only runner of image and sketch encoders (see the module docstring).

    Attributes
    ----------
    train : TrainConfig
        The recipe every cell trains (:func:`prh.training.train_config`: size dial, batch,
        learning rate, training scenes, world and its seed, steps between checkpoints, which
        a killed run resumes from); each cell sets its views, rho, samples and seed.
    image : ImageConfig
        Render side, views per scene in the render cache and the pretrained backbone
        (:class:`prh.training.ImageConfig`); each cell sets its modality, the runner its cache.
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

    train: TrainConfig = field(default_factory=_default_train)
    image: ImageConfig = field(default_factory=lambda: ImageConfig(render_views=2))
    threads: int = 1
    render_cache: str | None = None
    modalities: tuple[str, ...] = IMAGE_CELL_MODALITIES
    cache_workers: int = 1
    name: str = "cave-image"

    @property
    def world(self) -> str:
        """The world's registry name."""
        return str(self.train.world)

    def options(self) -> dict[str, Any]:
        """What determines a cell's weights (its id): the recipe's fields by the names the
        runner's options had; other recipe fields only where they differ from the preset's."""
        t, flat = self.train, flat_fields(self.train)
        d = {k: flat[k] for k in TRAIN_KEYS}
        d.update({f.name: getattr(self.image, f.name) for f in fields(self.image)
                  if f.name not in PER_CELL_IMAGE})  # fmt: skip
        if d.get("pool") == "mean":
            del d["pool"]  # the default pooling: the ids cells had before pooling was an option
        ref = flat_fields(train_config(t.preset, **{k: d[k] for k in TRAIN_KEYS[1:]}))
        other = {k: v for k, v in flat.items() if k not in CELL_KEYS and v != ref[k]}
        if other:
            d["train"] = other
        if t.world == TrainConfig.world:
            del d["world"]  # the default world: as before the world became an option
        return d

    def cache_folder(self, out_dir: Path) -> Path:
        """Where the render caches lie (``render_cache``, else ``out_dir/render_cache``)."""
        return Path(self.render_cache) if self.render_cache else Path(out_dir) / "render_cache"

    def configs(self, cell: Cell, out_dir: Path) -> tuple[TrainConfig, ImageConfig]:
        """``(TrainConfig, ImageConfig)`` of ``cell``: what ``prh train --modality M --views V``
        with this runner's settings as flags builds.

        Raises
        ------
        InputError
            For a cell of another modality or of views other than good and bad.
        """
        if cell.modality not in IMAGE_CELL_MODALITIES or cell.views not in _RHO:
            raise InputError(
                f"{self.name} backend: cell {cell.modality} {cell.views}: expected modality "
                f"image or sketch and views good or bad"
            )
        train = replace(self.train, views=cell.views, rho=_RHO[cell.views],
                        samples=int(cell.samples), seed=int(cell.seed))  # fmt: skip
        image = replace(self.image, modality=cell.modality,
                        cache_dir=str(self.cache_folder(out_dir)))  # fmt: skip
        check_image_run(train, image)
        return train, image

    def prepare(self, out_dir: Path) -> None:
        """Draw the render cache of each of ``modalities`` that is not drawn yet, once per sweep."""
        from prh.training.image import train_scene_ids
        from prh.views.render_cache import cache_key, load_or_build

        folder = self.cache_folder(Path(out_dir))
        t, image = self.train, self.image
        ids = train_scene_ids(t)
        for modality in sorted(set(self.modalities)):
            key = cache_key(t.world_seed, modality, image.image_size, image.render_views, ids,
                            world=t.world)  # fmt: skip
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
