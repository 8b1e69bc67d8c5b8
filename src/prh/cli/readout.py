"""Read a JEPA run wider than its world's gap through its own top-k cross-view components.

``prh readout RUN --k 8`` draws fresh positive pairs of the run's training law (moving-world
lag pairs, each half under its own nuisance), diagonalises their cross-view covariance whitened
by the marginal, and stores the top-``k`` components as ``RUN/readout.safetensors``, tied to the
run's weights. From then on the run loads ``k`` wide everywhere (``prh embed``, ``prh bridge``,
the demo): a whitened JEPA of width ``w`` learns the top-``w`` eigenspace of its pairs, and its
top ``k`` are the ones a ``k``-wide encoder would hold at its optimum (docs/training.md, "Wider
than the gap"). ``--remove`` deletes the read-out; the weights are never changed.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN", help="a finished JEPA run folder (prh train)")
    parser.add_argument("--k", type=int, help="output width: the top-k components kept")
    parser.add_argument(
        "--pairs",
        type=int,
        default=8192,
        help="positive pairs the spectrum is measured on (default 8192)",
    )
    parser.add_argument(
        "--draw",
        type=int,
        default=None,
        help="seed of the pairs (default 123: one run, one read-out)",
    )
    parser.add_argument("--remove", action="store_true", help="delete RUN's read-out")
    parser.add_argument("--device", default=None, help="where the run is loaded (default cpu)")


def run(args: argparse.Namespace) -> int:
    from prh.errors import InputError
    from prh.training.api import load_run
    from prh.training.readout import DRAW, FILE, save_readout, weights_file
    from prh.training.readout_fit import fit_readout

    folder = Path(args.run)
    if args.remove:
        if args.k is not None or args.draw is not None:
            raise InputError("--remove takes no --k or --draw")
        (folder / FILE).unlink(missing_ok=True)
        print(f"{folder / FILE}: removed")
        return 0
    if args.k is None:
        raise InputError("give --k K (the output width) or --remove")
    if not (folder / "config.json").is_file():
        raise InputError(f"{folder}: not a prh run folder (no config.json)")
    weights_file(folder)  # a finished run, before any work
    raw = load_run(folder, device=args.device or "cpu", readout=False)
    r = fit_readout(raw, args.k, args.pairs, DRAW if args.draw is None else args.draw)
    path = save_readout(folder, r)
    ev = " ".join(f"{v:.3f}" for v in r.eigenvalues)
    print(f"cross-view eigenvalues ({r.pairs} pairs, {r.width} wide): {ev}")
    print(f"kept the top {r.k} (sum {float(r.eigenvalues[: r.k].sum()):.3f}): {path}")
    return 0
