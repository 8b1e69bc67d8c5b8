"""Laws recover planted parameters; selection picks the true form; failures are reported."""

import numpy as np
import pytest

from prh.errors import InputError
from prh.scaling.fit import LawData, fit_law, fit_laws, rmse, seed_spread
from prh.scaling.laws import LAWS, get_law

PLANTED = {
    "multiplicative": dict(a=0.05, b=0.6, rho_star=0.55, alpha=1.3, log_s0=3.0, g=-1.5, beta=0.8),
    "additive": dict(a=0.05, b=0.5, alpha=1.5, c=0.2, beta=0.5),
    "saturating": dict(c0=0.3, c1=0.6, alpha=0.7, log_s0=2.8, beta=1.2),
}


def _grid(rng, n_rho=9, n_s=5, noise=0.0, form="multiplicative"):
    law = LAWS[form]
    theta = np.array([PLANTED[form][p] for p in law.params])
    rho = np.repeat(np.linspace(0, 1, n_rho), n_s)
    S = np.tile(np.logspace(2.5, 4.5, n_s), n_rho)
    y = law(theta, rho, S) + rng.normal(0, noise, rho.size)
    return LawData(rho, S, y), law, theta


def _heldout(rng, law, theta, n=85, noise=0.01):
    rho, S = rng.uniform(0, 1, n), 10 ** rng.uniform(2.5, 4.5, n)
    mu = law(theta, rho, S)
    return LawData(rho, S, mu + rng.normal(0, noise, n)), mu + rng.normal(0, noise, n)


@pytest.mark.parametrize("form", sorted(PLANTED))
def test_recovers_planted_parameters_without_noise(form):
    data, law, theta = _grid(np.random.default_rng(0), form=form)
    fit = fit_law(law, data, starts=6, seed=1)
    assert fit.converged, fit.message
    assert fit.train_rmse < 1e-6
    # predictions match the planted law everywhere in the box (parameters may trade off slightly)
    rng = np.random.default_rng(2)
    rho, S = rng.uniform(0, 1, 200), 10 ** rng.uniform(2.5, 4.5, 200)
    assert np.max(np.abs(fit.predict(rho, S) - law(theta, rho, S))) < 1e-4
    if form != "multiplicative":  # the multiplicative law's (b, rho_star, alpha) can trade off
        got = np.array([fit.params[p] for p in law.params])
        np.testing.assert_allclose(got, theta, rtol=1e-3, atol=1e-4)


def test_noisy_fit_is_near_the_seed_spread_and_picks_true_form():
    rng = np.random.default_rng(0)
    data, law, theta = _grid(rng, noise=0.01)
    heldout, repeat = _heldout(rng, law, theta)
    report = fit_laws(data, heldout, (heldout.y, repeat), starts=6, seed=0)
    assert report.chosen == "multiplicative"
    assert abs(report.seed_spread - 0.01) < 0.003  # estimates the planted per-run noise
    assert 0.8 < report.ratio < 1.4  # a correct law is about as good as the noise allows
    assert report.form("additive").heldout_rmse > 2 * report.heldout_rmse
    d = report.to_dict()
    assert d["form"] == "multiplicative" and set(d["params"]) == set(law.params)


def test_selection_picks_additive_when_additive_is_true():
    rng = np.random.default_rng(3)
    data, law, theta = _grid(rng, noise=0.005, form="additive")
    heldout, repeat = _heldout(rng, law, theta, noise=0.005)
    report = fit_laws(data, heldout, (heldout.y, repeat), forms=["additive", "saturating"])
    assert report.chosen == "additive"


def test_non_convergence_is_reported_not_hidden():
    rng = np.random.default_rng(0)
    data, law, theta = _grid(rng, noise=0.01)
    heldout, repeat = _heldout(rng, law, theta)
    report = fit_laws(data, heldout, (heldout.y, repeat), starts=2, max_nfev=2)
    assert all(not f.fit.converged for f in report.forms)
    assert report.chosen is None and np.isnan(report.ratio)
    assert any("did not converge" in n for n in report.notes)
    assert "maximum number of function evaluations" in report.forms[0].fit.message


def test_seed_spread_definition_and_rmse():
    a, b = np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0, 4.0])
    assert seed_spread(a, b) == pytest.approx(np.sqrt(4 / 3 / 2))
    assert rmse(a, b) == pytest.approx(np.sqrt(4 / 3))
    with pytest.raises(InputError, match="differ in shape"):
        seed_spread(a, b[:2])


def test_determinism_and_errors():
    data, law, _ = _grid(np.random.default_rng(0), noise=0.02)
    assert fit_law(law, data, seed=4) == fit_law(law, data, seed=4)
    with pytest.raises(InputError, match="unknown law form 'cubic'"):
        get_law("cubic")
    with pytest.raises(InputError, match="need more runs"):
        fit_law(law, LawData(data.rho[:5], data.S[:5], data.y[:5]))
    with pytest.raises(InputError, match="samples must be > 0"):
        LawData([0.5], [0.0], [1.0])
