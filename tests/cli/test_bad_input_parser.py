"""Argument errors are one line with exit status 2, and every float flag refuses NaN and inf."""

from __future__ import annotations

import argparse

import pytest

from prh.cli import _args


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "NaN", "1e400"])
@pytest.mark.parametrize("kind", [_args.positive_float, _args.finite_float, _args.fraction])
def test_float_types_refuse_non_finite(kind, text):
    with pytest.raises(argparse.ArgumentTypeError, match="expected"):
        kind(text)


@pytest.mark.parametrize("text", ["-1", "4294967296", "1.5", "x"])
def test_seed_refuses_out_of_range(text):
    with pytest.raises(argparse.ArgumentTypeError, match="seed"):
        _args.seed(text)


def test_seed_accepts_its_range():
    assert _args.seed("0") == 0
    assert _args.seed(str(_args.MAX_SEED)) == _args.MAX_SEED


def test_nonnegative_float():
    assert _args.nonnegative_float("0") == 0.0
    with pytest.raises(argparse.ArgumentTypeError):
        _args.nonnegative_float("-1e-9")


def test_parser_errors_are_one_line(bad_input):
    line = bad_input(["measure", "a.npy", "b.npy", "--k", "nan"], match=r"--k")
    assert line.startswith("prh measure: error: argument --k")
    bad_input(["no-such-command"], match="invalid choice")
