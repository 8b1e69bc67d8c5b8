"""prh measure end to end: files, ids join, JSON, and one clear line (exit 2) for each bad input."""

import json

import numpy as np
import pytest

import prh.cli as cli
from prh.features import save_features


@pytest.fixture(autouse=True)
def only_measure(monkeypatch):
    """Build the parser with just this command, so other commands' imports do not matter here."""
    monkeypatch.setattr(cli, "COMMANDS", {"measure": cli.COMMANDS["measure"]})


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((40, 2, 8)).astype(np.float32)
    b = (a + 0.3 * rng.standard_normal(a.shape)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    return tmp_path, a, b


def run(capsys, *argv):
    code = cli.main([str(x) for x in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_measure_prints_and_writes_json(files, capsys):
    d, _, _ = files
    code, out, _ = run(
        capsys, "measure", d / "a.npy", d / "b.npy", "--k", 5, "--null", 9,
        "--bootstrap", 5, "--json", d / "r.json",
    )  # fmt: skip
    assert code == 0
    assert "score" in out and "p-value" in out and "95% CI" in out and "calibrated" in out
    (r,) = json.loads((d / "r.json").read_text())["results"]
    assert r["metric"] == "mutual_knn" and r["k"] == 5 and r["n"] == 40
    assert len(r["ci"]) == 2 and r["p_value"] == pytest.approx(0.1) and len(r["layers"]) == 2


def test_measure_all_metrics(files, capsys):
    d, _, _ = files
    code, _, _ = run(
        capsys, "measure", d / "a.npy", d / "b.npy", "--metric", "all", "--k", 4,
        "--cca-dim", 4, "--json", d / "all.json",
    )  # fmt: skip
    assert code == 0
    results = json.loads((d / "all.json").read_text())["results"]
    assert [r["metric"] for r in results][:2] == ["mutual_knn", "cycle_knn"]
    assert len(results) == 8


def test_ids_join_reorders_rows(files, capsys, tmp_path):
    _, a, b = files
    perm = np.random.default_rng(1).permutation(40)
    save_features(tmp_path / "a.safetensors", a, ids=[f"s{i}" for i in range(40)])
    save_features(tmp_path / "b.safetensors", b[perm], ids=[f"s{i}" for i in perm])
    code, _, _ = run(capsys, "measure", tmp_path / "a.safetensors", tmp_path / "b.safetensors",
                     "--json", tmp_path / "j.json")  # fmt: skip
    code2, _, _ = run(capsys, "measure", tmp_path / "a.npy", tmp_path / "b.npy",
                      "--json", tmp_path / "p.json")  # fmt: skip
    assert code == code2 == 0
    joined = json.loads((tmp_path / "j.json").read_text())["results"][0]
    assert joined["score"] == json.loads((tmp_path / "p.json").read_text())["results"][0]["score"]


def write(path, arr):
    np.save(path, arr)
    return path


def with_row(x, row, value):
    x = x.copy()
    x[row] = value
    return x


def text_file(path):
    path.write_text("not an array")
    return path


BAD = [
    (lambda d, a, b: (d / "a.npy", write(d / "s.npy", b[:30])), "row counts differ"),
    (
        lambda d, a, b: (d / "a.npy", write(d / "n.npy", with_row(b, 3, np.nan))),
        r"n.npy: row 3 .*nan",
    ),
    (lambda d, a, b: (write(d / "z.npy", with_row(a, 5, 0)), d / "b.npy"), r"z.npy: row 5 .*zeros"),
    (lambda d, a, b: (write(d / "o.npy", a[:1]), write(d / "p.npy", b[:1])), "at least 2 rows"),
    (lambda d, a, b: (text_file(d / "t.npy"), d / "b.npy"), "t.npy: not a readable array file"),
    (lambda d, a, b: (d / "a.npy", d / "missing.npy"), "missing.npy: no such file"),
]


@pytest.mark.parametrize(("make", "message"), BAD)
def test_bad_input_exits_2_with_one_line(files, capsys, make, message):
    d, a, b = files
    pa, pb = make(d, a, b)
    code, _, err = run(capsys, "measure", pa, pb)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("prh measure: error:")
    assert __import__("re").search(message, err), err


def test_k_too_large_and_missing_ids(files, capsys, tmp_path):
    d, _, _ = files
    code, _, err = run(capsys, "measure", d / "a.npy", d / "b.npy", "--k", 40)
    assert code == 2 and "k must satisfy 1 <= k < N = 40" in err
    (tmp_path / "ia.txt").write_text("\n".join(f"s{i}" for i in range(40)))
    (tmp_path / "ib.txt").write_text("\n".join(f"t{i}" for i in range(40)))
    code, _, err = run(capsys, "measure", d / "a.npy", d / "b.npy",
                       "--ids-a", tmp_path / "ia.txt", "--ids-b", tmp_path / "ib.txt")  # fmt: skip
    assert code == 2 and "40 ids of" in err and "are missing, first 's0'" in err


def test_unwritable_json_fails_before_work(files, capsys):
    d, _, _ = files
    code, _, err = run(capsys, "measure", d / "a.npy", d / "b.npy", "--json", d / "no" / "r.json")
    assert code == 2 and "--json" in err
