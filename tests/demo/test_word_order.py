"""The word-order test's pure pieces: shuffling, bag of words, per-layer profiles."""

from __future__ import annotations

import numpy as np

from prh.demo.word_order import bag_of_words, layer_profile, shuffle_words, summarise, words


def test_shuffle_keeps_the_words_and_is_seeded():
    texts = ["A small red cube, and a big blue cone.", "we see a pyramid"]
    a, b = shuffle_words(texts, seed=3), shuffle_words(texts, seed=3)
    assert a == b
    for t, s in zip(texts, a):
        assert sorted(words(t)) == sorted(s.split())
    many = {shuffle_words(texts, seed=s)[0] for s in range(20)}
    assert len(many) > 1  # the order does change


def test_bag_of_words_is_order_free_and_matches_counts():
    x = bag_of_words(["red cube red", "cube red red", "blue"])
    np.testing.assert_allclose(x[0], x[1])
    # vocabulary sorted: blue, cube, red
    np.testing.assert_allclose(x[0], np.array([0, 1, 2]) / np.sqrt(5), rtol=1e-6)
    np.testing.assert_allclose(x[2], [1, 0, 0])


def test_layer_profile_reads_each_layer_and_skips_padding():
    rng = np.random.default_rng(0)
    vision = rng.normal(size=(60, 2, 8))
    labels = {"shape": np.repeat(np.arange(3), 20)}
    informative = vision[:, 1] + 0.01 * rng.normal(size=(60, 8))
    clusters = np.eye(3)[labels["shape"]] + 0.01 * rng.normal(size=(60, 3))
    feats = np.zeros((60, 3, 8))
    feats[:, 0] = informative
    feats[:, 1, :3] = clusters  # layer 1 knows the label, not the vision features
    # layer 2 all zeros: a zero-padded layer
    p = layer_profile(feats, vision, labels, k=5)
    assert p["mutual_knn"][0] > 0.9 and p["mutual_knn"][1] < 0.3
    assert p["shape"][1] == 1.0 and p["shape"][0] < 0.7
    assert np.isnan(p["mutual_knn"][2]) and np.isnan(p["shape"][2])
    s = summarise({"x": p})["x"]
    assert (
        s["best_layer"] == 0
        and s["shape_max"] == 1.0
        and s["last_mutual_knn"] == p["mutual_knn"][1]
    )
