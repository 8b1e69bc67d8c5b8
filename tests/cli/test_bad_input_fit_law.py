"""`prh fit-law` on bad input: exit 2, one line, no traceback, inputs intact, nothing written."""

from __future__ import annotations

import json
import os

import pytest


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """A planted demo sweep (72 rows, under a second) and hand-broken copies of its rows."""
    from prh.cli import main

    d = tmp_path_factory.mktemp("fitlaw")
    assert main(["sweep", "--preset", "demo", "--backend", "planted", "--out", str(d / "sw"),
                 "--workers", "1", "--no-progress"]) == 0  # fmt: skip
    return d


def broken(sweep, name, edit, blank_lines=0):
    """A copy of the sweep's rows with ``edit(rows)`` applied (and blank lines on top)."""
    rows = [json.loads(line) for line in (sweep / "sw" / "results.jsonl").read_text().splitlines()]
    edit(rows)
    path = sweep / name
    path.write_text("\n" * blank_lines + "".join(json.dumps(r) + "\n" for r in rows))
    return path


def _first(rows, **where):
    return next(r for r in rows if all(r.get(k) == v for k, v in where.items()))


def _set(field, value, **where):
    return lambda rows: _first(rows, **where).update({field: value})


def _drop(field, **where):
    return lambda rows: _first(rows, **where).pop(field)


ROW_CASES = {  # (edit, blank lines on top, expected line) -- line numbers count blank lines
    "score a string": (_set("score", "high", split="fit"), 0, r"line 1: field 'score' .*'high'"),
    "score true": (_set("score", True, split="fit"), 0, r"line 1: field 'score' .*got True"),
    "score missing": (_drop("score", split="fit"), 2, r"line 3: missing field 'score'"),
    "samples missing": (_drop("samples", split="heldout"), 0, r"missing field 'samples' \(expec"),
    "samples negative": (_set("samples", -3, split="fit"), 0, r"'samples' expected .* > 0, got -3"),
    "rho a list": (_set("rho", [0.5], split="fit"), 0, r"'rho' expected a finite number, got \["),
    "views missing": (_drop("views", split="curve"), 0, r"missing field 'views' \(expected a str"),
    "split missing": (_drop("split", views="mixture"), 0, r"line 1: missing field 'split'"),
    "point a list": (_set("point", [1], split="repeat"), 0, r"'point' expected a string, an int"),
}


@pytest.mark.parametrize("edit, blank, match", ROW_CASES.values(), ids=ROW_CASES.keys())
def test_bad_rows_name_file_line_and_field(bad_input, sweep, edit, blank, match):
    path = broken(sweep, "r.jsonl", edit, blank)
    out = sweep / "out-rows"
    line = bad_input(["fit-law", path, "--out", out], inputs=[path], match=match)
    assert str(path) in line
    assert not out.exists()  # refused before the folder was made


def test_line_numbers_are_file_lines(bad_input, sweep):
    def edit(rows):
        rows[9]["score"] = "x"

    path = broken(sweep, "r10.jsonl", edit, blank_lines=1)
    bad_input(["fit-law", path], inputs=[path], match=r"r10\.jsonl line 11: field 'score'")


def test_output_is_input(bad_input, sweep, tmp_path):
    res = sweep / "sw" / "results.jsonl"
    match = r"--json .*results\.jsonl: would overwrite the input"
    bad_input(["fit-law", res, "--json", res], inputs=[res], match=match)
    # a results file named law.json: the default output DIR/law.json is the input itself
    law = tmp_path / "law.json"
    law.write_bytes(res.read_bytes())
    match = r"--out \(law\.json\) .*law\.json: would overwrite the input"
    bad_input(["fit-law", law], inputs=[law], match=match)
    png = tmp_path / "law_fit.png"
    png.write_bytes(res.read_bytes())
    bad_input(["fit-law", png, "--out", tmp_path], inputs=[png], match=r"law_fit\.png: would over")


def test_bad_folders(bad_input, sweep, tmp_path):
    res = sweep / "sw" / "results.jsonl"
    (tmp_path / "file").write_text("x\n")
    bad_input(["fit-law", res, "--out", tmp_path / "file"], inputs=[res],
              match=r"--out .*file: is a file, expected a folder")  # fmt: skip
    bad_input(["fit-law", res, "--out", tmp_path / "file" / "sub"], inputs=[res],
              match=r"file is a file, so the folder cannot be created")  # fmt: skip
    (tmp_path / "o" / "law.json").mkdir(parents=True)
    bad_input(["fit-law", res, "--out", tmp_path / "o"], inputs=[res],
              match=r"law\.json: is a directory, expected a file path")  # fmt: skip
    bad_input(["fit-law", sweep / "sw"], match=r"sw: is a folder, expected the results\.jsonl "
              r"file \(try .*sw/results\.jsonl\)")  # fmt: skip
    bad_input(["fit-law", res, "--json", tmp_path / "file" / "x.json"], inputs=[res],
              match=r"--json .*: .*file is a file, not a folder")  # fmt: skip
    assert not (tmp_path / "o" / "law_fit.png").exists()
    os.mkfifo(tmp_path / "pipe")
    bad_input(["fit-law", tmp_path / "pipe", "--out", tmp_path / "p"],
              match=r"RESULTS .*pipe: not a regular file")  # fmt: skip


@pytest.mark.parametrize(
    "flags, match",
    [
        (["--seed", "-1"], r"--seed: expected a seed in \[0, 4294967295\]"),
        (["--starts", "0"], r"--starts: expected a positive integer"),
        (["--starts", str(10**10)], r"--starts must be 1 to 1000, got 10000000000"),
        (["--forms", "power"], r"--forms: invalid choice: 'power'"),
    ],
)
def test_bad_flags(bad_input, sweep, flags, match):
    res = sweep / "sw" / "results.jsonl"
    bad_input(["fit-law", res, "--out", sweep / "o-flags", *flags], inputs=[res], match=match)


def test_json_inside_the_new_out_folder_is_fine(sweep, tmp_path):
    from prh.cli import main

    res = sweep / "sw" / "results.jsonl"
    out = tmp_path / "new"
    argv = ["fit-law", str(res), "--out", str(out), "--starts", "1", "--forms", "additive"]
    assert main([*argv, "--json", str(out / "copy.json")]) == 0
    assert json.loads((out / "copy.json").read_text()) == json.loads((out / "law.json").read_text())
