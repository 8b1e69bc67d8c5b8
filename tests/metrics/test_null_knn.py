"""The batched mutual-kNN null (relabelled lists, bitset intersections) against the pair loop."""

import numpy as np
import pytest

from prh.metrics import calibrate, measure
from prh.metrics.api import get_metric
from prh.metrics.knn import knn
from prh.metrics.layers import best_pair, layer_scores
from prh.metrics.neighbors import mutual_knn_rows, permute_knn
from prh.metrics.null_knn import MutualKnnNull
from prh.metrics.preprocess import preprocess


def lists(n, k, layers, seed):
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((n, 5))
    return [knn(base + (0.3 + i) * rng.standard_normal((n, 5)), k) for i in range(layers)]


def reference_counts(la, lb, perm):
    """Intersections by the obviously correct route: relabel, compare k x k per row."""
    k = la[0].shape[1]
    return np.array(
        [[round(mutual_knn_rows(a, permute_knn(b, perm)).sum() * k) for b in lb] for a in la]
    )


@pytest.mark.parametrize("table_bytes", [None, 0])  # dense N^2 table, and sorted keys
@pytest.mark.parametrize("layers", [(1, 1), (3, 4), (9, 17)])  # uint8, uint16, uint32 words
def test_counts_equal_the_pair_loop(table_bytes, layers):
    la, lb = lists(60, 4, layers[0], 0), lists(60, 4, layers[1], 1)
    kw = {} if table_bytes is None else {"table_bytes": table_bytes}
    null = MutualKnnNull(la, lb, **kw)
    rng = np.random.default_rng(2)
    for perm in [np.arange(60), *(rng.permutation(60) for _ in range(5))]:
        assert np.array_equal(null.counts(perm), reference_counts(la, lb, perm))


def test_more_than_64_layers_use_several_words():
    la, lb = lists(16, 2, 2, 3), lists(16, 2, 70, 4)
    perm = np.random.default_rng(5).permutation(16)
    assert np.array_equal(MutualKnnNull(la, lb).counts(perm), reference_counts(la, lb, perm))


def loop_null(a, b, k, r, seed, pair=None):
    """Today's null: every draw redoes the layer search pair by pair (seed stream as measure's)."""
    m = get_metric("mutual_knn")
    pa, pb = preprocess(a), preprocess(b)
    sa = [knn(pa[:, i], k) for i in range(pa.shape[1])]
    sb = [knn(pb[:, j], k) for j in range(pb.shape[1])]
    obs = best_pair(layer_scores(m.score, sa, sb, None, pair))[0]
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[0])
    draws = calibrate.permutation_null(
        lambda perm: best_pair(layer_scores(m.score, sa, sb, perm, pair))[0], len(a), r, rng
    )
    return calibrate.p_value(obs, draws), calibrate.critical_value(draws), draws


@pytest.mark.parametrize(
    "n,k,signal,pair",
    [(30, 3, 0.0, None), (30, 3, 0.0, (0, 1)), (200, 10, 1.5, None), (120, 5, 9.0, None)],
)
def test_p_values_equal_the_pair_loop_for_the_same_seed_and_draws(n, k, signal, pair):
    """Tiny N, independent sides (many draws tie the observed count: the loop's float means
    decide those, and so must the counts' fallback) and larger N, aligned and not."""
    rng = np.random.default_rng(n)
    base = signal * rng.standard_normal((n, 1, 6))
    a = base + rng.standard_normal((n, 2, 6))
    b = base + rng.standard_normal((n, 3, 6))
    for seed in range(12):
        p, crit, _ = loop_null(a, b, k, 40, seed, pair)
        r = measure(a, b, "mutual_knn", k=k, null=40, seed=seed, layers=pair)
        assert r.p_value == p
        assert r.null_critical == pytest.approx(crit, abs=1e-12)


def test_adaptive_stop_keeps_the_first_draws_and_stops_once_decided():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((150, 1, 6))
    a = base + 0.5 * rng.standard_normal((150, 2, 6))
    b = base + 0.5 * rng.standard_normal((150, 2, 6))
    strong = measure(a, b, k=5, null=1000, seed=1, null_stop="adaptive")
    assert strong.n_null == 125 and strong.null_stop == "adaptive"  # 0 of 125: p < 0.05 decided
    fixed = measure(a, b, k=5, null=125, seed=1)
    assert (strong.p_value, strong.null_critical) == (fixed.p_value, fixed.null_critical)
    c = rng.standard_normal((150, 2, 6))
    unrelated = measure(a, c, k=5, null=1000, seed=1, null_stop="adaptive")
    assert unrelated.n_null < 1000 and unrelated.p_value > 0.05
    again = measure(a, c, k=5, null=1000, seed=1, null_stop="adaptive")
    assert again.to_dict() == unrelated.to_dict()


def test_decided_by_the_clopper_pearson_interval():
    none = np.zeros(125)
    assert calibrate.decided(1.0, none[:100]) is False  # upper 99% bound 0.052 > 0.05
    assert calibrate.decided(1.0, none) is True  # 0.042 < 0.05
    half = np.tile([0.0, 2.0], 50)  # half the draws reach 1.0: p = 0.5
    assert calibrate.decided(1.0, half) is True
    near = np.r_[np.full(50, 2.0), np.zeros(950)]  # p = 0.05: never decided
    assert calibrate.decided(1.0, near) is False


