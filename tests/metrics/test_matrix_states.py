"""A score matrix prepares each model layer's states once (one kNN search, one Gram) for every
metric and every cell, counts that work, and scores exactly as each cell measured on its own."""

from __future__ import annotations

import json

import numpy as np
import pytest

import prh
import prh.cli as cli
from prh.metrics import api, kernel, matrix
from prh.metrics.api import KNN_METRICS, METRICS, MetricOptions, get_metric
from prh.metrics.cost import planned_work
from prh.metrics.states import StateCache, Work, nbytes


@pytest.fixture
def models():
    """2 X models and 3 Y models of 2 layers each, sharing a signal: 10 distinct layers."""
    rng = np.random.default_rng(3)
    base = rng.standard_normal((40, 1, 6)).astype(np.float32)

    def model(noise: float) -> np.ndarray:
        return base + noise * rng.standard_normal((40, 2, 6)).astype(np.float32)

    return [model(0.3), model(1.0)], [model(0.5), model(0.8), model(2.0)]


@pytest.fixture
def counted(monkeypatch):
    """Every kNN search and every kernel Gram that the metrics make, as they make them."""
    calls = {"searches": 0, "gemms": 0}

    def count(what, real):
        def wrapper(*a, **kw):
            calls[what] += 1
            return real(*a, **kw)

        return wrapper

    monkeypatch.setattr(api, "knn", count("searches", api.knn))
    monkeypatch.setattr(kernel, "knn", count("searches", kernel.knn))
    monkeypatch.setattr(api, "kernel_side", count("gemms", api.kernel_side))
    both = matrix.knn_both

    def knn_both(*a, **kw):
        out = both(*a, **kw)
        calls["searches"] += out[2]
        return out

    monkeypatch.setattr(matrix, "knn_both", knn_both)
    return calls


def _unshared(xs, ys, metric: str, **kw) -> list[dict]:
    """Each cell measured on its own: no state shared with another cell or metric."""
    return [prh.measure(x, y, metric, **kw).to_dict() for x in xs for y in ys]


def _cells(r, metric: str) -> list[dict]:
    return [
        {k: v for k, v in e.items() if k not in ("x_name", "y_name", "row", "col")}
        for e in r.results
        if e["metric"] == metric
    ]


def test_kNN_metrics_search_each_layer_once(models, counted):
    xs, ys = models
    kw = {"k": 5, "null": 10, "seed": 1}
    metrics = (*KNN_METRICS, "cknna")
    r = prh.measure_matrix(xs, ys, metrics, **kw)
    # 10 distinct layers: one search each, not 6 cells x 2 sides x 2 layers x 5 metrics = 120
    # (the cosine lists and CKNNA's inner-product lists from one sweep: the rows are unit)
    assert r.work == Work(searches=10, gemms=0)
    assert counted == {"searches": 10, "gemms": 0}
    kw["bootstrap"] = 4  # CKNNA's resamples search again: not the matrix's work
    r = prh.measure_matrix(xs, ys, metrics, **kw)
    assert r.work == Work(searches=10, gemms=0)
    for metric in metrics:
        assert _cells(r, metric) == _unshared(xs, ys, metric, **kw), metric


def test_raw_rows_search_twice_and_score_the_same(models, counted):
    xs, ys = models
    metrics = ("mutual_knn", "cknna")
    r = prh.measure_matrix(xs, ys, metrics, k=5, preprocess_features=False)
    # rows far from unit: the inner product ranks otherwise than the cosine, two searches a layer
    assert r.work == Work(searches=20, gemms=0) and counted["searches"] == 20
    for metric in metrics:
        assert _cells(r, metric) == _unshared(xs, ys, metric, k=5, preprocess_features=False)


