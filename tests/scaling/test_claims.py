"""Pre-registered claim rules: every label each rule can give, on planted figures."""

import math

import pytest

from prh.scaling.claims import (
    INCONCLUSIVE,
    NOT_SHOWN,
    SHOWN,
    Interval,
    curve_slope,
    judge_claim1,
    judge_claim2,
    judge_claim3,
)


def scores(good, bad=(0.04, 0.035, 0.046), nt=(0.028, 0.022, 0.029), ctrl=(0.041, 0.035, 0.045)):
    return {"good": good, "bad": bad, "next-token": nt, "random-init": ctrl}


def test_claim1_labels():
    shown = judge_claim1(scores((0.093, 0.085, 0.099)))
    assert shown.label == SHOWN and shown.figures["vs_control"]["next-token"] == "below"
    assert shown.figures["vs_control"]["bad"] == "at" and "entirely above" in shown.rule
    overlap = judge_claim1(scores((0.05, 0.044, 0.06)))
    assert overlap.label == INCONCLUSIVE and "bad" in overlap.reason
    behind = judge_claim1(scores((0.03, 0.02, 0.04)))
    assert behind.label == NOT_SHOWN and "bad" in behind.reason
    # Dict input with "ci", as summary.json holds it.
    d = {"score": 0.093, "ci": [0.085, 0.099]}
    assert judge_claim1(scores(d)).label == SHOWN
    # Ahead of both others, but below the control: the others fell, good did not rise.
    low = judge_claim1(
        scores(
            (0.03, 0.029, 0.031),
            bad=(0.02, 0.019, 0.021),
            nt=(0.02, 0.019, 0.021),
            ctrl=(0.05, 0.045, 0.055),
        )
    )
    assert low.label == NOT_SHOWN and "control" in low.reason


def test_curve_slope_reads_the_second_half_per_doubling():
    s = [1024, 2048, 4096, 8192, 16384]
    assert curve_slope(s, [0.0, 0.0, 0.0, 0.01, 0.02]) == pytest.approx(0.01)
    assert curve_slope(s, [0.04, 0.035, 0.03, 0.029, 0.028]) < 0
    assert math.isnan(curve_slope([1024], [0.1]))


def _claim2(**over):
    base = dict(
        target=0.07,
        samples_good=4096.0,
        samples_next_token=65536.0,
        ratio=16.0,
        ratio_ci=(9.0, 30.0),
        n_seeds=3,
        largest_budget=131072.0,
        next_token_curve=([1024, 4096, 16384, 65536], [0.04, 0.05, 0.06, 0.07]),
        next_token_final=(0.07, 0.065, 0.075),
        control=(0.041, 0.035, 0.045),
    )
    return judge_claim2(**{**base, **over})


def test_claim2_labels():
    assert _claim2().label == SHOWN
    assert _claim2(n_seeds=1, ratio_ci=(None, None)).label == INCONCLUSIVE
    assert _claim2(ratio_ci=(0.8, 3.0)).label == INCONCLUSIVE
    assert _claim2(ratio=0.5, ratio_ci=(0.3, 0.9)).label == NOT_SHOWN
    falling = _claim2(
        samples_next_token=None,
        ratio=None,
        ratio_ci=(None, None),
        next_token_curve=([1024, 4096, 16384, 32768], [0.04, 0.035, 0.03, 0.028]),
        next_token_final=(0.028, 0.022, 0.029),
        largest_budget=32768.0,
    )
    assert falling.label == NOT_SHOWN
    assert falling.figures["ratio_lower_bound"] == pytest.approx(8.0)
    flat = _claim2(
        samples_next_token=None,
        ratio=None,
        ratio_ci=(None, None),
        next_token_final=(0.079, 0.070, 0.087),
        control=(0.077, 0.069, 0.086),
    )  # rising, but still at the control (the 6-theme 49k-row document run)
    assert flat.label == NOT_SHOWN and "above the control" in flat.reason
    rising = _claim2(samples_next_token=math.inf, ratio=None, ratio_ci=(None, None))
    assert rising.label == INCONCLUSIVE and "lower bound" in rising.reason
    # with fewer than 3 seeds nothing is decided, whatever the curve does (the default demo)
    one = _claim2(
        n_seeds=1,
        samples_next_token=None,
        ratio=None,
        ratio_ci=(None, None),
        next_token_curve=([1024, 4096, 16384, 32768], [0.04, 0.035, 0.03, 0.028]),
        largest_budget=32768.0,
    )
    assert one.label == INCONCLUSIVE and "prh demo --full" in one.reason
    assert "did not reach the target" in one.reason and one.figures["ratio_lower_bound"] == 8.0
    assert _claim2(n_seeds=2).label == INCONCLUSIVE
    never = _claim2(samples_good=None, samples_next_token=None, ratio=None)
    assert never.label == INCONCLUSIVE and "good views never" in never.reason


def test_claim3_labels():
    few = judge_claim3(n_heldout=6, n_repeat_pairs=6, heldout_rmse=0.01, seed_spread=0.01)
    assert few.label == INCONCLUSIVE and "prh demo --full" in few.reason
    ok = judge_claim3(n_heldout=12, n_repeat_pairs=12, heldout_rmse=0.0125, seed_spread=0.01)
    assert ok.label == SHOWN
    bad = judge_claim3(n_heldout=85, n_repeat_pairs=85, heldout_rmse=0.0161, seed_spread=0.01)
    assert bad.label == NOT_SHOWN and bad.figures["rmse_over_spread"] == pytest.approx(1.61)
    none = judge_claim3(n_heldout=12, n_repeat_pairs=0, heldout_rmse=0.01, seed_spread=0.01)
    assert none.label == INCONCLUSIVE
    zero = judge_claim3(n_heldout=12, n_repeat_pairs=12, heldout_rmse=0.01, seed_spread=0.0)
    assert zero.label == INCONCLUSIVE


def test_interval_parsing_and_ordering():
    a, b = Interval.of((0.1, 0.09, 0.11)), Interval.of({"score": 0.05, "ci": (0.04, 0.06)})
    assert a.above(b) and not b.above(a)
    assert (
        judge_claim3(
            n_heldout=12, n_repeat_pairs=12, heldout_rmse=0.01, seed_spread=0.01
        ).to_dict()["label"]
        == SHOWN
    )


def test_docs_state_every_rule_word_for_word():
    from pathlib import Path

    from prh.scaling.claims import RULE_1, RULE_2, RULE_3

    doc = " ".join((Path(__file__).parents[2] / "docs" / "demo.md").read_text().split())
    for rule in (RULE_1, RULE_2, RULE_3):
        assert " ".join(rule.split()) in doc
