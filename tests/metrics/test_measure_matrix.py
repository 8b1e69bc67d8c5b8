"""prh measure --x ... --y ...: the score matrix, its JSON / .npy / PNG, and one JSON shape."""

from __future__ import annotations

import json

import numpy as np
import pytest

import prh.cli as cli


@pytest.fixture(autouse=True)
def only_measure(monkeypatch):
    monkeypatch.setattr(cli, "COMMANDS", {"measure": cli.COMMANDS["measure"]})


@pytest.fixture
def models(tmp_path):
    """Three X models and two Y models of 40 shared samples, with different layer counts."""
    rng = np.random.default_rng(0)
    base = rng.standard_normal((40, 6)).astype(np.float32)
    xs, ys = tmp_path / "xs", tmp_path / "ys"
    xs.mkdir(), ys.mkdir()
    for i, layers in enumerate((1, 2, 3)):
        noise = rng.standard_normal((40, layers, 6)).astype(np.float32)
        np.save(xs / f"x{i}.npy", base[:, None, :] + (i + 0.5) * noise)
    for j, layers in enumerate((2, 1)):
        noise = rng.standard_normal((40, layers, 6)).astype(np.float32)
        np.save(ys / f"y{j}.npy", base[:, None, :] + (j + 1.0) * noise)
    return sorted(xs.iterdir()), sorted(ys.iterdir()), xs, ys


def run(*argv) -> int:
    return cli.main(["measure", *map(str, argv)])


def strict(path):
    """JSON parsed with NaN and Infinity refused (they are not JSON)."""

    def refuse(token):
        raise ValueError(f"{token} in JSON")

    return json.loads(path.read_text(), parse_constant=refuse)


@pytest.mark.parametrize("metric", ["mutual_knn", "svcca"])  # both cache per-file states
def test_matrix_equals_each_pair(models, tmp_path, capsys, metric):
    xs, ys, _, _ = models
    out = tmp_path / "m.json"
    opts = ["--metric", metric, "--k", 5, "--cca-dim", 3]
    assert run("--x", *xs, "--y", *ys, *opts, "--json", out) == 0
    doc = strict(out)
    m = doc["matrices"][metric]
    assert np.shape(m["scores"]) == (3, 2) and np.shape(m["layers"]) == (3, 2, 2)
    assert len(doc["results"]) == 6
    for i, x in enumerate(xs):
        for j, y in enumerate(ys):
            one = tmp_path / f"p{i}{j}.json"
            assert run(x, y, *opts, "--json", one) == 0
            (r,) = strict(one)["results"]
            assert m["scores"][i][j] == r["score"] and m["layers"][i][j] == r["layers"]
    assert "x0" in capsys.readouterr().out


def test_folders_expand_sorted(models, tmp_path):
    xs, ys, dx, dy = models
    a, b = tmp_path / "files.json", tmp_path / "dirs.json"
    assert run("--x", *xs, "--y", *ys, "--metric", "cka", "--json", a) == 0
    assert run("--x", dx, "--y", dy, "--metric", "cka", "--json", b) == 0
    assert strict(a)["matrices"] == strict(b)["matrices"]
    assert strict(b)["x"] == [str(p) for p in xs]


def test_one_json_shape_for_pair_all_and_matrix(models, tmp_path):
    xs, ys, _, _ = models
    shapes = []
    for argv in (
        [xs[0], ys[0]],
        [xs[0], ys[0], "--metric", "all", "--cca-dim", 3],
        ["--x", *xs, "--y", *ys, "--metric", "all", "--cca-dim", 3],
    ):
        out = tmp_path / "s.json"
        assert run(*argv, "--k", 4, "--json", out) == 0
        doc = strict(out)
        shapes.append((list(doc), sorted(doc["results"][0])))
        assert doc["format"] == "prh-measure/2"
    assert shapes[0] == shapes[1] == shapes[2]


