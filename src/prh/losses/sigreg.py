"""SIGReg: sketched isotropic-Gaussian regularisation (LeJEPA, Balestriero & LeCun 2025).

The embedding distribution is pushed toward ``N(0, I)`` by testing many random 1-D projections
with the Epps-Pulley statistic, which compares the empirical characteristic function (ECF) of the
projected samples with the Gaussian one:

    EP(x) = N * integral |phi_N(t) - exp(-t^2 / 2)|^2 w(t) dt,   w(t) = exp(-t^2 / 2),
    phi_N(t) = (1/N) sum_n exp(i t x_n).

The integrand is even in ``t``, so we integrate over ``[0, t_max]`` with the trapezoid rule and
double the weights; nodes and weights are computed once, as buffers. Directions are drawn from a
``torch.Generator`` seeded by the global step that the caller passes in: every data-parallel rank
(and a resumed run) draws the same directions without communication.

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
    """Sliced Epps-Pulley statistic of embeddings ``(N, D)`` at a given step -> scalar.

    ``forward(z, step)`` projects ``z`` on ``num_slices`` directions drawn from a generator seeded
    by ``step`` and averages the Epps-Pulley statistic over slices.
    """

    higher_is_better = False

    def __init__(self, num_slices: int = 256, t_max: float = 3.0, n_points: int = 17) -> None:
        super().__init__()
        self.num_slices = num_slices
        self.test = EppsPulley(t_max, n_points)

    def forward(self, z: torch.Tensor, step: int) -> torch.Tensor:
        A = random_directions(z.shape[-1], self.num_slices, step, z.device)  # (D, K)
        return self.test(z.float() @ A).mean()


def sigreg_jepa_loss(
    za: torch.Tensor, zb: torch.Tensor, step: int, sigreg: SIGReg, lam: float = 0.05
) -> tuple[torch.Tensor, torch.Tensor]:
    """LeJEPA objective for pairs: ``(1 - lam) E ||za - zb||^2 + lam SIGReg([za; zb])``.

    Returns
    -------
    (loss, sigreg_value) : tuple of scalar Tensors
    """
    z = torch.cat([za, zb]).float()  # (2B, E)
    B = za.shape[0]
    pred = (z[:B] - z[B:]).square().sum(1).mean()
    reg = sigreg(z, step)
    return (1.0 - lam) * pred + lam * reg, reg
