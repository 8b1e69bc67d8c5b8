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

    from prh.metrics import knn_tiles

    rng = np.random.default_rng(4)
    x = rng.integers(-1, 2, size=(50, 4)).astype(np.float32)
    x[np.abs(x).sum(1) == 0, 1] = 1.0
    x = np.concatenate([x, x[:12]])
    ref = brute_force_exact(x, 5)
    monkeypatch.setattr(knn_tiles, "_TORCH_TOPK_MIN_N", 8)
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


def brute_force_canonical(x: np.ndarray, k: int, normalize: bool = True) -> list[list[int]]:
    """Sorted lists by (-canonical score, index), every pair scored: the float64 sum of the exact
    float32 products (the definition in :mod:`prh.metrics.knn`), no candidates, no tiles."""
    xs = l2_normalize(x) if normalize else np.asarray(x, dtype=np.float32)
    x64 = xs.astype(np.float64)
    n = len(x)
    out = []
    for i in range(n):
        s = (x64[i] * x64).sum(axis=1)  # (N,) one pair per row, summed along D
        s[i] = -np.inf
        out.append(np.lexsort((np.arange(n), -s))[:k].tolist())
    return out


def _knn_module():
    import sys

    return sys.modules["prh.metrics.knn"]  # the package exports a function of that name


def near_ties(seed: int, n: int = 300, d: int = 48, noise: float = 0.02) -> np.ndarray:
    """Rows scattered tightly around a few centres: many similarities closer than the float32
    error bound, so the exact order rests on the float64 re-scoring."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((6, d)).astype(np.float32)
    x = centres[rng.integers(0, 6, n)] + noise * rng.standard_normal((n, d)).astype(np.float32)
    return x.astype(np.float32)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_symmetric_tiles_match_canonical_brute_force_on_near_ties(monkeypatch, seed):
    knn_module = _knn_module()
    calls = []
    pair_scores = knn_module._pair_scores
    monkeypatch.setattr(
        knn_module, "_pair_scores", lambda *a: calls.append(len(a[1])) or pair_scores(*a)
    )
    x = near_ties(seed)
    for normalize in (True, False):
        ref = brute_force_canonical(x, 10, normalize)
        for bs in (None, 1, 13, 64, 299, 1000):  # one tile, ragged tiles, a row per tile
            assert knn(x, 10, normalize=normalize, block_size=bs).tolist() == ref, (normalize, bs)
    assert sum(calls) > 0  # the cluster re-scoring ran


def test_tiles_wider_than_the_torch_topk_threshold(monkeypatch):
    from prh.metrics import knn_tiles

    monkeypatch.setattr(knn_tiles, "_TORCH_TOPK_MIN_N", 8)  # dense seeds by torch.topk
    monkeypatch.setattr(knn_tiles, "_SEED_GROUP_MIN", 10**9)  # every diagonal tile seeded densely
    x = np.concatenate([near_ties(3, 200), near_ties(4, 40, noise=0.0)])  # exact duplicates too
    ref = brute_force_canonical(x, 7)
    for bs in (9, 50, 240):
        assert knn(x, 7, block_size=bs).tolist() == ref


def test_heavy_ties_take_the_full_row_path(monkeypatch):
    knn_module = _knn_module()
    rows = []
    rescore = knn_module._rescore
    monkeypatch.setattr(knn_module, "_rescore", lambda *a: rows.append(len(a[1])) or rescore(*a))
    rng = np.random.default_rng(8)
    x = np.concatenate([np.ones((30, 5)), rng.standard_normal((30, 5))]).astype(np.float32)
    assert knn(x, 4, block_size=16).tolist() == brute_force_exact(x, 4)
    assert sum(rows) >= 30  # every copy has more than k + 6 equal candidates: unsettled


@pytest.mark.parametrize("k", [1, 10])
def test_random_large_matches_canonical_brute_force(k):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((700, 96)).astype(np.float32)
    ref = brute_force_canonical(x, k)
    assert knn(x, k).tolist() == ref  # default tiles (4 of 192 rows)
    assert knn(x, k, block_size=256).tolist() == ref
    assert knn(x, k, backend="torch", device="cpu").tolist() == ref


def test_row_value_key_orders_like_a_lexsort():
    from prh.metrics import knn_tiles

    rng = np.random.default_rng(2)
    special = [-np.inf, np.inf, 0.0, -0.0, 1e-40, -1e-40, 3.4e38, -3.4e38]
    vals = np.concatenate([rng.standard_normal(500), special]).astype(np.float32)
    rows = rng.integers(0, 9, len(vals))
    got = np.argsort(knn_tiles.row_value_key(rows, vals), kind="stable")
    want = np.lexsort((-vals, rows))
    assert np.array_equal(rows[got], rows[want]) and np.array_equal(vals[got], vals[want])


def test_torch_device_branch_mocked_on_cpu_gives_the_same_lists(monkeypatch):
    """The CUDA branch (row blocks, ``torch.topk`` on the device) run on the CPU: the lists equal
    the canonical brute force and the CPU sweep's, ties and near ties included."""
    knn_module = _knn_module()
    monkeypatch.setattr(knn_module, "device_topk", lambda dev: True)
    sweeps = []
    sweep = knn_module.sweep
    monkeypatch.setattr(knn_module, "sweep", lambda *a: sweeps.append(1) or sweep(*a))
    x = np.concatenate([near_ties(5, 120), near_ties(6, 20, noise=0.0)])
    ref = brute_force_canonical(x, 6)
    for bs in (None, 7, 64):
        assert knn(x, 6, block_size=bs, backend="torch", device="cpu").tolist() == ref
    assert not sweeps  # the device branch ran, not the tile sweep
    monkeypatch.setattr(knn_module, "device_topk", lambda dev: False)
    assert knn(x, 6, backend="torch", device="cpu").tolist() == ref
    assert sweeps


