"""Finite-world theory of whitened JEPAs (the contract is ``docs/theory.md``).

Pure numpy/scipy functions (the gradient-trained learner alone uses torch):

- :mod:`~prh.theory.world`: states, prior, modalities with nuisance and injective renderings;
- :mod:`~prh.theory.views`: good, bad, mixture and next-token view policies as pair laws;
- :mod:`~prh.theory.graph`: degrees, normalized adjacency, spectrum;
- :mod:`~prh.theory.jepa`: the closed-form whitened JEPA (and its soft-whitening variant);
- :mod:`~prh.theory.measures`: ``e_proc``, ``e_cca``, ``sin Theta``, mutual-kNN on states;
- :mod:`~prh.theory.bound`: the Theorem 2 misalignment bound;
- :mod:`~prh.theory.generators`: random kernels and the symmetric Sinkhorn projection;
- :mod:`~prh.theory.learner`: a gradient-trained JEPA on sampled pairs.
"""

from prh.theory.bound import BoundResult, theorem2
from prh.theory.graph import degrees, normalized_adjacency, spectrum
from prh.theory.jepa import JepaSolution, jepa_loss, soft_whitening_solution, solve_jepa, whiten
from prh.theory.measures import (
    Misalignment,
    misalignment,
    mutual_knn,
    procrustes_error,
    subspace_sin_theta,
)
from prh.theory.world import FiniteWorld, Modality, random_world

__all__ = [
    "BoundResult",
    "FiniteWorld",
    "JepaSolution",
    "Misalignment",
    "Modality",
    "degrees",
    "jepa_loss",
    "misalignment",
    "mutual_knn",
    "normalized_adjacency",
    "procrustes_error",
    "random_world",
    "soft_whitening_solution",
    "solve_jepa",
    "spectrum",
    "subspace_sin_theta",
    "theorem2",
    "whiten",
]
