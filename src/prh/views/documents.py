"""Fair next-token documents: several captions of one scene, optionally in one style, and the
budget accounting that keeps the comparison with the JEPA samplers equal.

- :class:`StyledDocumentSource`: a caption source whose ``draw(j, n)`` gives ``n`` captions of
  scene ``j`` in one style (:mod:`prh.world.styles`). Given to the next-token sampler with
  ``ViewConfig(doc_captions=D)``, each row is a document of ``D`` captions of one scene in one
  register, vocabulary and order, so the continuation is predictable from the prefix only through
  the scene. ``wordings=W`` fixes a pool of ``W`` documents per scene (like the JEPA's fixed
  ``captions_per_scene`` corpus); ``None`` draws a fresh one every time.
- :func:`budget_accounting`: what a budget of ``samples`` rows reads, in rows (scene draws),
  captions and tokens, for each view policy. The budget unit is the **row** (one scene draw: a
  pair for a JEPA, a document for the LM); see ``docs/demo.md``, "Fair next-token protocol".

Layer: a thin source over pure functions; no I/O.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from prh.errors import InputError
from prh.views.sources import SceneSource
from prh.world.styles import styled_document


class StyledDocumentSource(SceneSource):
    """Scenes of a world; ``draw(j, n, rng)`` gives ``n`` captions of scene ``j`` in one style.

    Parameters
    ----------
    world : CaveWorld
        The world (themed or not) the JEPA samplers draw from too.
    scene_ids : sequence of int, optional
        Which scenes (default: the world's ``split``).
    split : str
        ``"train"`` (default), ``"test"`` or ``"all"`` when ``scene_ids`` is None.
    wordings : int, optional
        ``None``: a fresh style and wording every draw. ``W``: document ``k < W`` of a scene is a
        pure function of ``(world seed, scene, k)``; a draw picks one of the ``W``.
    """

    label = "document source"

    def min_captions(self) -> int:
        return 2**31  # a document may hold any number of captions

    def draw(self, j: int, n: int, rng: np.random.Generator) -> tuple[list[str], list[int]]:
        """``n`` captions of scene ``j`` in one style; nuisance ids encode the document."""
        scene = int(self.scene_ids[j])
        if self.wordings is not None:
            k = int(rng.integers(self.wordings))
            doc_rng = self.world.caption_rng(scene, 0x57D0C + k)
            doc_id = scene * self.wordings + k
        else:
            w = int(rng.integers(0, 2**55))
            doc_rng = random.Random(hash((self.world.config.seed, 0x57D0C, scene, w)))
            doc_id = w
        _, caps = styled_document(
            self.world.scene(scene), n, doc_rng, omit_prob=self.world.config.omit_prob
        )
        return caps, [(doc_id << 6) + i for i in range(n)]


@dataclass(frozen=True)
class BudgetAccount:
    """What a training budget reads.

    Attributes
    ----------
    rows : int
        Training rows = scene draws: pairs for a JEPA, documents (sequences) for the LM. The
        budget unit (``--samples``).
    captions : float
        Captions read: 2 per good pair, 1 per bad pair (one caption distorted twice),
        ``2 rho + (1 - rho)`` per mixture pair, ``doc_captions`` per LM document.
    tokens : float or None
        ``rows * tokens_per_row`` when the mean tokens per row is given.
    """

    views: str
    rows: int
    captions: float
    tokens: float | None

    def to_dict(self) -> dict:
        return asdict(self)


def captions_per_row(views: str, doc_captions: int = 1, rho: float = 1.0) -> float:
    """Captions one training row reads under a view policy (see :class:`BudgetAccount`)."""
    if views == "good":
        return 2.0
    if views == "bad":
        return 1.0
    if views == "mixture":
        return 2.0 * rho + (1.0 - rho)
    if views == "next-token":
        if doc_captions < 1:
            raise InputError(f"doc_captions must be >= 1, got {doc_captions}")
        return float(doc_captions)
    raise InputError(f"unknown views {views!r}")


def budget_accounting(
    views: str,
    samples: int,
    doc_captions: int = 1,
    rho: float = 1.0,
    tokens_per_row: float | None = None,
) -> BudgetAccount:
    """The rows, captions and tokens a budget of ``samples`` rows reads.

    Equal budgets are equal **rows** (scene draws), for every policy: the good-view, bad-view and
    next-token runs of one budget see the same number of scene draws from the same world. A
    next-token document of ``D`` captions reads ``D / 2`` times the captions of a good pair, so
    at ``D > 2`` the row accounting gives the LM *more* text than the good-view JEPA: every claim
    that the JEPA is more sample-efficient is then conservative.
    """
    if samples < 0:
        raise InputError(f"samples must be >= 0, got {samples}")
    caps = captions_per_row(views, doc_captions, rho)
    tokens = None if tokens_per_row is None else float(samples) * float(tokens_per_row)
    return BudgetAccount(views=views, rows=int(samples), captions=caps * samples, tokens=tokens)


def mean_tokens_per_row(batches: Sequence[dict]) -> float:
    """Mean real tokens a row of these view batches reads (specials included).

    Next-token rows: the whole document (``tokens_mask``); JEPA rows: both sides.
    """
    total, rows = 0, 0
    for b in batches:
        if "tokens_mask" in b:
            total += int(b["tokens_mask"].sum())
        else:
            total += int(b["a_mask"].sum()) + int(b["b_mask"].sum())
        rows += len(b["index"])
    return total / max(rows, 1)
