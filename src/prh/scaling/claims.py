"""The demo's three claims, judged by rules fixed before any run (pre-registered).

Each judge is a pure function of the figures a demo measures and returns a :class:`ClaimResult`:
a label in :data:`LABELS`, the figures it read, the rule's text (the same words as
``docs/demo.md``, "Claims and their rules") and the reason the label was given. Nothing here
looks at a run, a file or a threshold that a run could move.

- **Claim 1** (good views beat bad views and next-token at equal samples): bootstrap intervals.
- **Claim 2** (next-token needs more samples): the ratio's interval over >= 3 seeds.
- **Claim 3** (a law predicts unseen runs as well as a second seed does): held-out RMSE vs seed
  spread on >= 12 held-out points with repeats.

Layer: pure functions on numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

SHOWN, NOT_SHOWN, INCONCLUSIVE = "SHOWN", "NOT SHOWN", "INCONCLUSIVE"
LABELS: tuple[str, ...] = (SHOWN, NOT_SHOWN, INCONCLUSIVE)

RULE_1 = (
    "SHOWN when the good-view JEPA's bootstrap interval lies entirely above (strictly, no overlap)"
    " the intervals of the bad-view JEPA, of next-token and of the random-init control. NOT SHOWN"
    " when good's point estimate is at or below bad's or next-token's, or good's interval lies"
    " entirely below the control's. INCONCLUSIVE otherwise (good ahead, intervals overlapping)."
    " Next-token is represented by the higher-scoring of its two poolings (mean over tokens, as"
    " the PRH benchmark measures language models, or last token), and with `--full` its runs see"
    " more samples than the good-view runs: both favour next-token. Each trained encoder is also"
    " reported as above / at / below the control (intervals apart or overlapping)."
)
RULE_2 = (
    "Needs >= 3 seeds of both methods; with fewer, INCONCLUSIVE (run `prh demo --full`). SHOWN"
    " when both methods reach the target (on their seed-mean curves) and the ratio (next-token"
    " samples / good-view samples to the target) has a bootstrap interval over seeds whose lower"
    " end is > 1. NOT SHOWN when both reach it and the interval's upper end is <= 1, or when"
    " next-token never reaches the target within its budget and its seed-mean curve does not rise"
    " (slope of alignment per doubling of samples over the curve's second half <= 0) or its final"
    " score is not above the random-init control (intervals apart). INCONCLUSIVE otherwise: good"
    " views never reach the target, an interval containing 1, or next-token still rising above the"
    " control but short of the target (the ratio is then only a lower bound)."
)
RULE_3 = (
    "Needs >= 12 held-out points and a repeat seed of them; with fewer, INCONCLUSIVE (run `prh"
    " demo --full`). SHOWN when the law's held-out RMSE <= 1.25 x the"
    " seed spread (the RMSE between repeat seeds), NOT SHOWN when it is larger."
)
MIN_SEEDS = 3
MIN_HELDOUT = 12
RMSE_FACTOR = 1.25


@dataclass(frozen=True)
class Interval:
    """A point estimate and its interval ``[lo, hi]``."""

    score: float
    lo: float
    hi: float

    @classmethod
    def of(cls, x: Interval | Mapping | Sequence) -> Interval:
        """From an Interval, ``{"score", "ci": [lo, hi]}`` or ``(score, lo, hi)``."""
        if isinstance(x, Interval):
            return x
        if isinstance(x, Mapping):
            lo, hi = x["ci"]
            return cls(float(x["score"]), float(lo), float(hi))
        score, lo, hi = x
        return cls(float(score), float(lo), float(hi))

    def above(self, other: Interval) -> bool:
        """Intervals apart, this one higher."""
        return self.lo > other.hi


@dataclass(frozen=True)
class ClaimResult:
    """A claim's label, the figures it read, its rule and the reason for the label."""

    claim: int
    label: str
    reason: str
    rule: str
    figures: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def versus_control(x: Interval, control: Interval) -> str:
    """``"above"``, ``"below"`` (intervals apart) or ``"at"`` (overlapping) the control."""
    if x.above(control):
        return "above"
    if control.above(x):
        return "below"
    return "at"


