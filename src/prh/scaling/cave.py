"""The ``cave`` cell runner: train a text encoder on the cave world, measure it against vision.

One cell = one :func:`prh.training.train` run (views good / bad / next-token / mixture at ``rho``,
``samples`` pairs or sequences, model preset, seed) into ``OUT/runs/<cell id>``, then:

1. the held-out scenes (the first ``eval_scenes`` of ``world.split("test")``) are captioned (one
   seeded caption per scene, ``world.captions(i, 1, caption_seed)``) and embedded by the trained
   model, every layer (``LoadedRun.encode_texts``: ``(N, L, D)``);
2. the same scenes' renders were embedded ONCE per sweep by the frozen vision encoder
   (:meth:`CaveBackend.prepare`, cached in ``OUT/vision-<hash>.safetensors``);
3. :func:`prh.metrics.measure` gives mutual-kNN (``k`` neighbours, max over layer pairs) and, with
   ``null`` permutations, the calibrated score (score minus the null's 95% quantile).

A run folder left by a killed sweep without its final weights is removed and retrained (cells are
whole or absent). torch uses ``threads`` intra-op threads per worker.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from prh.errors import InputError
from prh.scaling.grid import Cell


@dataclass(frozen=True)
class CaveBackend:
    """Train-and-measure runner on the cave world (see the module docstring).

    Attributes
    ----------
    vision : str
        Frozen image encoder spec (:func:`prh.encoders.load_encoder`).
    preset : str
        Text model preset (``tiny``, ``small``, ``base``).
    eval_scenes : int
        Held-out scenes measured per cell.
    k : int
        Mutual-kNN neighbours.
    null : int
        Permutations for the calibrated score (0: ``calibrated`` is ``None``).
    world_seed, caption_seed, nuisance_seed : int
        Which world, which caption wording and which renders are measured.
    image_size : int
        Render side fed to the vision encoder.
    threads : int
        torch intra-op threads per cell.
    train_overrides : tuple of (str, value)
        Extra :class:`prh.training.TrainConfig` fields (e.g. ``(("train_scenes", 200),)``).
    """

    vision: str = "efficientnet-lite0"
    preset: str = "tiny"
    eval_scenes: int = 500
    k: int = 10
    null: int = 100
    world_seed: int = 0
    caption_seed: int = 0
    nuisance_seed: int = 0
    image_size: int = 224
    threads: int = 1
    train_overrides: tuple[tuple[str, Any], ...] = ()
    name: str = "cave"

    def options(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("name")
        d.pop("threads")  # does not change results
        d["train_overrides"] = [list(kv) for kv in self.train_overrides]
        return d

    def _vision_path(self, out_dir: Path) -> Path:
        key = {k: v for k, v in self.options().items() if k in ("vision", "eval_scenes",
               "world_seed", "nuisance_seed", "image_size")}  # fmt: skip
        h = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]
        return out_dir / f"vision-{h}.safetensors"

    def _world(self):
        from prh.world import CaveWorld, WorldConfig

        return CaveWorld(WorldConfig(seed=self.world_seed))

    def _scene_ids(self, world) -> list[int]:
        test = world.split("test")
        if len(test) < self.eval_scenes:
            raise InputError(f"cave backend: {self.eval_scenes} eval scenes, world has {len(test)}")
        return [int(i) for i in test[: self.eval_scenes]]

    def prepare(self, out_dir: Path) -> None:
        """Embed the held-out scenes' renders with the frozen vision encoder, once per sweep."""
        path = self._vision_path(Path(out_dir))
        if path.exists():
            return
        import torch

        from prh.encoders import load_encoder
        from prh.encoders.embed import EmbedConfig, embed_world
        from prh.features import save_features

        torch.set_num_threads(max(1, self.threads))
        world = self._world()
        ids = self._scene_ids(world)
        enc = load_encoder(self.vision)
        cfg = EmbedConfig(modality="image", nuisance_seed=self.nuisance_seed,
                          image_size=self.image_size)  # fmt: skip
        feats, names = embed_world(enc, world, ids, cfg)
        save_features(path, feats, ids=names, metadata={"encoder": self.vision})

    def __call__(self, cell: Cell, out_dir: Path) -> dict[str, Any]:
        import time

        import torch

        from prh.features import load_features
        from prh.metrics import measure
        from prh.training import load_run, train
        from prh.training.config import train_config

        torch.set_num_threads(max(1, self.threads))
        out_dir = Path(out_dir)
        vision = load_features(self._vision_path(out_dir))
        rho = float(cell.rho) if cell.views == "mixture" else None
        cfg = train_config(
            self.preset,
            views=cell.views,
            rho=rho,
            samples=int(cell.samples),
            seed=int(cell.seed),
            world_seed=self.world_seed,
            checkpoint_every=0,
            **dict(self.train_overrides),
        )
        run_dir = out_dir / "runs" / cell.cell_id(self.name, self.options())
        if run_dir.exists() and not (run_dir / "model.safetensors").exists():
            shutil.rmtree(run_dir)  # a run killed mid-training: start the cell again
        t0 = time.perf_counter()
        if not run_dir.exists():
            run_dir.parent.mkdir(parents=True, exist_ok=True)
            train(cfg, run_dir, progress=False, threads=max(1, self.threads))
        train_seconds = time.perf_counter() - t0
        world = self._world()
        ids = self._scene_ids(world)
        texts = [world.captions(i, 1, self.caption_seed)[0] for i in ids]
        text = load_run(run_dir, device="cpu").encode_texts(texts)  # (N, L, D)
        res = measure(text, vision.features, metric="mutual_knn", k=self.k, null=self.null,
                      seed=int(cell.seed))  # fmt: skip
        return {
            "score": float(res.score),
            "calibrated": None if res.calibrated is None else float(res.calibrated),
            "p_value": None if res.p_value is None else float(res.p_value),
            "layers": None if res.layers is None else list(res.layers),
            "train_seconds": round(train_seconds, 3),
            "run_dir": str(run_dir.relative_to(out_dir)),
        }