def test_unknown_null_stop_is_refused():
    from prh.errors import InputError

    a = np.random.default_rng(0).standard_normal((20, 3))
    with pytest.raises(InputError, match="unknown null stop 'sometimes'"):
        measure(a, a, k=3, null=5, null_stop="sometimes")


def test_cli_matrix_with_adaptive_null_prints_its_cost_first(tmp_path, capsys):
    """`prh measure --x --y --null 400 --null-stop adaptive`: the estimate on stderr before the
    first cell, the draws made per cell in the JSON, each cell's p-value that of a fixed run with
    that many draws."""
    import json

    import prh.cli as cli

    rng = np.random.default_rng(0)
    base = rng.standard_normal((80, 1, 6)).astype(np.float32)
    for name, noise in (("x0", 0.3), ("x1", 5.0), ("y0", 0.3)):
        np.save(tmp_path / f"{name}.npy", base + noise * rng.standard_normal((80, 2, 6)))
    x, y, out = [tmp_path / "x0.npy", tmp_path / "x1.npy"], tmp_path / "y0.npy", tmp_path / "m.json"
    argv = ["measure", "--x", *x, "--y", y, "--k", "5", "--null", "400", "--json", out]
    assert cli.main([*map(str, argv), "--null-stop", "adaptive"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("prh measure: estimated cost of 2 cells")
    assert "null up to 3,200 layer-pair draws" in err  # 2 cells x 4 pairs x 400
    doc = json.loads(out.read_text())
    draws = doc["matrices"]["mutual_knn"]["null_draws"]
    assert draws[0][0] == 125 and draws[1][0] < 400  # decided early both ways
    for cell in doc["results"]:
        fixed = measure(np.load(cell["x"]), np.load(cell["y"]), k=5, null=cell["null"], seed=0)
        assert cell["p_value"] == fixed.p_value and cell["null_stop"] == "adaptive"


@pytest.mark.parametrize("value", ["0", "-3"])
def test_cli_null_zero_or_negative_is_one_line(tmp_path, bad_input, value):
    a = np.random.default_rng(0).standard_normal((20, 4)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    line = bad_input(
        ["measure", tmp_path / "a.npy", tmp_path / "a.npy", "--null", value, "--json",
         tmp_path / "m.json"], inputs=[tmp_path / "a.npy"],
    )  # fmt: skip
    assert "--null" in line and "positive integer" in line
    assert not (tmp_path / "m.json").exists()


def test_cost_counts_the_work_of_a_matrix():
    from prh.metrics.cost import describe, estimate_matrix

    c = estimate_matrix("mutual_knn", 200, 16, [3, 2], [4, 4, 1], null=100)
    assert c.pair_draws == (3 + 2) * (4 + 4 + 1) * 100
    assert c.preparations == 3 + 2 + 4 + 4 + 1
    assert 0 < c.prepare_s and 0 < c.null_s < c.total_s
    assert "4,500 layer-pair draws" in describe([c], 6, 100, adaptive=False)
    kernel = estimate_matrix("cka", 50, 8, [1], [2], null=10, distinct_files=2)
    assert kernel.pair_draws == 20 and kernel.pair_draw_us > 0


def reference_cycle_counts(la, lb, perm):
    from prh.metrics.neighbors import cycle_knn_rows

    return np.array(
        [[round(cycle_knn_rows(a, permute_knn(b, perm)).sum()) for b in lb] for a in la]
    )


@pytest.mark.parametrize("table_bytes", [None, 0])
@pytest.mark.parametrize("layers", [(1, 1), (3, 4), (70, 2)])
def test_cycle_counts_equal_the_pair_loop(table_bytes, layers):
    from prh.metrics.null_knn import CycleKnnNull

    n = 16 if layers[0] > 64 else 60
    la, lb = lists(n, 3, layers[0], 6), lists(n, 3, layers[1], 7)
    kw = {} if table_bytes is None else {"table_bytes": table_bytes}
    null = CycleKnnNull(la, lb, **kw)
    rng = np.random.default_rng(8)
    for perm in [np.arange(n), *(rng.permutation(n) for _ in range(4))]:
        assert np.array_equal(null.counts(perm), reference_cycle_counts(la, lb, perm))


@pytest.mark.parametrize("pair", [None, (1, 0)])
def test_cycle_p_values_equal_the_pair_loop(pair):
    """cycle_knn's null by counts: the loop's p-values and quantiles (ties rescored alike)."""
    m = get_metric("cycle_knn")
    rng = np.random.default_rng(3)
    base = rng.standard_normal((30, 1, 6))
    a, b = base + rng.standard_normal((30, 2, 6)), base + rng.standard_normal((30, 3, 6))
    pa, pb = preprocess(a), preprocess(b)
    sa = [knn(pa[:, i], 3) for i in range(2)]
    sb = [knn(pb[:, j], 3) for j in range(3)]
    obs = best_pair(layer_scores(m.score, sa, sb, None, pair))[0]
    for seed in range(8):
        rng_null = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[0])
        draws = calibrate.permutation_null(
            lambda perm: best_pair(layer_scores(m.score, sa, sb, perm, pair))[0], 30, 40, rng_null
        )
        r = measure(a, b, "cycle_knn", k=3, null=40, seed=seed, layers=pair)
        assert r.p_value == calibrate.p_value(obs, draws)
        assert r.null_critical == pytest.approx(calibrate.critical_value(draws), abs=1e-12)