def test_torch_backend_restores_the_callers_matmul_precision():
    import torch

    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("medium")  # would allow reduced-precision products
    try:
        x = near_ties(7, 80)
        assert knn(x, 5, backend="torch", device="cpu").tolist() == brute_force_canonical(x, 5)
        assert torch.get_float32_matmul_precision() == "medium"
    finally:
        torch.set_float32_matmul_precision(before)


@pytest.mark.parametrize("workers", [2, 3])
def test_tile_threads_give_the_canonical_lists_every_time(monkeypatch, workers):
    """Tiles taken by several threads at once (merges under block locks, thresholds read while
    other threads raise them): the lists equal the canonical brute force, ties and near ties
    included, and repeated runs agree."""
    from prh.metrics import knn_tiles

    monkeypatch.setattr(knn_tiles, "blas_threads", lambda: workers)
    x = np.concatenate([near_ties(9, 260), near_ties(10, 30, noise=0.0), x_ternary(11)])
    for normalize in (True, False):
        ref = brute_force_canonical(x, 8, normalize)
        for bs in (7, 29, 64):
            runs = [knn(x, 8, normalize=normalize, block_size=bs).tolist() for _ in range(2)]
            assert runs[0] == ref and runs[1] == ref, (normalize, bs)
    assert knn(x, 8, block_size=40, backend="torch", device="cpu").tolist() == (
        brute_force_canonical(x, 8)
    )


def x_ternary(seed: int, n: int = 40) -> np.ndarray:
    """Rows in {-1, 0, 1}^4 (many exactly equal cosines), no zero row."""
    x = np.random.default_rng(seed).integers(-1, 2, size=(n, 4)).astype(np.float32)
    x[np.abs(x).sum(1) == 0, 0] = 1.0
    return np.pad(x, ((0, 0), (0, 44)))  # the width of near_ties' rows


