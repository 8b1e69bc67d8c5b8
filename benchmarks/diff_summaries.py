"""Compare two ``prh demo`` summaries number by number (same seed should give the same numbers).

    python benchmarks/diff_summaries.py BASELINE/summary.json NEW/summary.json [--tol 0]

Walks both JSON trees and prints every leaf that differs, grouped by top-level section, with the
absolute difference of numbers. Timings, machine facts and file paths (which change from run to
run by design) are listed separately and do not count. Exit status 1 when any counted figure
differs by more than ``--tol``, else 0.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

# leaves that describe the run, not its results
IGNORED = ("timings", "compute_cost", "seconds", "cpu_seconds", "machine", "path", "config")


def leaves(obj: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a.b[0].c": value}`` for every scalar leaf of a JSON tree."""
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        for k, v in obj.items():
            out.update(leaves(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(obj, list):
        out = {}
        for i, v in enumerate(obj):
            out.update(leaves(v, f"{prefix}[{i}]"))
        return out
    return {prefix: obj}


def ignored(key: str) -> bool:
    parts = key.replace("[", ".").split(".")
    return parts[0] in IGNORED or any(p in ("path", "seconds") for p in parts[1:])


def differ(a: Any, b: Any, tol: float) -> bool:
    if (
        isinstance(a, bool)
        or isinstance(b, bool)
        or not (isinstance(a, (int, float)) and isinstance(b, (int, float)))
    ):
        return a != b
    if math.isnan(a) and math.isnan(b):
        return False
    return abs(a - b) > tol


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--tol", type=float, default=0.0, help="absolute tolerance (default 0)")
    args = p.parse_args(argv)
    with open(args.a) as f:
        a = leaves(json.load(f))
    with open(args.b) as f:
        b = leaves(json.load(f))
    counted, skipped = [], []
    for k in sorted(set(a) | set(b)):
        va, vb = a.get(k, "<absent>"), b.get(k, "<absent>")
        if not differ(va, vb, args.tol):
            continue
        (skipped if ignored(k) else counted).append((k, va, vb))
    same = sum(1 for k in set(a) & set(b) if not ignored(k) and not differ(a[k], b[k], args.tol))
    print(f"{same} result figures identical (tolerance {args.tol:g})")
    print(f"{len(counted)} result figures differ:")
    for k, va, vb in counted:
        d = ""
        if isinstance(va, (int, float)) and isinstance(vb, (int, float)):
            d = f"  (diff {vb - va:+.3g})"
        print(f"  {k}: {va!r} -> {vb!r}{d}")
    print(f"{len(skipped)} run-description leaves differ (timings, paths, config; not counted)")
    return 1 if counted else 0


if __name__ == "__main__":
    sys.exit(main())
