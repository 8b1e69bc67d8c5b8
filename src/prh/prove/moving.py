"""Check of docs/theory.md sec. 8: a moving world's lag-D pair kernel has a gap, and its whitened
JEPA is the chain's slow eigenfunctions."""

from __future__ import annotations

import numpy as np

from prh.errors import InputError
from prh.prove.result import CheckResult, ProveConfig
from prh.theory.jepa import solve_jepa
from prh.theory.markov import dense_pair_kernel
from prh.theory.measures import subspace_sin_theta
from prh.world.moving import MovingWorld, MovingWorldConfig


def _small_agreement(seed: int) -> tuple[float, float]:
    """Eigenvalue and subspace errors of the sparse spectrum against solve_jepa on p Q^D."""
    w = MovingWorld(MovingWorldConfig(lag=5, colours=3, shapes=2, sizes=2, chain_seed=seed))
    k = 4
    ref = solve_jepa(dense_pair_kernel(w.chain, w.config.lag), k)
    spec = w.spectrum(10)
    eig_err = float(np.abs(spec.eigenvalues - ref.eigenvalues[:11]).max())
    sin = subspace_sin_theta(
        w.theory_embedding(np.arange(w.num_scenes), k), ref.embedding, w.chain.p
    )
    return eig_err, sin


def check_moving_world(config: ProveConfig) -> CheckResult:
    """Sparse spectrum = dense closed form; the designed world has its gap; lag 0 has none."""
    eig_err, sin = _small_agreement(config.seed)
    spec = MovingWorld(MovingWorldConfig()).spectrum(12)
    k = 8
    try:
        MovingWorld(MovingWorldConfig(lag=0)).theory_embedding([0], k)
        still_refused = False
    except InputError:
        still_refused = True
    figs = {
        "eigenvalue_error_vs_dense": eig_err,
        "sin_theta_vs_dense": sin,
        "k": k,
        "eigenvalues": [round(float(v), 4) for v in spec.nontrivial()[: k + 2]],
        "min_separation": spec.separation(k),
        "gap": spec.gap(k),
        "still_world_refused": still_refused,
    }
    passed = (
        eig_err < 1e-10
        and sin < 1e-8
        and figs["min_separation"] >= 0.02
        and figs["gap"] >= 0.05
        and still_refused
    )
    return CheckResult(
        name="moving-world",
        statement="a reversible chain's p Q^D has eigenvalues mu^D with a gap at k=8; lag 0 none",
        passed=passed,
        figures=figs,
    )
