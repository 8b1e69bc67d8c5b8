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

With ``curve_every`` (samples), the training run also measures itself against the same vision
features every ``curve_every`` samples (the training eval hook: mutual-kNN, k = 10, best layer
pair, one caption per scene with wording seed ``world_seed + 1``), and the cell's row records
every evaluation point as ``extra["curve"] = [[samples, score], ...]``: one run gives the whole
alignment-vs-samples curve. With ``theory_fit_scenes`` too (a moving world), the run also
measures its held-out canonical correlation with the theory embedding ``g*`` at the same points
(:mod:`prh.training.theory_eval`: fitted on ``theory_fit_scenes`` states of the training split,
the last ones, scored on the held-out scenes), and the row records
``extra["theory_curve"] = [[samples, cc], ...]``.

A run folder left by a killed sweep without its final weights is trained again by
:func:`prh.training.lifecycle.fit`'s one rule (``resume="auto"``: the cells keep no checkpoint,
so fit clears what the killed start left; cells are whole or absent). torch uses ``threads``
intra-op threads per worker.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from prh.errors import InputError
from prh.jsonio import loads
from prh.scaling.grid import Cell
from prh.training.config import TrainConfig, flat_fields, train_config


def embed_renders(
    vision: str,
    world: Any,
    scene_ids: list[int],
    path: Path,
    *,
    nuisance_seed: int = 0,
    image_size: int = 224,
    threads: int = 1,
    progress: Any = None,
) -> Path:
    """Embed the renders of ``scene_ids`` with the frozen encoder ``vision`` into ``path``.

    Every layer, ``(N, L, D)``, ids ``scene_<i>``, metadata ``encoder`` and ``layer_dims``. An
    existing ``path`` is kept (the caller names it by what determines it).
    """
    path = Path(path)
    if path.exists():
        return path
    import torch

    from prh.encoders import load_encoder
    from prh.encoders.embed import EmbedConfig, embed_world
    from prh.features import save_features

    torch.set_num_threads(max(1, threads))
    enc = load_encoder(vision)
    cfg = EmbedConfig(modality="image", nuisance_seed=nuisance_seed, image_size=image_size)
    feats, names = embed_world(enc, world, scene_ids, cfg, progress)
    meta = {"encoder": vision, "layer_dims": json.dumps(list(enc.layer_dims or []))}
    path.parent.mkdir(parents=True, exist_ok=True)
    save_features(path, feats, ids=names, metadata=meta)
    return path


def read_curve(run_dir: Path, key: str = "eval_mutual_knn") -> list[list[float]]:
    """``[[samples, value of key], ...]`` of a run's ``metrics.jsonl``, by samples."""
    f = Path(run_dir) / "metrics.jsonl"
    out: dict[int, float] = {}
    if f.is_file():
        for line in f.read_text().splitlines():
            try:
                r = loads(line, f)
            except ValueError:
                continue  # a line cut by a kill
            if key in r:
                out[int(r["samples"])] = float(r[key])
    return [[s, out[s]] for s in sorted(out)]


def write_theory(world: Any, fit_ids: list[int], test_ids: list[int], path: Path) -> Path:
    """``g*`` (``world.gap_k`` eigenfunctions) of ``fit_ids + test_ids`` into ``path`` (ids
    ``scene_<i>``); an existing ``path`` is kept (the caller names it by what determines it)."""
    path = Path(path)
    if path.exists():
        return path
    from prh.features import save_features

    ids = list(fit_ids) + list(test_ids)
    g = world.theory_embedding(ids, int(world.gap_k))
    path.parent.mkdir(parents=True, exist_ok=True)
    save_features(path, g, [world.image_id(i) for i in ids], {"k": str(int(world.gap_k))})
    return path


# Cell ids (compatibility, the one place): before the runner carried a TrainConfig, its options
# named the recipe as (key, value) pairs, the demo's five in this order, and the next-token
# documents as pairs of their own. A recipe is described the same way, so that the cell ids of
# older sweeps (and the demo's sweep folders) stay.
RECIPE_KEYS = ("batch_size", "lr", "max_len", "min_lr_frac", "train_scenes")
DOC_KEYS = ("doc_captions", "narration_len", "max_len")
CELL_KEYS = ("views", "rho", "samples", "seed")  # set by each cell


