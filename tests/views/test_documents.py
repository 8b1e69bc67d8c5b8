"""Fair next-token documents: styled captions stay true and share their style; the accounting."""

import random

import numpy as np
import pytest

from prh.errors import InputError
from prh.views import TextTokenizer, ViewConfig, make_view_dataset
from prh.views.documents import (
    StyledDocumentSource,
    budget_accounting,
    captions_per_row,
    mean_tokens_per_row,
)
from prh.world import COLOURS, SHAPES, CaveWorld, WorldConfig
from prh.world.captions import COLOUR_WORDS, SHAPE_WORDS
from prh.world.styles import CaptionStyle, styled_caption, styled_document


@pytest.fixture(scope="module")
def world():
    return CaveWorld(WorldConfig(num_scenes=400, themes=4))


def test_a_style_fixes_every_word_that_is_not_content(world):
    s = world.scene(11)
    style = CaptionStyle(vocab=1, frame=1, verbosity=0, order="reading", full_stop=True)
    caps = [styled_caption(s, style, random.Random(k), omit_prob=0.0) for k in range(20)]
    listings = {c.split(",")[0] for c in caps}  # relation clauses vary, the listing does not
    assert len(listings) == 1
    assert all(c.startswith("there is ") and c.endswith(".") for c in caps)
    for o in s.objects:  # vocab 1: the second synonym (or the only one) of each word
        shape_words = SHAPE_WORDS[SHAPES[o.shape]]
        colour_words = COLOUR_WORDS[COLOURS[o.colour]]
        phrase = f"{colour_words[1 % len(colour_words)]} {shape_words[1 % len(shape_words)]}"
        assert phrase in caps[0]


def test_styled_captions_name_only_true_objects(world):
    for i in range(60):
        s = world.scene(i)
        style, caps = styled_document(s, 3, random.Random(i))
        true = {
            (
                COLOUR_WORDS[COLOURS[o.colour]][style.vocab % len(COLOUR_WORDS[COLOURS[o.colour]])],
                SHAPE_WORDS[SHAPES[o.shape]][style.vocab % len(SHAPE_WORDS[SHAPES[o.shape]])],
            )
            for o in s.objects
        }
        for c in caps:
            named = {pair for pair in true if f"{pair[0]} {pair[1]}" in c}
            assert named, c
            assert len(named) >= len(s.objects) - 1  # at most one object left out


def test_document_rows_hold_d_captions_of_one_scene_in_one_style(world):
    src = StyledDocumentSource(world, wordings=3)
    rng = np.random.default_rng(0)
    caps, nuis = src.draw(5, 4, rng)
    assert len(caps) == 4 and len(set(n >> 6 for n in nuis)) == 1
    # A fixed pool: document k is a pure function of (world, scene, k).
    seen = {tuple(src.draw(5, 4, np.random.default_rng(s))[0]) for s in range(40)}
    assert len(seen) <= 3
    tok = TextTokenizer.train([" ".join(caps), *world.captions(1, 5)], vocab_size=300)
    ds = make_view_dataset(
        src, "next-token", tok, batch_size=8, max_len=160, config=ViewConfig(doc_captions=4)
    )
    b1, b2 = ds.batch(3), ds.batch(3)
    assert (b1["tokens"] == b2["tokens"]).all()  # deterministic
    assert mean_tokens_per_row([b1]) > 4 * 5  # four captions per row


def test_budget_accounting_counts_rows_captions_tokens():
    assert captions_per_row("good") == 2 and captions_per_row("bad") == 1
    assert captions_per_row("mixture", rho=0.5) == 1.5
    assert captions_per_row("next-token", doc_captions=4) == 4
    a = budget_accounting("next-token", 1000, doc_captions=4, tokens_per_row=80.0)
    assert (a.rows, a.captions, a.tokens) == (1000, 4000.0, 80000.0)
    g = budget_accounting("good", 1000)
    assert g.rows == a.rows and g.tokens is None  # equal budgets are equal rows
    with pytest.raises(InputError, match="doc_captions"):
        captions_per_row("next-token", doc_captions=0)
    with pytest.raises(InputError, match="unknown views"):
        captions_per_row("jepa")
