"""The shared argparse types: a bad flag is one argparse error line, never a traceback."""

import argparse

import pytest

from prh.cli._args import fraction, nonnegative_int, positive_float, positive_int


@pytest.mark.parametrize(
    ("parse", "good", "want"),
    [
        (positive_int, "3", 3),
        (nonnegative_int, "0", 0),
        (fraction, "0.25", 0.25),
        (positive_float, "1e-3", 1e-3),
    ],
)
def test_accepts(parse, good, want) -> None:
    assert parse(good) == want


@pytest.mark.parametrize(
    ("parse", "bad", "match"),
    [
        (positive_int, "0", "positive integer, got 0"),
        (positive_int, "2.5", "positive integer, got '2.5'"),
        (nonnegative_int, "-1", "integer >= 0, got -1"),
        (fraction, "1.5", r"in \[0, 1\], got 1.5"),
        (positive_float, "0", "positive number, got 0.0"),
        (positive_float, "nan", "positive number, got nan"),
        (positive_float, "x", "positive number, got 'x'"),
    ],
)
def test_refuses(parse, bad, match) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=match):
        parse(bad)


def test_top_level_help_lists_every_command(capsys) -> None:
    from prh.cli import COMMANDS, main

    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert all(name in out for name in COMMANDS)
