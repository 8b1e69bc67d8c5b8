"""Each modality's own theory (docs/theory.md sec. 9): observation models, the content kernel's
eigenfunctions, the canonical correlations two perfect encoders reach, literal captions.

References: an identity observation model gives the state spectrum back; the population
canonical correlations equal a Monte Carlo CCA of sampled observations; literal captions state
every factor, partial ones at the grammar's frequencies.
"""

from __future__ import annotations

import numpy as np
import pytest

from prh.errors import InputError
from prh.theory.observation import content_spectrum, observation_cc, state_cc
from prh.world import make_world
from prh.world.captions import stated_factors, stated_probabilities
from prh.world.moving import MovingWorld, MovingWorldConfig
from prh.world.observation import (
    modality_theory,
    observation_model,
    predicted_cc,
    theory_of_captions,
    theory_of_observations,
)


@pytest.fixture(scope="module")
def small():
    """324 states: fast enough for exact kernels in a unit test."""
    return MovingWorld(MovingWorldConfig(colours=4, shapes=3, sizes=3, lag=20))


@pytest.fixture(scope="module")
def small_literal():
    return MovingWorld(MovingWorldConfig(colours=4, shapes=3, sizes=3, lag=20,
                                         caption_style="literal"))  # fmt: skip


def test_literal_captions_state_every_factor_and_partial_ones_follow_the_grammar():
    lit = make_world("moving-literal", seed=0)
    part = make_world("moving", seed=0)
    ids = range(0, 2160, 7)
    assert all(stated_factors(c) == (True, True) for i in ids for c in lit.captions(i, 2, 1))
    seen: dict = {}
    for i in ids:
        for c in part.captions(i, 4, 3):
            key = stated_factors(c)
            seen[key] = seen.get(key, 0) + 1
    total = sum(seen.values())
    for key, pr in stated_probabilities("partial").items():
        assert abs(seen.get(key, 0) / total - pr) < 0.04, (key, seen)
    assert (False, True) not in seen  # the grammar names a cell only with a size
    assert lit.split("test").tolist() == part.split("test").tolist()  # one world, other words
    with pytest.raises(InputError, match="caption style 'terse'"):
        make_world("moving", seed=0, caption_style="terse")
    with pytest.raises(InputError, match="moving-literal"):
        make_world("moving-literal", seed=0, caption_style="partial")


def test_an_identity_observation_gives_the_state_spectrum_back(small):
    k = 4
    sp = small.spectrum(k + 4)
    th = content_spectrum(small.pair_kernel(), np.eye(small.num_scenes), k)
    np.testing.assert_allclose(th.eigenvalues[: k + 2], sp.nontrivial()[: k + 2], atol=1e-9)
    g = sp.functions[:, 1 : k + 1]
    cc = observation_cc(sp.p, np.eye(len(g)), th.functions, np.eye(len(g)), g)
    np.testing.assert_allclose(cc, 1.0, atol=1e-9)


def test_observation_cc_equals_a_monte_carlo_cca_of_sampled_observations(small):
    k = 4
    Pi = small.pair_kernel()
    p = Pi.sum(1)
    text, sketch = modality_theory(small, "text", k), modality_theory(small, "sketch", k)
    want = observation_cc(p, text.O, text.functions, sketch.O, sketch.functions)
    rng = np.random.default_rng(0)
    n = 200_000
    s = rng.choice(len(p), size=n, p=p)
    cum_t = np.cumsum(text.O, 1)
    ct = (rng.random(n)[:, None] > cum_t[s]).sum(1)  # a content of each state, by O's row
    cs = sketch.O[s].argmax(1)  # the sketch shows one content per state
    a, b = text.functions[ct], sketch.functions[cs]
    a, b = a - a.mean(0), b - b.mean(0)
    wa = np.linalg.inv(np.linalg.cholesky(a.T @ a / n)).T
    wb = np.linalg.inv(np.linalg.cholesky(b.T @ b / n)).T
    got = np.linalg.svd((a @ wa).T @ (b @ wb) / n, compute_uv=False)
    np.testing.assert_allclose(got, want, atol=0.01)
    # averaging over a state's contents first can only raise the correlations
    assert np.all(state_cc(p, text.O, text.functions, sketch.O, sketch.functions) >= want - 1e-9)


def test_each_modality_against_g_star_and_literal_text_against_images(small, small_literal):
    k = 4
    image = predicted_cc(small, "image", "g*", k)["observation"]
    np.testing.assert_allclose(image, 1.0, atol=1e-9)
    literal = predicted_cc(small_literal, "text", "image", k)["observation"]
    np.testing.assert_allclose(literal, 1.0, atol=1e-9)  # Theorem 1: one rotation
    partial = predicted_cc(small, "text", "image", k)["observation"]
    sketch = predicted_cc(small, "sketch", "g*", k)["observation"]
    assert min(partial) < 0.95 or min(sketch) < 0.95  # what some modality cannot see
    assert np.mean(sketch) < 1 - 1e-6  # no colour: a colour eigenfunction is out of reach


def test_theory_of_captions_reads_each_caption_s_content(small):
    k = 4
    ids = [3, 50, 200]
    texts = [small.captions(i, 1, 1)[0] for i in ids]
    f = theory_of_captions(small, ids, texts, k)
    th = modality_theory(small, "text", k)
    for row, i, t in zip(f, ids, texts, strict=True):
        o = small.object(i)
        size, cell = stated_factors(t)
        key = ("text", o.shape, o.colour, o.size if size else -1, o.row * 3 + o.col if cell else -1)
        np.testing.assert_allclose(row, th.functions[th.keys.index(key)])
    img = theory_of_observations(small, "image", ids, k)
    assert img.shape == (3, k)
    with pytest.raises(InputError, match="theory_of_captions"):
        theory_of_observations(small, "text", ids, k)
    with pytest.raises(InputError, match="modality 'audio'"):
        observation_model(small, "audio")
    with pytest.raises(InputError, match="pair kernel"):
        observation_model(make_world("cave", seed=0), "text")
