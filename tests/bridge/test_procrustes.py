"""Maps fitted on pairs: planted rotations, orthonormal rows, the ridge reference, save/load."""

import numpy as np
import pytest

from prh.bridge import OrthogonalMap, RidgeMap, SemiOrthogonalMap, load_map, save_map
from prh.bridge.synthetic import random_rotation
from prh.errors import InputError


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def test_orthogonal_recovers_planted_rotation(rng):
    x = rng.standard_normal((200, 16)) + 3.0
    q = random_rotation(16, rng)
    y = (x - x.mean(0)) @ q.T + 5.0
    m = OrthogonalMap().fit(x, y)
    assert np.abs(m.rotation_ - q).max() < 1e-6
    assert np.abs(m.transform(x) - y).max() < 1e-4  # float32 output
    assert m.score(x, y) > 1 - 1e-9


def test_scale_recovers_planted_scale(rng):
    x = rng.standard_normal((100, 6))
    q = random_rotation(6, rng)
    m = OrthogonalMap(scale=True).fit(x, 2.5 * x @ q.T)
    assert m.scale_ == pytest.approx(2.5, rel=1e-6)
    assert np.abs(m.rotation_ - q).max() < 1e-6


@pytest.mark.parametrize(("d_x", "d_y"), [(12, 5), (5, 12)])
def test_semi_orthogonal_is_a_partial_isometry(rng, d_x, d_y):
    x = rng.standard_normal((300, d_x))
    y = x @ rng.standard_normal((d_x, d_y)) + 0.1 * rng.standard_normal((300, d_y))
    w = SemiOrthogonalMap().fit(x, y).weight_
    assert w.shape == (d_y, d_x)
    if d_y <= d_x:
        np.testing.assert_allclose(w @ w.T, np.eye(d_y), atol=1e-10)  # orthonormal rows
    else:
        np.testing.assert_allclose(w.T @ w, np.eye(d_x), atol=1e-10)  # orthonormal columns
    w3 = SemiOrthogonalMap(rank=3).fit(x, y).weight_
    np.testing.assert_allclose(np.linalg.svd(w3, compute_uv=False)[:3], 1.0, atol=1e-10)
    assert np.linalg.matrix_rank(w3) == 3


def test_semi_orthogonal_recovers_planted_projection(rng):
    # y = W x with W (4, 10) of orthonormal rows and X^T X = 100 I: Procrustes recovers W exactly
    x = 10.0 * np.linalg.qr(rng.standard_normal((100, 10)))[0]  # (100, 10)
    w = random_rotation(10, rng)[:4]  # (4, 10), orthonormal rows
    m = SemiOrthogonalMap(center=False).fit(x, x @ w.T)
    np.testing.assert_allclose(m.weight_, w, atol=1e-8)


def test_ridge_matches_least_squares_reference(rng):
    x = rng.standard_normal((80, 7))
    y = rng.standard_normal((80, 3))
    m = RidgeMap(alpha=0.0).fit(x, y)
    xc, yc = x - x.mean(0), y - y.mean(0)
    ref = np.linalg.lstsq(xc, yc, rcond=None)[0].T
    np.testing.assert_allclose(m.coef_, ref, atol=1e-10)
    assert RidgeMap(alpha=10.0).fit(x, y).score(x, y) < m.score(x, y)


def test_whitened_map_lands_in_y_space(rng):
    x = rng.standard_normal((500, 5)) * np.array([5, 2, 1, 0.5, 0.1])
    q = random_rotation(5, rng)
    y = x @ q.T
    m = OrthogonalMap(whiten=True).fit(x, y)
    assert m.score(x, y) > 0.999


def test_errors(rng):
    x, y = rng.standard_normal((10, 4)), rng.standard_normal((9, 4))
    with pytest.raises(InputError, match="paired rows required: X has 10 rows, Y has 9"):
        OrthogonalMap().fit(x, y)
    with pytest.raises(InputError, match="map rank 5 exceeds the dimensions: d_x = 4, d_y = 3"):
        SemiOrthogonalMap(rank=5).fit(x, rng.standard_normal((10, 3)))
    with pytest.raises(InputError, match="needs d_x == d_y"):
        OrthogonalMap().fit(x, rng.standard_normal((10, 3)))
    with pytest.raises(InputError, match="not fitted yet"):
        OrthogonalMap().transform(x)
    m = OrthogonalMap().fit(x, x)
    with pytest.raises(InputError, match="expected X with 4 columns"):
        m.transform(rng.standard_normal((3, 5)))


@pytest.mark.parametrize("kind", [OrthogonalMap, SemiOrthogonalMap, RidgeMap])
def test_save_load_roundtrip(tmp_path, rng, kind):
    x = rng.standard_normal((50, 6))
    y = x @ random_rotation(6, rng).T
    m = kind().fit(x, y)
    path = tmp_path / "map.safetensors"
    save_map(path, m, extra={"layer_x": -1})
    assert (tmp_path / "map.json").is_file()
    m2, config = load_map(path)
    assert type(m2) is kind and config["extra"] == {"layer_x": -1}
    np.testing.assert_array_equal(m2.transform(x), m.transform(x))
    (tmp_path / "map.json").unlink()  # the safetensors metadata alone is enough
    np.testing.assert_array_equal(load_map(path)[0].transform(x), m.transform(x))
    with pytest.raises(InputError, match=r"must end in \.safetensors"):
        save_map(tmp_path / "map.bin", m)
    (tmp_path / "junk.safetensors").write_bytes(b"not a map")
    with pytest.raises(InputError, match="not a readable safetensors map"):
        load_map(tmp_path / "junk.safetensors")


def test_r2_is_undefined_on_a_constant_target():
    import math

    from prh.bridge import make_map

    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((50, 4)), rng.standard_normal((50, 4))
    m = make_map("semi-orthogonal").fit(x, y)
    assert math.isnan(m.score(x, np.ones((50, 4))))
    assert m.score(x, y) <= 1.0
