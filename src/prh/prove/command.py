"""``prh prove`` as a library call: :func:`prove_command` runs the executable checks of the
theorem statements, prints each as it finishes and writes the results.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass
from typing import Any

MAX_WORLDS = 100_000  # the bound check's cost grows linearly: 300 worlds take seconds


@dataclass(frozen=True)
class ProveRequest:
    """One ``prh prove``, a field per flag: ``worlds`` of the bound check (default 300, or 60
    when ``quick``), the checks to run (``only``, comma-separated) and the JSON output."""

    worlds: int | None = None
    seed: int = 0
    only: str | None = None
    json: str | None = None
    quick: bool = False


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


def prove_command(req: ProveRequest) -> bool:
    """Run the selected checks, printing one block per result as it comes, and write the JSON;
    whether every check passed."""
    from prh.errors import InputError
    from prh.io import guard_outputs, write_json
    from prh.prove import ProveConfig, run_checks, select_checks
    from prh.provenance import stamped

    if req.worlds is not None and req.worlds > MAX_WORLDS:
        raise InputError(f"--worlds must be 1 to {MAX_WORLDS}, got {req.worlds}")
    names = select_checks(req.only)
    if req.json is not None:
        guard_outputs({"--json": req.json})
    worlds = req.worlds if req.worlds is not None else (60 if req.quick else 300)
    config = ProveConfig(worlds=worlds, seed=req.seed, quick=req.quick)
    print(f"{'check':<12} {'result':<5} {'time':>7}  statement / measured figures")

    def show(r) -> None:
        print(format_row(r), flush=True)

    results = run_checks(names, config, on_result=show)
    passed = all(r.passed for r in results)
    total = sum(r.seconds for r in results)
    n_pass = sum(r.passed for r in results)
    print(f"{n_pass}/{len(results)} checks passed in {total:.1f}s")
    if req.json is not None:
        d = {"passed": passed, "checks": [r.to_dict() for r in results]}
        write_json(req.json, stamped("prove", d, seed=req.seed, options=asdict(req)))
    if not passed:
        print("prh prove: some checks FAILED", file=sys.stderr)
    return passed