def test_sweep_candidates_are_each_rows_float32_top_c():
    """The sweep's promise, against a dense float32 Gram: each row's ``c`` values are its ``c``
    largest (self excluded), the columns hold those values, sorted descending."""
    from prh.metrics import knn_tiles

    x = l2_normalize(near_ties(12, 150))
    c = 9
    for bs, workers in ((16, 1), (16, 3), (150, 2)):
        v, i = knn_tiles.sweep(x, c, bs, workers=workers)
        g = (x.astype(np.float64) @ x.T.astype(np.float64)).astype(np.float32)  # any order: tol
        np.fill_diagonal(g, -np.inf)
        want = -np.sort(-g, axis=1)[:, :c]
        assert np.all(np.diff(v, axis=1) <= 0)
        assert np.allclose(v, want, atol=1e-5)
        assert np.all(i != np.arange(len(x))[:, None])
        assert np.allclose(g[np.arange(len(x))[:, None], i], v, atol=1e-5)


def test_tile_side_from_rows_threads_and_cache():
    from prh.metrics.knn_tiles import _tiles, tile_side

    mib = 2**20
    # 2 threads, 32 MiB: about N / 4, 256 to 2048 (the sizes the benchmark table used)
    assert [tile_side(n, 2, 32 * mib) for n in (100, 1000, 4000, 16000, 10**5)] == [
        256, 256, 1024, 2048, 2048,
    ]  # fmt: skip
    # one tile per thread must stay in the cache: 16 threads x 704^2 x 4 B <= 32 MiB
    assert tile_side(10**5, 16, 32 * mib) == 704
    assert 16 * 704**2 * 4 <= 32 * mib < 16 * 768**2 * 4
    # at least two tiles per thread, not below 256
    for n, t in ((4000, 16), (3000, 8), (600, 8)):
        side = tile_side(n, t, 0)
        assert side == 256 or _tiles(n, side) >= 2 * t
    assert tile_side(10**5, 2, 0) == 2048  # unknown cache: no bound


def test_an_error_in_a_tile_thread_surfaces_and_stops_the_sweep(monkeypatch):
    from prh.metrics import knn_tiles

    calls = []

    def failing(xi, xj, out):
        calls.append(1)
        raise MemoryError("tile")

    x = l2_normalize(near_ties(13, 200))
    with pytest.raises(MemoryError, match="tile"):
        knn_tiles.sweep(x, 5, 10, failing, workers=2)
    assert len(calls) < 20  # of 210 tiles: the rest were cancelled


def _unit_cases():
    """Rows L2-normalised in float32 as the reference preprocessing leaves them: near ties,
    exact duplicates and equal cosines, identical rows, heavy ties, random rows."""
    rng = np.random.default_rng(21)
    ternary = x_ternary(5)
    heavy = np.concatenate([np.ones((30, 48)), rng.standard_normal((30, 48))])
    return [
        l2_normalize(x)
        for x in (
            near_ties(0),
            np.concatenate([near_ties(4, 120), near_ties(4, 40, noise=0.0)]),
            np.concatenate([ternary, ternary[:10]]),
            np.ones((9, 48)),
            heavy,
            rng.standard_normal((300, 96)),
        )
    ]


@pytest.mark.parametrize("case", range(6))
def test_both_lists_from_one_sweep_equal_two_canonical_brute_forces(case):
    from prh.metrics.knn import knn_both

    x = _unit_cases()[case]
    k = min(10, len(x) - 1)
    cosine, inner = brute_force_canonical(x, k), brute_force_canonical(x, k, normalize=False)
    assert cosine != inner or case != 0  # near ties: re-normalising unit rows reorders some
    for bs in (None, 1, 13, 64):
        for backend in ("numpy", "torch"):
            cos, ip, searches = knn_both(x, k, block_size=bs, backend=backend, device="cpu")
            assert (cos.tolist(), ip.tolist(), searches) == (cosine, inner, 1), (bs, backend)


def test_both_lists_of_rows_far_from_unit_take_two_searches():
    from prh.metrics.knn import knn_both

    x = near_ties(1, 200)  # norms about 7: candidates of x x^T are not the cosine's
    cos, ip, searches = knn_both(x, 8)
    assert searches == 2
    assert cos.tolist() == brute_force_canonical(x, 8)
    assert ip.tolist() == brute_force_canonical(x, 8, normalize=False)
