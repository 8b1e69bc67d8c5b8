"""`prh efficiency` on bad input: exit 2, one line, no traceback, every input intact."""

from __future__ import annotations

import json

import pytest


@pytest.fixture(scope="module")
def res(tmp_path_factory):
    """A planted demo sweep's results.jsonl (72 rows, under a second)."""
    from prh.cli import main

    d = tmp_path_factory.mktemp("efficiency")
    assert main(["sweep", "--preset", "demo", "--backend", "planted", "--out", str(d / "sw"),
                 "--workers", "1", "--no-progress"]) == 0  # fmt: skip
    return d / "sw" / "results.jsonl"


def _edit_curve_row(res, path, field, value):
    """Copy ``res`` with ``field`` of its first `good` curve row set (``...`` deletes it)."""
    lines = res.read_text().splitlines()
    j = next(i for i, line in enumerate(lines) if json.loads(line)["views"] == "good")
    row = json.loads(lines[j])
    if value is ...:
        del row[field]
    else:
        row[field] = value
    lines[j] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n")
    return j + 1  # the file line of the edited row


ROW_CASES = {
    "score a string": ("score", "x", r"field 'score' expected a finite number or null, got 'x'"),
    "score a list": ("score", [0.5], r"field 'score' expected a finite number or null, got \["),
    "score nan": ("score", float("nan"), r"field 'score' expected a finite number or null, got n"),
    "score missing": ("score", ..., r"missing field 'score' \(expected a finite number or null\)"),
    "seed a string": ("seed", "x", r"field 'seed' expected an integer, got 'x'"),
    "seed missing": ("seed", ..., r"missing field 'seed' \(expected an integer\)"),
    "samples zero": ("samples", 0, r"field 'samples' expected a finite number > 0, got 0"),
    "samples a string": ("samples", "1k", r"field 'samples' expected a finite number > 0, got '1"),
}


@pytest.mark.parametrize("field, value, match", ROW_CASES.values(), ids=ROW_CASES.keys())
def test_bad_rows_name_file_line_and_field(bad_input, res, tmp_path, field, value, match):
    path = tmp_path / "r.jsonl"
    line = _edit_curve_row(res, path, field, value)
    bad_input(["efficiency", path, "--bootstrap", "5"], inputs=[path],
              match=rf"r\.jsonl line {line}: {match}")  # fmt: skip


FLAG_CASES = {
    "target nan": (["--target", "nan"], r"--target: expected a finite number, got nan"),
    "target inf": (["--target", "inf"], r"--target: expected a finite number, got inf"),
    "boot 0": (["--bootstrap", "0"], r"--bootstrap: expected a positive integer, got 0"),
    "boot negative": (["--bootstrap", "-5"], r"--bootstrap: expected a positive integer"),
    "boot huge": (["--bootstrap", str(10**12)], r"--bootstrap must be 1 to 1000000 resamples"),
    "seed negative": (["--seed", "-1"], r"--seed: expected a seed in \[0, 4294967295\], got -1"),
    "unknown views": (["--x", "nope"], r"no runs with views='nope'"),
}


@pytest.mark.parametrize("flags, match", FLAG_CASES.values(), ids=FLAG_CASES.keys())
def test_bad_flags(bad_input, res, flags, match):
    bad_input(["efficiency", res, *flags], inputs=[res], match=match)


def test_json_is_the_results_file(bad_input, res, tmp_path):
    bad_input(["efficiency", res, "--json", res], inputs=[res],
              match=r"--json .*results\.jsonl: would overwrite the input")  # fmt: skip
    link = tmp_path / "same.jsonl"
    link.symlink_to(res)
    bad_input(["efficiency", res, "--json", link], inputs=[res], match=r"would overwrite the input")


def test_folders(bad_input, res, tmp_path):
    bad_input(["efficiency", res.parent], match=r"is a folder, expected the results\.jsonl file")
    (tmp_path / "file").write_text("x\n")
    bad_input(["efficiency", res, "--json", tmp_path / "file" / "e.json"], inputs=[res],
              match=r"file is a file, not a folder")  # fmt: skip
    bad_input(["efficiency", res, "--json", tmp_path], inputs=[res], match=r"is a directory")
