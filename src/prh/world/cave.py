"""``CaveWorld``: the embedded world, seen as images and told as captions.

Scene ``i`` is a fixed state (objects, colours, sizes, cells); its observations vary with a
nuisance: the render seed for images (light, viewpoint, jitter, background, noise), the wording
seed for captions. Everything is a pure function of ``(config, i, nuisance seed)``.

Layer: a thin stateful wrapper over the pure functions of :mod:`prh.world.scenes`,
:mod:`prh.world.captions` and :mod:`prh.world.render`.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass

import numpy as np

from prh.errors import InputError
from prh.world import captions as _captions
from prh.world.ids import scene_id
from prh.world.render import render_scene
from prh.world.scenes import Scene, object_count_probs, sample_scene_table, scene_from_row
from prh.world.sketch import render_sketch
from prh.world.themes import sample_themed_scene_table

SPLITS = ("train", "test", "all")
# The scene table is drawn eagerly (rejection sampling keeps scenes distinct, in draw order, so
# scene i depends on the draws before it); memory and time grow with the number of scenes, about
# 1 GB and 6 s at this bound.
MAX_SCENES = 1_000_000


@dataclass(frozen=True)
class WorldConfig:
    """Configuration of the cave world.

    Attributes
    ----------
    seed : int
        World seed: which scenes exist, which are held out, every caption and render.
    image_size : int
        Default render side in pixels (64; 224 for pretrained ImageNet encoders).
    num_scenes : int
        Number of distinct scenes (20,000 by default; 2 to :data:`MAX_SCENES`).
    max_objects : int
        Objects per scene: 1 to ``max_objects``.
    test_fraction : float
        Fraction of scenes held out in the ``"test"`` split.
    omit_prob : float
        Probability that a caption leaves one object out (a partial description).
    themes : int
        0 (default): the plain world, every object drawn independently. ``T > 0``: each scene
        draws one of ``T`` themes that decide which shapes, colours, sizes and cells co-occur;
        every value keeps its marginal frequency (:mod:`prh.world.themes`). Another world.
    theme_strength : float
        How narrow a theme is (log-weight scale; 0 makes every theme uniform). Themes only.
    caption_style : {"partial", "literal"}
        ``partial`` (default): captions say the size and position of an object only sometimes,
        and may leave an object out (alt-text-like); ``literal``: every factor of every object
        stated (:mod:`prh.world.captions`).
    """

    seed: int = 0
    image_size: int = 64
    num_scenes: int = 20_000
    max_objects: int = 3
    test_fraction: float = 0.1
    omit_prob: float = 0.2
    themes: int = 0
    theme_strength: float = 2.0
    caption_style: str = "partial"

    def to_dict(self) -> dict:
        return asdict(self)


class CaveWorld:
    """The cave world: ``num_scenes`` distinct scenes, their captions and their renders.

    Examples
    --------
    >>> w = CaveWorld(WorldConfig(seed=0, num_scenes=100))
    >>> len(w.captions(3, n=5, seed=0))
    5
    >>> w.render(3, nuisance_seed=1).shape
    (64, 64, 3)
    """

    def __init__(self, config: WorldConfig | None = None) -> None:
        self.config = config or WorldConfig()
        c = self.config
        if not 2 <= c.num_scenes <= MAX_SCENES:
            raise InputError(
                f"world: num_scenes must be 2 to {MAX_SCENES:,}, got {c.num_scenes:,} "
                "(the scene table is held in memory)"
            )
        if not 0.0 < c.test_fraction < 1.0:
            raise InputError(f"world: test_fraction must be in (0, 1), got {c.test_fraction}")
        if c.themes < 0:
            raise InputError(f"world: themes must be >= 0 (0 = no themes), got {c.themes}")
        _captions.check_caption_style(c.caption_style)
        self._theme: np.ndarray | None = None
        try:
            if c.themes:
                self._table, self._theme = sample_themed_scene_table(
                    c.num_scenes,
                    c.seed,
                    c.max_objects,
                    c.themes,
                    c.theme_strength,
                    object_count_probs(c.max_objects),
                )
            else:
                self._table = sample_scene_table(c.num_scenes, c.seed, c.max_objects)
        except ValueError as e:
            raise InputError(f"world: {e}") from None
        perm = np.random.default_rng([c.seed, 0x5B17]).permutation(c.num_scenes)
        n_test = max(1, round(c.test_fraction * c.num_scenes))
        self._splits = {
            "test": np.sort(perm[:n_test]),
            "train": np.sort(perm[n_test:]),
            "all": np.arange(c.num_scenes),
        }
        self._scenes: dict[int, Scene] = {}

    @property
    def num_scenes(self) -> int:
        return self.config.num_scenes

    def __len__(self) -> int:
        return self.num_scenes

    def _size(self, size: int | None) -> int:
        size = int(size or self.config.image_size)
        if not 16 <= size <= 1024:
            raise InputError(f"world: image size must be 16 to 1024 pixels, got {size}")
        return size

    def _check(self, i: int) -> int:
        i = int(i)
        if not 0 <= i < self.num_scenes:
            raise InputError(f"world: scene index {i} out of range 0..{self.num_scenes - 1}")
        return i

    def scene(self, i: int) -> Scene:
        """Scene ``i`` (cached)."""
        i = self._check(i)
        s = self._scenes.get(i)
        if s is None:
            s = scene_from_row(i, self._table[i])
            if len(self._scenes) < 200_000:
                self._scenes[i] = s
        return s

    def theme(self, i: int) -> int:
        """The theme scene ``i`` was drawn from (0 in a world without themes)."""
        i = self._check(i)
        return 0 if self._theme is None else int(self._theme[i])

    def themes_of(self, ids) -> np.ndarray:
        """``(N,)`` int64: the theme of each scene index in ``ids`` (zeros without themes)."""
        ids = np.asarray([self._check(i) for i in ids], dtype=np.int64)
        return np.zeros(len(ids), np.int64) if self._theme is None else self._theme[ids].copy()

    def state(self, i: int) -> dict:
        """Scene ``i`` as a JSON-able dict (objects with shape, colour, size, cell; relations)."""
        return self.scene(i).to_state()

    def caption_rng(self, i: int, seed: int) -> random.Random:
        """The word-choice generator of scene ``i`` under wording seed ``seed``."""
        # hash() of a tuple of ints is stable across processes (no string hashing involved).
        return random.Random(hash((self.config.seed, 0xCA9, int(i), int(seed))))

    def captions(self, i: int, n: int = 5, seed: int = 0) -> list[str]:
        """``n`` true captions of scene ``i`` with pairwise different wording.

        The list is a pure function of ``(world seed, i, n, seed)``; another ``seed`` gives other
        wordings (there are many thousand per scene).
        """
        return _captions.captions(
            self.scene(i), n, self.caption_rng(i, seed), omit_prob=self.config.omit_prob,
            style=self.config.caption_style,
        )  # fmt: skip

    def render(self, i: int, nuisance_seed: int = 0, size: int | None = None) -> np.ndarray:
        """Render scene ``i`` under nuisance ``nuisance_seed``: ``(H, W, 3)`` uint8.

        Same arguments give the same image; another nuisance seed moves the light, camera, object
        yaw and position jitter, background texture and noise.
        """
        i = self._check(i)
        rng = np.random.default_rng([self.config.seed, 0x1A6E, i, int(nuisance_seed)])
        return render_scene(self.scene(i), rng, self._size(size))

    def sketch(self, i: int, nuisance_seed: int = 0, size: int | None = None) -> np.ndarray:
        """A third modality: a line sketch of scene ``i`` (no colour), ``(H, W, 3)`` uint8."""
        i = self._check(i)
        rng = np.random.default_rng([self.config.seed, 0x5E7C, i, int(nuisance_seed)])
        return render_sketch(self.scene(i), rng, self._size(size))

    def split(self, name: str) -> np.ndarray:
        """Scene indices of split ``name``: ``"train"``, ``"test"`` (held out) or ``"all"``."""
        if name not in self._splits:
            raise InputError(f"world: unknown split {name!r}; expected one of {', '.join(SPLITS)}")
        return self._splits[name].copy()

    def train_scenes(self, n: int = 0) -> np.ndarray:
        """The first ``n`` scenes of the train split (``0``: all of them).

        Raises
        ------
        InputError
            ``n`` larger than the split (``--train-scenes`` is refused, never clamped).
        """
        ids = self.split("train")
        if n > len(ids):
            raise InputError(
                f"--train-scenes {n:,}: the world has {len(ids):,} training scenes "
                f"(0 = all of them)"
            )
        return ids[:n] if n else ids

    @staticmethod
    def image_id(i: int) -> str:
        """The id of scene ``i`` in corpora and feature files: ``"scene_{i}"``."""
        return scene_id(i)

    def corpus(self, scene_ids=None, captions_per_scene: int = 5, seed: int = 0):
        """A fixed caption corpus of the given scenes (all scenes by default).

        Returns
        -------
        prh.data.CaptionCorpus
            Image ids ``"scene_{i}"``, ``captions_per_scene`` distinct captions each, and the
            world's ``"train"``/``"test"`` splits restricted to these scenes.
        """
        from prh.data.corpus import CaptionCorpus

        ids = np.arange(self.num_scenes) if scene_ids is None else np.asarray(scene_ids)
        image_ids = [self.image_id(i) for i in ids]
        caps = [self.captions(int(i), captions_per_scene, seed) for i in ids]
        present = set(int(i) for i in ids)
        splits = {
            k: [self.image_id(i) for i in self._splits[k] if int(i) in present]
            for k in ("train", "test")
        }
        return CaptionCorpus(image_ids, caps, splits, source=f"cave(seed={self.config.seed})")
