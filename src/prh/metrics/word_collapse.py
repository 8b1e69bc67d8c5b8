"""Word collapse: do a text model's content words stay distinct in its token embeddings?

A next-token model trained on documents in which every shape word (every colour word) occurs in
exactly the same contexts has no reason to tell them apart, and its tied input/output embeddings
merge them (issue 23: still-world next-token 0.95 for shape words, 0.90 for colour words;
good-view JEPA -0.02 / 0.03). The check, for a word set ``W`` and a token-embedding table
``E (V, D)``:

    c = (1/V) sum_v E[v]                          the table's mean row (every id, specials too)
    x_w = E[t(w)] - c                             t(w): the first word piece of w
    centred cosine = mean_{w != w'} cos(x_w, x_w')

This is the definition of the shared probe (``probes/word_collapse_probe.py``): first word piece,
the whole table's mean as the centre, the mean over ordered distinct pairs. 1: the words are one
direction; about 0: as distinct as unrelated words; ``-1 / (|W| - 1)``: spread as far apart as
``|W|`` directions can be. A word the tokenizer cannot spell (``[UNK]``) is left out and named.

Word sets are the caller's: ``prh word-collapse`` measures the world's 8 shape names and its 10
colour names (:mod:`prh.world.scenes`); the probe listed 6 of the colours (:data:`PROBE_COLOURS`).

Layer: pure numpy over a table and a tokenizer (duck-typed: ``tokenize``, ``special_ids``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from prh.errors import InputError
from prh.metrics.probe import mean_pairwise_cosine

PROBE_COLOURS: tuple[str, ...] = ("red", "blue", "green", "yellow", "orange", "purple")


@dataclass(frozen=True)
class WordCollapse:
    """Centred cosines of one model's shape words and colour words.

    Attributes
    ----------
    shape, colour : float
        Mean centred cosine among the shape words, among the colour words.
    shape_words, colour_words : tuple of str
        The words measured (each one token's first piece in the model's vocabulary).
    missing : tuple of str
        Words left out: the tokenizer spells them ``[UNK]``.
    """

    shape: float
    colour: float
    shape_words: tuple[str, ...]
    colour_words: tuple[str, ...]
    missing: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def first_pieces(tokenizer: Any, words: Sequence[str]) -> dict[str, int | None]:
    """The first word-piece id of each word (None when it is a special id such as ``[UNK]``)."""
    specials = getattr(tokenizer, "special_ids", frozenset())
    out: dict[str, int | None] = {}
    for word, ids in zip(words, tokenizer.tokenize(list(words))):
        out[word] = int(ids[0]) if ids and int(ids[0]) not in specials else None
    return out


def centred_cosine(
    table: np.ndarray, ids: Sequence[int], centre_ids: Sequence[int] | None = None
) -> float:
    """Mean pairwise cosine of rows ``ids`` of ``table (V, D)`` after subtracting its mean row
    (``centre_ids``: the mean of those rows instead, e.g. the tokens a corpus uses)."""
    E = np.asarray(table, dtype=np.float64)
    if E.ndim != 2:
        raise InputError(f"word collapse: expected a (V, D) table, got shape {E.shape}")
    rows = E if centre_ids is None else E[np.asarray(centre_ids, dtype=np.int64)]
    return mean_pairwise_cosine(E[np.asarray(ids, dtype=np.int64)], rows.mean(axis=0))


def word_collapse(
    table: np.ndarray,
    tokenizer: Any,
    shapes: Sequence[str],
    colours: Sequence[str],
    centre_ids: Sequence[int] | None = None,
) -> WordCollapse:
    """The centred cosine among ``shapes`` and among ``colours`` in ``table`` (see the module).

    Parameters
    ----------
    table : ndarray, shape (V, D)
        Token embeddings, row ``v`` the vector of token id ``v``.
    tokenizer : TextTokenizer
        The model's tokenizer (gives each word's first piece).
    shapes, colours : sequence of str
        The two word sets (at least two spelled words each).
    centre_ids : sequence of int, optional
        Centre on the mean of these rows (default: every row, the probe's centre). A small
        world's text uses few of a vocabulary's pieces; the unused rows stay near their
        initialisation, so the default centre keeps a drift that every used token shares.
    """
    pieces = first_pieces(tokenizer, [*shapes, *colours])
    missing = tuple(w for w, i in pieces.items() if i is None)
    scores, kept = [], []
    for name, words in (("shape", shapes), ("colour", colours)):
        ok = [w for w in words if pieces[w] is not None]
        if len(ok) < 2:
            raise InputError(f"word collapse: fewer than 2 {name} words in the vocabulary ({ok})")
        if max(pieces[w] for w in ok) >= len(table):
            raise InputError(f"word collapse: token ids beyond the table's {len(table)} rows")
        scores.append(centred_cosine(table, [pieces[w] for w in ok], centre_ids))
        kept.append(tuple(ok))
    return WordCollapse(scores[0], scores[1], kept[0], kept[1], missing)


def word_collapse_of(
    run: Any,
    shapes: Sequence[str],
    colours: Sequence[str],
    centre_ids: Sequence[int] | None = None,
) -> WordCollapse:
    """:func:`word_collapse` of a loaded text run (``prh.training.load_run``): its model's token
    embeddings (``model.trunk.tok``: the input table, tied to the output for a next-token LM)."""
    trunk = getattr(getattr(run, "model", None), "trunk", None)
    tok = getattr(trunk, "tok", None)
    if tok is None or getattr(run, "tokenizer", None) is None:
        raise InputError("word collapse: not a text run (no token embeddings and tokenizer)")
    table = tok.weight.detach().cpu().numpy()
    return word_collapse(table, run.tokenizer, shapes, colours, centre_ids)
