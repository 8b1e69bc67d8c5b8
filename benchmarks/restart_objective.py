"""Can a restart be chosen without the theory? The whitened loss's own objective on fresh pairs.

    PYTHONPATH=src python benchmarks/restart_objective.py [--pairs 8192] [--draws 777,778] RUN...

``RUN`` is a ``prh train`` run folder on the moving world (text or image). Seeds of one image
recipe differ in which of ``g*``'s near-cut modes they carry (docs/training.md, "The last
direction"); the whitened JEPA's population objective is the sum of the top-k cross-view
eigenvalues ``sum l_i`` of its embedding (its loss is ``2 (k - sum l_i)`` at the optimum's
whitening), and a direction spent on a mode below the cut lowers it by about the two modes'
eigenvalue gap. So among restarts of one recipe the seed with the largest ``sum l_i`` on pairs
it never trained on should be the one nearest the optimum, found with no theory embedding.

For each run and each ``--draws`` seed this draws ``--pairs`` fresh positive pairs of its
training law (:func:`prh.training.moving.run_positive_pairs`), embeds both halves with the run,
and prints ``sum l_i`` with its eigenvalues (:func:`prh.bridge.spectral.cross_view_spectrum`)
beside the mean of the logged batch losses over the run's last quarter (what a user sees
without drawing pairs). The theory's top-k eigenvalues (constant mode left out) are printed
first: their sum is the optimum. Compare the ranking with ``benchmarks/image_reach.py``'s
theory cc of the same runs; figures in docs/training.md ("Choosing a restart without the
theory").
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def objective(run: str, pairs: int, draw: int, k: int) -> np.ndarray:
    """The run's top-``k`` cross-view eigenvalues on ``pairs`` fresh positive pairs (what
    ``prh train --restarts`` sums, :func:`prh.training.restarts.heldout_eigenvalues`)."""
    from prh.training.restarts import heldout_eigenvalues

    return np.asarray(heldout_eigenvalues(run, pairs, draw)[:k])


def loss_tail(run: str) -> float:
    """The mean logged batch loss over the run's last quarter of log lines."""
    rows = [json.loads(s) for s in (Path(run) / "metrics.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in rows if "loss" in r]
    return float(np.mean(losses[-max(1, len(losses) // 4) :]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="prh train run folders on the moving world")
    ap.add_argument("--pairs", type=int, default=8192, help="fresh pairs a draw (default 8192)")
    ap.add_argument("--draws", default="777,778", help="pair-draw seeds (default 777,778)")
    ap.add_argument("--k", type=int, default=8, help="components (default 8, the world's cut)")
    ap.add_argument("--world", default="moving", help="the runs' world (default moving)")
    a = ap.parse_args()

    from prh.world import make_world

    lam = make_world(a.world, seed=0).spectrum(a.k).nontrivial()[: a.k]
    print(f"theory top-{a.k}: sum {lam.sum():.3f}  " + " ".join(f"{v:.3f}" for v in lam))
    draws = [int(s) for s in a.draws.split(",")]
    print(f"{'run':<28} {'loss tail':>9} " + " ".join(f"{'sum l d' + str(d):>11}" for d in draws)
          + "  eigenvalues (first draw)")  # fmt: skip
    for run in a.runs:
        evs = [objective(run, a.pairs, d, a.k) for d in draws]
        print(f"{run[-28:]:<28} {loss_tail(run):9.3f} "
              + " ".join(f"{ev.sum():11.4f}" for ev in evs) + "  "
              + " ".join(f"{v:.3f}" for v in evs[0]))  # fmt: skip


if __name__ == "__main__":
    main()
