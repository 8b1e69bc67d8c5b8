"""Two writers, one output: races of real `prh` processes, and whether any output came out mixed.

For each kind, ``--races`` times: two processes that write the same ``--out`` with different
inputs or seeds start together. A race is clean when one wins and the other is refused in one
line (exit 2, naming the holder's PID), or both succeed one after the other, and the output
describes one run only:

- ``bridge fit``: the ``.json`` sidecar equals the config stored in the map's own metadata;
- ``train`` (text): ``config.json``, ``meta.json`` and ``metrics.jsonl`` are of one seed (the
  stored config's seed is meta's, and the log has each step once).

    python benchmarks/races.py --races 20

prints one row per kind: races, outcomes, mixed outputs (the target is 0).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

PRH = [sys.executable, "-m", "prh"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def _pair(folder: Path, seed: int) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((64, 8)).astype(np.float32)
    q, _ = np.linalg.qr(rng.standard_normal((8, 8)))
    np.save(folder / f"x{seed}.npy", x)
    np.save(folder / f"y{seed}.npy", (x @ q.T).astype(np.float32))
    return folder / f"x{seed}.npy", folder / f"y{seed}.npy"


def _race(argvs: list[list[str]]) -> list[tuple[int, str]]:
    procs = [
        subprocess.Popen(
            [*PRH, *a], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV
        )
        for a in argvs
    ]
    return [(p.wait(timeout=600), p.stderr.read()) for p in procs]


def _bridge_clean(out: Path) -> bool:
    from safetensors import safe_open

    side = json.loads(out.with_suffix(".json").read_text())
    with safe_open(str(out), framework="numpy") as f:
        return json.loads(f.metadata()["prh_map"]) == side


def _train_clean(out: Path) -> bool:
    config = json.loads((out / "config.json").read_text())
    meta = json.loads((out / "meta.json").read_text())
    steps = [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    seed = config.get("seed", config.get("train", {}).get("seed"))
    return seed == meta.get("seed") and len(steps) == len(set(steps))


def race_kind(kind: str, n: int, tmp: Path) -> dict[str, object]:
    outcomes: Counter[str] = Counter()
    mixed = 0
    for r in range(n):
        folder = tmp / f"{kind}-{r}"
        folder.mkdir()
        if kind == "bridge fit":
            out = folder / "map.safetensors"
            argvs = []
            for seed in (1, 2):
                x, y = _pair(folder, seed)
                argvs.append(["bridge", "fit", "--x", str(x), "--y", str(y), "--out", str(out)])
            check = _bridge_clean
        else:
            out = folder / "run"
            argvs = [["train", "--out", str(out), "--samples", "128", "--batch-size", "64",
                      "--seed", str(s), "--no-progress", "--threads",
                      "1"] for s in (1, 2)]  # fmt: skip
            check = _train_clean
        results = _race(argvs)
        codes = tuple(sorted(c for c, _ in results))
        one_line = all(err.strip().count("\n") == 0 for c, err in results if c == 2)
        outcomes[f"{codes}{'' if one_line else ' (not one line)'}"] += 1
        mixed += not check(out)
    return {"kind": kind, "races": n, "outcomes": dict(outcomes), "mixed": mixed}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--races", type=int, default=20)
    ap.add_argument("--kinds", default="bridge fit,train")
    args = ap.parse_args()
    print(f"{'kind':<12} {'races':>5}  {'mixed outputs':>13}  outcomes (exit codes: count)")
    with tempfile.TemporaryDirectory() as d:
        for kind in args.kinds.split(","):
            row = race_kind(kind, args.races, Path(d))
            outs = ", ".join(f"{k}: {v}" for k, v in sorted(row["outcomes"].items()))
            print(f"{kind:<12} {row['races']:>5}  {row['mixed']:>13}  {outs}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
