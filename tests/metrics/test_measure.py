"""measure(): layer search, permutation null (uniform p on independent data), bootstrap, errors."""

import numpy as np
import pytest

from prh.errors import InputError
from prh.metrics import METRICS, measure, mutual_knn, preprocess
from prh.metrics.preprocess import outlier_threshold


def layered(n=80, seed=0, planted=(1, 2)):
    """A (N, 3, 12) and B (N, 4, 12) where only A layer planted[0] / B layer planted[1] align."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, 3, 12)).astype(np.float32)
    b = rng.standard_normal((n, 4, 12)).astype(np.float32)
    b[:, planted[1]] = a[:, planted[0]] + 0.3 * rng.standard_normal((n, 12))
    return a, b


def test_layer_search_finds_planted_pair_and_fixed_pair_matches():
    a, b = layered()
    r = measure(a, b, "mutual_knn", k=5)
    assert r.layers == (1, 2)
    assert r.layer_scores.shape == (3, 4)
    assert r.score == r.layer_scores.max()
    fixed = measure(a, b, "mutual_knn", k=5, layers=(0, -1))
    assert fixed.layers == (0, 3) and fixed.layer_search == "fixed"
    pa, pb = preprocess(a), preprocess(b)
    assert fixed.score == mutual_knn(pa[:, 0], pb[:, 3], k=5)


def test_preprocess_matches_reference_threshold():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((7, 2, 5)).astype(np.float32)
    per_row = [np.quantile(np.abs(r.ravel()), 0.95) for r in x]
    assert outlier_threshold(x) == pytest.approx(np.mean(per_row), rel=1e-12)
    flat = np.sort(np.abs(x).ravel())
    assert outlier_threshold(x, exact=True) == flat[int(0.95 * flat.size)]
    out = preprocess(x)
    assert np.allclose(np.linalg.norm(out, axis=2), 1, atol=1e-6)


@pytest.mark.parametrize("metric", METRICS)
def test_every_metric_runs_with_null_and_bootstrap_deterministically(metric):
    a, b = layered(n=40)
    kw = {"k": 5, "null": 9, "bootstrap": 5, "seed": 3}
    r1 = measure(a, b, metric, **kw).to_dict()
    r2 = measure(a, b, metric, **kw).to_dict()
    assert r1 == r2
    assert set(r1) >= {"metric", "k", "n", "score", "ci", "p_value", "calibrated", "layers"}
    assert r1["p_value"] == pytest.approx(0.1)  # planted alignment beats every shuffle
    assert r1["calibrated"] > 0
    lo, hi = r1["ci"]
    assert lo <= hi


@pytest.mark.slow
def test_null_p_values_are_uniform_on_independent_data():
    """Under independence p = (1 + #null >= obs) / (1 + R) is (discretely) uniform."""
    rng = np.random.default_rng(11)
    r = 19
    ps = []
    for t in range(160):
        layers = 2 if t % 2 else 1  # half with the layer-max statistic
        a = rng.standard_normal((30, layers, 6))
        b = rng.standard_normal((30, layers, 6))
        ps.append(measure(a, b, "mutual_knn", k=3, null=r, seed=t).p_value)
    ps = np.array(ps)
    grid = np.arange(1, r + 2) / (r + 1)
    ecdf = np.array([(ps <= g + 1e-12).mean() for g in grid])
    assert np.abs(ecdf - grid).max() < 0.13  # KS-type bound, ~1.6 / sqrt(160)
    assert 0.4 < ps.mean() < 0.65


def test_null_reuses_neighbours_correctly():
    """Permuting B's rows and recomputing from scratch equals the permuted neighbour lists."""
    from prh.metrics.knn import knn
    from prh.metrics.neighbors import mutual_knn_from_knn, permute_knn

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((50, 5)), rng.standard_normal((50, 5))
    perm = rng.permutation(50)
    ka, kb = knn(a, 4), knn(b, 4)
    assert (permute_knn(kb, perm) == knn(b[perm], 4)).all()
    assert mutual_knn_from_knn(ka, permute_knn(kb, perm)) == mutual_knn(a, b[perm], 4)


def test_seed_changes_null():
    a, b = layered(n=40)
    p1 = measure(a, b, "cka", null=20, seed=0).null_critical
    p2 = measure(a, b, "cka", null=20, seed=1).null_critical
    assert p1 != p2


def test_measure_errors():
    a, b = layered(n=20)
    with pytest.raises(InputError, match="row counts differ: A has 20 rows, B has 19"):
        measure(a, b[:19])
    bad = b.copy()
    bad[7, 1, 0] = np.inf
    with pytest.raises(InputError, match="B: row 7 contains inf"):
        measure(a, bad)
    zero = a.copy()
    zero[4, 2] = 0
    with pytest.raises(InputError, match=r"A: row 4 \(layer 2\) is all zeros"):
        measure(zero, b)
    with pytest.raises(InputError, match="k must satisfy"):
        measure(a, b, k=20)
    with pytest.raises(InputError, match="at least 2 rows"):
        measure(a[:1], b[:1])
    with pytest.raises(InputError, match="layer 5 of B is out of range"):
        measure(a, b, layers=(0, 5))
    with pytest.raises(InputError, match="unknown metric"):
        measure(a, b, "rsa")
    with pytest.raises(InputError, match=r"not an array|numeric"):
        measure([[1, 2], [3]], b)