def test_every_metric_prepares_each_layer_once(models, counted):
    xs, ys = models
    kw = {"k": 5, "null": 6, "seed": 2, "options": MetricOptions(cca_dim=4)}
    r = prh.measure_matrix(xs, ys, "all", **kw)
    # cosine lists (four metrics) and CKNNA's inner-product lists from one sweep per layer; one
    # linear Gram per layer for CKA and unbiased CKA (resamples of the bootstrap not counted)
    assert r.work == Work(searches=10, gemms=10)
    assert r.work == planned_work([get_metric(m) for m in METRICS], layers=10)
    assert counted == {"searches": 10, "gemms": 10}
    r = prh.measure_matrix(xs, ys, "all", bootstrap=3, **kw)
    for metric in METRICS:
        assert _cells(r, metric) == _unshared(xs, ys, metric, bootstrap=3, **kw), metric


def test_a_small_state_budget_prepares_again_and_scores_the_same(models):
    xs, ys = models
    opts = MetricOptions(kernel="rbf", sigma=0.7)
    kw = {"k": 5, "options": opts}
    shared = prh.measure_matrix(xs, ys, ["cka", "unbiased_cka", "cknna"], **kw)
    tight = prh.measure_matrix(xs, ys, ["cka", "unbiased_cka", "cknna"], state_bytes=1, **kw)
    assert shared.work == Work(searches=10, gemms=10)
    assert tight.work.gemms > shared.work.gemms and tight.work.searches > 10
    for m in ("cka", "unbiased_cka", "cknna"):
        assert np.array_equal(tight.scores[m], shared.scores[m])
        assert _cells(shared, m) == _unshared(xs, ys, m, **kw)


def test_state_cache_drops_least_recently_used_never_the_newest():
    c = StateCache(budget=3 * 80)
    for key in "abc":
        c[key] = np.zeros(10)  # 80 bytes each
    c["a"]  # a used: b is now the oldest
    c["d"] = np.zeros(10)
    assert list(c) == ["c", "a", "d"] and c.prepared == 4 and c.used == 240
    c["big"] = np.zeros(100)
    assert list(c) == ["big"] and c.used == nbytes(c["big"]) == 800


def test_the_cli_json_reports_the_work(models, tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "COMMANDS", {"measure": cli.COMMANDS["measure"]})
    xs, ys = models
    paths = []
    for i, x in enumerate([*xs, *ys]):
        paths.append(tmp_path / f"m{i}.npy")
        np.save(paths[-1], x)
    out = tmp_path / "m.json"
    argv = ["measure", "--x", *paths[:2], "--y", *paths[2:], "--metric", "mutual_knn,cka,lcs_knn"]
    argv += ["--k", 5, "--json", out, "--no-progress"]
    assert cli.main(list(map(str, argv))) == 0
    doc = json.loads(out.read_text())
    assert doc["work"] == {"searches": 10, "gemms": 10}
    r = prh.measure_matrix(xs, ys, ["mutual_knn", "cka", "lcs_knn"], k=5)
    assert doc["matrices"]["cka"]["scores"] == r.scores["cka"].tolist()


def test_the_cost_estimate_counts_the_same_work(models, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "COMMANDS", {"measure": cli.COMMANDS["measure"]})
    xs, ys = models
    paths = []
    for i, x in enumerate([*xs, *ys]):
        paths.append(tmp_path / f"m{i}.npy")
        np.save(paths[-1], x)
    argv = ["measure", "--x", *paths[:2], "--y", *paths[2:], "--metric", "all", "--k", 5]
    argv += ["--cca-dim", 4, "--null", 3, "--json", tmp_path / "m.json"]
    assert cli.main(list(map(str, argv))) == 0
    err = capsys.readouterr().err
    assert "10 kNN searches and 10 Gram products in all" in err
    assert "cycle_knn: the layer preparations of mutual_knn" in err
    assert "unbiased_cka: the layer preparations of cka" in err
    assert json.loads((tmp_path / "m.json").read_text())["work"] == {"searches": 10, "gemms": 10}
