"""Train and measure a grid of runs (views or rho x samples seen x seed) into results.jsonl.

Each cell trains (or solves) one model and measures its alignment with a frozen reference. The
sweep is resumable (cells already in OUT/results.jsonl are skipped; a partial last line left by a
killed run is cut off), runs cells in parallel worker processes, and writes OUT/sweep.json
describing the grid. Backends: `theory` (exact finite-world learner, seconds for the paper grid),
`cave` (text encoders trained on the cave world vs a frozen vision encoder, hours for the paper
grid), `planted` (a known law plus noise, to check the pipeline). Then run `prh fit-law
OUT/results.jsonl` and `prh efficiency OUT/results.jsonl`.
"""

from __future__ import annotations

import argparse
import sys

from prh.cli._args import nonnegative_int, positive_int


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--preset", choices=["demo", "paper-grid"], default="demo",
                        help="grid: demo (small) or paper-grid (45 fit cells x 2 seeds, 85 "
                        "held-out points + 85 repeats, sample-efficiency curves)")  # fmt: skip
    parser.add_argument("--backend", choices=["theory", "cave", "planted"], default="theory",
                        help="what runs one cell (default: theory)")  # fmt: skip
    parser.add_argument("--out", default=None,
                        help="sweep folder (default: runs/sweep-PRESET-BACKEND)")  # fmt: skip
    parser.add_argument("--workers", type=positive_int, default=2,
                        help="worker processes (default: 2; 1 runs in-process)")  # fmt: skip
    parser.add_argument("--seed", type=nonnegative_int, default=0,
                        help="base seed of the grid (default: 0)")  # fmt: skip
    parser.add_argument(
        "--vision",
        default="efficientnet-lite0",
        help="cave backend: frozen image encoder spec (default: efficientnet-lite0)",
    )
    parser.add_argument("--model-preset", default="tiny",
                        help="cave backend: text model preset (default: tiny)")  # fmt: skip
    parser.add_argument("--quiet", action="store_true", help="print only the summary")


def run(args: argparse.Namespace) -> int:
    from prh.scaling.backends import make_backend
    from prh.scaling.grid import preset_grid
    from prh.scaling.sweep import RESULTS, run_sweep

    out = args.out or f"runs/sweep-{args.preset}-{args.backend}"
    grid = preset_grid(args.preset, args.backend)
    kwargs = {}
    if args.backend == "cave":
        kwargs = {"vision": args.vision, "preset": args.model_preset}
    runner = make_backend(args.backend, **kwargs)
    say = None if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    print(f"sweep {grid.name} on {args.backend}: {len(grid.cells(args.seed))} cells -> {out}",
          file=sys.stderr)  # fmt: skip
    s = run_sweep(grid, runner, out, seed=args.seed, workers=args.workers, progress=say)
    print(f"done: {s.ran} run, {s.skipped} already done, {len(s.failed)} failed "
          f"in {s.seconds:.1f} s; results in {s.out_dir / RESULTS}")  # fmt: skip
    for cell_id, msg in s.failed:
        print(f"failed {cell_id}: {msg}", file=sys.stderr)
    return 1 if s.failed else 0