def judge_claim1(scores: Mapping[str, Interval | Mapping | Sequence]) -> ClaimResult:
    """Claim 1 from the alignment intervals of ``good``, ``bad``, ``next-token``, ``random-init``.

    See :data:`RULE_1`.
    """
    s = {k: Interval.of(scores[k]) for k in ("good", "bad", "next-token", "random-init")}
    good, control = s["good"], s["random-init"]
    figures = {k: asdict(v) for k, v in s.items()}
    figures["vs_control"] = {
        k: versus_control(s[k], control) for k in ("good", "bad", "next-token")
    }
    behind = [k for k in ("bad", "next-token") if good.score <= s[k].score]
    if behind:
        reason = f"good's score is not above {' and '.join(behind)}'s"
        return ClaimResult(1, NOT_SHOWN, reason, RULE_1, figures)
    if control.above(good):
        return ClaimResult(1, NOT_SHOWN, "good lies below the random-init control", RULE_1, figures)
    apart = [k for k in ("bad", "next-token", "random-init") if good.above(s[k])]
    if len(apart) == 3:
        reason = "good's interval lies above bad's, next-token's and the control's"
        return ClaimResult(1, SHOWN, reason, RULE_1, figures)
    overlap = [k for k in ("bad", "next-token", "random-init") if k not in apart]
    reason = f"good ahead, but its interval overlaps {', '.join(overlap)}"
    return ClaimResult(1, INCONCLUSIVE, reason, RULE_1, figures)


def curve_slope(samples: Sequence[float], scores: Sequence[float], tail: float = 0.5) -> float:
    """Least-squares slope of ``score`` per doubling of samples over the last ``tail`` of a curve.

    ``nan`` when fewer than two points remain.
    """
    x = np.log2(np.asarray(samples, dtype=np.float64))
    y = np.asarray(scores, dtype=np.float64)
    keep = x >= x.min() + (1.0 - tail) * (x.max() - x.min()) if len(x) else x.astype(bool)
    x, y = x[keep], y[keep]
    if len(x) < 2 or np.ptp(x) == 0:
        return math.nan
    return float(np.polyfit(x, y, 1)[0])


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(float(x))


def _too_few_seeds(figures: dict, n_seeds: int) -> ClaimResult:
    """Claim 2 with fewer than :data:`MIN_SEEDS` seeds: inconclusive, with next-token's lower
    bound when it never reached the target and good views did."""
    reason = f"{n_seeds} seed(s): the claim needs >= {MIN_SEEDS} seeds (prh demo --full)"
    good, nt = figures["samples_good"], figures["samples_next_token"]
    if not _finite(nt) and _finite(good):
        figures["ratio_lower_bound"] = float(figures["largest_budget"]) / float(good)
        reason += (
            f"; next-token did not reach the target (slope "
            f"{figures['next_token_slope_per_doubling']:+.4f} per doubling, final"
            f" score {figures['next_token_vs_control']} the control)"
        )
    return ClaimResult(2, INCONCLUSIVE, reason, RULE_2, figures)


def _next_token_short(figures: dict, rising_above: bool, rising: bool) -> ClaimResult:
    """Claim 2 when next-token never reached the target: not shown unless it still rises above
    the control (then a lower bound on the ratio, inconclusive)."""
    bound = float(figures["largest_budget"]) / float(figures["samples_good"])
    figures["ratio_lower_bound"] = bound
    slope = figures["next_token_slope_per_doubling"]
    if not rising_above:
        how = "does not rise" if not rising else "does not rise above the control"
        reason = (
            f"next-token never reaches the target and {how} (slope {slope:+.4f} per"
            f" doubling, final score {figures['next_token_vs_control']} the control): no"
            f" finite ratio (lower bound {bound:.1f})"
        )
        return ClaimResult(2, NOT_SHOWN, reason, RULE_2, figures)
    reason = f"next-token still rising but short of the target: a lower bound, ratio >= {bound:.1f}"
    return ClaimResult(2, INCONCLUSIVE, reason, RULE_2, figures)


