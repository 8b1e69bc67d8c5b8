"""How much of a score is chance: a permutation null and a bootstrap interval.

The null shuffles the correspondence between the two sides (``B``'s rows permuted by a uniform
random ``pi``), which keeps each representation intact and breaks only the pairing, and recomputes
the *same* statistic that is reported (for layered inputs the maximum over layer pairs, so the layer
search is paid for; Groeger et al. 2026 call this out). With ``R`` permutations:

* p-value ``p = (1 + #{null >= observed}) / (1 + R)`` (valid at finite ``R`` [1]_);
* calibrated score ``observed - q_{0.95}(null)``: above zero means better than 95% of shuffles.

The bootstrap resamples samples (rows) with replacement. The interval is the *basic* (reverse
percentile) interval ``[2 s - q_hi, 2 s - q_lo]`` of Davison & Hinkley [2]_, which corrects, to
first order, for a statistic whose bootstrap replicates are biased (CKA on a resample with repeated
rows, or any score on a smaller gallery, is biased upward). A duplicated row would be its own
nearest neighbour in both sides and inflate a neighbour score, so:

* metrics that are a mean over samples (mutual, cycle, LCS and edit-distance kNN) resample the
  per-sample scores (the queries) against the fixed gallery of all ``N`` rows: the interval is
  centred on the reported score and reflects which samples were drawn, not the gallery (kNN scores
  depend on gallery size, Koepke et al. 2026, so we keep the gallery at ``N``);
* CKNNA is recomputed on the *distinct* resampled rows (a gallery of about ``0.632 N``);
* CKA and SVCCA are recomputed on the resample itself, duplicates kept (weighted samples).

References
----------
.. [1] B. Phipson, G. K. Smyth, "Permutation P-values Should Never Be Zero", Stat. Appl. Genet. Mol.
   Biol. 9, 2010.
.. [2] A. C. Davison, D. V. Hinkley, *Bootstrap Methods and their Application*, CUP 1997, sec. 5.2.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from prh.errors import InputError


def permutation_null(
    statistic: Callable[[np.ndarray], float],
    n: int,
    r: int,
    rng: np.random.Generator,
    progress: Callable[[int, int], None] | None = None,
    *,
    stop: Callable[[np.ndarray], bool] | None = None,
    check_every: int = 25,
) -> np.ndarray:
    """``(r',)`` values of ``statistic(perm)`` over ``r' <= r`` uniform permutations of ``n`` rows.

    ``progress(done, r)`` is called after each permutation when given. ``stop(draws)``, when
    given, is asked after every ``check_every`` draws whether the draws so far decide the test
    (:func:`decided`); the first ``r'`` draws are those of a run without it (one stream).
    """
    return permutation_null_batched(
        lambda perms: np.array([statistic(perms[0])]), n, r, rng, progress,
        stop=stop, check_every=check_every, batch=1,
    )  # fmt: skip


def permutation_null_batched(
    statistics: Callable[[np.ndarray], np.ndarray],
    n: int,
    r: int,
    rng: np.random.Generator,
    progress: Callable[[int, int], None] | None = None,
    *,
    stop: Callable[[np.ndarray], bool] | None = None,
    check_every: int = 25,
    batch: int = 25,
) -> np.ndarray:
    """:func:`permutation_null` with the statistic of a batch of draws at once:
    ``statistics(perms)``, ``perms`` ``(b, n)``, returns ``(b,)``. The permutations are the ones
    :func:`permutation_null` draws from ``rng`` (one stream, in order), and ``stop`` is asked at
    the same draws, so the two return the same draws when their statistics agree."""
    out = np.empty(r, dtype=np.float64)
    t = 0
    while t < r:
        size = min(batch, r - t)
        if stop is not None:
            size = min(size, check_every - t % check_every)  # a batch ends at each check
        perms = np.stack([rng.permutation(n) for _ in range(size)])  # (b, n)
        out[t : t + size] = statistics(perms)
        t += size
        if progress is not None:
            progress(t, r)
        if stop is not None and t % check_every == 0 and t < r and stop(out[:t]):
            return out[:t]
    return out


def decided(
    observed: float, null: np.ndarray, alpha: float = 0.05, confidence: float = 0.99
) -> bool:
    """Whether ``R`` draws settle "p below ``alpha``" either way: the two-sided Clopper-Pearson
    ``confidence`` interval of the exceedance probability ``P(null >= observed)`` [3]_, from the
    ``e`` exceedances among ``R``, lies wholly below or wholly above ``alpha``.

    With no exceedance at 99% this takes ``R >= 104`` draws for ``alpha = 0.05`` (125 when
    checked every 25); a p-value near ``alpha`` is never decided and runs to the cap.

    .. [3] C. J. Clopper, E. S. Pearson, "The use of confidence or fiducial limits illustrated in
       the case of the binomial", Biometrika 26, 1934.
    """
    from scipy.stats import beta

    m, e = len(null), int(np.count_nonzero(null >= observed))
    tail = (1 - confidence) / 2
    lo = float(beta.ppf(tail, e, m - e + 1)) if e > 0 else 0.0
    hi = float(beta.ppf(1 - tail, e + 1, m - e)) if e < m else 1.0
    return hi < alpha or lo > alpha


def p_value(observed: float, null: np.ndarray) -> float:
    """``(1 + #{null >= observed}) / (1 + R)``."""
    return float((1 + np.count_nonzero(null >= observed)) / (1 + len(null)))


def critical_value(null: np.ndarray, level: float = 0.95) -> float:
    """The ``level`` quantile of the null (linear interpolation)."""
    return float(np.quantile(null, level))


def bootstrap(
    statistic: Callable[[np.ndarray], float],
    n: int,
    r: int,
    rng: np.random.Generator,
    *,
    distinct: bool = False,
    min_rows: int = 2,
    max_tries: int = 100,
    progress: Callable[[int, int], None] | None = None,
) -> np.ndarray:
    """``(r,)`` values of ``statistic(rows)`` over bootstrap resamples of ``n`` rows.

    Parameters
    ----------
    statistic : callable
        Takes ``(M,)`` row indices, returns the statistic on those rows.
    distinct : bool
        Pass the sorted distinct resampled rows (for neighbour metrics) instead of all ``n``.
    min_rows : int
        Redraw a resample with fewer distinct rows than this (for example ``k + 1``).
    progress : callable, optional
        Called as ``progress(done, r)`` after each resample.
    """
    out = np.empty(r)
    for t in range(r):
        for _ in range(max_tries):
            rows = rng.integers(0, n, size=n)
            uniq = np.unique(rows)
            if len(uniq) >= min_rows:
                break
        else:
            raise InputError(
                f"bootstrap: resamples of {n} rows rarely have {min_rows} distinct rows; "
                "use fewer neighbours or more samples"
            )
        out[t] = statistic(uniq if distinct else rows)
        if progress is not None:
            progress(t + 1, r)
    return out


def percentile_interval(samples: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The central ``level`` percentile interval of bootstrap ``samples``."""
    lo, hi = np.quantile(samples, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def basic_interval(
    observed: float, samples: np.ndarray, level: float = 0.95
) -> tuple[float, float]:
    """The basic bootstrap interval ``[2 s - q_{(1+level)/2}, 2 s - q_{(1-level)/2}]``."""
    lo, hi = percentile_interval(samples, level)
    return 2 * observed - hi, 2 * observed - lo
