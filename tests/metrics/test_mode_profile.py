"""Which theory modes an encoder's k directions carry (prh.metrics.theory_cca.mode_profile)."""

import numpy as np
import pytest

from prh.errors import InputError
from prh.metrics.theory_cca import ModeProfile, mode_profile


def _modes(n: int = 900, m: int = 12, seed: int = 0) -> np.ndarray:
    """``m`` independent standardised modes of ``n`` states."""
    g = np.random.default_rng(seed).normal(size=(n, m))
    return (g - g.mean(0)) / g.std(0)


def _split(x: np.ndarray, g: np.ndarray, n_fit: int = 600):
    return x[:n_fit], g[:n_fit], x[n_fit:], g[n_fit:]


def _rotated(g: np.ndarray, cols: list[int], noise: float = 0.05, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(len(cols), len(cols))))
    return g[:, cols] @ q + noise * rng.normal(size=(len(g), len(cols)))


def test_an_encoder_of_the_top_k_carries_every_mode_above_the_cut_and_none_below():
    g = _modes()
    p = mode_profile(*_split(_rotated(g, list(range(8))), g))
    assert np.all(p.r2[:8] > 0.99) and np.all(p.r2[8:] < 0.05)
    assert p.missing == [] and p.instead == []
    assert p.describe() == "all of g1-g8"


def test_a_swapped_direction_is_named_with_what_took_its_place():
    g = _modes()
    p = mode_profile(*_split(_rotated(g, [0, 1, 2, 3, 4, 5, 7, 10]), g))
    assert p.missing == [7] and p.instead == [11]
    assert p.describe() == "misses g7; carries g11 (below the cut) instead"
    d = p.to_dict()
    assert len(d["r2"]) == 8 and len(d["r2_below"]) == 4 and d["missing"] == [7]


def test_the_read_out_is_width_fair_and_invariant_to_an_invertible_map():
    """A wide encoder is read through its top 8 principal directions: 8 strong directions
    carrying g1-g8 plus 24 weak ones carrying the modes below the cut score as the 8 alone;
    any invertible linear map of those 8 leaves R^2 unchanged."""
    g = _modes(m=12)
    x = _rotated(g, list(range(8)), noise=0.0)
    weak = 0.01 * np.column_stack([g[:, 8:], np.random.default_rng(3).normal(size=(len(g), 20))])
    base = mode_profile(*_split(x, g))
    wide = mode_profile(*_split(np.column_stack([x, weak]), g))
    a = np.random.default_rng(4).normal(size=(8, 8)) + 3 * np.eye(8)
    mixed = mode_profile(*_split(x @ a, g))
    np.testing.assert_allclose(wide.r2, base.r2, atol=1e-3)
    np.testing.assert_allclose(mixed.r2, base.r2, atol=1e-9)
    assert wide.instead == []


def test_unrelated_features_carry_nothing():
    g = _modes()
    x = np.random.default_rng(9).normal(size=(len(g), 8))
    p = mode_profile(*_split(x, g))
    assert p.missing == list(range(1, 9)) and p.instead == []
    assert np.all(p.r2 < 0.1)


def test_the_profile_is_deterministic():
    g = _modes()
    x = _rotated(g, [0, 1, 2, 3, 4, 5, 6, 9], noise=0.3)
    a, b = mode_profile(*_split(x, g)), mode_profile(*_split(x, g))
    np.testing.assert_array_equal(a.r2, b.r2)


@pytest.mark.parametrize(
    "args, match",
    [
        ((np.ones((10, 3)), np.ones((9, 12)), np.ones((5, 3)), np.ones((5, 12))), "one N"),
        ((np.ones((10, 3)), np.ones((10, 12)), np.ones((5, 4)), np.ones((5, 12))), "widths"),
        ((np.ones((10, 3)), np.ones((10, 12)), np.ones((5, 3)), np.ones((5, 11))), "widths"),
    ],
)
def test_bad_shapes_are_refused_in_one_line(args, match):
    with pytest.raises(InputError, match=match):
        mode_profile(*args)


def test_a_profile_without_modes_below_the_cut_names_no_replacement():
    p = ModeProfile(np.array([0.9, 0.2, 0.8]), k=3)
    assert p.missing == [2] and p.instead == [] and p.describe() == "misses g2"
