"""SIGReg: sketched isotropic-Gaussian regularisation (LeJEPA, Balestriero & LeCun 2025).

The embedding distribution is pushed toward ``N(0, I)`` by testing many random 1-D projections
with the Epps-Pulley statistic, which compares the empirical characteristic function (ECF) of the
projected samples with the Gaussian one:

    EP(x) = N * integral |phi_N(t) - exp(-t^2 / 2)|^2 w(t) dt,   w(t) = exp(-t^2 / 2),
    phi_N(t) = (1/N) sum_n exp(i t x_n).

The integrand is even in ``t``, so we integrate over ``[0, t_max]`` with the trapezoid rule and
double the weights; nodes and weights are computed once, as buffers. Directions are drawn from a
``torch.Generator`` seeded by the global step: every data-parallel rank (and a resumed run) draws
the same directions without communication. The step is passed in by prh's training loop (so a
resumed run draws exactly the directions it would have drawn); called without one, as in LeJEPA,
the module counts its own calls instead (a ``step`` buffer, incremented after each call).

Scale against LeJEPA [2]. LeJEPA weights ``(1 - lam) * inv + lam * SIGReg`` with
``inv = mean over (views, rows, dims) of (view mean - z_v)^2`` and SIGReg computed per view and
averaged. :func:`sigreg_jepa_loss` uses the squared pair distance SUMMED over the ``K`` embedding
dims, averaged over pairs, and one SIGReg over both views' rows stacked. For two views
``(view mean - z_a)^2 = (z_b - z_a)^2 / 4``, so our prediction term is exactly ``4 K`` times
LeJEPA's, and the stacked statistic (``2N`` rows, the Epps-Pulley statistic grows with the row
count away from Gaussianity) about twice LeJEPA's per-view mean. At one ``lam``, prh's objective
therefore weighs prediction about ``2 K`` times more against SIGReg than LeJEPA's. The same
balance as a LeJEPA ``lam_L`` is ``lam / (1 - lam) = 2 K lam_L / (1 - lam_L)``; or call
:func:`lejepa_loss`, which is LeJEPA's objective at LeJEPA's scale.

References
----------
[1] Epps & Pulley, "A test for normality based on the empirical characteristic function",
    Biometrika 70(3), 1983.
[2] Balestriero & LeCun, "LeJEPA: Provable and Scalable Self-Supervised Learning Without the
    Heuristics", 2025 (rbalestr-lab/lejepa).
"""

from __future__ import annotations

import torch
from torch import nn


class EppsPulley(nn.Module):
    """Epps-Pulley statistic of each column: ``(N, K) -> (K,)``; larger means less Gaussian.

    Parameters
    ----------
    t_max : float
        Upper end of the integration range.
    n_points : int
        Trapezoid nodes on ``[0, t_max]`` (odd, >= 3).
    """

    def __init__(self, t_max: float = 3.0, n_points: int = 17) -> None:
        super().__init__()
        if n_points < 3 or n_points % 2 == 0:
            raise ValueError(f"n_points must be odd and >= 3, got {n_points}")
        t = torch.linspace(0.0, t_max, n_points, dtype=torch.float64)  # (P,)
        dt = t_max / (n_points - 1)
        w = torch.full((n_points,), 2.0 * dt, dtype=torch.float64)  # doubled: t and -t
        w[[0, -1]] = dt
        phi = torch.exp(-0.5 * t.square())  # Gaussian characteristic function
        self.register_buffer("t", t.float())
        self.register_buffer("phi", phi.float())
        self.register_buffer("weights", (w * phi).float())  # trapezoid x w(t)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        N = x.shape[-2]
        xt = x.unsqueeze(-1) * self.t  # (N, K, P)
        cos_mean = torch.cos(xt).mean(-3)  # (K, P)
        sin_mean = torch.sin(xt).mean(-3)  # (K, P)
        err = (cos_mean - self.phi).square() + sin_mean.square()  # (K, P)
        return N * (err @ self.weights)  # (K,)