def test_npy_in_platonic_rep_layout_and_heatmap(models, tmp_path):
    xs, ys, _, _ = models
    npy, png, js = tmp_path / "s.npy", tmp_path / "s.png", tmp_path / "s.json"
    argv = ["--x", *xs, "--y", *ys, "--k", 5, "--npy", npy, "--heatmap", png, "--json", js]
    assert run(*argv) == 0
    d = np.load(npy, allow_pickle=True).item()  # how platonic-rep users read it
    assert set(d) == {"scores", "indices", "x_names", "y_names"}  # names added (issue 24)
    assert d["x_names"] == ["x0", "x1", "x2"] and d["y_names"] == ["y0", "y1"]
    m = strict(js)["matrices"]["mutual_knn"]
    np.testing.assert_array_equal(d["scores"], m["scores"])
    # platonic-rep stores (layer of Y, layer of X): its compute_alignment calls score(y, x).
    np.testing.assert_array_equal(d["indices"], np.asarray(m["layers"])[:, :, ::-1])
    assert d["indices"].dtype == np.float64 and d["indices"].shape == (3, 2, 2)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_npy_one_file_per_metric(models, tmp_path):
    xs, ys, _, _ = models
    assert (
        run(xs[1], ys[0], "--metric", "all", "--k", 4, "--cca-dim", 3, "--npy", tmp_path / "r.npy")
        == 0
    )
    assert (tmp_path / "r.svcca.npy").is_file() and (tmp_path / "r.mutual_knn.npy").is_file()


def test_layers_negative_pair_as_typed(models, tmp_path):
    xs, ys, _, _ = models
    out = tmp_path / "l.json"
    assert run(xs[2], ys[0], "--layers", "-1,-1", "--json", out) == 0
    (r,) = strict(out)["results"]
    assert r["layers"] == [2, 1] and r["layer_search"] == "fixed"
    assert run(xs[2], ys[0], "--layers", "-1,0", "--json", out) == 0
    assert strict(out)["results"][0]["layers"] == [2, 0]


def test_undefined_score_is_null_never_nan(models, tmp_path, capsys):
    """An RBF bandwidth so wide that every kernel is constant: CKA is 0/0."""
    xs, ys, _, _ = models
    out = tmp_path / "n.json"
    argv = [xs[0], ys[1], "--metric", "cka", "--kernel", "rbf", "--rbf-sigma", "1e200"]
    assert run(*argv, "--null", 5, "--json", out) == 0
    assert "undefined" in capsys.readouterr().out
    doc = strict(out)
    assert doc["results"][0]["score"] is None and doc["matrices"]["cka"]["scores"] == [[None]]
    assert doc["results"][0]["p_value"] is None  # no p-value for an undefined score


def test_seed_gives_identical_results(models, tmp_path):
    xs, ys, _, _ = models
    outs = [tmp_path / "a.json", tmp_path / "b.json"]
    for out in outs:
        assert run(xs[1], ys[0], "--null", 20, "--bootstrap", 20, "--seed", 7, "--json", out) == 0
    assert strict(outs[0])["results"] == strict(outs[1])["results"]


def test_several_metrics_in_one_call_with_intervals_per_cell(models, tmp_path):
    xs, ys, _, _ = models
    both, one = tmp_path / "both.json", tmp_path / "one.json"
    opts = ["--k", 5, "--bootstrap", 20, "--seed", 1]
    assert run("--x", *xs, "--y", *ys, "--metric", "mutual_knn,cka,mutual_knn", *opts,
               "--json", both) == 0  # fmt: skip
    doc = strict(both)
    assert doc["metrics"] == ["mutual_knn", "cka"]
    for metric in ("mutual_knn", "cka"):
        assert run("--x", *xs, "--y", *ys, "--metric", metric, *opts, "--json", one) == 0
        alone = strict(one)["matrices"][metric]
        assert doc["matrices"][metric] == alone
        ci = np.array(alone["ci"])  # (X, Y, 2)
        assert ci.shape == (3, 2, 2) and (ci[..., 0] <= np.array(alone["scores"])).all()
        cells = [r for r in strict(one)["results"] if r["metric"] == metric]
        assert [c["ci"] for c in cells] == ci.reshape(-1, 2).tolist()
    assert run("--x", *xs, "--y", *ys, "--json", one) == 0
    assert strict(one)["matrices"]["mutual_knn"]["ci"] is None  # no bootstrap, no interval


