"""Sample efficiency: samples each objective needs to reach a target alignment, and their ratio.

Reads a sweep's results.jsonl (its `curve` runs: alignment vs samples per seed for each view kind),
interpolates each seed-mean curve in log(samples) on its running maximum, and reports S_A, S_B and
S_B / S_A with a percentile bootstrap interval over seeds. A target never reached is reported as
such (no extrapolation). Default target: 0.95 x the lower of the two best seed-mean alignments.
"""

from __future__ import annotations

import argparse

from prh.cli._args import finite_float, old_spelling, positive_int, seed

MAX_BOOT = 1_000_000  # bootstrap resamples: 8 MB of ratios; 10**12 asked numpy for 7 TiB


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", help="results.jsonl written by `prh sweep`")
    parser.add_argument("--target", type=finite_float, default=None,
                        help="alignment to reach (default: 0.95 x min of the "
                        "two best means)")  # fmt: skip
    parser.add_argument("--x", default="good", help="reference views (default: good)")
    parser.add_argument("--y", default="next-token", help="compared views (default: next-token)")
    old_spelling(parser, "--a", "--x", "x")
    old_spelling(parser, "--b", "--y", "y")
    parser.add_argument("--metric", choices=["score", "calibrated"], default="score",
                        help="alignment column (default: score)")  # fmt: skip
    parser.add_argument("--bootstrap", type=positive_int, default=1000,
                        help=f"bootstrap resamples (1..{MAX_BOOT}; default: 1000)")  # fmt: skip
    old_spelling(parser, "--boot", "--bootstrap", "bootstrap", type=positive_int)
    parser.add_argument("--seed", type=seed, default=0,
                        help="bootstrap seed (in [0, 2**32 - 1]; default: 0)")  # fmt: skip
    parser.add_argument("--json", default=None, help="write the result as JSON here")


def _s(x: float | None) -> str:
    return "never" if x is None else f"{x:.4g}"


def run(args: argparse.Namespace) -> int:
    from prh.errors import InputError
    from prh.io import guard_outputs, write_json
    from prh.provenance import stamped
    from prh.scaling.efficiency import curves_from_rows, default_target, sample_efficiency
    from prh.scaling.rows import read_rows

    if args.bootstrap > MAX_BOOT:
        raise InputError(f"--bootstrap must be 1 to {MAX_BOOT} resamples, got {args.bootstrap}")
    guard_outputs({"--json": args.json}, inputs=[args.results])
    rows, places = read_rows(args.results)
    a = curves_from_rows(rows, args.x, args.metric, places)
    b = curves_from_rows(rows, args.y, args.metric, places)
    target = args.target if args.target is not None else default_target(a, b)
    res = sample_efficiency(a, b, target, n_boot=args.bootstrap, seed=args.seed)
    d = res.to_dict()
    print(f"target alignment {target:.4f} ({args.metric}); seeds: {len(a.seeds)} {args.x}, "
          f"{len(b.seeds)} {args.y}")  # fmt: skip
    print(f"samples to reach it: {args.x} {_s(d['samples_a'])}, {args.y} {_s(d['samples_b'])}")
    lo, hi = d["ci"]
    print(f"ratio {args.y}/{args.x}: {_s(d['ratio'])}  ({int(res.level * 100)}% interval "
          f"{_s(lo)} .. {_s(hi)}, bootstrap over seeds, n={res.n_boot})")  # fmt: skip
    print("per-seed ratios: " + ", ".join(_s(x) for x in d["per_seed_ratio"]))
    for note in d["notes"]:
        print(f"note: {note}")
    if args.json:
        d = stamped(
            "efficiency",
            {"results": str(args.results), **d},
            inputs=[args.results],
            seed=args.seed,
            options=args,
        )
        write_json(args.json, d)
    return 0
