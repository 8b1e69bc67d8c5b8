"""Caption sources: where the text view samplers draw captions of an item from.

A source has ``num_items`` items (images or scenes) and draws ``n`` captions of item ``j`` with
pairwise different *nuisance* (wording) from a ``np.random.Generator``, together with an integer
nuisance id per caption (two captions share the nuisance iff their ids are equal).

- :class:`CorpusSource`: the fixed captions of a :class:`~prh.data.CaptionCorpus`; the nuisance
  id is the caption's global index.
- :class:`WorldCaptionSource`: captions generated on the fly from cave-world scenes, infinitely
  many wordings (or a fixed pool of ``wordings`` per scene); the nuisance id encodes the wording
  seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from prh.data.corpus import CaptionCorpus
from prh.errors import InputError


@runtime_checkable
class CaptionSource(Protocol):
    """What the text view samplers need from a corpus or a world."""

    @property
    def num_items(self) -> int: ...

    def item_id(self, j: int) -> str: ...

    def min_captions(self) -> int:
        """The fewest distinct captions any item can give (``2**31`` when unbounded)."""
        ...

    def draw(self, j: int, n: int, rng: np.random.Generator) -> tuple[list[str], list[int]]:
        """``n`` captions of item ``j`` with distinct nuisance, and their nuisance ids."""
        ...

    def state_of(self, items: np.ndarray) -> np.ndarray:
        """State ids of items: the image index in a corpus, the scene index in a world."""
        ...


class CorpusSource:
    """Items are the images of a :class:`CaptionCorpus`; nuisance ids are caption indices."""

    def __init__(self, corpus: CaptionCorpus) -> None:
        if len(corpus) == 0:
            raise InputError(f"corpus {corpus.source or '<memory>'}: no images")
        self.corpus = corpus
        counts = np.array([len(c) for c in corpus.captions], dtype=np.int64)
        self._offset = np.concatenate([[0], np.cumsum(counts)[:-1]])
        self._counts = counts

    @property
    def num_items(self) -> int:
        return len(self.corpus)

    def item_id(self, j: int) -> str:
        return self.corpus.image_ids[j]

    def min_captions(self) -> int:
        return int(self._counts.min())

    def draw(self, j: int, n: int, rng: np.random.Generator) -> tuple[list[str], list[int]]:
        caps = self.corpus.captions[j]
        if len(caps) < n:
            raise InputError(
                f"corpus {self.corpus.source or '<memory>'}: image {self.item_id(j)!r} has "
                f"{len(caps)} captions, {n} needed"
            )
        k = rng.choice(len(caps), size=n, replace=False) if n > 1 else [rng.integers(len(caps))]
        return [caps[int(x)] for x in k], [int(self._offset[j] + x) for x in k]

    def state_of(self, items: np.ndarray) -> np.ndarray:
        return np.asarray(items, dtype=np.int64)


class SceneSource:
    """The items of a source over cave-world scenes: their ids, count and state; subclasses say
    how ``draw`` writes captions.

    Parameters
    ----------
    world : CaveWorld
        The world.
    scene_ids : sequence of int, optional
        Which scenes (default: the world's ``split``).
    split : str
        Used when ``scene_ids`` is None: ``"train"`` (default), ``"test"`` or ``"all"``.
    wordings : int, optional
        ``None``: every draw is fresh; an integer ``W >= 1``: a fixed pool of ``W`` per scene.
    """

    label = "scene source"  # names the source in its error messages

    def __init__(
        self,
        world,
        scene_ids: Sequence[int] | None = None,
        split: str = "train",
        wordings: int | None = None,
    ) -> None:
        self.world = world
        self.scene_ids = np.asarray(world.split(split) if scene_ids is None else scene_ids)
        if len(self.scene_ids) == 0:
            raise InputError(f"{self.label}: no scenes")
        if wordings is not None and wordings < 1:
            raise InputError(f"{self.label}: wordings must be >= 1, got {wordings}")
        self.wordings = wordings

    @property
    def num_items(self) -> int:
        return len(self.scene_ids)

    def item_id(self, j: int) -> str:
        return self.world.image_id(int(self.scene_ids[j]))

    def state_of(self, items: np.ndarray) -> np.ndarray:
        return self.scene_ids[np.asarray(items)].astype(np.int64)


class WorldCaptionSource(SceneSource):
    """Items are cave-world scenes; captions are generated on the fly.

    Parameters as :class:`SceneSource`; ``wordings``: ``None`` uses a fresh wording seed every
    draw (unbounded distinct wordings), an integer ``w`` a fixed pool of ``w`` captions per scene
    (like a real corpus with ``w`` captions).
    """

    label = "world source"

    def min_captions(self) -> int:
        return self.wordings if self.wordings is not None else 2**31

    def draw(self, j: int, n: int, rng: np.random.Generator) -> tuple[list[str], list[int]]:
        scene = int(self.scene_ids[j])
        if self.wordings is not None:
            if n > self.wordings:
                raise InputError(f"world source: {n} captions asked, pool has {self.wordings}")
            pool = self.world.captions(scene, self.wordings, seed=0)
            k = rng.choice(self.wordings, size=n, replace=False)
            return [pool[int(x)] for x in k], [scene * self.wordings + int(x) for x in k]
        w = int(rng.integers(0, 2**55))
        caps = self.world.captions(scene, n, seed=w)
        return caps, [(w << 3) + k for k in range(n)]


def as_source(obj) -> CaptionSource:
    """A :class:`CaptionSource` from a corpus, a world (its train split) or a source."""
    if isinstance(obj, CaptionCorpus):
        return CorpusSource(obj)
    if hasattr(obj, "render") and hasattr(obj, "captions") and hasattr(obj, "split"):
        return WorldCaptionSource(obj)
    if isinstance(obj, CaptionSource):
        return obj
    raise InputError(
        "views: expected a CaptionCorpus, a CaveWorld or a caption source, "
        f"got {type(obj).__name__}"
    )
