"""Caption metrics: CIDEr-D by hand, against pycocoevalcap, and the full scorer's ordering."""

import math
import shutil

import numpy as np
import pytest

from prh.bridge.caption_metrics import cider_d, score_captions, simple_tokenize
from prh.errors import InputError

REFS = {"a": ["a b"], "b": ["c d"]}


def test_cider_d_hand_computation():
    # Two images, so idf = log 2 - log df = log 2 for every reference n-gram (df = 1) and for
    # unseen ones (df clipped to 1). Perfect hyps: cos = 1 for n = 1, 2 and 0 for n = 3, 4
    # (no trigrams), length penalty 1: CIDEr-D = 10 * (1 + 1 + 0 + 0) / 4 = 5.
    mean, per = cider_d(REFS, {"a": "a b", "b": "c d"})
    assert per == {"a": pytest.approx(5.0), "b": pytest.approx(5.0)}
    # "c e" vs "c d": unigram cos = (log2)^2 / (sqrt2 log2)^2 = 1/2, bigram 0 -> 10 * 0.5 / 4.
    # "a b c" vs "a b": unigram 2/sqrt6, bigram 1/sqrt2, penalty exp(-(2 - 1)^2 / 72).
    mean, per = cider_d(REFS, {"a": "a b c", "b": "c e"})
    want_a = 10 * (2 / math.sqrt(6) + 1 / math.sqrt(2)) / 4 * math.exp(-1 / 72)
    assert per["b"] == pytest.approx(1.25)
    assert per["a"] == pytest.approx(want_a)
    assert mean == pytest.approx((want_a + 1.25) / 2)


def test_cider_d_matches_pycocoevalcap():
    from pycocoevalcap.cider.cider import Cider

    rng = np.random.default_rng(0)
    words = "a red blue ball cube left of right the big small tree".split()
    refs = {
        str(i): [" ".join(rng.choice(words, rng.integers(3, 9))) for _ in range(3)]
        for i in range(12)
    }
    hyps = {str(i): " ".join(rng.choice(words, rng.integers(2, 10))) for i in range(12)}
    mean, per = cider_d(refs, hyps)
    ref_mean, ref_per = Cider().compute_score(refs, {k: [v] for k, v in hyps.items()})
    assert mean == pytest.approx(float(ref_mean), rel=1e-12)
    np.testing.assert_allclose([per[k] for k in refs], ref_per, rtol=1e-12)


def test_score_captions_orders_right_above_wrong():
    refs = {
        "1": ["A red ball left of a blue cube.", "a red ball beside a blue cube"],
        "2": ["Two green trees near a lake.", "green trees by the water"],
        "3": ["A small yellow star above a hill.", "a yellow star over the hill"],
    }
    right = {
        "1": "a red ball left of a blue cube",
        "2": "two green trees near the lake",
        "3": "a yellow star above the hill",
    }
    wrong = {"1": right["2"], "2": right["3"], "3": right["1"]}
    metrics = ("BLEU-4", "ROUGE-L", "CIDEr")
    good = score_captions(refs, right, metrics=metrics, tokenizer="simple")
    bad = score_captions(refs, wrong, metrics=metrics, tokenizer="simple")
    assert set(good) == set(metrics)
    assert all(good[m] > bad[m] for m in metrics)
    with pytest.raises(InputError, match="same ids"):
        score_captions(refs, {"1": "x"}, metrics=metrics, tokenizer="simple")
    with pytest.raises(InputError, match="unknown caption metric"):
        score_captions(refs, right, metrics=("SPICE",), tokenizer="simple")


def test_simple_tokenize():
    assert simple_tokenize("A red, BLUE cube.") == "a red blue cube"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("java") is None, reason="METEOR and PTB need Java")
def test_meteor_with_java():
    refs = {"1": ["A red ball left of a blue cube."], "2": ["Two green trees near a lake."]}
    hyp = {"1": "a red ball left of a blue cube", "2": "two green trees"}
    good = score_captions(refs, hyp, metrics=("METEOR", "CIDEr"), tokenizer="simple")
    bad = score_captions(refs, {"1": hyp["2"], "2": hyp["1"]}, ("METEOR", "CIDEr"), "simple")
    assert good["METEOR"] > bad["METEOR"] and good["CIDEr"] > bad["CIDEr"]
