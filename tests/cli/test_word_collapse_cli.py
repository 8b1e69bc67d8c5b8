"""`prh word-collapse RUN ...`: the table of a real run, and its bad input (one line, exit 2)."""

from __future__ import annotations

import json

import pytest

from prh.cli import main
from prh.metrics.word_collapse import word_collapse_of
from prh.training.api import load_run
from prh.world.scenes import COLOURS, SHAPES


def test_prints_the_runs_centred_cosines(text_run, capsys):
    assert main(["word-collapse", str(text_run), str(text_run)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].split() == ["run", "shape", "words", "colour", "words"]
    r = word_collapse_of(load_run(text_run, device="cpu"), SHAPES, COLOURS)
    assert lines[1].split()[1:3] == [f"{r.shape:.2f}", f"{r.colour:.2f}"] and len(lines) == 3
    assert -1.0 <= r.shape <= 1.0 and -1.0 <= r.colour <= 1.0


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda d: d / "absent", "no such run folder"),
        (lambda d: d, "not a prh run folder"),
        (lambda d: (d / "config.json").write_text("{") and d, "config.json: unreadable"),
        (
            lambda d: (d / "config.json").write_text(json.dumps({"modality": "image"})) and d,
            "'image' run; word collapse reads a text run",
        ),
    ],
)
def test_bad_input(bad_input, text_run, tmp_path, make, match):
    bad_input(["word-collapse", str(text_run), str(make(tmp_path))], match=match)
