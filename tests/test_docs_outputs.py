"""docs/outputs.md against what the commands write (issue 24): format names and measure's keys."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import prh.cli as cli
from prh.provenance import FORMATS, format_id

DOC = Path(__file__).resolve().parents[1] / "docs" / "outputs.md"


def _section(title: str) -> str:
    text = DOC.read_text()
    start = text.index(title)
    nxt = text.find("\n## ", start + 1)
    return text[start : nxt if nxt > 0 else None]


def _table_keys(block: str) -> list[list[str]]:
    """The backquoted names in the first column of each row of every table in ``block``."""
    rows = [line for line in block.splitlines() if line.startswith("| `")]
    return [re.findall(r"`([a-z_]+)`", row.split("|")[1]) for row in rows]


def test_every_format_the_code_writes_is_in_the_kind_table():
    kinds = set(re.findall(r"^\| `(prh-[a-z-]+/\d+)` \|", DOC.read_text(), flags=re.M))
    assert kinds == {format_id(k) for k in FORMATS}


@pytest.mark.parametrize("matrix", [False, True])
def test_measure_json_keys_are_the_documented_ones(tmp_path, monkeypatch, matrix):
    monkeypatch.setattr(cli, "COMMANDS", {"measure": cli.COMMANDS["measure"]})
    rng = np.random.default_rng(0)
    for name in ("a", "b", "c"):
        np.save(tmp_path / f"{name}.npy", rng.standard_normal((20, 2, 4)).astype(np.float32))
    out = tmp_path / "m.json"
    files = [tmp_path / "a.npy", tmp_path / "b.npy"]
    form = ["--x", *files, "--y", tmp_path / "c.npy"] if matrix else files
    argv = ["measure", *map(str, form), "--k", "3", "--null", "3", "--bootstrap", "3"]
    assert cli.main([*argv, "--no-progress", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    block = _section("## `prh measure --json`")
    top, cell = block.split("Each of `results`")
    header = ["format", "prh_version", "inputs", "seed", "options"]
    documented = header + [k for row in _table_keys(top) for k in row]
    assert list(doc) == documented
    assert doc["format"] == "prh-measure/2"
    assert sorted(k for row in _table_keys(cell) for k in row) == sorted(doc["results"][0])
    row = next(line for line in top.splitlines() if line.startswith("| `matrices`"))
    matrices = set(re.findall(r"`([a-z_]+)`", row.split("|")[2])) - {"null"}
    assert set(doc["matrices"]["mutual_knn"]) == matrices
