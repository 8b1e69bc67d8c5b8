"""The theory backend matches docs/theory.md sec. 5 and behaves as a finite-sample learner does."""

import numpy as np
import pytest

from prh.errors import InputError
from prh.scaling.theory_world import (
    TheoryWorldConfig,
    alignment_after,
    build_world,
    effective_rho,
    population_e_cca,
    predicted_e_cca,
)

CFG = TheoryWorldConfig()


def _no_tie(rho):
    # the section-5 count is ambiguous where a nuisance eigenvalue equals a pure-state one
    lam = build_world(CFG).state_eigenvalues
    allv = np.sort(np.concatenate([lam[1:], np.repeat((1 - rho) * lam, CFG.n_nuisance - 1)]))[::-1]
    return allv[CFG.k - 1] - allv[CFG.k] > 1e-6


def test_population_misalignment_is_m_over_k():
    rhos = [r for r in np.linspace(0.02, 0.98, 25) if _no_tie(r)]
    assert len(rhos) >= 10
    got = [population_e_cca(CFG, r) for r in rhos]
    want = [predicted_e_cca(CFG, r) for r in rhos]
    np.testing.assert_allclose(got, want, atol=1e-8)
    assert len(set(want)) >= 5  # a staircase with several steps, not a constant


def test_pure_state_past_rho_star():
    lam = build_world(CFG).state_eigenvalues
    rho_star = 1 - lam[CFG.k]  # mu_2 = 1 when n' = n
    assert predicted_e_cca(CFG, rho_star + 0.01) == 0.0
    assert predicted_e_cca(CFG, rho_star - 0.05) > 0.0
    assert predicted_e_cca(CFG, 0.1) > predicted_e_cca(CFG, 0.4) > predicted_e_cca(CFG, 0.6)


def test_finite_sample_misalignment_rises_as_rho_falls():
    e = {
        r: np.mean([alignment_after(CFG, r, 20000, s)["e_cca"] for s in (0, 1)])
        for r in (0, 0.5, 1)
    }
    assert e[0.0] > e[0.5] + 0.1 > e[1.0] + 0.2
    # with many samples the learner approaches the closed form on the exact pair law
    for r in (0.3, 1.0):
        got = alignment_after(CFG, r, 100000, 0)["e_cca"]
        assert got == pytest.approx(population_e_cca(CFG, r), abs=0.03)


def test_more_samples_help_good_views_and_seeds_are_deterministic():
    few = alignment_after(CFG, 1.0, 300, 0)
    many = alignment_after(CFG, 1.0, 30000, 0)
    assert many["score"] > few["score"] + 0.3 and many["seen"] == 1.0
    assert alignment_after(CFG, 0.5, 2000, 7) == alignment_after(CFG, 0.5, 2000, 7)
    assert alignment_after(CFG, 0.5, 2000, 7) != alignment_after(CFG, 0.5, 2000, 8)


def test_view_kinds_and_errors():
    assert effective_rho("good", None, CFG) == 1.0 and effective_rho("bad", None, CFG) == 0.0
    assert effective_rho("next-token", None, CFG) == CFG.ntp_leak
    with pytest.raises(InputError, match="mixture needs rho"):
        effective_rho("mixture", None, CFG)
    with pytest.raises(InputError, match="need n_states >= k \\+ 2"):
        TheoryWorldConfig(n_states=5, k=8)
