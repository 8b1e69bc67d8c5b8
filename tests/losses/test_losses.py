import math

import pytest
import torch

from prh.losses import (
    EppsPulley,
    SIGReg,
    batch_covariance,
    next_token_loss,
    random_directions,
    sigreg_jepa_loss,
    soft_whitening_loss,
    whiten,
    whitened_jepa_loss,
)

torch.set_num_threads(1)


@pytest.mark.parametrize("method", ["cholesky", "zca"])
def test_whiten_gives_identity_covariance(method):
    g = torch.Generator().manual_seed(0)
    z = (
        torch.randn(500, 6, generator=g, dtype=torch.float64)
        @ torch.randn(6, 6, generator=g).double()
    )
    w = whiten(z + 3.0, eps=0.0, method=method)
    mu, cov = batch_covariance(w)
    torch.testing.assert_close(mu, torch.zeros(6, dtype=torch.float64), atol=1e-10, rtol=0)
    torch.testing.assert_close(cov, torch.eye(6, dtype=torch.float64), atol=1e-8, rtol=0)


def test_whitened_loss_is_affine_invariant_and_method_independent():
    g = torch.Generator().manual_seed(1)
    s = torch.randn(256, 4, generator=g, dtype=torch.float64)
    za = s + 0.3 * torch.randn(256, 4, generator=g, dtype=torch.float64)
    zb = s + 0.3 * torch.randn(256, 4, generator=g, dtype=torch.float64)
    base = whitened_jepa_loss(za, zb, eps=0.0)
    A = torch.randn(4, 4, generator=g, dtype=torch.float64) + 2 * torch.eye(4, dtype=torch.float64)
    c = torch.randn(4, generator=g, dtype=torch.float64)
    torch.testing.assert_close(whitened_jepa_loss(za @ A.T + c, zb @ A.T + c, eps=0.0), base)
    torch.testing.assert_close(whitened_jepa_loss(za, zb, eps=0.0, method="zca"), base.float())


def test_whitened_loss_cannot_be_lowered_by_shrinking_the_embedding():
    # An absolute ridge would let a model shrink z until the ridge dominates and the loss -> 0.
    g = torch.Generator().manual_seed(3)
    za, zb = torch.randn(256, 8, generator=g), torch.randn(256, 8, generator=g)
    big = whitened_jepa_loss(za, zb, eps=1e-2)
    tiny = whitened_jepa_loss(za * 1e-4, zb * 1e-4, eps=1e-2)
    torch.testing.assert_close(tiny, big, rtol=1e-4, atol=1e-5)


def test_whitened_loss_orders_pairs_and_has_the_right_scale():
    g = torch.Generator().manual_seed(2)
    s = torch.randn(2000, 3, generator=g)
    assert whitened_jepa_loss(s, s).item() < 1e-3  # identical sides: zero error
    other = torch.randn(2000, 3, generator=g)
    # independent sides: E ||w_a - w_b||^2 = 2 E (per dimension 2 * 1), i.e. 2 * 3 = 6
    assert abs(whitened_jepa_loss(s, other).item() - 6.0) < 0.3
    close = s + 0.1 * torch.randn(2000, 3, generator=g)
    assert whitened_jepa_loss(s, close) < whitened_jepa_loss(s, other)


def test_losses_reject_bad_shapes():
    with pytest.raises(ValueError, match=r"must both be \(B, E\)"):
        whitened_jepa_loss(torch.zeros(4, 2), torch.zeros(4, 3))
    with pytest.raises(ValueError, match="must both be"):
        soft_whitening_loss(torch.zeros(4), torch.zeros(4))
    with pytest.raises(ValueError, match="unknown whitening method"):
        whitened_jepa_loss(torch.zeros(4, 2), torch.zeros(4, 2), method="pca")


