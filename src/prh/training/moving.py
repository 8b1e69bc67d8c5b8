"""A text encoder against the moving world's theory: held-out CCA with ``g*`` (issue 21).

One caption per state (wording seed ``seed``), encoded by a text JEPA; canonical directions are
fitted on the world's train states and scored on its test states
(:func:`prh.metrics.theory_cca`) against :meth:`~prh.world.moving.MovingWorld.theory_embedding`
at the world's ``gap_k``. Any layer is measurable (``layer``: an index into
:func:`prh.training.api.encode_texts`'s layers; ``-1``: the JEPA embedding).

Layer: glue over :mod:`prh.training.api` and :mod:`prh.metrics`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from prh.errors import InputError
from prh.metrics.theory_cca import TheoryCCA, theory_cca


def state_texts(world: Any, scene_ids: np.ndarray, seed: int = 1) -> list[str]:
    """One caption of each state, worded from ``seed``."""
    return [world.captions(int(i), 1, seed=seed)[0] for i in scene_ids]


def text_theory_cca(
    model: Any,
    tokenizer: Any,
    world: Any,
    *,
    max_len: int = 48,
    layer: int = -1,
    k: int | None = None,
    seed: int = 1,
) -> TheoryCCA:
    """Held-out theory CCA of a text model's ``layer`` on ``world`` (see the module).

    Parameters
    ----------
    model, tokenizer : TextEncoder, TextTokenizer
        The encoder (trained or not) and its tokenizer.
    world : MovingWorld
        A world with ``theory_embedding`` (one with a gap at ``k``).
    max_len, layer, k, seed : int
        Tokens per caption; which layer (``-1``: the JEPA embedding, trimmed to its width);
        the theory's width (default: the world's ``gap_k``); the captions' wording seed.
    """
    from prh.training.api import encode_texts

    if not hasattr(world, "theory_embedding"):
        raise InputError(f"theory CCA: world {type(world).__name__} has no theory embedding")
    k = int(k or getattr(world, "gap_k", 8))
    parts = []
    for split in ("train", "test"):
        ids = world.split(split)
        feats = encode_texts(model, tokenizer, state_texts(world, ids, seed), max_len)
        x = feats[:, layer]
        if layer == -1 and hasattr(model, "cfg"):
            x = x[:, : model.cfg.embed_dim]  # the zero padding carries nothing
        parts += [x, world.theory_embedding(ids, k)]
    return theory_cca(*parts, n_boot=200)