def _pairs(
    cfg: TrainConfig, base: TrainConfig, first: tuple[str, ...], block: bool
) -> list[list[Any]]:
    """``[[key, value], ...]`` of the fields of ``cfg`` that differ from ``base`` (none: []),
    led by ``first`` (all of them with ``block``, else those that differ), then the others in
    field order."""
    have, ref = flat_fields(cfg), flat_fields(base)
    diff = [k for k in have if k not in CELL_KEYS and have[k] != ref[k]]
    if not diff:
        return []
    lead = list(first) if block else [k for k in first if k in diff]
    keys = lead + [k for k in diff if k not in lead]
    return [[k, have[k]] for k in keys]


@dataclass(frozen=True)
class CaveBackend:
    """Train-and-measure runner on the cave world (see the module docstring).

    Attributes
    ----------
    vision : str
        Frozen image encoder spec (:func:`prh.encoders.load_encoder`).
    train : TrainConfig
        The recipe every cell trains (:func:`prh.training.train_config`): model preset,
        optimiser, world (``world``, ``world_seed``: :func:`prh.world.make_world`) and data;
        each cell sets its views, rho (mixtures), samples and seed, and no checkpoints.
    next_token : TrainConfig or None
        The recipe of the next-token cells (``views`` next-token; e.g. documents of four
        captions of one scene), None: ``train``'s.
    eval_scenes : int
        Held-out scenes measured per cell.
    k : int
        Mutual-kNN neighbours.
    null : int
        Permutations for the calibrated score (0: ``calibrated`` is ``None``).
    caption_seed, nuisance_seed : int
        Which caption wording and which renders are measured.
    image_size : int
        Render side fed to the vision encoder.
    threads : int
        torch intra-op threads per cell.
    curve_every : int
        Samples between two evaluations of the training run (a multiple of the batch; 0: none).
        Each cell then records its curve (module docstring).
    warmup_max_batches : int
        When > 0, warm-up lasts at most this many batches (``warmup_frac`` is capped at
        ``warmup_max_batches * batch_size / samples``), so long runs do not warm up for longer.
    theory_fit_scenes : int
        With ``curve_every`` on a world with a spectral gap (the moving world): training-split
        states (the split's last ones) that fit the canonical directions of the theory curve
        (module docstring); 0: no theory curve.
    """

    vision: str = "efficientnet-lite0"
    train: TrainConfig = field(default_factory=TrainConfig)
    next_token: TrainConfig | None = None
    eval_scenes: int = 500
    k: int = 10
    null: int = 100
    caption_seed: int = 0
    nuisance_seed: int = 0
    image_size: int = 224
    threads: int = 1
    curve_every: int = 0
    warmup_max_batches: int = 0
    theory_fit_scenes: int = 0
    name: str = "cave"

    def __post_init__(self) -> None:
        if self.next_token is not None and self.next_token.views != "next-token":
            raise InputError(
                f"cave backend: next_token is the recipe of next-token runs, got views "
                f"{self.next_token.views}"
            )

    @property
    def world(self) -> str:
        """The world's registry name (``corpus``: the runs train on a caption corpus with its
        photos, :mod:`prh.world.corpus`, its held-out images from its test split)."""
        return "corpus" if self.train.corpus is not None else str(self.train.world)

    def cost(self, cell: Cell) -> float:
        """A cell's relative cost, for scheduling the longest first: the tokens its run reads at
        most (samples x sequence length; a JEPA sample is two views, a next-token sample one
        document). On 2 workers the default demo's next-token curve (192-token documents) took
        130 s against 40 s for the good-view curve at the same samples."""
        recipe = self.next_token if cell.views == "next-token" and self.next_token else self.train
        views = 1 if cell.views == "next-token" else 2
        return float(cell.samples * views * recipe.max_len)

    def options(self) -> dict[str, Any]:
        """What determines a cell's results (its id, :meth:`Cell.cell_id`)."""
        t = self.train
        base = train_config(t.preset, world=t.world, world_seed=t.world_seed)
        nt_base = replace(t, views="next-token", rho=TrainConfig.rho)
        d: dict[str, Any] = {
            "vision": self.vision, "preset": t.preset, "eval_scenes": self.eval_scenes,
            "k": self.k, "null": self.null, "world": t.world, "world_seed": t.world_seed,
            "caption_seed": self.caption_seed, "nuisance_seed": self.nuisance_seed,
            "image_size": self.image_size, "train_overrides": _pairs(t, base, RECIPE_KEYS, True),
            "curve_every": self.curve_every, "warmup_max_batches": self.warmup_max_batches,
            "view_overrides": [] if self.next_token is None else
            [["next-token", _pairs(self.next_token, nt_base, DOC_KEYS, False)]],
            "theory_fit_scenes": self.theory_fit_scenes,
        }  # fmt: skip
        # newer options: left out at their default, so that the cell ids of older sweeps stay
        for k in ("curve_every", "warmup_max_batches", "view_overrides", "theory_fit_scenes"):
            if not d[k]:
                del d[k]  # the same
        if t.world == TrainConfig.world:
            del d["world"]  # the default world: as before the world became an option
        if t.corpus is not None:
            d["world"], d["corpus"] = "corpus", t.corpus
        return d

    def vision_path(self, out_dir: Path) -> Path:
        """Where :meth:`prepare` caches the held-out renders' vision features."""
        return self._vision_path(Path(out_dir))

    def scene_ids(self, world) -> list[int]:
        """The held-out scenes measured: ``eval_scenes`` of the test split
        (:func:`prh.world.registry.split_sample`: the cave's first ones)."""
        return self._scene_ids(world)

    def theory_path(self, out_dir: Path) -> Path | None:
        """Where :meth:`prepare` writes the theory embedding of the theory curve's states
        (None without one)."""
        if not (self.theory_fit_scenes and self.curve_every):
            return None
        key = {k: v for k, v in self.options().items() if k in ("eval_scenes", "world",
               "world_seed", "theory_fit_scenes")}  # fmt: skip
        h = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]
        return Path(out_dir) / f"theory-{h}.safetensors"

    def theory_scene_ids(self, world) -> tuple[list[int], list[int]]:
        """``(fit, scored)`` states of the theory curve: the training split's last
        ``theory_fit_scenes`` and the held-out scenes."""
        from prh.world.registry import split_sample

        train = world.split("train")
        if len(train) < self.theory_fit_scenes:
            raise InputError(
                f"cave backend: {self.theory_fit_scenes} theory fit scenes, world {self.world} "
                f"has {len(train)} training scenes"
            )
        fit = split_sample(world, "train", self.theory_fit_scenes, from_end=True)
        return fit, self._scene_ids(world)

    def _vision_path(self, out_dir: Path) -> Path:
        key = {k: v for k, v in self.options().items() if k in ("vision", "eval_scenes",
               "world", "world_seed", "nuisance_seed", "image_size", "corpus")}  # fmt: skip
        h = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]
        return out_dir / f"vision-{h}.safetensors"

    def _world(self):
        from prh.world import make_world

        spec = {} if self.train.corpus is None else {"spec": self.train.corpus}
        return make_world(self.world, seed=self.train.world_seed, **spec)

    def _scene_ids(self, world) -> list[int]:
        from prh.world.registry import split_sample

        test = world.split("test")
        if len(test) < self.eval_scenes:
            raise InputError(
                f"cave backend: {self.eval_scenes} eval scenes, world {self.world} has "
                f"{len(test)} test scenes"
            )
        return split_sample(world, "test", self.eval_scenes)

    def prepare(self, out_dir: Path) -> None:
        """Embed the held-out scenes' renders with the frozen vision encoder, once per sweep."""
        theory = self.theory_path(Path(out_dir))
        if theory is not None and not theory.exists():
            from prh.world import has_theory

            world = self._world()
            if not has_theory(world):
                raise InputError(
                    f"cave backend: theory_fit_scenes on world {self.world}, which has no "
                    "spectral gap (no theory embedding)"
                )
            write_theory(world, *self.theory_scene_ids(world), theory)
        path = self._vision_path(Path(out_dir))
        if path.exists():
            return
        world = self._world()
        embed_renders(self.vision, world, self._scene_ids(world), path,
                      nuisance_seed=self.nuisance_seed, image_size=self.image_size,
                      threads=self.threads)  # fmt: skip

    def train_config(self, cell: Cell, out_dir: Path) -> TrainConfig:
        """The :class:`prh.training.TrainConfig` of ``cell``: the recipe of its views with the
        cell's views, rho (a mixture's), samples and seed, no checkpoints, and the curve's
        evaluations."""
        recipe = self.next_token if cell.views == "next-token" and self.next_token else self.train
        cfg = replace(recipe, views=cell.views, samples=int(cell.samples), seed=int(cell.seed),
                      checkpoint_every=0,
                      **({"rho": float(cell.rho)} if cell.views == "mixture" else {}))  # fmt: skip
        changes: dict[str, Any] = {}
        if self.warmup_max_batches:
            cap = self.warmup_max_batches * cfg.batch_size / cfg.samples
            changes["optim"] = replace(cfg.optim, warmup_frac=min(cfg.optim.warmup_frac, cap))
        if self.curve_every:
            if self.curve_every % cfg.batch_size:
                raise InputError(
                    f"cave backend: curve_every {self.curve_every} is not a multiple of the "
                    f"batch {cfg.batch_size}"
                )
            steps = self.curve_every // cfg.batch_size
            changes.update(eval_features=str(self._vision_path(Path(out_dir))),
                           eval_every=steps, log_every=steps)  # fmt: skip
            theory = self.theory_path(Path(out_dir))
            if theory is not None:
                changes["eval_theory"] = str(theory)
        return replace(cfg, **changes) if changes else cfg

    def __call__(self, cell: Cell, out_dir: Path) -> dict[str, Any]:
        import time

        import torch

        from prh.features import load_features
        from prh.metrics import measure
        from prh.training import load_run, train

        torch.set_num_threads(max(1, self.threads))
        out_dir = Path(out_dir)
        vision = load_features(self._vision_path(out_dir))
        cfg = self.train_config(cell, out_dir)
        run_dir = out_dir / "runs" / cell.cell_id(self.name, self.options())
        t0 = time.perf_counter()
        if not (run_dir / "model.safetensors").is_file():  # else a finished cell: reused
            run_dir.parent.mkdir(parents=True, exist_ok=True)
            # fit's one rule for what a killed sweep left: a start without a checkpoint (the
            # cells keep none) is cleared and trained again
            train(cfg, run_dir, progress=False, threads=max(1, self.threads), resume="auto")
        train_seconds = time.perf_counter() - t0
        world = self._world()
        ids = self._scene_ids(world)
        texts = [world.captions(i, 1, self.caption_seed)[0] for i in ids]
        text = load_run(run_dir, device="cpu").encode_texts(texts)  # (N, L, D)
        res = measure(text, vision.features, metric="mutual_knn", k=self.k, null=self.null,
                      seed=int(cell.seed))  # fmt: skip
        out = {
            "score": float(res.score),
            "calibrated": None if res.calibrated is None else float(res.calibrated),
            "p_value": None if res.p_value is None else float(res.p_value),
            "layers": None if res.layers is None else list(res.layers),
            "train_seconds": round(train_seconds, 3),
            "run_dir": str(run_dir.relative_to(out_dir)),
        }
        if self.curve_every:
            out["curve"] = read_curve(run_dir)
            if self.theory_path(out_dir) is not None:
                out["theory_curve"] = read_curve(run_dir, "eval_theory_cc")
        return out
