"""`prh prove` on bad input: exit 2, one line, no traceback, nothing run."""

from __future__ import annotations

import os
import stat

import pytest

CASES = {
    "seed negative": (["--seed", "-1"], r"--seed: expected a seed in \[0, 4294967295\], got -1"),
    "seed too large": (["--seed", str(2**32)], r"--seed: expected a seed in \[0, 4294967295\]"),
    "seed not an int": (["--seed", "one"], r"--seed: expected an integer seed, got 'one'"),
    "worlds 0": (["--worlds", "0"], r"--worlds: expected a positive integer, got 0"),
    "worlds huge": (["--worlds", str(10**12)], r"--worlds must be 1 to 100000, got 1000000000000"),
    "unknown check": (["--only", "nope"], r"--only: unknown check nope"),
    "empty check list": (["--only", ","], r"--only: unknown check"),
}


@pytest.mark.parametrize("flags, match", CASES.values(), ids=CASES.keys())
def test_prove_refuses(bad_input, flags, match, capsys):
    bad_input(["prove", *flags], match=match)
    assert "PASS" not in capsys.readouterr().out  # refused before any check ran


def test_prove_json_paths(bad_input, tmp_path):
    (tmp_path / "file").write_text("keep\n")
    only = ["prove", "--only", "closed-form", "--quick", "--json"]
    bad_input([*only, tmp_path], match=r"--json .*: is a directory, expected a file path")
    bad_input([*only, tmp_path / "file" / "r.json"], inputs=[tmp_path / "file"],
              match=r"file is a file, not a folder")  # fmt: skip
    bad_input([*only, tmp_path / "no" / "r.json"], match=r"folder .*no does not exist")
    os.mkfifo(tmp_path / "pipe")  # atomic_write would rename a file onto it (as onto /dev/null)
    bad_input([*only, tmp_path / "pipe"], match=r"pipe: not a regular file")
    assert stat.S_ISFIFO(os.stat(tmp_path / "pipe").st_mode)
