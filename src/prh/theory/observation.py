"""What each modality can learn: the kernel on what an observation shows (docs/theory.md sec. 9).

A modality ``m`` does not see the state ``s``; it sees a *content* ``c`` drawn with probability
``O_m(s, c)`` (a caption that names the object's cell one time in six, a sketch without colour).
A whitened JEPA trained on ``m``'s good views (two observations of the two frames of a pair)
sees the pair law on contents

    ``K_m = O_m^T Pi O_m``  (C, C), marginal ``q_m = O_m^T p``,

and learns the top ``k`` non-constant eigenfunctions ``f_m`` of *that* kernel (normalised by its
marginal), not of the state kernel ``Pi``: the modality's own theory embedding. When ``O_m`` is
the identity (every observation identifies the state) ``f_m = g*``.

Two figures follow, both population values (no sampling):

- :func:`observation_cc`: the canonical correlations of ``f_A(c_A)`` with ``f_B(c_B)`` for one
  observation of each modality of one state, ``c_A ~ O_A(s)``, ``c_B ~ O_B(s)`` independent given
  ``s ~ p``: the singular values of ``f_A^T O_A^T diag(p) O_B f_B`` (both sides white under their
  own marginals). This is what a held-out CCA between two perfect encoders measures on one
  observation per state (the demo's protocol); with ``B`` the identity and ``f_B = g*`` it is the
  modality's ceiling against ``g*``.
- :func:`state_cc`: the canonical correlations of ``E[f_A | s]`` with ``E[f_B | s]`` over ``p``
  (the state-averaged statement of THEORY sec. 9): each side re-whitened after averaging, so at
  least as large.

Layer: pure numpy; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from prh.errors import InputError


@dataclass(frozen=True, eq=False)
class ContentSpectrum:
    """A modality's own spectrum and theory embedding (on its contents).

    Attributes
    ----------
    eigenvalues : ndarray, shape (m,)
        ``l_2, l_3, ...`` of ``K_m`` normalised by its marginal (the constant left out).
    functions : ndarray, shape (C, k)
        ``f_m``: the top ``k`` non-constant eigenfunctions, white under ``marginal``.
    marginal : ndarray, shape (C,)
        ``q_m = O_m^T p``.
    """

    eigenvalues: np.ndarray
    functions: np.ndarray
    marginal: np.ndarray

    def gap(self, k: int) -> float:
        """``l_{k+1} - l_{k+2}`` of the content kernel."""
        return float(self.eigenvalues[k - 1] - self.eigenvalues[k])


def check_observation(O: np.ndarray, n_states: int) -> np.ndarray:
    """``O`` as float64 ``(N, C)`` with rows that are probability laws (one line otherwise)."""
    O = np.asarray(O, dtype=np.float64)
    if O.ndim != 2 or O.shape[0] != n_states:
        raise InputError(f"observation model: expected ({n_states}, C), got shape {O.shape}")
    if (O < 0).any() or not np.allclose(O.sum(1), 1.0, atol=1e-9):
        raise InputError("observation model: every row must be a probability law over contents")
    return O


def content_spectrum(
    Pi: np.ndarray, O: np.ndarray, k: int, m: int | None = None
) -> ContentSpectrum:
    """The top eigenpairs of the content kernel ``O^T Pi O`` (module docstring).

    Parameters
    ----------
    Pi : ndarray, shape (N, N)
        The symmetric pair law on states (sums to 1; marginal ``p = Pi 1``).
    O : ndarray, shape (N, C)
        ``P(content | state)``.
    k : int
        Eigenfunctions kept.
    m : int, optional
        Eigenvalues kept (default ``k + 4``).
    """
    O = check_observation(O, Pi.shape[0])
    p = Pi.sum(1)
    q = O.T @ p  # (C,)
    keep = q > 0  # contents no state shows carry no mass
    if keep.sum() <= k + 1:
        raise InputError(f"observation model: {int(keep.sum())} contents, need more than k + 1")
    Ok, qk = O[:, keep], q[keep]
    K = Ok.T @ Pi @ Ok  # (C', C') the pair law on contents
    M = K / np.sqrt(np.outer(qk, qk))
    ev, U = np.linalg.eigh(0.5 * (M + M.T))
    order = np.argsort(ev)[::-1]
    ev, U = ev[order], U[:, order]
    f = np.zeros((O.shape[1], k))
    f[keep] = U[:, 1 : k + 1] / np.sqrt(qk)[:, None]  # white under q
    m = k + 4 if m is None else m
    return ContentSpectrum(ev[1 : m + 1].copy(), f, q)


def _white(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``x`` ``(N, k)`` centred and whitened under the weights ``w`` ``(N,)`` (null directions
    dropped)."""
    xc = x - w @ x
    c = xc.T @ (w[:, None] * xc)
    ev, V = np.linalg.eigh(c)
    keep = ev > 1e-12 * max(float(ev.max()), 1e-300)
    return xc @ (V[:, keep] / np.sqrt(ev[keep]))


def observation_cc(
    p: np.ndarray, O_a: np.ndarray, f_a: np.ndarray, O_b: np.ndarray, f_b: np.ndarray
) -> np.ndarray:
    """Canonical correlations of ``f_a(c_a)`` and ``f_b(c_b)``, one observation of each modality
    of one state ``s ~ p`` (module docstring); ``f_*`` white under their own marginals.
    Descending, ``min(k_a, k_b)`` of them."""
    cross = f_a.T @ O_a.T @ (p[:, None] * (O_b @ f_b))  # (k_a, k_b)
    return np.clip(np.linalg.svd(cross, compute_uv=False), 0.0, 1.0)


def state_cc(
    p: np.ndarray, O_a: np.ndarray, f_a: np.ndarray, O_b: np.ndarray, f_b: np.ndarray
) -> np.ndarray:
    """Canonical correlations of ``E[f_a | s]`` and ``E[f_b | s]`` over ``p`` (each averaged over
    the modality's contents of ``s``, then re-whitened); descending."""
    a, b = _white(O_a @ f_a, p), _white(O_b @ f_b, p)
    cross = a.T @ (p[:, None] * b)
    return np.clip(np.linalg.svd(cross, compute_uv=False), 0.0, 1.0)
