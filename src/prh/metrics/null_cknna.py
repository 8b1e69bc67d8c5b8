"""CKNNA's permutation null on torch: every layer pair and a batch of draws at once.

CKNNA (:func:`prh.metrics.kernel.cknna_from_sides`) sums over ``A``'s ``N k`` neighbour edges
``(r, c)`` those also neighbours in ``B``. Under a permutation ``pi`` of ``B``'s rows no neighbour
list changes, only its labels (as for mutual kNN, :mod:`prh.metrics.null_knn`): the edge is kept
when ``(pi(r), pi(c))`` is an edge of ``B``, and its ``B`` kernel value is ``G_B[pi(r), pi(c)]``.
So a draw is two lookups per edge of ``A``, in a table of ``B``'s edges and in ``B``'s Gram matrix,
for every (``A`` layer, ``B`` layer) pair and every draw of a batch at once; the unbiased HSIC's
terms are then sums over the edges kept (``t1``: those kept both ways, ``(c, r)`` located once per
``A`` layer), a row sum and a column scatter (``t3``). The denominators do not move.

Everything is float64, on the CPU or a CUDA device; the batch is sized as in
:mod:`prh.metrics.null_kernel`. ``tol`` bounds how far the pair loop's score may be from this one
(rounding), for :func:`prh.metrics.api.measure`'s rescoring of undecided draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from prh.metrics.kernel import KnnKernelSide
from prh.metrics.null_kernel import MAX_KERNEL_BYTES, ROUNDING, draws_per_batch, on_accelerator


def reverse_edges(nbrs: np.ndarray) -> np.ndarray:
    """``(N k,)`` for each edge ``e = r k + t`` (``c = nbrs[r, t]``) the index of the edge
    ``(c, r)`` when ``r`` is among ``c``'s neighbours, else ``N k`` (a padding slot)."""
    n, k = nbrs.shape
    keys = np.arange(n, dtype=np.int64)[:, None] * n + nbrs  # (N, k) edge keys r N + c
    order = np.argsort(keys, axis=None)
    flat = keys.ravel()[order]  # sorted keys
    rev = (nbrs.astype(np.int64) * n + np.arange(n)[:, None]).ravel()  # keys c N + r
    pos = np.minimum(np.searchsorted(flat, rev), len(flat) - 1)
    return np.where(flat[pos] == rev, order[pos], n * k)


