"""The alignment matrix: symmetric metrics equal to measure() on the held-out rows, a rotation
score near 1 for the planted rotation pair and lower for the pair with private dimensions."""

from __future__ import annotations

import numpy as np
import pytest

from prh.bridge.alignment import alignment_matrix
from prh.errors import InputError
from prh.metrics import measure

N_TRAIN, N_TEST, H = 300, 200, 6


def _encoders(seed=0):
    """good_a, good_b: noisy rotations of one latent; private: the latent plus its own nuisance."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((N_TRAIN + N_TEST, 2 * H))

    def noisy(a):
        return a + 0.4 * rng.standard_normal(a.shape)

    q, _ = np.linalg.qr(rng.standard_normal((2 * H, 2 * H)))
    out = {
        "good_a": noisy(z),
        "good_b": noisy(z) @ q,
        "private": np.hstack([noisy(z[:, :H]), 2 * rng.standard_normal((len(z), H))]),
    }
    train = {n: a[:N_TRAIN, None, :] for n, a in out.items()}  # (N, 1, D)
    test = {n: a[N_TRAIN:, None, :] for n, a in out.items()}
    return train, test


@pytest.fixture(scope="module")
def res():
    train, test = _encoders()
    return alignment_matrix(train, test, k=10, bootstrap=50, seed=0, dims=32)


def test_metrics_are_measure_on_the_held_out_rows(res):
    _, test = _encoders()
    ref = measure(test["good_a"], test["private"], "mutual_knn", k=10, bootstrap=50, seed=0,
                  layers=(-1, -1))  # fmt: skip
    assert res.mutual_knn[0, 2] == res.mutual_knn[2, 0] == ref.score
    assert tuple(res.mutual_knn_ci[0, 2]) == ref.ci
    cka = measure(test["good_a"], test["good_b"], "cka", layers=(-1, -1))
    assert res.cka[0, 1] == res.cka[1, 0] == cka.score
    assert np.isnan(np.diag(res.mutual_knn)).all() and np.isnan(np.diag(res.rotation)).all()
    assert res.n_train == N_TRAIN and res.n_test == N_TEST


def test_rotation_pair_scores_one_private_pair_lower(res):
    assert res.rotation[0, 1] == pytest.approx(1.0, abs=0.08)
    assert res.rotation[1, 0] == pytest.approx(1.0, abs=0.08)
    assert res.rotation[0, 2] < res.rotation[0, 1] - 0.2
    assert res.mutual_knn[0, 1] > res.mutual_knn[0, 2]
    assert set(res.pairs) == {(i, j) for i in range(3) for j in range(3) if i != j}
    assert res.pairs[0, 1].score == res.rotation[0, 1]
    lo, hi = res.rotation_ci[0, 1]
    assert lo <= res.rotation[0, 1] <= hi


def test_to_dict_is_json_ready_and_deterministic(res):
    import json

    train, test = _encoders()
    again = alignment_matrix(train, test, k=10, bootstrap=50, seed=0, dims=32)
    d = res.to_dict()
    assert json.dumps(d, allow_nan=False) == json.dumps(again.to_dict(), allow_nan=False)
    assert d["mutual_knn"][0][0] is None
    assert [p["x"] + ">" + p["y"] for p in d["pairs"]][:2] == ["good_a>good_b", "good_a>private"]


def test_bad_inputs():
    train, test = _encoders()
    with pytest.raises(InputError, match="at least 2 encoders"):
        alignment_matrix({"a": train["good_a"]}, {"a": test["good_a"]})
    with pytest.raises(InputError, match="different encoders"):
        alignment_matrix(train, {"x": test["good_a"], "y": test["good_b"]})
    with pytest.raises(InputError, match="layer 3"):
        alignment_matrix(train, test, layer=3, bootstrap=0)
    with pytest.raises(InputError, match="more than 10 held-out rows"):
        alignment_matrix(train, {n: a[:10] for n, a in test.items()}, bootstrap=0)
    with pytest.raises(InputError, match="paired train rows"):
        alignment_matrix({**train, "good_b": train["good_b"][:50]}, test, bootstrap=0)