def judge_claim2(
    *,
    target: float,
    samples_good: float | None,
    samples_next_token: float | None,
    ratio: float | None,
    ratio_ci: tuple[float | None, float | None],
    n_seeds: int,
    largest_budget: float,
    next_token_curve: tuple[Sequence[float], Sequence[float]],
    next_token_final: Interval | Mapping | Sequence,
    control: Interval | Mapping | Sequence,
) -> ClaimResult:
    """Claim 2 from the sample-efficiency result; see :data:`RULE_2`.

    ``samples_*`` are ``None`` (or inf) when the method never reached ``target``;
    ``next_token_curve`` is ``(samples, scores)`` of next-token's seed-mean curve;
    ``largest_budget`` is next-token's largest sample count.
    """
    nt_final, ctrl = Interval.of(next_token_final), Interval.of(control)
    slope = curve_slope(*next_token_curve)
    figures = {
        "target": target,
        "samples_good": samples_good,
        "samples_next_token": samples_next_token,
        "ratio": ratio,
        "ratio_ci": list(ratio_ci),
        "n_seeds": int(n_seeds),
        "largest_budget": largest_budget,
        "next_token_slope_per_doubling": slope,
        "next_token_vs_control": versus_control(nt_final, ctrl),
    }
    if n_seeds < MIN_SEEDS:
        return _too_few_seeds(figures, n_seeds)
    if not _finite(samples_good):
        reason = "good views never reach the target"
        return ClaimResult(2, INCONCLUSIVE, reason, RULE_2, figures)
    if not _finite(samples_next_token):
        return _next_token_short(figures, slope > 0 and nt_final.above(ctrl), slope > 0)
    lo, hi = ratio_ci
    if not (_finite(lo) and _finite(hi)):
        reason = "the ratio has no interval over seeds"
        return ClaimResult(2, INCONCLUSIVE, reason, RULE_2, figures)
    if float(lo) > 1.0:
        return ClaimResult(2, SHOWN, f"ratio interval [{lo:.2f}, {hi:.2f}] > 1", RULE_2, figures)
    if float(hi) <= 1.0:
        reason = f"ratio interval [{lo:.2f}, {hi:.2f}] <= 1: next-token as efficient or more"
        return ClaimResult(2, NOT_SHOWN, reason, RULE_2, figures)
    reason = f"ratio interval [{lo:.2f}, {hi:.2f}] contains 1"
    return ClaimResult(2, INCONCLUSIVE, reason, RULE_2, figures)


def judge_claim3(
    *, n_heldout: int, n_repeat_pairs: int, heldout_rmse: float, seed_spread: float
) -> ClaimResult:
    """Claim 3 from the law fit's held-out error and the seed spread; see :data:`RULE_3`."""
    ratio = heldout_rmse / seed_spread if seed_spread and seed_spread > 0 else math.nan
    figures = {
        "n_heldout": int(n_heldout),
        "n_repeat_pairs": int(n_repeat_pairs),
        "heldout_rmse": heldout_rmse,
        "seed_spread": seed_spread,
        "rmse_over_spread": ratio,
        "threshold": RMSE_FACTOR,
    }
    if n_heldout < MIN_HELDOUT or n_repeat_pairs < 1:
        reason = (
            f"{n_heldout} held-out points, {n_repeat_pairs} repeat pairs: needs >= {MIN_HELDOUT}"
            " with repeats (prh demo --full)"
        )
        return ClaimResult(3, INCONCLUSIVE, reason, RULE_3, figures)
    if not math.isfinite(ratio) or not math.isfinite(heldout_rmse):
        reason = "the seed spread or the held-out RMSE is not a positive finite number"
        return ClaimResult(3, INCONCLUSIVE, reason, RULE_3, figures)
    if ratio <= RMSE_FACTOR:
        reason = f"held-out RMSE {ratio:.2f}x the seed spread <= {RMSE_FACTOR}"
        return ClaimResult(3, SHOWN, reason, RULE_3, figures)
    reason = f"held-out RMSE {ratio:.2f}x the seed spread > {RMSE_FACTOR}"
    return ClaimResult(3, NOT_SHOWN, reason, RULE_3, figures)
