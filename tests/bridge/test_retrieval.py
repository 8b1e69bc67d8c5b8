"""Retrieval and zero-shot: a brute-force reference, planted answers, pessimistic ties."""

import numpy as np
import pytest

from prh.bridge import retrieval, zero_shot
from prh.bridge.retrieval import true_ranks
from prh.errors import InputError


def _ref_ranks(q, c, target):
    qn = q / np.linalg.norm(q, axis=1, keepdims=True)
    cn = c / np.linalg.norm(c, axis=1, keepdims=True)
    out = []
    for i in range(len(q)):
        s = [float(qn[i] @ cn[j]) for j in range(len(c))]
        out.append(1 + sum(1 for j in range(len(c)) if j != target[i] and s[j] >= s[target[i]]))
    return np.array(out)


def test_ranks_match_reference():
    rng = np.random.default_rng(1)
    q, c = rng.standard_normal((40, 5)), rng.standard_normal((30, 5))
    t = rng.integers(0, 30, 40)
    np.testing.assert_array_equal(true_ranks(q, c, t, block=7), _ref_ranks(q, c, t))


def test_retrieval_orders_aligned_above_shuffled():
    rng = np.random.default_rng(2)
    y = rng.standard_normal((200, 16))
    good = retrieval(y + 0.1 * rng.standard_normal(y.shape), y)
    bad = retrieval(rng.permutation(y), y)
    assert good.x_to_y[1] == 1.0 and good.y_to_x[10] == 1.0
    assert bad.x_to_y[10] < 0.2
    assert good.to_dict()["x_to_y"]["R@5"] == 1.0


def test_constant_embedding_scores_zero():
    y = np.ones((10, 3))
    assert retrieval(y, y).x_to_y[1] == 0.0  # ties count against the true item


def test_zero_shot_planted_classes():
    rng = np.random.default_rng(3)
    protos = rng.standard_normal((8, 12))
    labels = rng.integers(0, 8, 300)
    emb = protos[labels] + 0.3 * rng.standard_normal((300, 12))
    prompts = protos[:, None, :] + 0.05 * rng.standard_normal((8, 3, 12))  # (C, P, D)
    res = zero_shot(emb, prompts, labels)
    assert res.top1 > 0.95 and res.top5 == 1.0
    assert zero_shot(emb, prompts, rng.permutation(labels)).top1 < 0.3
    with pytest.raises(InputError, match="labels must lie in"):
        zero_shot(emb, prompts, labels + 8)
    with pytest.raises(InputError, match="expected 300 labels"):
        zero_shot(emb, prompts, labels[:5])
