"""``CaptionCorpus``: image ids, each with a list of captions, plus optional named splits.

Layer: a plain container with pure methods (no I/O); loaders live in :mod:`prh.data.loaders`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from prh.errors import InputError


@dataclass
class CaptionCorpus:
    """Images (by id) with their captions.

    Attributes
    ----------
    image_ids : list of str
        One id per image, unique.
    captions : list of list of str
        ``captions[j]`` are the captions of ``image_ids[j]``.
    splits : dict of str to list of str
        Optional named subsets of image ids (``"train"``, ``"val"``, ``"test"``, ...).
    source : str
        Where the corpus came from (a path or ``"cave"``), for messages.
    """

    image_ids: list[str]
    captions: list[list[str]]
    splits: dict[str, list[str]] = field(default_factory=dict)
    source: str = ""

    def __post_init__(self) -> None:
        if len(self.image_ids) != len(self.captions):
            raise InputError(
                f"corpus {self.source or '<memory>'}: {len(self.image_ids)} image ids but "
                f"{len(self.captions)} caption lists"
            )
        if len(set(self.image_ids)) != len(self.image_ids):
            raise InputError(f"corpus {self.source or '<memory>'}: image ids are not unique")

    def __len__(self) -> int:
        return len(self.image_ids)

    def texts(self) -> list[str]:
        """Every caption, flattened in image order."""
        return [c for caps in self.captions for c in caps]

    @property
    def num_captions(self) -> int:
        return sum(len(c) for c in self.captions)

    def summary(self) -> dict:
        """``{"images", "captions", "min_per_image", "max_per_image"}`` (what ``prh data inspect``
        prints)."""
        counts = [len(c) for c in self.captions]
        return {
            "images": len(counts),
            "captions": sum(counts),
            "min_per_image": min(counts) if counts else 0,
            "max_per_image": max(counts) if counts else 0,
        }

    def subset(self, ids: Iterable[str]) -> CaptionCorpus:
        """The images in ``ids`` (in that order); unknown ids raise :class:`InputError`."""
        index = {k: j for j, k in enumerate(self.image_ids)}
        ids = list(ids)
        missing = [k for k in ids if k not in index]
        if missing:
            raise InputError(
                f"corpus {self.source or '<memory>'}: {len(missing)} ids not found "
                f"(first: {missing[0]!r})"
            )
        return CaptionCorpus(
            [k for k in ids], [list(self.captions[index[k]]) for k in ids], {}, self.source
        )

    def split(self, name: str) -> CaptionCorpus:
        """The named split as a corpus (ids of the split that the corpus lacks are skipped)."""
        if name not in self.splits:
            have = ", ".join(sorted(self.splits)) or "none"
            raise InputError(
                f"corpus {self.source or '<memory>'}: no split {name!r} (splits: {have})"
            )
        present = set(self.image_ids)
        return self.subset(k for k in self.splits[name] if k in present)

    def with_min_captions(self, min_captions: int, on_few: str = "error") -> CaptionCorpus:
        """Apply the minimum-captions policy.

        Parameters
        ----------
        min_captions : int
            Images with fewer captions are "few" (2 are needed for good views).
        on_few : {"error", "drop", "keep"}
            Raise :class:`InputError` naming how many images are few, drop them, or keep them.
            Dropping every image is an :class:`InputError` too (an empty corpus is no corpus).
        """
        if on_few not in ("error", "drop", "keep"):
            raise ValueError(f"on_few must be 'error', 'drop' or 'keep', got {on_few!r}")
        few = [j for j, c in enumerate(self.captions) if len(c) < min_captions]
        if not few or on_few == "keep":
            return self
        if on_few == "error":
            j = few[0]
            raise InputError(
                f"corpus {self.source or '<memory>'}: {len(few)} of {len(self)} images have fewer "
                f"than {min_captions} captions (first: {self.image_ids[j]!r} has "
                f"{len(self.captions[j])}); drop them or lower min_captions"
            )
        if len(few) == len(self):
            raise InputError(
                f"corpus {self.source or '<memory>'}: all {len(self)} images have fewer than "
                f"{min_captions} captions; dropping them would leave nothing"
            )
        drop = set(few)
        keep = [j for j in range(len(self)) if j not in drop]
        kept_ids = {self.image_ids[j] for j in keep}
        splits = {k: [i for i in v if i in kept_ids] for k, v in self.splits.items()}
        return CaptionCorpus(
            [self.image_ids[j] for j in keep], [self.captions[j] for j in keep], splits, self.source
        )


def corpus_from_pairs(
    pairs: Sequence[tuple[str, str]], source: str = "", splits: dict | None = None
) -> CaptionCorpus:
    """Group ``(image_id, caption)`` pairs into a corpus, keeping first-seen image order."""
    groups: dict[str, list[str]] = {}
    for image, cap in pairs:
        groups.setdefault(image, []).append(cap)
    return CaptionCorpus(list(groups), list(groups.values()), dict(splits or {}), source)
