"""Random state kernels and their projection to a shared prior (docs/theory.md sec. 4).

Kernels are symmetric non-negative ``(N, N)`` matrices with a positive diagonal (self-loops make
the symmetric Sinkhorn projection exist for any prior). :func:`sinkhorn_symmetric` scales a
kernel to ``Pi = diag(a) K diag(a)`` with ``Pi 1 = p``: a state pair kernel with marginal ``p``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from prh.errors import InputError

KERNEL_KINDS = ("sbm", "geometric", "erdos-renyi")


def random_prior(n: int, rng: np.random.Generator, concentration: float = 2.0) -> np.ndarray:
    """A Dirichlet(concentration) prior over ``n`` states, shape (n,), every entry positive."""
    p = rng.dirichlet(np.full(n, concentration))
    p = np.maximum(p, 1e-3 / n)
    return p / p.sum()


def sbm_kernel(n: int, rng: np.random.Generator, blocks: int | None = None) -> np.ndarray:
    """Stochastic-block kernel: random block edge rates, random edge weights, shape (n, n)."""
    b = int(blocks or rng.integers(2, max(3, n // 8) + 1))
    z = rng.integers(0, b, size=n)
    rates = rng.uniform(0.0, 0.3, size=(b, b))
    rates = 0.5 * (rates + rates.T)
    rates[np.diag_indices(b)] = rng.uniform(0.5, 1.0, size=b)
    prob = rates[z][:, z]
    A = (rng.random((n, n)) < prob) * rng.uniform(0.1, 1.0, size=(n, n))
    return _symmetrise_with_loops(A, rng)


def geometric_kernel(
    n: int, rng: np.random.Generator, dim: int = 2, bandwidth: float | None = None
) -> np.ndarray:
    """Random-geometric (Gaussian) kernel on ``n`` uniform points in ``[0, 1]^dim``, shape (n, n).

    Positive semi-definite, so every eigenvalue of its normalized adjacency is >= 0.
    """
    x = rng.random((n, dim))
    h = float(bandwidth or rng.uniform(0.08, 0.3))
    sq = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    return np.exp(-sq / (2 * h * h))


def erdos_renyi_kernel(n: int, rng: np.random.Generator, prob: float | None = None) -> np.ndarray:
    """Erdos-Renyi kernel: each edge present with probability ``prob``, random weights, (n, n)."""
    q = float(prob or rng.uniform(1.5, 6.0) / n)
    A = (rng.random((n, n)) < q) * rng.uniform(0.1, 1.0, size=(n, n))
    return _symmetrise_with_loops(A, rng)


def _symmetrise_with_loops(A: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    A = np.triu(A, 1)
    A = A + A.T
    A[np.diag_indices_from(A)] = rng.uniform(0.05, 0.5, size=A.shape[0])
    return A


def random_kernel(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """A kernel of ``kind`` in :data:`KERNEL_KINDS`, shape (n, n)."""
    if kind == "sbm":
        return sbm_kernel(n, rng)
    if kind == "geometric":
        return geometric_kernel(n, rng)
    if kind == "erdos-renyi":
        return erdos_renyi_kernel(n, rng)
    raise InputError(f"kernel kind: expected one of {', '.join(KERNEL_KINDS)}, got {kind!r}")


def sinkhorn_symmetric(
    K: np.ndarray, p: np.ndarray, tol: float = 1e-14, max_iter: int = 20000
) -> np.ndarray:
    """Symmetric Sinkhorn: ``Pi = diag(a) K diag(a)`` with ``Pi 1 = p`` (so ``Pi`` sums to 1).

    Iterates the damped fixed point ``a <- sqrt(a * p / (K a))`` [1]_ until the marginal error
    is below ``tol`` (relative to ``p``).

    Parameters
    ----------
    K : ndarray, shape (N, N)
        Symmetric, non-negative, positive diagonal.
    p : ndarray, shape (N,)
        Target marginal, positive, sums to 1.

    References
    ----------
    .. [1] Knight (2008), The Sinkhorn-Knopp algorithm: convergence and applications. SIMAX 30(1).
    """
    K = np.asarray(K, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    if K.shape != (p.size, p.size) or np.any(np.diag(K) <= 0) or K.min() < 0:
        raise InputError(
            f"sinkhorn: expected a non-negative {p.size}x{p.size} kernel with a "
            f"positive diagonal, got shape {K.shape}"
        )
    K = 0.5 * (K + K.T)
    a = np.sqrt(p / K.sum(axis=1))
    for _ in range(max_iter):
        Ka = K @ a
        err = np.max(np.abs(a * Ka - p) / p)
        if err < tol:
            break
        a = np.sqrt(a * p / Ka)
    Pi = a[:, None] * K * a[None, :]
    return 0.5 * (Pi + Pi.T)


def state_kernel(kind: str, prior: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random state pair kernel ``Pi`` (N, N) of ``kind`` with marginal ``prior``."""
    return sinkhorn_symmetric(random_kernel(kind, prior.size, rng), prior)


def perturb_kernel(K: np.ndarray, size: float, rng: np.random.Generator) -> np.ndarray:
    """``(1 - size) K / mean(K) + size R / mean(R)`` with ``R`` a fresh random kernel, (N, N).

    ``size`` in ``[0, 1]``: 0 returns ``K`` (rescaled), 1 an unrelated kernel.
    """
    kind = KERNEL_KINDS[int(rng.integers(len(KERNEL_KINDS)))]
    R = random_kernel(kind, K.shape[0], rng)
    return (1.0 - size) * K / K.mean() + size * R / R.mean()


@dataclass(frozen=True, eq=False)
class KernelPair:
    """Two state kernels with one shared prior (a Theorem 2 world)."""

    pi_a: np.ndarray  # (N, N)
    pi_b: np.ndarray  # (N, N)
    prior: np.ndarray  # (N,)
    k: int
    kind: str
    size: float


def random_kernel_pair(
    rng: np.random.Generator, n_range: tuple[int, int] = (20, 150), max_k: int = 8
) -> KernelPair:
    """A random Theorem 2 world: N in ``n_range``, a random kernel kind with random weights, a
    log-uniform perturbation size in ``[1e-4, 1]``, both kernels projected to one prior."""
    n = int(rng.integers(n_range[0], n_range[1] + 1))
    kind = KERNEL_KINDS[int(rng.integers(len(KERNEL_KINDS)))]
    prior = random_prior(n, rng)
    K_a = random_kernel(kind, n, rng)
    size = float(10 ** rng.uniform(-4, 0))
    K_b = perturb_kernel(K_a, size, rng)
    k = int(rng.integers(1, min(max_k, n - 2) + 1))
    return KernelPair(
        pi_a=sinkhorn_symmetric(K_a, prior),
        pi_b=sinkhorn_symmetric(K_b, prior),
        prior=prior,
        k=k,
        kind=kind,
        size=size,
    )
