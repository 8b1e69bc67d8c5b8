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


def test_renamed_flags_keep_their_old_spelling_hidden():
    """One name per concept (issue 20): --bootstrap, --no-progress, --x/--y; the old spellings
    parse to the same value for one release and are not in --help."""
    from prh.cli import build_parser

    parser = build_parser()
    for argv, dest, value in (
        (["efficiency", "r.jsonl", "--bootstrap", "7"], "bootstrap", 7),
        (["efficiency", "r.jsonl", "--a", "bad"], "x", "bad"),
        (["efficiency", "r.jsonl", "--b", "good"], "y", "good"),
        (["sweep", "--no-progress"], "no_progress", True),
        (
            [
                "embed",
                "minilm",
                "--world",
                "cave",
                "--modality",
                "text",
                "--out",
                "o.npy",
                "--no-progress",
            ],
            "no_progress",
            True,
        ),
    ):
        old = parser.parse_args(argv)
        assert getattr(old, dest) == value, argv
    assert parser.parse_args(["efficiency", "r.jsonl"]).bootstrap == 1000
    assert parser.parse_args(["sweep"]).no_progress is False
    helptext = parser._subparsers._group_actions[0].choices["efficiency"].format_help()
    assert "--bootstrap" in helptext and "--boot " not in helptext and "--a " not in helptext
