"""prh.measure_matrix: the Python score matrix equals each cell's measure and the CLI's JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest

import prh
import prh.cli as cli
from prh.errors import InputError


@pytest.fixture
def models():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((50, 1, 6)).astype(np.float32)
    xs = [base + s * rng.standard_normal((50, layers, 6)).astype(np.float32)
          for s, layers in ((0.3, 2), (2.0, 1))]  # fmt: skip
    ys = [base + 0.5 * rng.standard_normal((50, 3, 6)).astype(np.float32)]
    return xs, ys


def test_each_cell_is_its_own_measure(models):
    xs, ys = models
    kw = {"k": 5, "null": 20, "bootstrap": 5, "seed": 2}
    r = prh.measure_matrix(xs, ys, ["mutual_knn", "cka"], x_names=["a", "b"], **kw)
    assert r.scores["mutual_knn"].shape == (2, 1) and r.x_names == ["a", "b"]
    for cell in r.results:
        one = prh.measure(xs[cell["row"]], ys[cell["col"]], cell["metric"], **kw).to_dict()
        assert {k: cell[k] for k in one} == one
        assert r.p_values[cell["metric"]][cell["row"], cell["col"]] == one["p_value"]
        assert r.null_draws[cell["metric"]][cell["row"], cell["col"]] == 20


def test_the_cli_matrix_is_measure_matrix_of_the_files(models, tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "COMMANDS", {"measure": cli.COMMANDS["measure"]})
    xs, ys = models
    for i, x in enumerate(xs):
        np.save(tmp_path / f"x{i}.npy", x)
    np.save(tmp_path / "y0.npy", ys[0])
    out = tmp_path / "m.json"
    argv = ["measure", "--x", tmp_path / "x0.npy", tmp_path / "x1.npy", "--y", tmp_path / "y0.npy"]
    argv += ["--k", 5, "--null", 30, "--null-stop", "adaptive", "--json", out, "--no-progress"]
    assert cli.main(list(map(str, argv))) == 0
    doc = json.loads(out.read_text())["matrices"]["mutual_knn"]
    r = prh.measure_matrix(xs, ys, k=5, null=30, null_stop="adaptive")
    assert doc["scores"] == r.scores["mutual_knn"].tolist()
    assert doc["p_values"] == r.p_values["mutual_knn"].tolist()
    assert doc["layers"] == r.layers["mutual_knn"].tolist()


def test_x_equals_y_prepares_each_input_once(models, monkeypatch):
    from prh.metrics import api

    calls = []
    real = api.knn
    monkeypatch.setattr(api, "knn", lambda x, *a, **kw: calls.append(1) or real(x, *a, **kw))
    xs, _ = models
    r = prh.measure_matrix(xs, xs, ["mutual_knn", "cycle_knn"], k=5)
    assert len(calls) == 3  # 2 + 1 layers, shared by four cells and two metrics
    assert np.all(np.diag(r.scores["mutual_knn"]) == 1.0)


def test_bad_input_is_one_line(models):
    xs, ys = models
    with pytest.raises(InputError, match="unknown metric 'nope'"):
        prh.measure_matrix(xs, ys, ["nope"])
    with pytest.raises(InputError, match="1 x names for 2 X inputs"):
        prh.measure_matrix(xs, ys, x_names=["a"])
    with pytest.raises(InputError, match="row counts differ"):
        prh.measure_matrix([xs[0], xs[1][:40]], ys)
