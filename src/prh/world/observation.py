"""Each modality's observation model on the moving cave, and its own theory (docs/theory.md sec. 9).

What an observation of state ``s`` shows, per modality (``O_m(s, c)``, rows summing to 1):

- ``image``: the state itself (a render shows shape, colour, size and cell);
- ``text``: the object's colour and shape always; its size and cell as the caption grammar says
  them (:func:`prh.world.captions.stated_probabilities`: partial captions name the size half the
  time and the cell one time in six; literal captions always both);
- ``sketch``: shape, size and cell, never the colour (line drawings).

:func:`modality_theory` turns a model into the modality's own theory embedding (the top ``k``
eigenfunctions of ``O^T Pi O``, :mod:`prh.theory.observation`), :func:`theory_of_captions`
evaluates it on given captions (their stated factors read back from their words), and
:func:`predicted_cc` gives the canonical correlations that two perfect encoders of two modalities
reach on one observation each per state (and each modality's ceiling against ``g*``).

Layer: glue between :mod:`prh.world.moving` and :mod:`prh.theory.observation`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from prh.errors import InputError
from prh.theory.observation import ContentSpectrum, content_spectrum, observation_cc, state_cc
from prh.world.captions import stated_factors, stated_probabilities

MODALITIES = ("image", "text", "sketch")


@dataclass(frozen=True, eq=False)
class ModalityTheory:
    """One modality's observation model and its own theory.

    Attributes
    ----------
    modality : str
    O : ndarray, shape (N, C)
        ``P(content | state)``.
    keys : list of tuple
        Content ``c``'s key (what it shows).
    spectrum : ContentSpectrum
        Its eigenvalues and eigenfunctions ``f`` ``(C, k)``.
    """

    modality: str
    O: np.ndarray
    keys: list[tuple]
    spectrum: ContentSpectrum

    @property
    def functions(self) -> np.ndarray:
        return self.spectrum.functions


def _check(world: Any, modality: str) -> None:
    if modality not in MODALITIES:
        raise InputError(f"modality {modality!r}: expected one of {', '.join(MODALITIES)}")
    from prh.world.registry import has_theory

    if not has_theory(world):
        raise InputError("a modality's theory needs a world with a pair kernel (--world moving)")


def _text_key(o: Any, size: bool, cell: bool) -> tuple:
    return ("text", o.shape, o.colour, o.size if size else -1,
            o.row * 3 + o.col if cell else -1)  # fmt: skip


def observation_model(world: Any, modality: str) -> tuple[np.ndarray, list[tuple]]:
    """``(O (N, C), keys)`` of ``modality`` on ``world`` (module docstring)."""
    _check(world, modality)
    n = world.num_scenes
    if modality == "image":
        return np.eye(n), [("image", i) for i in range(n)]
    index: dict[tuple, int] = {}
    rows, cols, vals = [], [], []
    laws = stated_probabilities(world.config.caption_style)
    for i in range(n):
        o = world.object(i)
        if modality == "sketch":
            law = {("sketch", o.shape, o.size, o.row * 3 + o.col): 1.0}
        else:
            law = {_text_key(o, s, c): pr for (s, c), pr in laws.items()}
        for key, pr in law.items():
            rows.append(i), cols.append(index.setdefault(key, len(index))), vals.append(pr)
    O = np.zeros((n, len(index)))
    np.add.at(O, (rows, cols), vals)
    return O, list(index)


@functools.lru_cache(maxsize=8)
def modality_theory(world: Any, modality: str, k: int = 8) -> ModalityTheory:
    """The modality's observation model and the top ``k`` eigenpairs of its content kernel."""
    O, keys = observation_model(world, modality)
    return ModalityTheory(modality, O, keys, content_spectrum(world.pair_kernel(), O, k))


def theory_of_captions(
    world: Any, ids: Sequence[int], texts: Sequence[str], k: int = 8
) -> np.ndarray:
    """The text modality's theory embedding ``f_text(c)`` ``(n, k)`` of one caption per given
    state: the content each caption shows (its stated factors, read back from its words)."""
    ids = world.check_ids(ids)
    if len(ids) != len(texts):
        raise InputError(f"{len(ids)} states but {len(texts)} captions")
    th = modality_theory(world, "text", k)
    index = {key: j for j, key in enumerate(th.keys)}
    rows = []
    for i, t in zip(ids, texts, strict=True):
        size, cell = stated_factors(t)
        key = _text_key(world.object(int(i)), size, cell)
        if key not in index:  # a caption this style never writes (a cell without a size)
            raise InputError(f"caption of state {int(i)} shows {key[1:]}, not a content of "
                             f"the {world.config.caption_style} style: {t!r}")  # fmt: skip
        rows.append(index[key])
    return th.functions[np.asarray(rows)]


def theory_of_observations(world: Any, modality: str, ids: Sequence[int], k: int = 8) -> np.ndarray:
    """The modality's theory embedding of one observation per state when the observation is a
    function of the state (image, sketch) ``(n, k)``; text needs the captions
    (:func:`theory_of_captions`)."""
    if modality == "text":
        raise InputError("the text theory of a state depends on its caption: theory_of_captions")
    th = modality_theory(world, modality, k)
    ids = world.check_ids(ids)
    return th.O[ids] @ th.functions  # each row of O has one 1


def predicted_cc(world: Any, a: str, b: str, k: int = 8) -> dict[str, list[float]]:
    """``{"observation", "state"}``: the canonical correlations two perfect encoders of
    modalities ``a`` and ``b`` reach (:mod:`prh.theory.observation`), descending; ``b`` may be
    ``"g*"`` for a modality's ceiling against the world's theory embedding."""
    p = world.spectrum(k + 1).p
    ta = modality_theory(world, a, k)
    if b == "g*":
        O_b, f_b = np.eye(world.num_scenes), world.theory_embedding(np.arange(world.num_scenes), k)
    else:
        tb = modality_theory(world, b, k)
        O_b, f_b = tb.O, tb.functions
    return {
        "observation": [float(v) for v in observation_cc(p, ta.O, ta.functions, O_b, f_b)],
        "state": [float(v) for v in state_cc(p, ta.O, ta.functions, O_b, f_b)],
    }
