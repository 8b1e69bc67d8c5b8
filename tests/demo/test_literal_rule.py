"""The literal-against-partial rule (``prh.demo.literal_rule``) on planted figures: every label,
the intervals it reads (over seeds with >= 3, over held-out states with fewer) and the tolerance
against the theory's predicted correlations."""

from __future__ import annotations

import math

import pytest

from prh.demo.literal_rule import (
    RULE_LITERAL,
    TOLERANCE,
    PairFigures,
    judge_literal,
    largest_deviation,
)
from prh.scaling.claims import INCONCLUSIVE, NOT_SHOWN, SHOWN

ONES = [1.0] * 8
PARTIAL = [1.0] * 6 + [0.0, 0.0]  # what the theory predicts for partial captions ~ images


def pair(cc_dirs: list[list[float]], predicted: list[float], state_ci=(0.0, 1.0)) -> PairFigures:
    """A pair whose seed ``j`` has the held-out correlations ``cc_dirs[j]``."""
    return PairFigures(
        cc=[sum(c) / len(c) for c in cc_dirs],
        correlations=cc_dirs,
        predicted=predicted,
        state_ci=state_ci,
    )


def shifted(base: list[float], d: float) -> list[float]:
    return [x + d for x in base]


def test_three_seeds_apart_and_near_the_predictions_is_shown():
    lit = pair([shifted(ONES, -d) for d in (0.02, 0.03, 0.05)], ONES)
    part = pair([shifted(PARTIAL, d) for d in (0.0, 0.01, 0.02)], PARTIAL)
    v = judge_literal(lit, part)
    assert v.label == SHOWN and v.basis.startswith("3 seeds a side")
    f = v.figures
    assert f["above"] is True
    assert f["literal"]["interval"] == pytest.approx([0.95, 0.98])  # [min, max] over seeds
    assert f["partial"]["interval"] == pytest.approx([0.75, 0.77])
    assert f["literal"]["largest_deviation"] == pytest.approx(0.03333333)  # seed means: 0.0333
    assert f["partial"]["predicted_mean"] == pytest.approx(0.75)
    assert v.rule == RULE_LITERAL and v.to_dict()["label"] == SHOWN


def test_a_pair_far_from_its_prediction_is_not_shown_even_when_literal_is_ahead():
    # the image encoder misses shape: two directions of literal ~ image near 0, not 1
    lit = pair([[*ONES[:6], 0.1, 0.05]] * 3, ONES)
    part = pair([PARTIAL] * 3, PARTIAL)
    v = judge_literal(lit, part)
    assert v.label == NOT_SHOWN and "literal by 0.950" in v.reason
    assert v.figures["literal"]["largest_deviation"] == pytest.approx(0.95)
    # one direction just inside the tolerance, the others exact: near
    ok = pair([[*ONES[:7], 1.0 - TOLERANCE + 1e-09]] * 3, ONES)
    assert judge_literal(ok, part).figures["literal"]["largest_deviation"] <= TOLERANCE


def test_literal_at_or_below_partial_is_not_shown():
    lit = pair([shifted(PARTIAL, 0.0)] * 3, ONES)
    part = pair([shifted(PARTIAL, 0.01)] * 3, PARTIAL)
    v = judge_literal(lit, part)
    assert v.label == NOT_SHOWN and "not above partial's" in v.reason


def test_overlapping_seed_intervals_are_inconclusive():
    lit = pair([shifted(ONES, -d) for d in (0.0, 0.05, 0.09)], ONES)
    part = pair([shifted(ONES, -d) for d in (0.06, 0.08, 0.1)], ONES)  # partial as good here
    v = judge_literal(lit, part)
    assert v.label == INCONCLUSIVE and v.figures["above"] is False


def test_a_single_seed_reads_its_held_out_state_intervals_and_says_so():
    lit = pair([shifted(ONES, -0.02)], ONES, state_ci=(0.96, 0.99))
    part = pair([PARTIAL], PARTIAL, state_ci=(0.70, 0.80))
    v = judge_literal(lit, part)
    assert v.label == SHOWN and v.basis.startswith("single seed")
    assert v.figures["literal"]["interval"] == [0.96, 0.99]
    # the same points with overlapping state intervals: not apart
    wide = pair([shifted(ONES, -0.02)], ONES, state_ci=(0.70, 0.99))
    assert judge_literal(wide, part).label == INCONCLUSIVE
    # two seeds are still fewer than three: seed 0's state interval
    two = pair([shifted(ONES, -0.02), shifted(ONES, -0.5)], ONES, state_ci=(0.96, 0.99))
    assert judge_literal(two, pair([PARTIAL] * 2, PARTIAL, (0.7, 0.8))).basis.startswith("single")


def test_an_undefined_figure_is_inconclusive():
    lit = pair([[*ONES[:7], math.nan]], ONES, state_ci=(0.9, 1.0))
    v = judge_literal(lit, pair([PARTIAL], PARTIAL, (0.7, 0.8)))
    assert v.label == INCONCLUSIVE and v.reason == "a figure is undefined"


def test_the_rule_reads_as_docs_demo_md_states_it():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "demo.md").read_text()
    assert RULE_LITERAL in " ".join(doc.split())  # word for word, whatever the line breaks


def test_largest_deviation_compares_both_profiles_sorted_descending():
    # given in any order, read as 0.99 0.93 0.10 -0.16 against 1 1 0 0: the worst is -0.16's
    measured = [0.10, -0.16, 0.99, 0.93]
    assert largest_deviation(measured, [0.0, 1.0, 0.0, 1.0]) == pytest.approx(0.16)
    # read in the given order instead, the first pair alone would deviate by 0.9
    assert largest_deviation([0.1, 0.9], [1.0, 0.0]) == pytest.approx(0.1)
    assert pair([measured], [1.0, 1.0, 0.0, 0.0]).deviation() == largest_deviation(
        measured, [1.0, 1.0, 0.0, 0.0]
    )