def test_an_unknown_metric_in_a_list_is_one_line(models, bad_input):
    xs, ys, _, _ = models
    bad_input(["measure", xs[0], ys[0], "--metric", "mutual_knn,cca"], inputs=[xs[0], ys[0]],
              match="unknown metric 'cca'")  # fmt: skip


@pytest.fixture
def count_knn(monkeypatch):
    """Every neighbour search ``prh measure`` asks for, as ``(N, D)`` shapes."""
    import prh.metrics.api as api

    calls = []
    real = api.knn

    def counted(x, *args, **kwargs):
        calls.append(x.shape)
        return real(x, *args, **kwargs)

    monkeypatch.setattr(api, "knn", counted)
    return calls


def ten_by_ten(tmp_path, with_ids: bool, shuffled_y: bool = False):
    """Ten X and ten Y single-layer models of 30 shared samples; Y rows optionally shuffled."""
    from prh.features import save_features

    rng = np.random.default_rng(5)
    base = rng.standard_normal((30, 8)).astype(np.float32)
    ids = [f"s{i}" for i in range(30)]
    paths = {"x": [], "y": []}
    for side in ("x", "y"):
        for m in range(10):
            f = (base + 0.5 * rng.standard_normal(base.shape)).astype(np.float32)
            order = rng.permutation(30) if side == "y" and shuffled_y else np.arange(30)
            p = tmp_path / f"{side}{m}.safetensors"
            save_features(p, f[order], ids=[ids[i] for i in order] if with_ids else None)
            paths[side].append(p)
    return paths["x"], paths["y"]


@pytest.mark.parametrize(
    "with_ids, shuffled_y", [(False, False), (True, False), (True, True)]
)  # fmt: skip
def test_ten_by_ten_matrix_computes_twenty_neighbour_lists(
    tmp_path, count_knn, with_ids, shuffled_y
):
    xs, ys = ten_by_ten(tmp_path, with_ids, shuffled_y)
    out = tmp_path / "m.json"
    metrics = "mutual_knn,cycle_knn,lcs_knn,edit_distance_knn"
    assert run("--x", *xs, "--y", *ys, "--metric", metrics, "--k", 4, "--json", out) == 0
    assert len(count_knn) == 20  # one per model, shared by its 10 pairs and the 4 kNN metrics
    doc = strict(out)
    for i, j in ((0, 0), (3, 7), (9, 9)):  # each cell still equals its own pair's run
        one = tmp_path / f"p{i}{j}.json"
        assert run(xs[i], ys[j], "--metric", metrics, "--k", 4, "--json", one) == 0
        for r in strict(one)["results"]:
            assert doc["matrices"][r["metric"]]["scores"][i][j] == r["score"]


def test_x_equals_y_computes_each_models_lists_once(tmp_path, count_knn):
    xs, _ = ten_by_ten(tmp_path, with_ids=True)
    out = tmp_path / "m.json"
    assert run("--x", *xs[:3], "--y", *xs[:3], "--k", 4, "--json", out) == 0
    assert len(count_knn) == 3
    scores = np.array(strict(out)["matrices"]["mutual_knn"]["scores"])
    assert np.all(np.diag(scores) == 1.0)
    count_knn.clear()
    assert run(xs[0], xs[0], "--k", 4) == 0  # the two-file form
    assert len(count_knn) == 1


def test_measure_of_an_array_against_itself_searches_once(count_knn):
    from prh.metrics import measure

    rng = np.random.default_rng(0)
    a = rng.standard_normal((50, 2, 6)).astype(np.float32)
    r = measure(a, a, "mutual_knn", k=5, null=3, bootstrap=3)
    assert len(count_knn) == 2  # one per layer, not per side
    assert r.layer_scores[0, 0] == r.layer_scores[1, 1] == 1.0
    count_knn.clear()
    fresh = measure(a, a.copy(), "mutual_knn", k=5, null=3, bootstrap=3)
    assert len(count_knn) == 4 and fresh.to_dict() == r.to_dict()
