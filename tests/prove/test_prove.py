"""``prh prove``: every check passes, results are deterministic, the CLI fails cleanly."""

import json
import os

import pytest

from prh.cli import main
from prh.prove import CHECK_NAMES, CheckResult, ProveConfig, run_check, select_checks
from prh.prove import runner as result_mod


@pytest.fixture(autouse=True)
def _one_blas_thread():
    from prh.prove.runner import single_threaded_blas

    with single_threaded_blas():
        yield


@pytest.mark.parametrize("name", ["closed-form", "uniqueness", "platonic", "views", "next-token"])
def test_exact_checks_pass(name):
    r = run_check(name, ProveConfig(worlds=10, seed=1, quick=True))
    assert r.name == name and r.passed, r.figures
    assert r.seconds > 0 and r.statement


def test_bound_check_is_deterministic_and_reports_figures():
    a = run_check("bound", ProveConfig(worlds=15, seed=2))
    b = run_check("bound", ProveConfig(worlds=15, seed=2))
    assert a.passed and a.figures == b.figures
    assert a.figures["worlds"] == 15 and a.figures["violations"] == 0
    assert 0 <= a.figures["median_ratio"] <= a.figures["max_ratio"] < 1
    c = run_check("bound", ProveConfig(worlds=15, seed=3))
    assert c.figures != a.figures


def test_views_staircase_matches_prediction():
    r = run_check("views", ProveConfig(seed=0, quick=True))
    e = r.figures["e_cca"]
    assert e == sorted(e, reverse=True) and e[-1] == 0 and e[0] > 0
    assert r.figures["mutual_knn"][-1] == 1.0


def test_select_checks():
    assert select_checks(None) == list(CHECK_NAMES)
    assert select_checks("views, bound") == ["bound", "views"]  # registry order
    with pytest.raises(Exception, match="unknown check nope"):
        select_checks("bound,nope")


def test_config_rejects_bad_worlds():
    with pytest.raises(Exception, match="--worlds: expected a positive integer"):
        ProveConfig(worlds=0)


@pytest.mark.parametrize("value", ["0", "-3", "2.5", "many"])
def test_cli_bad_worlds(value, capsys):
    with pytest.raises(SystemExit) as e:
        main(["prove", "--worlds", value])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--worlds" in err and "positive integer" in err and "Traceback" not in err


def test_cli_unknown_only(capsys):
    assert main(["prove", "--only", "platonic,bogus"]) == 2
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0 and "unknown check bogus" in err


def test_cli_unwritable_json_fails_before_running(tmp_path, capsys, monkeypatch):
    ran = []
    monkeypatch.setattr(result_mod, "run_check", lambda *a: ran.append(a))
    assert main(["prove", "--json", str(tmp_path / "missing" / "out.json")]) == 2
    assert "does not exist" in capsys.readouterr().err and not ran
    if os.geteuid() != 0:  # root can write anywhere
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        assert main(["prove", "--json", str(ro / "out.json")]) == 2
    assert main(["prove", "--json", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err and not ran


def test_cli_json_schema(tmp_path, capsys):
    out = tmp_path / "prove.json"
    assert main(["prove", "--only", "platonic,next-token", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    header = {"format", "prh_version", "inputs", "seed", "options"}  # docs/outputs.md
    assert set(data) == header | {"passed", "checks"} and data["passed"] is True
    assert data["format"] == "prh-prove/1" and data["seed"] == 0
    assert [c["name"] for c in data["checks"]] == ["platonic", "next-token"]
    for c in data["checks"]:
        assert set(c) == {"name", "statement", "passed", "figures", "seconds"}
        assert isinstance(c["figures"], dict) and c["passed"] is True
    table = capsys.readouterr().out
    assert "platonic" in table and "PASS" in table and "2/2 checks passed" in table


def test_cli_failing_check_exits_one(tmp_path, monkeypatch, capsys):
    def failing(config):
        return CheckResult("platonic", "a statement that fails", False, {"x": 1.0})

    real = result_mod._registry

    monkeypatch.setattr(result_mod, "_registry", lambda: {**real(), "platonic": failing})
    out = tmp_path / "p.json"
    assert main(["prove", "--only", "platonic", "--json", str(out)]) == 1
    assert json.loads(out.read_text())["passed"] is False
    assert "FAIL" in capsys.readouterr().out


@pytest.mark.slow
def test_cli_full_quick_run(tmp_path, capsys):
    out = tmp_path / "all.json"
    assert main(["prove", "--quick", "--worlds", "20", "--seed", "1", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert [c["name"] for c in data["checks"]] == list(CHECK_NAMES)
    training = data["checks"][-1]["figures"]
    assert training["sin_theta_hard"] < 0.05 and training["sin_theta_full_batch"] < 1e-3
