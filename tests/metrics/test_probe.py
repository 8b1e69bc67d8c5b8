"""Factor probes against a brute-force reference, and the within-group rule."""

from collections import Counter

import numpy as np
import pytest

from prh.errors import InputError
from prh.metrics.probe import (
    best_layer_accuracy,
    factor_accuracy,
    knn_accuracy,
    mutual_knn_within_groups,
)
from prh.world import CaveWorld, WorldConfig
from prh.world.factors import scene_factors, scene_ids_of


def _brute_knn_accuracy(x, y, k, centre=True):
    """Loop-by-loop reference: centre, normalise, for each i sort others by cosine, vote."""
    x = np.asarray(x, float)
    if centre:
        x = x - x.mean(0)
    x = x / (np.linalg.norm(x, axis=1, keepdims=True) + 1e-12)
    hits = 0
    for i in range(len(x)):
        sims = [(-(x[i] @ x[j]), j) for j in range(len(x)) if j != i]
        nn = [j for _, j in sorted(sims)[:k]]
        votes = Counter(int(y[j]) for j in nn)
        top = max(votes.values())
        pred = min(lab for lab, c in votes.items() if c == top)
        hits += pred == y[i]
    return hits / len(x)


def test_knn_accuracy_equals_brute_force():
    rng = np.random.default_rng(0)
    for n, d, c, k in ((40, 5, 3, 10), (25, 3, 4, 7), (12, 8, 2, 3)):
        x = rng.standard_normal((n, d))
        y = rng.integers(0, c, n)
        x[:, 0] += y  # some signal
        for centre in (True, False):
            ref = _brute_knn_accuracy(x, y, k, centre)
            assert knn_accuracy(x, y, k, centre=centre) == pytest.approx(ref)


def test_rows_with_an_undefined_label_are_left_out():
    rng = np.random.default_rng(6)
    x, y = rng.standard_normal((50, 4)), rng.integers(0, 3, 50)
    y[::7] = -1
    keep = y >= 0
    assert knn_accuracy(x, y, 5) == pytest.approx(_brute_knn_accuracy(x[keep], y[keep], 5, False))


def test_within_groups_is_the_weighted_mean_of_per_group_accuracy():
    rng = np.random.default_rng(1)
    x, y, g = rng.standard_normal((60, 4)), rng.integers(0, 3, 60), rng.integers(0, 4, 60)
    ref = sum(_brute_knn_accuracy(x[g == v], y[g == v], 10) * (g == v).sum() for v in range(4))
    assert knn_accuracy(x, y, 10, groups=g, centre=True) == pytest.approx(ref / 60)


def test_features_that_know_only_the_group_gain_nothing_within_groups():
    # Labels lean on the group; features carry the group and noise. Overall the probe beats the
    # global majority by far; within groups it does no better than each group's majority label.
    rng = np.random.default_rng(2)
    g = np.repeat(np.arange(6), 50)
    y = np.where(rng.random(300) < 0.6, g, rng.integers(0, 6, 300))
    x = np.eye(6)[g] * 5 + 0.1 * rng.standard_normal((300, 6))
    within_majority = np.mean([np.bincount(y[g == v]).max() / 50 for v in range(6)])
    assert knn_accuracy(x, y, 10, centre=True) > 0.5 > np.bincount(y).max() / 300 + 0.2
    assert knn_accuracy(x, y, 10, groups=g, centre=True) <= within_majority + 0.02


def test_best_layer_and_factor_table():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 4, 80)
    feats = rng.standard_normal((80, 3, 6))
    feats[:, 2, :4] += 4 * np.eye(4)[y]  # layer 2 knows the label
    acc, layer = best_layer_accuracy(feats, y, centre=True)
    assert layer == 2 and acc > 0.9
    table = factor_accuracy(feats, {"f": y}, groups=np.arange(80) % 2, centre=True)
    assert table["f"]["overall_layer"] == 2 and table["f"]["within"] > 0.8
    assert 0.2 < table["f"]["chance"] < 0.5


def test_mutual_knn_within_groups_orders_aligned_above_shuffled():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((120, 8))
    b = a @ rng.standard_normal((8, 8)) * 0.5 + a
    g = np.arange(120) % 3
    aligned = mutual_knn_within_groups(a, b, g)
    shuffled = mutual_knn_within_groups(a, b[rng.permutation(120)], g)
    assert aligned > shuffled + 0.2


def test_scene_factors_read_the_largest_object():
    w = CaveWorld(WorldConfig(num_scenes=200))
    ids = scene_ids_of([f"scene_{i}" for i in range(60)])
    first, undefined = scene_factors(w, ids, ties="first"), scene_factors(w, ids)
    for j, i in enumerate(ids):
        s = w.scene(int(i))
        big = max(s.objects, key=lambda o: o.size)  # the first of the largest
        tie = sum(o.size == big.size for o in s.objects) > 1
        assert first["shape"][j] == big.shape and first["colour"][j] == big.colour
        assert undefined["shape"][j] == (-1 if tie else big.shape)
        assert first["count"][j] == undefined["count"][j] == len(s.objects)
    assert (undefined["shape"] == -1).any()
    with pytest.raises(InputError, match="not a world scene id"):
        scene_ids_of(["img_3"])


def test_within_group_chance_matches_unrelated_features():
    from prh.metrics.probe import mutual_knn_chance_within_groups

    rng = np.random.default_rng(5)
    g = np.arange(300) % 12  # groups of 25: chance 10 / 24
    assert mutual_knn_chance_within_groups(g) == pytest.approx(10 / 24)
    a, b = rng.standard_normal((300, 16)), rng.standard_normal((300, 16))
    assert mutual_knn_within_groups(a, b, g) == pytest.approx(10 / 24, abs=0.04)


def test_mean_pairwise_cosine_against_a_loop():
    from prh.metrics.probe import mean_pairwise_cosine

    rng = np.random.default_rng(0)
    x, c = rng.normal(size=(6, 5)), rng.normal(size=5)
    v = (x - c) / np.linalg.norm(x - c, axis=1, keepdims=True)
    ref = np.mean([v[i] @ v[j] for i in range(6) for j in range(6) if i != j])
    assert mean_pairwise_cosine(x, c) == pytest.approx(ref, abs=1e-12)
    same = np.tile(rng.normal(size=(1, 5)), (4, 1))
    assert mean_pairwise_cosine(same) == pytest.approx(1.0)
    with pytest.raises(InputError, match="at least 2 rows"):
        mean_pairwise_cosine(x[:1])
