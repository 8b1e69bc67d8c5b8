"""Whitened JEPA losses: the pair prediction error under batch whitening, and the soft variant.

A whitened JEPA minimises ``E ||f(x) - f(x')||^2`` over positive pairs subject to ``E f = 0`` and
``E f f^T = I``; its minimisers are the spectral (Laplacian-eigenmap) embedding of the pair graph,
unique up to a rotation when the eigengap is positive (docs/theory.md sec. 2; Balestriero & LeCun
2026). In a batch we enforce the constraint by whitening: the two sides of every pair are
centred and whitened with ONE mean and ONE whitening matrix estimated on both sides together
(the same function ``f`` sees both sides), then the squared pair distance is averaged.

References
----------
[1] Ermolov et al., "Whitening for Self-Supervised Representation Learning", ICML 2021 (W-MSE).
[2] Kessy, Lewin & Strimmer, "Optimal Whitening and Decorrelation", Am. Stat. 2018 (ZCA, Cholesky).
"""

from __future__ import annotations

import torch

METHODS = ("cholesky", "zca")


def batch_covariance(
    z: torch.Tensor, weights: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean ``(E,)`` and covariance ``(E, E)`` of the rows of ``z`` ``(N, E)``.

    Unweighted: the unbiased covariance (divided by ``N - 1``). With ``weights`` ``(N,)`` summing
    to 1: the moments under that law, ``mu = sum_i w_i z_i`` and
    ``C = sum_i w_i (z_i - mu)(z_i - mu)^T``.
    """
    if weights is not None:
        mu = (weights[:, None] * z).sum(0)  # (E,)
        zc = z - mu  # (N, E)
        return mu, zc.T @ (weights[:, None] * zc)  # (E, E)
    mu = z.mean(0)  # (E,)
    zc = z - mu  # (N, E)
    return mu, zc.T @ zc / max(z.shape[0] - 1, 1)  # (E, E)


def _ridge(cov: torch.Tensor, eps: float) -> torch.Tensor:
    """``eps`` times the mean variance (detached; floored at the dtype's tiniest number)."""
    return eps * torch.diagonal(cov).mean().detach().clamp_min(torch.finfo(cov.dtype).tiny)


def whitening_matrix(
    cov: torch.Tensor, eps: float = 1e-4, method: str = "cholesky"
) -> torch.Tensor:
    """A matrix ``W`` ``(E, E)`` with ``W (cov + eps' I) W^T = I``, ``eps' = eps tr(cov) / E``.

    The ridge is relative to the mean variance, so the whitened output does not depend on the
    scale of the embedding (an absolute ridge lets a model shrink its embedding below ``eps`` and
    drive the pair error to zero: a collapse).

    ``method="cholesky"``: ``W = L^-1`` with ``cov + eps I = L L^T`` (cheap, triangular);
    ``method="zca"``: ``W = U diag(s + eps)^-1/2 U^T`` (symmetric, the whitening closest to the
    identity [2]). Both whiten; they differ by a rotation, which the pair loss does not see.
    """
    if method not in METHODS:
        raise ValueError(f"unknown whitening method {method!r}; expected one of {METHODS}")
    E = cov.shape[0]
    ridge = _ridge(cov, eps)
    reg = cov + ridge * torch.eye(E, dtype=cov.dtype, device=cov.device)  # (E, E)
    if method == "cholesky":
        L = torch.linalg.cholesky(reg)  # (E, E) lower
        eye = torch.eye(E, dtype=cov.dtype, device=cov.device)
        return torch.linalg.solve_triangular(L, eye, upper=False)  # (E, E) = L^-1
    s, U = torch.linalg.eigh(reg)  # (E,), (E, E)
    return U @ torch.diag(s.clamp_min(ridge).rsqrt()) @ U.T  # (E, E)


def whiten(
    z: torch.Tensor,
    eps: float = 1e-4,
    method: str = "cholesky",
    weights: torch.Tensor | None = None,
) -> torch.Tensor:
    """Rows of ``z`` ``(N, E)`` centred and whitened by their own batch statistics -> ``(N, E)``.

    ``weights`` ``(N,)`` summing to 1 whitens under that law instead of the uniform one (the
    theory learner's batch marginal); see :func:`batch_covariance`.
    """
    mu, cov = batch_covariance(z, weights)
    return (z - mu) @ whitening_matrix(cov, eps, method).T  # (N, E)


def whitened_jepa_loss(
    za: torch.Tensor, zb: torch.Tensor, eps: float = 1e-4, method: str = "cholesky"
) -> torch.Tensor:
    """Pair prediction error after joint batch whitening, with the ridge's shortfall charged.

    ``L = (1/B) sum_i ||W (za_i - mu) - W (zb_i - mu)||^2 + 2 (E - tr(W C W^T))`` where ``mu``,
    ``C`` and ``W`` come from the ``2B`` rows of ``[za; zb]`` (:func:`whitening_matrix`, ridge
    ``r = eps tr(C) / E``). At the optimum over all tables ``f``,
    ``L* = 2 sum_{i=2}^{k+1} (1 - l_i)`` (``docs/theory.md`` sec. 2).

    Why the second term (``docs/theory.md``, "the whitening loophole"): the ridge leaves a
    direction of variance ``s`` at whitened variance ``u = s / (s + r) < 1``. Without the second
    term a direction with cross-view correlation ``l`` costs ``2 u (1 - l)``, so crushing every
    direction not yet learned (``s << r``, ``u -> 0``) is free while a learned one costs
    ``2 (1 - l)``: the loss's global minimum is a one-dimensional embedding. The second term
    charges the shortfall ``1 - u`` as if it were filled with view-independent noise, so each
    direction costs ``2 (1 - u l)``: vanishing (``u -> 0``) costs the full 2, never less than being
    learned, and the top-k eigenspace is again the minimum. For a healthy embedding
    (``s >> r``) the term is ``2 sum r / (s + r)``, about ``2 E eps``.

    Parameters
    ----------
    za, zb : Tensor
        ``(B, E)`` embeddings of the two sides of ``B`` positive pairs. Need ``2B > E``.
    eps : float
        Ridge added to the covariance before whitening, relative to its mean variance.
    method : {"cholesky", "zca"}

    Returns
    -------
    Tensor
        Scalar loss (float32 even under autocast).
    """
    if za.shape != zb.shape or za.ndim != 2:
        raise ValueError(f"za and zb must both be (B, E); got {tuple(za.shape)}, {tuple(zb.shape)}")
    B = za.shape[0]
    z = torch.cat([za, zb]).float()  # (2B, E)
    mu, cov = batch_covariance(z)
    W = whitening_matrix(cov, eps, method)  # (E, E)
    w = (z - mu) @ W.T  # (2B, E)
    pair = (w[:B] - w[B:]).square().sum(1).mean()
    # E - tr(W C W^T) = r tr((C + r I)^-1) = r ||W||_F^2 (W^T W = (C + r I)^-1 for either method):
    # the shortfall computed directly, not as a difference of two numbers near E (in float32 that
    # difference loses the digits its gradient needs).
    shortfall = _ridge(cov, eps) * W.square().sum()
    return pair + 2 * shortfall


def soft_whitening_loss(
    za: torch.Tensor, zb: torch.Tensor, beta: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pair error plus a soft whitening penalty: ``E ||za - zb||^2 + beta ||Cov - I||_F^2``.

    The mean is removed (the constant direction carries no information). For ``beta = 1`` the
    minimiser spans the same subspace as the hard constraint, with covariance eigenvalues
    ``l_2 .. l_{k+1}`` (``docs/theory.md`` sec. 2).

    Returns
    -------
    (loss, penalty) : tuple of scalar Tensors
    """
    if za.shape != zb.shape or za.ndim != 2:
        raise ValueError(f"za and zb must both be (B, E); got {tuple(za.shape)}, {tuple(zb.shape)}")
    z = torch.cat([za, zb]).float()  # (2B, E)
    mu, cov = batch_covariance(z)
    B = za.shape[0]
    pair = (z[:B] - z[B:]).square().sum(1).mean()
    eye = torch.eye(z.shape[1], dtype=z.dtype, device=z.device)
    penalty = (cov - eye).square().sum()
    return pair + beta * penalty + mu.square().sum(), penalty
