"""``measure``'s preprocessing in one frozen dataclass, the older keywords still read (issue 32)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from prh.metrics import Preprocessing, measure


@pytest.fixture
def pair() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    a = rng.normal(size=(40, 2, 6))  # (N, L, D)
    b = a[:, :, :5] + 0.5 * rng.normal(size=(40, 2, 5))
    b[:, 1, 3:] = 0.0  # layer 1 of b is 3 wide, zero-padded to 5
    return a, b


@pytest.mark.parametrize(
    "keywords",
    [
        {"clamp": "exact"},
        {"clamp": "none"},
        {"quantile": 0.8},
        {"preprocess_features": False},
        {"layer_dims_b": [5, 3], "per_layer_b": True},
    ],
)
def test_older_keywords_equal_the_dataclass(pair, keywords) -> None:
    a, b = pair
    old = measure(a, b, "unbiased_cka", k=5, **keywords)
    fields = {"enabled" if k == "preprocess_features" else k: v for k, v in keywords.items()}
    new = measure(a, b, "unbiased_cka", k=5, preprocessing=Preprocessing(**fields))
    assert old.score == new.score and old.layers == new.layers


def test_each_setting_changes_the_score(pair) -> None:
    """The settings reach the preprocessing: the test above cannot pass by ignoring them."""
    a, b = pair
    base = measure(a, b, "unbiased_cka", k=5).score
    for prep in (Preprocessing(clamp="exact"), Preprocessing(enabled=False)):
        assert measure(a, b, "unbiased_cka", k=5, preprocessing=prep).score != base


def test_keywords_refine_a_given_preprocessing(pair) -> None:
    a, b = pair
    both = measure(a, b, "cka", preprocessing=Preprocessing(quantile=0.8), clamp="exact")
    want = measure(a, b, "cka", preprocessing=Preprocessing(quantile=0.8, clamp="exact"))
    assert both.score == want.score


def test_an_unknown_keyword_is_a_type_error(pair) -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'clamp_rule'"):
        measure(*pair, clamp_rule="exact")


def test_preprocessing_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Preprocessing().clamp = "none"  # type: ignore[misc]
