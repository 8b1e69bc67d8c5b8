"""The kernel metrics' permutation null on torch: every layer pair and a batch of draws at once.

Permuting ``B``'s rows by ``pi`` permutes its kernel's rows and columns, ``L -> L[pi][:, pi]``,
and centring commutes with a permutation, so the HSIC of a draw is one gather of the centred
kernel and one inner product with ``A``'s:

    HSIC_b(K, L_pi) = <HKH, (HLH)[pi][:, pi]>,
    HSIC_u(K, L_pi) = <U(K), U(L)[pi][:, pi]> / (N (N - 3)),

``H = I - 11^T / N`` and ``U`` the U-centring of Szekely and Rizzo [1]_ (the zero-diagonal kernel
less its row and column means over ``N - 2``, plus its total over ``(N - 1)(N - 2)``; its
inner product with a zero-diagonal kernel is the unbiased estimator of Song et al., the one
:mod:`prh.metrics.kernel` computes from sums). With each ``A`` layer's centred kernel flattened
into a row (the ``P = N (N - 1) / 2`` entries above the diagonal, twice, as the kernels are
symmetric; the diagonal apart), the numerators of every layer pair over a batch of ``R`` draws are
one matrix product ``(L_A, P) x (P, R L_B)``; the denominators do not move. SVCCA likewise: the
cross products ``U_A^T U_B[pi]`` of every pair are one product ``(L_A d, N) x (N, R L_B d)``,
then batched singular values.

Everything is float64, on the CPU or a CUDA device. A batch of draws holds ``R L_B`` gathered
kernels (``P`` entries each) and their flat indices: ``R`` is what fits in
:data:`CPU_BATCH_BYTES` on the CPU, a quarter of the free memory on a GPU. Sides whose kernels do
not fit (:data:`MAX_KERNEL_BYTES`) get no batched null (None): the pair loop runs. Each null
carries ``tol`` ``(L_A, L_B)``, a bound on how far the pair loop's score may be from its own
(rounding); :func:`prh.metrics.api.measure` rescores, by the loop, a draw whose comparison with the
observed score that bound leaves open, so its p-values are the loop's.

.. [1] G. J. Szekely, M. L. Rizzo, "Partial distance correlation with methods for dissimilarities",
   Ann. Statist. 42, 2014, sec. 2.2.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from prh.metrics.kernel import KernelSide, kernel_matrix, self_hsic

CPU_BATCH_BYTES = 256 * 2**20  # the gathered kernels of one batch of draws, on the CPU
MAX_KERNEL_BYTES = 4 * 2**30  # every layer's centred kernel, both sides; above it: the loop
MAX_BATCH = 64  # draws per batch at most (the adaptive stop checks every 25 in any case)
ROUNDING = 64 * float(np.finfo(np.float64).eps)  # generous relative rounding of one float sum


def centred_kernel(k: np.ndarray, unbiased: bool) -> np.ndarray:
    """``(N, N)`` ``HKH`` (biased) or the U-centred ``K`` (unbiased, zero diagonal)."""
    n = k.shape[0]
    if not unbiased:
        r = k.mean(axis=1)  # (N,)
        return k - r[:, None] - r[None, :] + r.mean()
    kt = k.copy()
    np.fill_diagonal(kt, 0.0)
    r = kt.sum(axis=1)  # (N,) row sums of the zero-diagonal kernel
    u = kt - (r[:, None] + r[None, :]) / (n - 2) + r.sum() / ((n - 1) * (n - 2))
    np.fill_diagonal(u, 0.0)
    return u


def on_accelerator(dev: Any) -> bool:
    """Whether ``dev`` is a GPU (the batch is then sized by its free memory)."""
    return dev.type != "cpu"


def batch_bytes(dev: Any) -> int:
    """Memory one batch of draws may take on ``dev``."""
    if not on_accelerator(dev):
        return CPU_BATCH_BYTES
    import torch

    return int(torch.cuda.mem_get_info(dev)[0]) // 4


def draws_per_batch(dev: Any, per_draw: int) -> int:
    """Draws of ``per_draw`` bytes in one batch on ``dev``: 1 to :data:`MAX_BATCH`."""
    return int(min(MAX_BATCH, max(1, batch_bytes(dev) // max(per_draw, 1))))


class CkaNull:
    """CKA of every layer pair under batches of row permutations of ``B``.

    Parameters
    ----------
    sides_a, sides_b : sequence of KernelSide
        Each layer's side (:func:`prh.metrics.kernel.kernel_side`), ``N`` rows each.
    unbiased : bool
        Unbiased HSIC (``unbiased_cka``).
    eps : float
        The denominator's guard, as :func:`prh.metrics.kernel.cka_from_sides`.
    dev : torch.device
        Where the products run.
    """

    def __init__(
        self, sides_a: Sequence[KernelSide], sides_b: Sequence[KernelSide], unbiased: bool,
        eps: float, dev: Any,
    ) -> None:  # fmt: skip
        import torch

        n = sides_a[0].n
        self.dev, self.n = dev, n
        # Both kernels are symmetric: <K, L_pi> = 2 sum_{i<j} K_ij L_pi,ij + sum_i K_ii L_pi,ii,
        # so a draw gathers the N (N - 1) / 2 entries above the diagonal, and the diagonal.
        self.upper = np.triu_indices(n, 1)  # (P,) each
        ka = np.stack([centred_kernel(kernel_matrix(s), unbiased) for s in sides_a])
        lb = np.stack([centred_kernel(kernel_matrix(s), unbiased) for s in sides_b])
        self.ka = torch.from_numpy(2.0 * ka[:, self.upper[0], self.upper[1]]).to(dev)  # (L_A, P)
        self.ka_diag = torch.from_numpy(np.diagonal(ka, axis1=1, axis2=2).copy()).to(dev)
        self.lb = torch.from_numpy(lb.reshape(len(sides_b), n * n)).to(dev)  # (L_B, N^2)
        self.lb_diag = np.diagonal(lb, axis1=1, axis2=2).copy()  # (L_B, N)
        kk = np.array([self_hsic(s, unbiased) for s in sides_a])
        ll = np.array([self_hsic(s, unbiased) for s in sides_b])
        self.scale = 1.0 / (n * (n - 3)) if unbiased else 1.0
        self.den = np.sqrt(kk[:, None] * ll[None, :]) + eps  # (L_A, L_B), NaN: undefined
        # The pair loop sums the raw kernels, each term at most sqrt(sum K^2 sum L^2): its
        # rounding, over this denominator, bounds how far its score may be from this one.
        raw = np.sqrt(np.outer([s.self_s for s in sides_a], [s.self_s for s in sides_b]))
        self.tol = ROUNDING * n * raw * self.scale / self.den  # (L_A, L_B)
        per_draw = 8 * (len(sides_b) + 1) * len(self.upper[0])  # the entries and their index
        self.batch = draws_per_batch(dev, per_draw)

    def gathered(self, perms: np.ndarray) -> tuple[Any, Any]:
        """``(L_B R, P)`` and ``(L_B R, N)``: the entries above the diagonal and the diagonal of
        each ``B`` layer's centred kernel permuted by each draw (row ``l R + r``: layer ``l``,
        draw ``r``; ``L_l[pi_r(i), pi_r(j)]`` for the ``P`` pairs ``i < j``), by flat index
        (numpy's ``take`` on the CPU, several times faster there than torch's indexing)."""
        import torch

        p = np.asarray(perms, dtype=np.int64)  # (R, N)
        flat = (p[:, self.upper[0]] * self.n + p[:, self.upper[1]]).reshape(-1)  # (R P,)
        if on_accelerator(self.dev):
            lp = self.lb[:, torch.from_numpy(flat).to(self.dev)]  # (L_B, R P)
        else:
            lp = torch.from_numpy(np.take(self.lb.numpy(), flat, axis=1))
        diag = torch.from_numpy(self.lb_diag[:, p].reshape(-1, self.n)).to(self.dev)
        return lp.reshape(-1, len(self.upper[0])), diag

    def scores(self, perms: np.ndarray) -> np.ndarray:
        """``(R, L_A, L_B)`` CKA of every layer pair under each of ``perms`` ``(R, N)``."""
        r, lb = len(perms), self.lb.shape[0]
        upper, diag = self.gathered(perms)
        num = self.ka @ upper.T + self.ka_diag @ diag.T  # (L_A, L_B R): every pair, every draw
        num = num.reshape(-1, lb, r).permute(2, 0, 1).cpu().numpy()  # (R, L_A, L_B)
        return num * self.scale / self.den[None]


class SvccaNull:
    """SVCCA of every layer pair under batches of row permutations of ``B``.

    Parameters
    ----------
    bases_a, bases_b : sequence of np.ndarray
        Each layer's ``(N, d)`` orthonormal centred basis (:func:`prh.metrics.cca.svcca_basis`).
    dev : torch.device
        Where the products and singular values run.
    """

    def __init__(self, bases_a: Sequence[np.ndarray], bases_b: Sequence[np.ndarray], dev) -> None:
        import torch

        self.dev, self.d = dev, bases_a[0].shape[1]
        self.ua = torch.from_numpy(np.concatenate(bases_a, axis=1)).to(dev)  # (N, L_A d)
        self.ub = torch.from_numpy(np.concatenate(bases_b, axis=1)).to(dev)  # (N, L_B d)
        self.shape = (len(bases_a), len(bases_b))
        self.tol = np.full(self.shape, 1e-10)  # d x d singular values: rounding ~ d eps
        n = self.ua.shape[0]
        self.batch = draws_per_batch(dev, 8 * (n + self.ua.shape[1]) * self.ub.shape[1])

    def scores(self, perms: np.ndarray) -> np.ndarray:
        """``(R, L_A, L_B)`` SVCCA of every layer pair under each of ``perms`` ``(R, N)``."""
        import torch

        p = torch.from_numpy(np.asarray(perms, dtype=np.int64)).to(self.dev)  # (R, N)
        cross = self.ua.T @ self.ub[p]  # (R, L_A d, L_B d)
        (la, lb), d, r = self.shape, self.d, p.shape[0]
        blocks = cross.reshape(r, la, d, lb, d).permute(0, 1, 3, 2, 4)  # (R, L_A, L_B, d, d)
        rho = torch.linalg.svdvals(blocks).clamp(0.0, 1.0)  # (R, L_A, L_B, d)
        return rho.mean(dim=-1).cpu().numpy()


def kernel_null(
    metric: str, states_a: Sequence[Any], states_b: Sequence[Any], eps: float, device: str
) -> CkaNull | SvccaNull | None:
    """The batched null of ``metric`` (``cka``, ``unbiased_cka``, ``svcca``; CKNNA's is
    :mod:`prh.metrics.null_cknna`) on the torch ``device``; None for another metric, or when the
    sides' centred kernels would take more than :data:`MAX_KERNEL_BYTES` (the loop runs then)."""
    from prh.device import resolve_device

    dev = resolve_device(device)
    if metric == "svcca":
        return SvccaNull(states_a, states_b, dev)
    if metric not in ("cka", "unbiased_cka"):
        return None
    n = states_a[0].n
    if 8 * (len(states_a) + len(states_b)) * n * n > MAX_KERNEL_BYTES:
        return None
    return CkaNull(states_a, states_b, metric == "unbiased_cka", eps, dev)
