"""Run executable checks of every theorem statement in docs/theory.md on finite worlds.

Each check states a theorem (or its failure when an assumption breaks), measures it, and passes
or fails: closed-form, uniqueness, platonic, bound, views, next-token, training. The exit status
is 0 only when every selected check passes (1 when one fails, 2 for bad input).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from prh.cli._args import positive_int, seed

MAX_WORLDS = 100_000  # the bound check's cost grows linearly: 300 worlds take seconds


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--worlds", type=positive_int, default=None, metavar="N",
                        help=f"worlds for the bound check (1..{MAX_WORLDS}; default 300, or 60 "
                        "with --quick)")  # fmt: skip
    parser.add_argument("--seed", type=seed, default=0,
                        help="base random seed (integer in [0, 2**32 - 1])")  # fmt: skip
    parser.add_argument("--only", default=None, metavar="NAME[,NAME]",
                        help="run only these checks (comma-separated names, "
                        "e.g. bound,views)")  # fmt: skip
    parser.add_argument("--json", default=None, metavar="PATH",
                        help="also write the results as JSON to PATH")  # fmt: skip
    parser.add_argument("--quick", action="store_true",
                        help="fewer worlds and training steps (for prh demo); the statements are "
                        "unchanged")  # fmt: skip


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, list | tuple):
        return "[" + " ".join(_fmt(v) for v in value) + "]"
    return str(value)


def format_row(result) -> str:
    """One result as a block: name, PASS/FAIL, seconds, statement, then the figures."""
    status = "PASS" if result.passed else "FAIL"
    head = f"{result.name:<12} {status}  {result.seconds:6.2f}s  {result.statement}"
    figs = ", ".join(f"{k}={_fmt(v)}" for k, v in result.figures.items())
    return f"{head}\n{'':<12} {figs}"


def run(args: argparse.Namespace) -> int:
    from prh.errors import InputError
    from prh.io import guard_outputs, write_json
    from prh.prove import ProveConfig, run_checks, select_checks
    from prh.provenance import stamped

    if args.worlds is not None and args.worlds > MAX_WORLDS:
        raise InputError(f"--worlds must be 1 to {MAX_WORLDS}, got {args.worlds}")
    names = select_checks(args.only)
    if args.json is not None:
        guard_outputs({"--json": args.json})
    worlds = args.worlds if args.worlds is not None else (60 if args.quick else 300)
    config = ProveConfig(worlds=worlds, seed=args.seed, quick=args.quick)
    print(f"{'check':<12} {'result':<5} {'time':>7}  statement / measured figures")

    def show(r) -> None:
        print(format_row(r), flush=True)

    results = run_checks(names, config, on_result=show)
    passed = all(r.passed for r in results)
    total = sum(r.seconds for r in results)
    n_pass = sum(r.passed for r in results)
    print(f"{n_pass}/{len(results)} checks passed in {total:.1f}s")
    if args.json is not None:
        d = {"passed": passed, "checks": [r.to_dict() for r in results]}
        write_json(args.json, stamped("prove", d, seed=args.seed, options=args))
    if not passed:
        print("prh prove: some checks FAILED", file=sys.stderr)
    return 0 if passed else 1
