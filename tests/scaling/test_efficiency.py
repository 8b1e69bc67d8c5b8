"""Sample efficiency on planted curves gives the planted ratio; never-reached is honest."""

import numpy as np
import pytest

from prh.errors import InputError
from prh.scaling.efficiency import (
    Curves,
    curves_from_rows,
    default_target,
    sample_efficiency,
    samples_to_reach,
)

S = np.logspace(2, 6, 17)


def _curve(s_half, S=S):
    # alignment = 1 / (1 + s_half / S): reaches 0.5 exactly at S = s_half
    return 1.0 / (1.0 + s_half / S)


def test_samples_to_reach_reference_points():
    assert samples_to_reach(S, _curve(1e4), 0.5) == pytest.approx(1e4, rel=0.03)
    assert samples_to_reach([10, 100], [0.0, 1.0], 0.5) == pytest.approx(np.sqrt(1000))
    assert samples_to_reach([10, 100], [0.6, 0.9], 0.5) == 10.0
    assert samples_to_reach([10, 100], [0.1, 0.2], 0.5) == np.inf
    # a dip after the crossing does not create a second crossing; order of input is irrelevant
    assert samples_to_reach([100, 10, 1000], [0.8, 0.0, 0.3], 0.5) == pytest.approx(10 * 10**0.625)
    assert samples_to_reach([10, 100, 1000], [0.0, 1.0, 0.0], 0.5) == pytest.approx(np.sqrt(1000))


def test_planted_ratio_with_seed_noise():
    rng = np.random.default_rng(0)
    seeds = tuple(range(5))
    good = Curves(
        S, np.stack([_curve(1e3) + rng.normal(0, 0.005, S.size) for _ in seeds]), seeds, "good"
    )
    ntp = Curves(
        S,
        np.stack([_curve(4.2e4) + rng.normal(0, 0.005, S.size) for _ in seeds]),
        seeds,
        "next-token",
    )
    res = sample_efficiency(good, ntp, 0.5, n_boot=300, seed=0)
    assert res.ratio == pytest.approx(42, rel=0.1)
    assert res.ci[0] <= res.ratio <= res.ci[1]
    assert res.ci[0] > 30 and res.ci[1] < 60
    assert all(r == pytest.approx(42, rel=0.25) for r in res.per_seed_ratio)
    assert sample_efficiency(good, ntp, 0.5, n_boot=50, seed=1) == sample_efficiency(
        good, ntp, 0.5, n_boot=50, seed=1
    )


def test_never_reached_is_reported_as_none():
    seeds = (0, 1, 2)
    good = Curves(S, np.stack([_curve(1e3)] * 3), seeds, "good")
    flat = Curves(S, np.full((3, S.size), 0.2), seeds, "next-token")
    res = sample_efficiency(good, flat, 0.5, n_boot=20)
    assert np.isinf(res.samples_b) and np.isinf(res.ratio)
    d = res.to_dict()
    assert d["samples_b"] is None and d["ratio"] is None
    assert any("never reaches" in n for n in d["notes"])
    assert default_target(good, flat) == pytest.approx(0.95 * 0.2)


def test_curves_from_rows_and_errors():
    rows = [
        {"views": "good", "seed": s, "samples": x, "score": 0.1 * s + x / 1000}
        for s in (0, 1)
        for x in (100, 1000)
    ]
    c = curves_from_rows(rows, "good")
    assert c.seeds == (0, 1) and c.y.shape == (2, 2)
    with pytest.raises(InputError, match="no runs with views='bad'"):
        curves_from_rows(rows, "bad")
    with pytest.raises(InputError, match="seed 1 lacks samples"):
        curves_from_rows(rows[:3], "good")