def test_epps_pulley_matches_direct_integral_and_orders_distributions():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(300, 1, generator=g, dtype=torch.float64)
    ep = EppsPulley(t_max=3.0, n_points=17).double()
    # Reference: a fine trapezoid rule on [-3, 3] of |ecf - phi|^2 exp(-t^2/2), times N.
    t = torch.linspace(-3, 3, 20001, dtype=torch.float64)
    ecf_re = torch.cos(x * t).mean(0)
    ecf_im = torch.sin(x * t).mean(0)
    integrand = ((ecf_re - torch.exp(-(t**2) / 2)) ** 2 + ecf_im**2) * torch.exp(-(t**2) / 2)
    ref = 300 * torch.trapezoid(integrand, t)
    torch.testing.assert_close(ep(x)[0], ref, rtol=2e-2, atol=1e-4)
    u = (torch.rand(300, 1, generator=g, dtype=torch.float64) - 0.5) * math.sqrt(12)  # var 1
    assert ep(x)[0] < ep(u)[0]  # Gaussian samples score lower than uniform ones


def test_sigreg_directions_are_pure_in_step_and_unit_norm():
    a = random_directions(8, 5, step=7)
    assert torch.equal(a, random_directions(8, 5, step=7))
    assert not torch.equal(a, random_directions(8, 5, step=8))
    torch.testing.assert_close(a.norm(dim=0), torch.ones(5))
    reg = SIGReg(num_slices=64)
    g = torch.Generator().manual_seed(0)
    gauss = torch.randn(512, 8, generator=g)
    collapsed = gauss * torch.tensor([1.0] + [0.01] * 7)
    assert reg(gauss, 3) < reg(collapsed, 3)
    loss, value = sigreg_jepa_loss(gauss[:256], gauss[256:], 3, reg, lam=1.0)
    torch.testing.assert_close(loss, value)


def test_next_token_loss_matches_loop_reference():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 5, 7, generator=g)
    tokens = torch.randint(0, 7, (2, 5), generator=g)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], dtype=torch.bool)
    terms = []
    for b in range(2):
        for t in range(4):
            if mask[b, t + 1]:
                terms.append(-torch.log_softmax(logits[b, t], -1)[tokens[b, t + 1]])
    ref = torch.stack(terms)
    torch.testing.assert_close(next_token_loss(logits, tokens, mask), ref.mean())
    torch.testing.assert_close(next_token_loss(logits, tokens, mask, "sum"), ref.sum())
    # Uniform logits: log V nats per token.
    flat = next_token_loss(torch.zeros(2, 5, 7), tokens, mask)
    torch.testing.assert_close(flat, torch.tensor(math.log(7)))
    with pytest.raises(ValueError, match="shapes disagree"):
        next_token_loss(logits, tokens[:, :4], mask)


def test_weighted_whiten_equals_the_theory_learners_old_cholesky():
    """Reference: the weighted Cholesky whitening the theory learner carried before the merge."""
    g = torch.Generator().manual_seed(3)
    z = torch.randn(40, 3, generator=g, dtype=torch.float64) * torch.tensor([1.0, 0.5, 2.0])
    w = torch.rand(40, generator=g, dtype=torch.float64)
    w = w / w.sum()
    mu = (w[:, None] * z).sum(0, keepdim=True)
    zc = z - mu
    cov = zc.T @ (w[:, None] * zc)
    L = torch.linalg.cholesky(cov + 1e-9 * torch.eye(3, dtype=torch.float64))
    old = zc @ torch.linalg.inv(L).T
    new = whiten(z, 1e-9, weights=w)
    torch.testing.assert_close(new, old, rtol=1e-7, atol=1e-9)
    m, c = batch_covariance(new, w)  # white under the weights
    torch.testing.assert_close(c, torch.eye(3, dtype=torch.float64), atol=1e-7, rtol=0)
    torch.testing.assert_close(m, torch.zeros(3, dtype=torch.float64), atol=1e-12, rtol=0)