def random_directions(dim: int, num_slices: int, step: int, device: torch.device | str = "cpu"):
    """``(dim, num_slices)`` unit-norm Gaussian directions, a pure function of ``step``."""
    g = torch.Generator(device="cpu").manual_seed(int(step))
    A = torch.randn(dim, num_slices, generator=g)  # (D, K)
    return (A / A.norm(dim=0, keepdim=True)).to(device)


class SIGReg(nn.Module):
    """Sliced Epps-Pulley statistic of embeddings ``(..., N, D)`` -> scalar.

    ``forward(z, step)`` projects ``z`` on ``num_slices`` directions drawn from a generator seeded
    by ``step`` and averages the Epps-Pulley statistic over slices (and over any leading dims, e.g.
    views ``(V, N, D)``: one statistic per view, as LeJEPA computes it). ``forward(z)`` without a
    step uses the module's own call counter (buffer ``step``), as LeJEPA's module does; every rank
    that calls it equally often draws the same directions.

    Parameters
    ----------
    num_slices : int
        Random 1-D directions per call (LeJEPA's minimal example uses 256, its README 1024).
    t_max, n_points : float, int
        Epps-Pulley integration range and trapezoid nodes (:class:`EppsPulley`).
    """

    higher_is_better = False

    def __init__(self, num_slices: int = 256, t_max: float = 3.0, n_points: int = 17) -> None:
        super().__init__()
        if num_slices < 1:
            raise ValueError(f"num_slices must be >= 1, got {num_slices}")
        self.num_slices = num_slices
        self.test = EppsPulley(t_max, n_points)
        self.register_buffer("step", torch.zeros((), dtype=torch.long))

    def forward(self, z: torch.Tensor, step: int | None = None) -> torch.Tensor:
        if step is None:
            step = int(self.step)
            self.step += 1
        A = random_directions(z.shape[-1], self.num_slices, step, z.device)  # (D, K)
        return self.test(z.float() @ A).mean()


def sigreg_jepa_loss(
    za: torch.Tensor, zb: torch.Tensor, step: int | None, sigreg: SIGReg, lam: float = 0.05
) -> tuple[torch.Tensor, torch.Tensor]:
    """prh's SIGReg objective for pairs: ``(1 - lam) E ||za - zb||^2 + lam SIGReg([za; zb])``.

    ``za, zb``: ``(B, K)``. The prediction term sums over the ``K`` dims: see the module docstring
    for its scale against LeJEPA's (:func:`lejepa_loss`). ``step=None``: the module's counter.

    Returns
    -------
    (loss, sigreg_value) : tuple of scalar Tensors
    """
    z = torch.cat([za, zb]).float()  # (2B, E)
    B = za.shape[0]
    pred = (z[:B] - z[B:]).square().sum(1).mean()
    reg = sigreg(z, step)
    return (1.0 - lam) * pred + lam * reg, reg


def lejepa_loss(
    views: torch.Tensor, sigreg: SIGReg, lam: float = 0.05, step: int | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """LeJEPA's objective at LeJEPA's scale: ``(1 - lam) inv + lam SIGReg`` over ``V`` views.

    ``inv`` is the mean over views, rows and dims of the squared distance of each view's embedding
    to the mean of its views; SIGReg is computed per view and averaged.

    Parameters
    ----------
    views : Tensor
        ``(V, N, K)`` embeddings of ``V`` views of ``N`` samples.

    Returns
    -------
    (loss, inv, sigreg_value) : tuple of scalar Tensors
    """
    if views.dim() != 3 or views.shape[0] < 2:
        raise ValueError(f"views must be (V >= 2, N, K), got {tuple(views.shape)}")
    v = views.float()  # (V, N, K)
    inv = (v.mean(0, keepdim=True) - v).square().mean()
    reg = sigreg(v, step)  # per view, averaged
    return (1.0 - lam) * inv + lam * reg, inv, reg
