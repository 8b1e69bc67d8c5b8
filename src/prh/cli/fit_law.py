"""Fit candidate scaling laws of alignment in (rho, samples) and judge them on held-out runs.

Reads a sweep's results.jsonl; fits every form on the `fit` runs by multi-start least squares,
predicts the `heldout` runs, chooses the converged form with the lowest held-out RMSE, and compares
it with the seed spread sqrt(mean((y - y_repeat)^2) / 2) over the held-out/repeat pairs. Prints a
table, writes OUT/law.json and the predicted-vs-measured plot OUT/law_fit.png. A form that does not
converge is listed with scipy's message, not hidden.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from prh.cli._args import positive_int, seed

MAX_STARTS = 1000  # least-squares starts per form (each start is one scipy fit)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from prh.scaling.laws import LAWS

    parser.add_argument("results", help="results.jsonl written by `prh sweep`")
    parser.add_argument("--out", default=None,
                        help="folder for law.json and law_fit.png (default: "
                        "beside RESULTS)")  # fmt: skip
    parser.add_argument("--forms", nargs="+", choices=sorted(LAWS), default=None,
                        help="law forms to fit (default: all)")  # fmt: skip
    parser.add_argument("--metric", choices=["score", "calibrated"], default="score",
                        help="which alignment column to fit (default: score)")  # fmt: skip
    parser.add_argument("--starts", type=positive_int, default=8,
                        help=f"fits per form (1..{MAX_STARTS}; default: 8)")  # fmt: skip
    parser.add_argument("--seed", type=seed, default=0,
                        help="seed of the random starts (0..2**32-1; default: 0)")  # fmt: skip
    parser.add_argument("--json", default=None, help="also write law.json's content here")


def _fmt(x: float) -> str:
    return "nan" if x != x else f"{x:.4f}"


def _print_forms(report) -> None:
    """One row per candidate law (the chosen one starred), the seed spread, the notes."""
    print(f"{'form':<16}{'conv':>5}{'train RMSE':>12}{'held-out RMSE':>15}{'/ spread':>10}")
    for f in report.forms:
        ratio = f.heldout_rmse / report.seed_spread if report.seed_spread > 0 else float("nan")
        mark = " *" if f.fit.form == report.chosen else ""
        conv = "yes" if f.fit.converged else "NO"
        train, held = _fmt(f.fit.train_rmse), _fmt(f.heldout_rmse)
        print(f"{f.fit.form:<16}{conv:>5}{train:>12}{held:>15}{_fmt(ratio):>10}{mark}")
    print(f"seed spread {_fmt(report.seed_spread)} (sqrt(mean((y - y_repeat)^2) / 2))")
    for note in report.notes:
        print(f"note: {note}")


def run(args: argparse.Namespace) -> int:
    from prh.errors import InputError
    from prh.io import (
        check_output_dir,
        check_writable,
        guard_outputs,
        refuse_input_overwrite,
        write_json,
    )
    from prh.provenance import stamped
    from prh.scaling.fit import fit_laws, law_data_from_rows
    from prh.scaling.plot import plot_predicted_vs_measured
    from prh.scaling.rows import read_rows

    if args.starts > MAX_STARTS:
        raise InputError(f"--starts must be 1 to {MAX_STARTS}, got {args.starts}")
    out = Path(args.out) if args.out else Path(args.results).parent
    outputs = {
        "--out (law.json)": out / "law.json",
        "--out (law_fit.png)": out / "law_fit.png",
        "--json": args.json,
    }
    check_output_dir(out, "--out")
    refuse_input_overwrite(outputs, inputs=[args.results])
    json_in_out = args.json and Path(args.json).parent.resolve() == out.resolve()
    if args.json and not json_in_out:  # else checked once the folder exists
        guard_outputs({"--json": args.json})
    rows, places = read_rows(args.results)
    fit_data, heldout, pairs = law_data_from_rows(rows, args.metric, places)
    out.mkdir(parents=True, exist_ok=True)  # only once the rows are known to be good
    for what, path in outputs.items():
        if path is not None:
            check_writable(path, what)
    report = fit_laws(
        fit_data, heldout, pairs, forms=args.forms, starts=args.starts, seed=args.seed
    )
    print(f"{len(fit_data)} fit runs, {len(heldout)} held-out runs, {len(pairs[0])} repeat pairs")
    _print_forms(report)
    d = {"results": str(args.results), "metric": args.metric, **report.to_dict()}
    d = stamped("fit-law", d, inputs=[args.results], seed=args.seed, options=args)
    if report.chosen:
        chosen = report.form(report.chosen).fit
        print(f"chosen: {report.chosen}  held-out RMSE {_fmt(report.heldout_rmse)}  "
              f"ratio {_fmt(report.ratio)}")  # fmt: skip
        print(f"  {chosen.law.formula}")
        print("  " + ", ".join(f"{k}={v:.4g}" for k, v in chosen.params.items()))
        plot_predicted_vs_measured(report, chosen, fit_data, heldout, out / "law_fit.png")
        d["plot"] = str(out / "law_fit.png")
    write_json(out / "law.json", d)
    if args.json:
        write_json(args.json, d)
    print(f"wrote {out / 'law.json'}" + (f" and {out / 'law_fit.png'}" if report.chosen else ""))
    return 0 if report.chosen else 1
