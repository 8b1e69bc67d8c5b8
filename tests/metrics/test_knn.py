"""Exact blockwise kNN against brute force: random inputs, tie-heavy inputs, every block size."""

from fractions import Fraction

import numpy as np
import pytest

from prh.errors import InputError
from prh.metrics.knn import knn, l2_normalize


def brute_force_float(x: np.ndarray, k: int) -> list[list[int]]:
    """Sorted lists by (-cosine, index) from a float64 Gram matrix (no ties in random data)."""
    xn = l2_normalize(x).astype(np.float64)
    g = xn @ xn.T
    n = len(x)
    return [
        sorted((j for j in range(n) if j != i), key=lambda j: (-g[i, j], j))[:k] for i in range(n)
    ]


def brute_force_exact(x: np.ndarray, k: int) -> list[list[int]]:
    """Sorted lists by (-exact rational dot product of the float32 unit rows, index)."""
    xn = l2_normalize(x)
    fr = [[Fraction(float(v)) for v in row] for row in xn]
    n = len(x)
    out = []
    for i in range(n):
        s = {j: sum(a * b for a, b in zip(fr[i], fr[j])) for j in range(n) if j != i}
        out.append(sorted(s, key=lambda j: (-s[j], j))[:k])
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_random_matches_brute_force_for_every_block_size(seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((120, 12)).astype(np.float32)
    ref = brute_force_float(x, 7)
    for bs in (1, 5, 64, 1000):
        assert knn(x, 7, block_size=bs).tolist() == ref
    assert knn(x, 7, backend="faiss").tolist() == ref


def test_ties_from_duplicates_and_ternary_features_are_broken_by_index():
    rng = np.random.default_rng(3)
    x = rng.integers(-1, 2, size=(40, 4)).astype(np.float32)  # many equal cosines
    x[np.abs(x).sum(1) == 0, 0] = 1.0  # no zero rows
    x = np.concatenate([x, x[:10], x[5:8]])  # exact duplicates
    ref = brute_force_exact(x, 6)
    for bs in (1, 3, 17, 100):
        assert knn(x, 6, block_size=bs).tolist() == ref
    assert knn(x, 6, backend="faiss").tolist() == ref


def test_all_rows_identical_gives_lowest_indices():
    x = np.ones((9, 3), dtype=np.float32)
    got = knn(x, 3, block_size=4)
    for i, row in enumerate(got.tolist()):
        assert row == [j for j in range(9) if j != i][:3]


def test_k_equal_n_minus_one_and_self_excluded():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 3)).astype(np.float32)
    got = knn(x, 5)
    assert got.tolist() == brute_force_float(x, 5)
    assert all(i not in row for i, row in enumerate(got.tolist()))


def test_errors():
    x = np.ones((5, 3), dtype=np.float32)
    with pytest.raises(InputError, match=r"k must satisfy 1 <= k < N = 5, got k = 5"):
        knn(x, 5)
    with pytest.raises(InputError, match="at least 2 rows"):
        knn(x[:1], 1)
    x[2] = 0
    with pytest.raises(InputError, match="row 2 is all zeros"):
        knn(x, 2)
    with pytest.raises(InputError, match="unknown kNN backend"):
        knn(np.eye(4, dtype=np.float32), 1, backend="annoy")


def test_torch_topk_path_gives_the_same_exact_lists(monkeypatch):
    import sys

    knn_module = sys.modules["prh.metrics.knn"]  # the package exports a function of that name

    rng = np.random.default_rng(4)
    x = rng.integers(-1, 2, size=(50, 4)).astype(np.float32)
    x[np.abs(x).sum(1) == 0, 1] = 1.0
    x = np.concatenate([x, x[:12]])
    ref = brute_force_exact(x, 5)
    monkeypatch.setattr(knn_module, "_TORCH_TOPK_MIN_N", 8)
    for bs in (1, 9, 100):
        assert knn(x, 5, block_size=bs).tolist() == ref


@pytest.mark.parametrize("seed", [0, 1])
def test_torch_backend_on_cpu_matches_numpy_and_brute_force(seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((150, 24)).astype(np.float32)
    ref = knn(x, 8)
    assert ref.tolist() == brute_force_float(x, 8)
    for bs in (None, 1, 7, 64):
        assert np.array_equal(knn(x, 8, block_size=bs, backend="torch", device="cpu"), ref)


def test_torch_backend_breaks_ties_by_index_like_numpy():
    rng = np.random.default_rng(6)
    x = rng.integers(-1, 2, size=(45, 4)).astype(np.float32)  # many equal cosines
    x[np.abs(x).sum(1) == 0, 2] = 1.0
    x = np.concatenate([x, x[:10], x[3:9], np.ones((4, 4), np.float32)])  # exact duplicates
    ref = brute_force_exact(x, 7)
    for bs in (1, 5, 33, 200):
        assert knn(x, 7, block_size=bs, backend="torch", device="cpu").tolist() == ref
    # raw inner products (CKNNA's neighbours), with rows of different norms
    y = x * rng.integers(1, 4, size=(len(x), 1)).astype(np.float32)
    want = knn(y, 7, normalize=False)
    assert np.array_equal(knn(y, 7, normalize=False, backend="torch", device="cpu"), want)


def test_torch_device_refuses_what_is_absent():
    import torch

    from prh.metrics.knn import torch_device

    with pytest.raises(InputError, match="unknown device"):
        torch_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(InputError, match="CUDA is not available"):
            knn(np.eye(4, dtype=np.float32), 1, backend="torch", device="cuda")
    assert torch_device("cpu").type == "cpu"