class CknnaNull:
    """CKNNA of every layer pair under batches of row permutations of ``B``.

    Parameters
    ----------
    sides_a, sides_b : sequence of KnnKernelSide
        Each layer's side (:func:`prh.metrics.kernel.knn_kernel_side`), ``N`` rows, ``k``
        neighbours each.
    eps : float
        The denominator's guard, as :func:`prh.metrics.kernel.cknna_from_sides`.
    dev : torch.device
        Where the lookups and sums run.
    """

    def __init__(
        self, sides_a: Sequence[KnnKernelSide], sides_b: Sequence[KnnKernelSide], eps: float,
        dev: Any,
    ) -> None:  # fmt: skip
        import torch

        n, k = sides_a[0].nbrs.shape
        self.dev, self.n, self.k, self.lb = dev, n, k, len(sides_b)
        cols = np.stack([s.nbrs.astype(np.int64).ravel() for s in sides_a])  # (L_A, N k)
        rows = np.arange(n).repeat(k)  # (N k,) each edge's row
        kv = np.stack([s.sims.ravel() for s in sides_a])  # (L_A, N k) K at A's own edges
        # B's edges as a table over (row, column): 1 marks an edge (float: no bool casts per
        # draw) and ``gram`` holds L there (0 elsewhere: only edges of both sides are read)
        member = np.zeros((self.lb, n * n))
        gram = np.zeros((self.lb, n * n))
        for j, s in enumerate(sides_b):
            at = (np.arange(n)[:, None] * n + s.nbrs).ravel()
            member[j, at], gram[j, at] = 1.0, s.sims.ravel()

        def put(x: np.ndarray) -> Any:
            return torch.from_numpy(np.ascontiguousarray(x)).to(dev)

        self.cols, self.kv, self.member, self.gram = put(cols), put(kv), put(member), put(gram)
        self.rows = put(rows)
        self.rev = put(np.stack([reverse_edges(s.nbrs) for s in sides_a]))  # (L_A, N k)
        prod = np.outer([s.self_hsic for s in sides_a], [s.self_hsic for s in sides_b])
        self.den = np.where(prod > 0, np.sqrt(np.maximum(prod, 0)) + eps, np.nan)  # (L_A, L_B)
        # The loop's HSIC sums N k products of kernel values (|K| <= ma, |L| <= mb) in terms of
        # size up to (N k + 3 k^2) ma mb, over N (N - 3); bincount adds up to N terms in a row.
        ma, mb = np.abs(kv).max(axis=1), np.abs(gram).max(axis=1)
        scale = ROUNDING * n * (n * k + 3 * k * k) / (n * (n - 3))
        self.tol = scale * np.outer(ma, mb) / self.den
        per_draw = 72 * len(sides_a) * self.lb * n * k  # an edge's key, lookups and products
        self.batch = draws_per_batch(dev, per_draw)

    def lookup(self, table: Any, at: Any) -> Any:
        """``table`` (flat) at the indices ``at``: numpy's ``take`` on the CPU (several times
        faster there than torch's indexing), torch's on a GPU."""
        import torch

        if on_accelerator(self.dev):
            return table.reshape(-1)[at]
        return torch.from_numpy(np.take(table.numpy().reshape(-1), at.numpy()))

    def scores(self, perms: np.ndarray) -> np.ndarray:
        """``(R, L_A, L_B)`` CKNNA of every layer pair under each of ``perms`` ``(R, N)``."""
        import torch

        n, k = self.n, self.k
        p = torch.from_numpy(np.asarray(perms, dtype=np.int64)).to(self.dev)  # (R, N)
        keys = p[:, self.rows][:, None, :] * n + p[:, self.cols]  # (R, L_A, N k) B's edge keys
        at = keys[:, :, None, :] + (torch.arange(self.lb, device=self.dev) * n * n)[:, None]
        keep = self.lookup(self.member, at)  # (R, L_A, L_B, N k): 1 when the edge is in B_j[perm]
        lv = self.lookup(self.gram, at) * keep  # L values of the kept edges, 0 elsewhere
        kv = self.kv[None, :, None, :] * keep  # K values of the kept edges
        pad = torch.nn.functional.pad(keep, (0, 1))  # slot N k: no reverse edge
        back = torch.gather(pad, 3, self.rev[None, :, None, :].expand_as(keep))  # (c, r) kept
        t1 = (kv * lv * back).sum(-1)
        col_k = torch.zeros(*kv.shape[:3], n, dtype=kv.dtype, device=self.dev)
        col_k.scatter_add_(3, self.cols[None, :, None, :].expand_as(kv), kv)  # 1^T (M K)
        t3 = (col_k * lv.reshape(*lv.shape[:3], n, k).sum(-1)).sum(-1)  # with (M L) 1
        total = kv.sum(-1) * lv.sum(-1) / ((n - 1) * (n - 2))
        hsic = (t1 + total - 2.0 * t3 / (n - 2)) / (n * (n - 3))  # (R, L_A, L_B)
        return hsic.cpu().numpy() / self.den[None]


def cknna_null(
    states_a: Sequence[KnnKernelSide], states_b: Sequence[KnnKernelSide], eps: float, device: str
) -> CknnaNull | None:
    """CKNNA's batched null on the torch ``device``; None when ``B``'s Gram matrices and edge
    tables would take more than :data:`prh.metrics.null_kernel.MAX_KERNEL_BYTES`."""
    from prh.device import resolve_device

    dev = resolve_device(device)
    n = states_a[0].nbrs.shape[0]
    if 16 * len(states_b) * n * n > MAX_KERNEL_BYTES:
        return None
    return CknnaNull(states_a, states_b, eps, dev)
