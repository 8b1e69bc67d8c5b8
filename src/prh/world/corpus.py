"""A caption corpus with its photos, as a world: an image is a scene, its photo the render.

``make_world("corpus", spec=PATH)`` builds :class:`CorpusWorld` from any layout of
:func:`prh.data.image_corpus.load_image_corpus` (COCO, Flickr, JSONL, a Hugging Face dataset
folder with an Image column). It has the
:class:`~prh.world.World` interface, so ``prh caption --build --corpus``, ``--eval`` and
``prh serve`` run on it as on the cave: a scene's good views are two captions of one image, its
render is the photo (one view: a photograph has no nuisance seed to redraw), its captions the
corpus's. What a corpus cannot offer is absent by contract: it is no
:class:`~prh.world.SpectralWorld` (no pair kernel, spectrum or theory embedding), it has no
sketches, and it declares no :data:`~prh.world.registry.WORLD_FEATURES`.

Splits: the corpus's ``train`` and ``test`` (``val`` when it has no ``test``); with one of them,
the other is every remaining image; with neither, a seeded 10 % of the images is ``test``.

Layer: a thin stateful wrapper over the loaded corpus; pixels are read on demand.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from prh.errors import InputError

TEST_FRACTION = 0.1  # of a corpus that names no split
MAX_SIDE = 1024  # a photo is read as `prh serve` reads an upload: longer side at most this


@dataclass(frozen=True)
class CorpusWorldConfig:
    """A corpus world: the corpus's path (``spec``) and the seed of a split it does not name."""

    spec: str
    seed: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


def corpus_splits(corpus, seed: int) -> dict[str, np.ndarray]:
    """``{"train", "test", "all"}`` image indices of ``corpus`` (rules in the module doc)."""
    index = {k: j for j, k in enumerate(corpus.image_ids)}
    named = {k: np.array(sorted(index[i] for i in v if i in index), dtype=np.int64)
             for k, v in corpus.splits.items()}  # fmt: skip
    everything = np.arange(len(corpus))
    train, test = named.get("train"), named.get("test", named.get("val"))
    if train is None and test is None:
        perm = np.random.default_rng([seed, 0xC0C0]).permutation(len(corpus))
        test = np.sort(perm[: max(1, round(TEST_FRACTION * len(corpus)))])
    if train is None:
        train = np.setdiff1d(everything, test)
    if test is None:
        test = np.setdiff1d(everything, train)
    return {**named, "train": train, "test": test, "all": everything}


class CorpusWorld:
    """Photos with their captions as a world (see the module docstring).

    Parameters
    ----------
    config : CorpusWorldConfig
        The corpus's path and the seed of a split it does not name.
    """

    def __init__(self, config: CorpusWorldConfig) -> None:
        from prh.data.image_corpus import load_image_corpus

        self.config = config
        self.data = load_image_corpus(config.spec)
        self._splits = corpus_splits(self.data.corpus, config.seed)

    @property
    def num_scenes(self) -> int:
        return len(self.data.corpus)

    def __len__(self) -> int:
        return self.num_scenes

    def _check(self, i: int) -> int:
        i = int(i)
        if not 0 <= i < self.num_scenes:
            raise InputError(f"corpus {self.config.spec}: image index {i} out of range "
                             f"0..{self.num_scenes - 1}")  # fmt: skip
        return i

    def split(self, name: str) -> np.ndarray:
        """Image indices of split ``name`` (``train``, ``test``, ``all`` or any the corpus
        names)."""
        if name not in self._splits:
            have = ", ".join(sorted(self._splits))
            raise InputError(f"corpus {self.config.spec}: no split {name!r} (splits: {have})")
        return self._splits[name].copy()

    def train_scenes(self, n: int = 0) -> np.ndarray:
        """The first ``n`` training images (0: all); more than the split is refused."""
        ids = self.split("train")
        if n > len(ids):
            raise InputError(f"--train-scenes {n:,}: the corpus has {len(ids):,} training images")
        return ids[:n] if n else ids

    def scene(self, i: int) -> str:
        """Image ``i``'s latent state: the photo itself, named by its id."""
        return self.data.corpus.image_ids[self._check(i)]

    def image_id(self, i: int) -> str:
        """The corpus id of image ``i`` (its file name), as in feature files."""
        return self.scene(i)

    def render(self, i: int, nuisance_seed: int = 0, size: int | None = None) -> np.ndarray:
        """The photo of image ``i``, ``(H, W, 3)`` uint8, longer side at most :data:`MAX_SIDE`
        (the encoder resizes it; ``nuisance_seed`` and ``size`` draw generated worlds only)."""
        from prh.data.image_corpus import read_photo
        from prh.imageio import ImageLimits

        path = self.data.files[self._check(i)]  # a file, or a dataset's row
        try:
            return read_photo(path, ImageLimits(max_bytes=1 << 40, max_side=MAX_SIDE))
        except InputError as e:
            raise InputError(f"corpus {self.config.spec}: image {path}: {e}") from None

    def sketch(self, i: int, nuisance_seed: int = 0, size: int | None = None) -> np.ndarray:
        """Refused: a corpus of photos has no line drawings."""
        raise InputError(f"corpus {self.config.spec}: a corpus of photos has no sketches")

    def captions(self, i: int, n: int = 5, seed: int = 0) -> list[str]:
        """Up to ``n`` captions of image ``i``: the first ``n`` for seed 0, another seed starts
        ``seed`` captions further on (cyclically), so seed 1 holds out the first one."""
        caps = self.data.corpus.captions[self._check(i)]
        start = int(seed) % len(caps)
        return (caps[start:] + caps[:start])[: int(n)]

    def corpus(self, scene_ids=None, captions_per_scene: int = 5, seed: int = 0):
        """The :class:`prh.data.CaptionCorpus` of the given images (all by default), up to
        ``captions_per_scene`` captions each, with the splits restricted to them."""
        from prh.data.corpus import CaptionCorpus

        ids = np.arange(self.num_scenes) if scene_ids is None else np.asarray(scene_ids)
        present = {int(i) for i in ids}
        splits = {k: [self.image_id(i) for i in self._splits[k] if int(i) in present]
                  for k in ("train", "test")}  # fmt: skip
        caps = [self.captions(int(i), captions_per_scene, seed) for i in ids]
        return CaptionCorpus([self.image_id(i) for i in ids], caps, splits, self.config.spec)
