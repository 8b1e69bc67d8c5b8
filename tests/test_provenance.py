"""Provenance headers on JSON outputs, and readers that say when a file is older or foreign."""

from __future__ import annotations

import argparse
import hashlib
import json

import numpy as np
import pytest

import prh
import prh.provenance as prov
from prh.errors import InputError
from prh.provenance import expect_format, expect_rows, stamp, stamped


def test_stamp_records_version_inputs_seed_and_options(tmp_path):
    f = tmp_path / "a.bin"
    f.write_bytes(b"hello")
    args = argparse.Namespace(a=str(f), k=10, out=tmp_path / "o.json", func=print, _raw=1)
    head = stamp("measure", inputs=[f, tmp_path, "hf:bert-base", None], seed=3, options=args)
    assert head["format"] == "prh-measure/2" and head["prh_version"] == prh.__version__
    assert head["seed"] == 3
    file_in, folder_in, spec_in = head["inputs"]
    assert file_in == {
        "path": str(f.resolve()),
        "bytes": 5,
        "sha256": hashlib.sha256(b"hello").hexdigest(),
    }
    assert folder_in == {"path": str(tmp_path.resolve()), "folder": True}
    assert spec_in == {"spec": "hf:bert-base"}
    # argparse plumbing is dropped, paths become strings, and the whole header is JSON.
    assert head["options"] == {"a": str(f), "k": 10, "out": str(tmp_path / "o.json")}
    assert json.loads(json.dumps(head)) == head


def test_large_inputs_are_recorded_by_size_and_mtime(tmp_path, monkeypatch):
    f = tmp_path / "big.npy"
    f.write_bytes(b"x" * 100)
    monkeypatch.setattr(prov, "HASH_LIMIT_BYTES", 99)
    d = prov.describe_input(f)
    assert "sha256" not in d and d["bytes"] == 100 and d["mtime"] == f.stat().st_mtime


def test_stamped_puts_the_header_first_and_keeps_the_result():
    d = stamped("prove", {"passed": True, "checks": []}, seed=0)
    assert list(d)[:5] == ["format", "prh_version", "inputs", "seed", "options"]
    assert d["passed"] is True and d["format"] == "prh-prove/1"


def test_unknown_kind_is_a_programming_error():
    with pytest.raises(ValueError, match="unknown output kind"):
        stamp("nonsense")


def test_expect_format_accepts_current_notes_older_refuses_foreign_and_newer():
    notes: list[str] = []
    assert expect_format(stamp("fit-law"), "fit-law", "law.json", note=notes.append) == 1
    assert notes == []
    assert expect_format({"chosen": "power"}, "fit-law", "old.json", note=notes.append) == 0
    assert len(notes) == 1 and "old.json" in notes[0] and "no 'format'" in notes[0]
    with pytest.raises(InputError, match=r"m\.json: a 'prh-measure/2' file; expected prh-fit"):
        expect_format(stamp("measure"), "fit-law", "m.json")
    with pytest.raises(InputError, match="newer than this prh"):
        expect_format({"format": "prh-fit-law/99"}, "fit-law", "new.json")
    with pytest.raises(InputError, match="expected a JSON object"):
        expect_format([1, 2], "fit-law", "list.json")


def test_expect_rows_one_note_for_a_whole_older_file():
    notes: list[str] = []
    rows = [{"score": 0.1}, {"score": 0.2}, {"format": "prh-result/1", "score": 0.3}]
    assert expect_rows(rows, "result", "r.jsonl", note=notes.append) == 0
    assert notes == ["r.jsonl: 2 of 3 rows have no 'format' field (written before prh "
                     "stamped its outputs); read as prh-result/1"]  # fmt: skip
    with pytest.raises(InputError, match=r"r\.jsonl row 2: a 'prh-measure/2' file"):
        expect_rows([{"format": "prh-result/1"}, {"format": "prh-measure/2"}], "result", "r.jsonl")


# ---------------------------------------------------------------- the commands that write and read


@pytest.fixture
def features(tmp_path):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((30, 2, 8)).astype(np.float32)
    b = (a + 0.3 * rng.standard_normal(a.shape)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    return tmp_path / "a.npy", tmp_path / "b.npy"


def test_measure_json_says_which_prh_inputs_seed_and_options_made_it(features, tmp_path, capsys):
    from prh.cli import main

    a, b = features
    out = tmp_path / "r.json"
    assert main(["measure", str(a), str(b), "--k", "5", "--seed", "7", "--json", str(out)]) == 0
    r = json.loads(out.read_text())
    assert r["format"] == "prh-measure/2" and r["prh_version"] == prh.__version__
    assert r["seed"] == 7 and r["options"]["k"] == 5 and r["results"][0]["score"] is not None
    assert [i["sha256"] for i in r["inputs"]] == [
        hashlib.sha256(p.read_bytes()).hexdigest() for p in (a, b)
    ]


def test_fit_law_given_a_measure_json_says_so_in_one_line(features, tmp_path, bad_input, capsys):
    from prh.cli import main

    a, b = features
    m = tmp_path / "m.json"
    assert main(["measure", str(a), str(b), "--k", "5", "--json", str(m)]) == 0
    capsys.readouterr()
    line = bad_input(["fit-law", str(m), "--out", str(tmp_path / "law")], inputs=[m])
    assert "'prh-measure/2' file; expected results.jsonl rows" in line


def _rows(n: int = 3) -> list[dict]:
    return [
        {"cell_id": str(i), "split": "curve", "views": "good", "rho": 1.0, "samples": 10 * (i + 1),
         "seed": 0, "score": 0.1 * i, "calibrated": None}
        for i in range(n)
    ]  # fmt: skip


def test_sweep_rows_carry_the_schema_and_older_rows_are_read_with_one_note(tmp_path, capsys):
    from prh.scaling.backends import make_backend
    from prh.scaling.grid import preset_grid
    from prh.scaling.sweep import read_results, run_sweep

    grid = preset_grid("demo", "planted")
    run_sweep(grid, make_backend("planted"), tmp_path / "sw", seed=0)
    rows = read_results(tmp_path / "sw" / "results.jsonl")
    assert rows and all(r["format"] == "prh-result/1" for r in rows)
    assert capsys.readouterr().err == ""

    # fit-law and efficiency stamp their outputs with the results file they read.
    from prh.cli import main

    res = tmp_path / "sw" / "results.jsonl"
    sha = hashlib.sha256(res.read_bytes()).hexdigest()
    main(["fit-law", str(res), "--starts", "2", "--forms", "additive", "--out", str(tmp_path)])
    assert (
        main(["efficiency", str(res), "--bootstrap", "20", "--json", str(tmp_path / "e.json")]) == 0
    )
    for name, kind in (("law.json", "prh-fit-law/1"), ("e.json", "prh-efficiency/1")):
        d = json.loads((tmp_path / name).read_text())
        assert d["format"] == kind and d["inputs"][0]["sha256"] == sha and d["seed"] == 0
    capsys.readouterr()

    old = tmp_path / "old.jsonl"
    old.write_text("".join(json.dumps(r) + "\n" for r in _rows()))
    assert read_results(old) == _rows()
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "3 of 3 rows have no 'format' field" in err[0]
