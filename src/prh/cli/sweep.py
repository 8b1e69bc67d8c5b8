"""Train and measure a grid of runs (views or rho x samples seen x seed) into results.jsonl.

Each cell trains (or solves) one model and measures its alignment with a frozen reference. The
sweep is resumable (cells already in OUT/results.jsonl are skipped; a partial last line left by a
killed run is cut off) and writes OUT/sweep.json describing the grid. Cells run in local worker
processes (--executor local) or as tasks on a Ray cluster (--executor ray --address HEAD:6379);
either way only this process writes the results, and the rows are the same. Backends: `theory`
(exact finite-world learner, seconds for the paper grid), `cave` (text encoders trained on the
cave world vs a frozen vision encoder, hours for the paper grid), `planted` (a known law plus
noise, to check the pipeline). Then run `prh fit-law OUT/results.jsonl` and `prh efficiency
OUT/results.jsonl`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from prh.cli._args import cpu_count, old_spelling, positive_int, seed

DEFAULT_WORKERS = 2
# --executor ray --address: cells in flight at once (a cluster may have more CPUs than this host)
MAX_IN_FLIGHT = 10_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--preset", choices=["demo", "paper-grid"], default="demo",
                        help="grid: demo (small) or paper-grid (45 fit cells x 2 seeds, 85 "
                        "held-out points + 85 repeats, sample-efficiency curves)")  # fmt: skip
    parser.add_argument("--backend", choices=["theory", "cave", "planted"], default="theory",
                        help="what runs one cell (default: theory)")  # fmt: skip
    parser.add_argument("--out", default=None,
                        help="sweep folder (default: runs/sweep-PRESET-BACKEND)")  # fmt: skip
    parser.add_argument("--executor", choices=["local", "ray"], default="local",
                        help="where cells run: local worker processes, or one Ray task per cell "
                        "(default: local)")  # fmt: skip
    parser.add_argument("--address", default=None,
                        help="--executor ray: the cluster, 'auto' or HEAD:PORT (e.g. head:6379); "
                        "without it a local Ray instance is started for this sweep")  # fmt: skip
    parser.add_argument("--workers", type=positive_int, default=None,
                        help=f"local: worker processes (default: {DEFAULT_WORKERS}; 1 runs "
                        "in-process); ray without --address: CPUs of the local instance "
                        f"(default: {DEFAULT_WORKERS}); ray with --address: at most this many "
                        "cells in flight (default: no limit)")  # fmt: skip
    parser.add_argument("--seed", type=seed, default=0,
                        help="base seed of the grid (default: 0)")  # fmt: skip
    parser.add_argument(
        "--vision",
        default=None,
        help="cave backend: frozen image encoder spec (default: efficientnet-lite0)",
    )
    parser.add_argument("--model-preset", default=None,
                        help="cave backend: text model preset, tiny, small or base (default: "
                        "tiny)")  # fmt: skip
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress lines on stderr: print only the summary")  # fmt: skip
    old_spelling(parser, "--quiet", "--no-progress", "no_progress", flag=True)


def _runner(args: argparse.Namespace):
    """The backend, with every option checked before any cell (or the vision embedding) runs."""
    from prh.errors import InputError
    from prh.scaling.backends import make_backend

    if args.backend != "cave":
        given = [f for f, v in (("--vision", args.vision), ("--model-preset", args.model_preset))
                 if v is not None]  # fmt: skip
        if given:
            raise InputError(f"{' and '.join(given)} only apply to --backend cave")
        return make_backend(args.backend)
    from prh.training.config import train_config

    given = {} if args.vision is None else {"vision": args.vision}  # else CaveBackend's
    if args.model_preset is not None:
        try:
            given["train"] = train_config(args.model_preset)
        except InputError:
            raise InputError(
                f"--model-preset {args.model_preset!r}: expected tiny, small or base"
            ) from None
    return make_backend("cave", **given)


def _executor(args: argparse.Namespace):
    """``(executor or None, workers)``: ``None`` lets ``run_sweep`` pick in-process or a pool."""
    from prh.errors import InputError
    from prh.scaling.executors import RayExecutor

    if args.executor == "local" and args.address is not None:
        raise InputError("--address needs --executor ray")
    cpus = cpu_count()
    local = args.executor == "local" or args.address is None
    if local and args.workers is not None and args.workers > cpus:
        where = "local worker processes" if args.executor == "local" else "CPUs of local Ray"
        raise InputError(f"--workers {args.workers:,}: expected 1 to {cpus} {where} (this "
                         "machine's CPUs; a cluster given by --address may take more)")  # fmt: skip
    if args.workers is not None and args.workers > MAX_IN_FLIGHT:
        raise InputError(f"--workers {args.workers:,}: expected at most {MAX_IN_FLIGHT:,} cells "
                         "in flight")  # fmt: skip
    workers = args.workers or min(DEFAULT_WORKERS, cpus)
    if args.executor == "local":
        return None, workers
    if args.address is None:
        return RayExecutor(local_cpus=workers), 1
    return RayExecutor(address=args.address, max_in_flight=args.workers), 1


def run(args: argparse.Namespace) -> int:
    from prh.errors import InputError
    from prh.io import check_output_dir
    from prh.scaling.grid import preset_grid
    from prh.scaling.sweep import RESULTS, run_sweep

    out = args.out or f"runs/sweep-{args.preset}-{args.backend}"
    executor, workers = _executor(args)
    runner = _runner(args)
    check_output_dir(out, "--out")
    try:
        Path(out).mkdir(parents=True, exist_ok=True)
    except OSError as e:  # e.g. under /proc, or a read-only mount: said before any work
        raise InputError(f"--out {out}: cannot create the folder ({e.strerror or e})") from None
    grid = preset_grid(args.preset, args.backend)
    where = executor.describe() if executor else f"{workers} local worker(s)"
    header = [f"sweep {grid.name} on {args.backend}: {len(grid.cells(args.seed))} cells -> {out} "
              f"({where})"]  # fmt: skip

    def say(msg: str | None = None) -> None:
        # the header waits for the first news, so an option refused at start stays one line
        while header:
            print(header.pop(), file=sys.stderr, flush=True)
        if msg is not None and not args.no_progress:
            print(msg, file=sys.stderr, flush=True)

    s = run_sweep(grid, runner, out, seed=args.seed, workers=workers, progress=say,
                  executor=executor)  # fmt: skip
    say()
    print(f"done: {s.ran} run, {s.skipped} already done, {len(s.failed)} failed "
          f"in {s.seconds:.1f} s; results in {s.out_dir / RESULTS}")  # fmt: skip
    for cell_id, msg in s.failed:
        print(f"failed {cell_id}: {msg}", file=sys.stderr)
    return 1 if s.failed else 0
