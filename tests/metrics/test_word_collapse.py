"""The word-collapse check: planted tables with known centred cosines, and a reference."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from prh.errors import InputError
from prh.metrics.word_collapse import PROBE_COLOURS, centred_cosine, word_collapse
from prh.views import TextTokenizer
from prh.world.scenes import COLOURS, SHAPES


@pytest.fixture(scope="module")
def tok() -> TextTokenizer:
    text = " ".join([*SHAPES, *COLOURS, "the", "a", "of", "is"])
    return TextTokenizer.train([text] * 3, vocab_size=400)


def _ids(tok, words):
    return [ids[0] for ids in tok.tokenize(list(words))]


def _planted(tok, D=40, a=1.0, b=1.0):
    """A table whose mean row is 0: shape word w = a u + b e_w (pairwise cosine a^2/(a^2+b^2));
    colour word c = e_c - mean_c e_c (a regular simplex: cosine -1/(n-1)); one row balances."""
    V = tok.vocab_size
    E = np.zeros((V, D))
    u = np.zeros(D)
    u[0] = 1.0
    for k, i in enumerate(_ids(tok, SHAPES)):
        E[i] = a * u
        E[i, 1 + k] += b
    simplex = np.eye(len(COLOURS)) - 1.0 / len(COLOURS)
    for k, i in enumerate(_ids(tok, COLOURS)):
        E[i, 20 : 20 + len(COLOURS)] = simplex[k]
    other = [i for i in range(5, V) if i not in set(_ids(tok, [*SHAPES, *COLOURS]))]
    E[other[0]] = -E.sum(axis=0)  # the mean row is now exactly 0
    assert np.allclose(E.mean(axis=0), 0)
    return E


def test_every_word_is_one_token(tok):
    assert [len(x) for x in tok.tokenize([*SHAPES, *COLOURS])] == [1] * 18


@pytest.mark.parametrize("a, b, want", [(1.0, 1.0, 0.5), (0.0, 1.0, 0.0), (3.0, 1.0, 0.9)])
def test_planted_answers(tok, a, b, want):
    E = _planted(tok, a=a, b=b)
    r = word_collapse(E, tok, SHAPES, COLOURS)
    assert r.shape == pytest.approx(want)
    assert r.colour == pytest.approx(-1 / (len(COLOURS) - 1))
    assert r.shape_words == SHAPES and r.colour_words == COLOURS and r.missing == ()


def test_centring_removes_a_shared_offset(tok):
    """A direction every token shares (the table's mean) is not a shared meaning."""
    E = _planted(tok, a=0.0, b=1.0)
    shifted = E + 50.0 * np.random.default_rng(1).standard_normal(E.shape[1])
    assert word_collapse(shifted, tok, SHAPES, COLOURS).shape == pytest.approx(0.0, abs=1e-9)
    raw = shifted[_ids(tok, SHAPES)]
    raw = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    assert (raw @ raw.T).min() > 0.99  # uncentred, the same words look merged


def test_against_the_probe_formula(tok):
    """The shared probe's definition, written out pair by pair, on a random table."""
    E = np.random.default_rng(2).standard_normal((tok.vocab_size, 16))
    for words in (SHAPES, PROBE_COLOURS):
        ids = _ids(tok, words)
        x = E[ids] - E.mean(axis=0)
        cos = [
            x[i] @ x[j] / np.linalg.norm(x[i]) / np.linalg.norm(x[j])
            for i, j in itertools.permutations(range(len(ids)), 2)
        ]
        assert centred_cosine(E, ids) == pytest.approx(np.mean(cos), abs=1e-12)
    r = word_collapse(E, tok, SHAPES, PROBE_COLOURS)
    assert r.colour == pytest.approx(centred_cosine(E, _ids(tok, PROBE_COLOURS)))


def test_a_word_outside_the_vocabulary_is_named(tok):
    E = _planted(tok)
    r = word_collapse(E, tok, [*SHAPES, "quokka"], COLOURS)
    assert r.missing == ("quokka",) and r.shape == pytest.approx(0.5)
    with pytest.raises(InputError, match="fewer than 2 shape words"):
        word_collapse(E, tok, ["cube", "quokka"], COLOURS)
    with pytest.raises(InputError, match="beyond the table"):
        word_collapse(E[:5], tok, SHAPES, COLOURS)


def test_a_centre_of_the_rows_in_use(tok):
    """Centring on the rows a text uses removes a drift those rows share (and the default centre,
    the whole table's mean, does not when most rows are unused)."""
    E = _planted(tok, a=0.0, b=1.0)
    used = _ids(tok, [*SHAPES, *COLOURS])
    drift = np.zeros(E.shape[1])
    drift[-1] = 3.0
    E[used] += drift  # every used token moved one way; the unused rows stayed
    whole = word_collapse(E, tok, SHAPES, COLOURS)
    in_use = word_collapse(E, tok, SHAPES, COLOURS, centre_ids=used)
    assert whole.shape > 0.8
    x = E[_ids(tok, SHAPES)] - E[used].mean(axis=0)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    want = ((x @ x.T).sum() - len(x)) / (len(x) * (len(x) - 1))
    assert in_use.shape == pytest.approx(want) and in_use.shape < 0.1
