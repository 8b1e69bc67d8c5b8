"""Theorem 2: the misalignment bound of two pair kernels on shared states (docs/theory.md sec. 4).

Two modalities with one prior ``p`` and kernels ``Pi_A``, ``Pi_B``; ``E = T_B - T_A``; the gap
``delta_A = l_{k+1}(T_A) - l_{k+2}(T_A) > 0``. By the Davis-Kahan variant of Yu, Wang & Samworth
[1]_, applied to the deflated operators ``T - 3 s s^T`` (whose top-k eigenvectors are
``u_2..u_{k+1}`` and whose difference is ``E``)::

    ||sin Theta||_F <= 2 min(sqrt(k) ||E||_op, ||E||_F) / delta_A
    e_proc          <= sqrt(2) ||sin Theta||_F <= 2^(3/2) min(sqrt(k) ||E||_op, ||E||_F) / delta_A

References
----------
.. [1] Yu, Wang & Samworth (2015), A useful variant of the Davis-Kahan theorem for statisticians.
       Biometrika 102(2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from prh.theory.graph import check_pair_law, deflated_adjacency


@dataclass(frozen=True)
class BoundResult:
    """Measured misalignment of two spectral embeddings and the Theorem 2 bound."""

    sin_theta: float
    e_proc: float
    sin_bound: float
    proc_bound: float
    gap: float
    e_op: float
    e_fro: float

    @property
    def ratio(self) -> float:
        """``e_proc / proc_bound`` (0 when the bound is infinite)."""
        return float(self.e_proc / self.proc_bound) if np.isfinite(self.proc_bound) else 0.0

    @property
    def holds(self) -> bool:
        """Both bounds hold, with an absolute tolerance of 1e-12."""
        return self.sin_theta <= self.sin_bound + 1e-12 and self.e_proc <= self.proc_bound + 1e-12


def davis_kahan_bound(e_op: float, e_fro: float, gap: float, k: int) -> tuple[float, float]:
    """``(sin_bound, proc_bound)``; infinite when the gap is not positive."""
    if gap <= 0:
        return float("inf"), float("inf")
    sin_bound = 2.0 * min(np.sqrt(k) * e_op, e_fro) / gap
    return float(sin_bound), float(np.sqrt(2.0) * sin_bound)


def theorem2(pi_a: np.ndarray, pi_b: np.ndarray, k: int) -> BoundResult:
    """Embed both kernels (N, N) in k dimensions, measure them, and evaluate the bound.

    ``e_proc`` and ``sin Theta`` are computed from the orthonormal eigenvectors ``U_A, U_B`` as
    residuals (``e_proc^2 = ||U_A Q - U_B||_F^2`` at the Procrustes optimum ``Q``), which is
    ``E ||Q^T f_A - f_B||^2`` with ``f = D^-1/2 U`` when both marginals are ``p``.
    """
    TA, _ = deflated_adjacency(check_pair_law(pi_a))
    TB, _ = deflated_adjacency(check_pair_law(pi_b))
    va, UA = np.linalg.eigh(TA)
    _, UB = np.linalg.eigh(TB)
    va, UA, UB = va[::-1], UA[:, ::-1][:, :k], UB[:, ::-1][:, :k]
    gap = float(va[k - 1] - va[k])  # l_{k+1} - l_{k+2} (index 0 is l_2 after deflation)
    E = TB - TA
    e_op = float(np.linalg.norm(E, 2))
    e_fro = float(np.linalg.norm(E))
    sin_theta = float(np.linalg.norm(UA - UB @ (UB.T @ UA)))
    U, _, Vt = np.linalg.svd(UA.T @ UB)
    e_proc = float(np.linalg.norm(UA @ (U @ Vt) - UB))
    sin_bound, proc_bound = davis_kahan_bound(e_op, e_fro, gap, k)
    return BoundResult(sin_theta, e_proc, sin_bound, proc_bound, gap, e_op, e_fro)


def worst_case_perturbation(pi_a: np.ndarray, k: int, eta: float) -> np.ndarray:
    """``Pi_B`` with ``E = eta (u_{k+1} u_{k+2}^T + u_{k+2} u_{k+1}^T)``: tight for the bound.

    At k = 1 and small ``eta`` the ratio ``e_proc / bound`` tends to ``1 / (2 sqrt 2)``.
    ``Pi_B = D^1/2 (T_A + E) D^1/2`` keeps the marginal (``E sqrt(p) = 0``); ``eta`` must be
    small enough to keep it non-negative.
    """
    TA, _ = deflated_adjacency(check_pair_law(pi_a))
    _, U = np.linalg.eigh(TA)
    U = U[:, ::-1]
    u, v = U[:, k - 1], U[:, k]  # u_{k+1}, u_{k+2}
    E = eta * (np.outer(u, v) + np.outer(v, u))
    d = np.asarray(pi_a).sum(axis=1)
    return np.asarray(pi_a) + np.sqrt(d)[:, None] * E * np.sqrt(d)[None, :]
