"""Literal against partial captions, judged by a rule fixed before the run (issue 31, item 3).

The theory (``docs/theory.md`` sec. 9, :mod:`prh.theory.observation`): a caption that states
every factor identifies the state, so a perfect text encoder of literal captions and a perfect
image encoder are one rotation apart, canonical correlations 1 in all ``k`` directions; partial
captions (the size half the time, the cell one time in six) allow a bounded misalignment, the
canonical correlations :func:`prh.world.observation.predicted_cc` gives. The demo trains a
text-good run on each, at one recipe and budget, and measures both against the SAME image
encoder; :func:`judge_literal` says whether it shows the difference the theory predicts.

The rule (:data:`RULE_LITERAL`, the same words as ``docs/demo.md``, "Literal against partial
captions"):

- **above**: literal's cc interval lies entirely above partial's (intervals apart);
- **near**: each pair's ``k`` held-out canonical correlations (descending; with several seeds
  their seed means) each within :data:`TOLERANCE` of the theory's ``k`` predicted ones.

Layer: pure functions on numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from prh.scaling.claims import INCONCLUSIVE, MIN_SEEDS, NOT_SHOWN, SHOWN

TOLERANCE = 0.1
"""How far a measured canonical correlation may lie from its prediction."""

RULE_LITERAL = (
    "Both text-good runs (literal and partial captions, one recipe and budget) are read against"
    " the same image-good encoder (held-out canonical correlation, width-fair, the k strongest"
    " pairs). SHOWN when (a) literal's cc interval lies entirely above partial's (with >= 3 seeds"
    " a side the interval is [min, max] over seeds, which for 3 seeds is also the 95% percentile"
    " bootstrap of the seed mean; with fewer, seed 0's bootstrap interval over the held-out"
    " states, labelled single seed) and (b) each pair's k held-out canonical correlations"
    " (descending, their seed means) each lie within 0.1 of the k the theory predicts for perfect"
    " encoders of the two modalities. NOT SHOWN when literal's cc is at or below partial's, or"
    " either pair misses a predicted correlation by more than 0.1. INCONCLUSIVE otherwise"
    " (literal ahead and both near their predictions, intervals overlapping) or when a figure is"
    " undefined."
)


@dataclass(frozen=True)
class PairFigures:
    """One image~text pair's figures, as the rule reads them.

    Attributes
    ----------
    cc : sequence of float
        Per seed: the mean of the ``k`` held-out canonical correlations.
    correlations : sequence of sequence of float
        Per seed: the ``k`` held-out canonical correlations.
    predicted : sequence of float
        The ``k`` the theory predicts for perfect encoders (descending).
    state_ci : (float, float)
        Seed 0's bootstrap interval of its mean over the held-out states.
    """

    cc: Sequence[float]
    correlations: Sequence[Sequence[float]]
    predicted: Sequence[float]
    state_ci: tuple[float, float]

    @property
    def seeds(self) -> int:
        return len(self.cc)

    @property
    def mean(self) -> float:
        """The seed mean of ``cc``."""
        return sum(self.cc) / len(self.cc)

    def interval(self, seeds: int) -> tuple[float, float]:
        """``[min, max]`` over seeds when ``seeds >= MIN_SEEDS``, else :attr:`state_ci`."""
        return (min(self.cc), max(self.cc)) if seeds >= MIN_SEEDS else tuple(self.state_ci)

    def deviation(self) -> float:
        """:func:`largest_deviation` of the seed means of the ``k`` measured correlations."""
        k = len(self.predicted)
        mean = [sum(c[i] for c in self.correlations) / len(self.correlations) for i in range(k)]
        return largest_deviation(mean, self.predicted)


def largest_deviation(measured: Sequence[float], predicted: Sequence[float]) -> float:
    """The largest ``|measured - predicted|`` over the directions, both sorted descending: how
    far a pair's canonical correlations lie from the theory's, direction by direction."""
    got, want = sorted(measured, reverse=True), sorted(predicted, reverse=True)
    return max(abs(float(g) - float(p)) for g, p in zip(got, want))


@dataclass(frozen=True)
class LiteralVerdict:
    """The rule's label, its reason, the rule, the figures it read and what its intervals are."""

    label: str
    reason: str
    basis: str
    rule: str = RULE_LITERAL
    figures: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def _defined(*xs: float | None) -> bool:
    return all(x is not None and math.isfinite(float(x)) for x in xs)


def _figures(lit: PairFigures, part: PairFigures, seeds: int) -> dict:
    return {
        pair: {
            "cc": p.mean,
            "interval": list(p.interval(seeds)),
            "seeds": p.seeds,
            "predicted_mean": sum(p.predicted) / len(p.predicted),
            "largest_deviation": p.deviation(),
        }
        for pair, p in (("literal", lit), ("partial", part))
    }


def judge_literal(literal: PairFigures, partial: PairFigures) -> LiteralVerdict:
    """The rule of the module docstring on the image~literal and image~partial pairs.

    ``basis`` names the intervals: over seeds (>= :data:`MIN_SEEDS` a side) or, labelled single
    seed, over seed 0's held-out states.
    """
    seeds = min(literal.seeds, partial.seeds)
    basis = (f"{seeds} seeds a side: intervals [min, max] over seeds" if seeds >= MIN_SEEDS
             else "single seed: intervals over the held-out states, not over seeds")  # fmt: skip
    flat = [*literal.cc, *partial.cc, *literal.state_ci, *partial.state_ci]
    flat += [c for p in (literal, partial) for s in p.correlations for c in s]
    if not flat or not _defined(*flat):
        return LiteralVerdict(INCONCLUSIVE, "a figure is undefined", basis)
    figures = _figures(literal, partial, seeds)
    lo, hi = literal.interval(seeds)[0], partial.interval(seeds)[1]
    figures["above"] = lo > hi
    far = [n for n in ("literal", "partial") if figures[n]["largest_deviation"] > TOLERANCE]
    if literal.mean <= partial.mean:
        reason = f"literal's cc {literal.mean:.3f} is not above partial's {partial.mean:.3f}"
        return LiteralVerdict(NOT_SHOWN, reason, basis, figures=figures)
    if far:
        dev = ", ".join(f"{n} by {figures[n]['largest_deviation']:.3f}" for n in far)
        reason = f"a canonical correlation misses its prediction by more than {TOLERANCE}: {dev}"
        return LiteralVerdict(NOT_SHOWN, reason, basis, figures=figures)
    if not figures["above"]:
        reason = f"literal ahead and near the predictions, but {lo:.3f} <= {hi:.3f}: overlapping"
        return LiteralVerdict(INCONCLUSIVE, reason, basis, figures=figures)
    reason = f"literal's interval lies above partial's ({lo:.3f} > {hi:.3f}), both near theory"
    return LiteralVerdict(SHOWN, reason, basis, figures=figures)
