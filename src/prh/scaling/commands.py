"""``prh fit-law`` and ``prh efficiency`` as library calls on a sweep's ``results.jsonl``:
:func:`fit_law_files` (candidate scaling laws, judged on held-out runs) and
:func:`efficiency_files` (samples each objective needs to reach an alignment).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

MAX_STARTS = 1000  # least-squares starts per form (each start is one scipy fit)
MAX_BOOT = 1_000_000  # bootstrap resamples: 8 MB of ratios; 10**12 asked numpy for 7 TiB


@dataclass(frozen=True)
class FitLawRequest:
    """One ``prh fit-law``, a field per flag: the sweep's ``results``, the forms to fit and how,
    and where to write ``law.json`` (default: beside the results)."""

    results: str
    out: str | None = None
    forms: tuple[str, ...] | None = None
    metric: str = "score"
    starts: int = 8
    seed: int = 0
    json: str | None = None


@dataclass(frozen=True)
class EfficiencyRequest:
    """One ``prh efficiency``, a field per flag: view kinds ``x`` (reference) and ``y``
    (compared) of the sweep's ``results``, the target alignment (default from the curves)."""

    results: str
    target: float | None = None
    x: str = "good"
    y: str = "next-token"
    metric: str = "score"
    bootstrap: int = 1000
    seed: int = 0
    json: str | None = None


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


def _law_outputs(req: FitLawRequest) -> tuple[Path, dict]:
    """The output folder and named outputs, refused (one line) before the rows are read."""
    from prh.errors import InputError
    from prh.io import check_output_dir, guard_outputs, refuse_input_overwrite

    if req.starts > MAX_STARTS:
        raise InputError(f"--starts must be 1 to {MAX_STARTS}, got {req.starts}")
    out = Path(req.out) if req.out else Path(req.results).parent
    outputs = {
        "--out (law.json)": out / "law.json",
        "--out (law_fit.png)": out / "law_fit.png",
        "--json": req.json,
    }
    check_output_dir(out, "--out")
    refuse_input_overwrite(outputs, inputs=[req.results])
    json_in_out = req.json and Path(req.json).parent.resolve() == out.resolve()
    if req.json and not json_in_out:  # else checked once the folder exists
        guard_outputs({"--json": req.json})
    return out, outputs


def fit_law_files(req: FitLawRequest) -> bool:
    """Fit every law form on a sweep's ``fit`` runs, judge them on its held-out runs, print the
    table and write ``law.json`` (and the predicted-vs-measured plot); whether a form was
    chosen (none converged: False)."""
    from prh.io import (
        check_writable,
        write_json,
    )
    from prh.provenance import stamped
    from prh.scaling.fit import fit_laws, law_data_from_rows
    from prh.scaling.plot import plot_predicted_vs_measured
    from prh.scaling.rows import read_rows

    out, outputs = _law_outputs(req)
    rows, places = read_rows(req.results)
    fit_data, heldout, pairs = law_data_from_rows(rows, req.metric, places)
    out.mkdir(parents=True, exist_ok=True)  # only once the rows are known to be good
    for what, path in outputs.items():
        if path is not None:
            check_writable(path, what)
    report = fit_laws(fit_data, heldout, pairs, forms=req.forms, starts=req.starts, seed=req.seed)
    print(f"{len(fit_data)} fit runs, {len(heldout)} held-out runs, {len(pairs[0])} repeat pairs")
    _print_forms(report)
    d = {"results": str(req.results), "metric": req.metric, **report.to_dict()}
    d = stamped("fit-law", d, inputs=[req.results], seed=req.seed, options=asdict(req))
    if report.chosen:
        chosen = report.form(report.chosen).fit
        print(f"chosen: {report.chosen}  held-out RMSE {_fmt(report.heldout_rmse)}  "
              f"ratio {_fmt(report.ratio)}")  # fmt: skip
        print(f"  {chosen.law.formula}")
        print("  " + ", ".join(f"{k}={v:.4g}" for k, v in chosen.params.items()))
        plot_predicted_vs_measured(report, chosen, fit_data, heldout, out / "law_fit.png")
        d["plot"] = str(out / "law_fit.png")
    write_json(out / "law.json", d)
    if req.json:
        write_json(req.json, d)
    print(f"wrote {out / 'law.json'}" + (f" and {out / 'law_fit.png'}" if report.chosen else ""))
    return bool(report.chosen)


def _s(x: float | None) -> str:
    return "never" if x is None else f"{x:.4g}"


def efficiency_files(req: EfficiencyRequest) -> None:
    """Samples each of two view kinds needs to reach a target alignment, and their ratio with
    a bootstrap interval over seeds, from a sweep's ``curve`` runs; printed (and written)."""
    from prh.errors import InputError
    from prh.io import guard_outputs, write_json
    from prh.provenance import stamped
    from prh.scaling.efficiency import curves_from_rows, default_target, sample_efficiency
    from prh.scaling.rows import read_rows

    if req.bootstrap > MAX_BOOT:
        raise InputError(f"--bootstrap must be 1 to {MAX_BOOT} resamples, got {req.bootstrap}")
    guard_outputs({"--json": req.json}, inputs=[req.results])
    rows, places = read_rows(req.results)
    a = curves_from_rows(rows, req.x, req.metric, places)
    b = curves_from_rows(rows, req.y, req.metric, places)
    target = req.target if req.target is not None else default_target(a, b)
    res = sample_efficiency(a, b, target, n_boot=req.bootstrap, seed=req.seed)
    d = res.to_dict()
    print(f"target alignment {target:.4f} ({req.metric}); seeds: {len(a.seeds)} {req.x}, "
          f"{len(b.seeds)} {req.y}")  # fmt: skip
    print(f"samples to reach it: {req.x} {_s(d['samples_a'])}, {req.y} {_s(d['samples_b'])}")
    lo, hi = d["ci"]
    print(f"ratio {req.y}/{req.x}: {_s(d['ratio'])}  ({int(res.level * 100)}% interval "
          f"{_s(lo)} .. {_s(hi)}, bootstrap over seeds, n={res.n_boot})")  # fmt: skip
    print("per-seed ratios: " + ", ".join(_s(x) for x in d["per_seed_ratio"]))
    for note in d["notes"]:
        print(f"note: {note}")
    if req.json:
        d = stamped(
            "efficiency",
            {"results": str(req.results), **d},
            inputs=[req.results],
            seed=req.seed,
            options=asdict(req),
        )
        write_json(req.json, d)
