"""``measure``: one alignment score between two feature arrays, with its layer search, null and CI.

This is the reference protocol of Huh et al. 2024 (clamp at the 0.95 quantile, L2-normalise, a
metric on every layer pair, report the best pair) plus what it lacks: a permutation null applied to
the reported statistic (a p-value and a calibrated score), and a bootstrap interval.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from prh.errors import InputError
from prh.metrics import calibrate
from prh.metrics.cca import svcca_basis, svcca_from_bases
from prh.metrics.kernel import cka_from_sides, cknna_from_sides, kernel_side, knn_kernel_side
from prh.metrics.knn import check_k, knn
from prh.metrics.layers import best_pair, layer_scores, resolve_pair
from prh.metrics.neighbors import (
    cycle_knn_rows,
    edit_distance_knn_rows,
    lcs_knn_rows,
    mutual_knn_rows,
    permute_knn,
)
from prh.metrics.null_knn import CycleKnnNull, MutualKnnNull
from prh.metrics.preprocess import CLAMPS, as_layers, check_nonzero_rows, check_pair, preprocess
from prh.metrics.states import Work
from prh.progress import Progress

KNN_METRICS = ("mutual_knn", "cycle_knn", "lcs_knn", "edit_distance_knn")
NULL_STOPS = ("fixed", "adaptive")
METRICS = (*KNN_METRICS, "cka", "unbiased_cka", "cknna", "svcca")
_ROWS = {
    "mutual_knn": mutual_knn_rows,
    "cycle_knn": cycle_knn_rows,
    "lcs_knn": lcs_knn_rows,
    "edit_distance_knn": edit_distance_knn_rows,
}


@dataclass(frozen=True)
class MetricOptions:
    """Parameters of every metric; each metric reads the ones it uses.

    Attributes
    ----------
    k : int
        Neighbours for the kNN metrics and CKNNA.
    kernel : str
        CKA kernel, ``"linear"`` or ``"rbf"``.
    sigma : float
        RBF bandwidth.
    cca_dim : int
        SVCCA directions per side.
    eps : float
        CKA/CKNNA denominator guard (reference: 1e-6).
    block_size : int or None
        kNN tile side in rows (memory only).
    backend : str
        kNN candidate backend, ``"numpy"`` (BLAS), ``"torch"`` or ``"faiss"``.
    device : str
        Device of the ``"torch"`` backend: ``"auto"`` (CUDA when present), ``"cpu"``, ``"cuda"``.
    """

    k: int = 10
    kernel: str = "linear"
    sigma: float = 1.0
    cca_dim: int = 10
    eps: float = 0.0
    block_size: int | None = None
    backend: str = "numpy"
    device: str = "auto"


@dataclass(frozen=True)
class Metric:
    """A metric split into a per-side ``prepare`` and a pairwise ``score(sa, sb, perm)``.

    ``score`` pairs row ``i`` of ``A`` with row ``perm[i]`` of ``B`` (identity when ``perm`` is
    None). ``distinct_rows``: the bootstrap passes distinct rows only; ``min_rows``: rows needed.
    ``rows(sa, sb)``, for metrics that are a mean over samples, gives the ``(N,)`` per-sample
    scores: their bootstrap resamples queries against the fixed gallery. ``null(states_a,
    states_b)``, where given, returns a per-permutation statistic of the best layer pair that needs
    no per-pair loop: an object whose ``counts(perm)`` are every layer pair's integer score
    numerators and ``scale`` their denominator's inverse (:class:`prh.metrics.null_knn.
    MutualKnnNull`). ``state`` names what ``prepare`` makes: metrics with the same ``state`` make
    the same per-side states, which a score matrix prepares once for all of them
    (:mod:`prh.metrics.states`); ``work`` is one preparation's searches and Gram products.
    ``batched(states_a, states_b)``, where given (the kernel metrics on the torch backend),
    returns an object whose ``scores(perms)`` are every layer pair's scores of a batch of draws,
    ``tol`` their rounding against ``score``'s and ``batch`` the draws per batch
    (:mod:`prh.metrics.null_kernel`), or None when the sides are too large for it.
    """

    name: str
    prepare: Callable[[np.ndarray], Any]
    score: Callable[[Any, Any, np.ndarray | None], float]
    uses_k: bool
    distinct_rows: bool
    min_rows: int
    rows: Callable[[Any, Any], np.ndarray] | None = None
    null: Callable[[list[Any], list[Any]], Any] | None = None
    state: str = ""
    work: Work = field(default_factory=Work)
    batched: Callable[[list[Any], list[Any]], Any] | None = None


def get_metric(name: str, options: MetricOptions | None = None) -> Metric:
    """The :class:`Metric` called ``name`` (one of :data:`METRICS`) with ``options``."""
    o = options or MetricOptions()
    if name in KNN_METRICS:
        return _list_metric(name, o)
    batched = _torch_null(name, o)
    if name in ("cka", "unbiased_cka"):
        unbiased = name == "unbiased_cka"

        def score(sa: Any, sb: Any, perm: np.ndarray | None) -> float:
            return cka_from_sides(sa, sb, perm, unbiased=unbiased, eps=o.eps)

        return Metric(
            name,
            lambda x: kernel_side(x, o.kernel, o.sigma),
            score,
            False,
            False,
            4 if unbiased else 2,
            state=f"{o.kernel} kernel",  # biased and unbiased CKA share each layer's Gram
            work=Work(gemms=1),
            batched=batched,
        )
    if name == "cknna":
        return Metric(
            name,
            lambda x: knn_kernel_side(
                x, o.k, block_size=o.block_size, backend=o.backend, device=o.device
            ),
            lambda sa, sb, perm: cknna_from_sides(sa, sb, perm, eps=o.eps),
            True,
            True,
            max(o.k + 1, 4),
            state="cknna",  # ranked by the raw inner product: not the cosine lists' search
            work=Work(searches=1),
            batched=batched,
        )
    if name == "svcca":
        return Metric(
            name,
            lambda x: svcca_basis(x, o.cca_dim),
            svcca_from_bases,
            False,
            False,
            o.cca_dim + 1,
            state="svcca",
            batched=batched,
        )
    raise InputError(f"unknown metric {name!r}, expected one of {', '.join(METRICS)}")


def _list_metric(name: str, o: MetricOptions) -> Metric:
    """One of the four metrics of neighbour lists (:data:`KNN_METRICS`): one search a layer."""
    fn = _ROWS[name]

    def prep(x: np.ndarray) -> np.ndarray:
        return knn(x, o.k, block_size=o.block_size, backend=o.backend, device=o.device)

    def score(sa: np.ndarray, sb: np.ndarray, perm: np.ndarray | None) -> float:
        return float(fn(sa, sb if perm is None else permute_knn(sb, perm)).mean())

    null = {"mutual_knn": MutualKnnNull, "cycle_knn": CycleKnnNull}.get(name)
    lists = Work(searches=1)  # one search per layer, shared by the four list metrics
    return Metric(name, prep, score, True, True, o.k + 1, fn, null, "knn lists", lists)


def _torch_null(name: str, o: MetricOptions) -> Callable[[list[Any], list[Any]], Any] | None:
    """The batched null of a kernel metric (CKA, unbiased CKA, SVCCA: :mod:`prh.metrics.
    null_kernel`; CKNNA: :mod:`prh.metrics.null_cknna`) on ``o.backend == "torch"`` (None
    otherwise)."""
    if o.backend != "torch":
        return None

    def build(la: list[Any], lb: list[Any]) -> Any:
        from prh.metrics.null_cknna import cknna_null
        from prh.metrics.null_kernel import kernel_null

        if name == "cknna":
            return cknna_null(la, lb, o.eps, o.device)
        return kernel_null(name, la, lb, o.eps, o.device)

    return build


@dataclass(frozen=True)
class MeasureResult:
    """The outcome of :func:`measure`.

    Attributes
    ----------
    metric : str
    k : int or None
        Neighbours (None for metrics without neighbours).
    n : int
        Paired samples.
    score : float
        The reported statistic: the best layer pair's score, or the fixed pair's.
    ci : (float, float) or None
        Basic bootstrap interval (``bootstrap > 0``), see :mod:`prh.metrics.calibrate`.
    p_value : float or None
        Permutation p-value of ``score`` (``null > 0``).
    calibrated : float or None
        ``score`` minus the null's ``level`` quantile (``null > 0``).
    layers : (int, int)
        The layer pair reported (best or fixed).
    layer_search : str
        ``"max"`` (every pair searched) or ``"fixed"``.
    null_critical : float or None
        The null's ``level`` quantile.
    level : float
        Null quantile and interval coverage, 0.95 by default.
    n_null, n_bootstrap : int
        Null draws made (fewer than asked when the adaptive stop decided) and resamples.
    null_stop : str or None
        ``"fixed"`` or ``"adaptive"`` (None without a null).
    bootstrap_kind : str
        ``"queries"`` (kNN metrics: per-sample scores resampled, gallery fixed at all ``N`` rows),
        ``"distinct"`` (CKNNA: recomputed on the distinct resampled rows) or ``"rows"`` (CKA,
        SVCCA: recomputed on the resample, duplicates kept).
    layer_scores : np.ndarray
        ``(L_A, L_B)`` observed scores (NaN where not computed).
    """

    metric: str
    k: int | None
    n: int
    score: float
    ci: tuple[float, float] | None
    p_value: float | None
    calibrated: float | None
    layers: tuple[int, int]
    layer_search: str = "max"
    null_critical: float | None = None
    level: float = 0.95
    n_null: int = 0
    n_bootstrap: int = 0
    null_stop: str | None = None
    bootstrap_kind: str = "rows"
    layer_scores: np.ndarray = field(default_factory=lambda: np.zeros((1, 1)), repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict: the contract keys first, then details."""
        return {
            "metric": self.metric,
            "k": self.k,
            "n": self.n,
            "score": self.score,
            "ci": list(self.ci) if self.ci is not None else None,
            "p_value": self.p_value,
            "calibrated": self.calibrated,
            "layers": list(self.layers),
            "layer_search": self.layer_search,
            "null_critical": self.null_critical,
            "level": self.level,
            "null": self.n_null,
            "null_stop": self.null_stop,
            "bootstrap": self.n_bootstrap,
            "bootstrap_kind": self.bootstrap_kind,
            "layer_scores": [
                [None if np.isnan(v) else float(v) for v in r] for r in self.layer_scores
            ],
        }


@dataclass(frozen=True)
class Preprocessing:
    """How :func:`measure` prepares both sides before any score: the reference preprocessing
    (clamp at the ``quantile`` of ``|x|``, L2-normalise rows) or none.

    Attributes
    ----------
    enabled : bool
        ``False``: the features are used as given (already preprocessed, say).
    quantile : float
        The clamp's quantile of ``|x|``.
    clamp : {"mean", "exact", "none"}
        The clamp threshold rule (see :mod:`prh.metrics.preprocess`): the reference CLI's default
        ``mean``, its ``--precise``/``Alignment.score`` rule ``exact``, or no clamp (L2 only).
    layer_dims_a, layer_dims_b : list of int, optional
        True widths of zero-padded layers (``FeatureSet.layer_dims``): the clamp's quantile is
        taken over real entries only.
    per_layer_a, per_layer_b : bool
        Clamp each layer on its own threshold (the reference's rule for a list of layers,
        ``FeatureSet.per_layer``) rather than one threshold for the whole file.
    """

    enabled: bool = True
    quantile: float = 0.95
    clamp: str = "mean"
    layer_dims_a: list[int] | None = None
    layer_dims_b: list[int] | None = None
    per_layer_a: bool = False
    per_layer_b: bool = False

    @classmethod
    def from_keywords(cls, base: Preprocessing | None = None, **kw: Any) -> Preprocessing:
        """``base`` (default: the reference's) with :func:`measure`'s older keywords applied:
        ``preprocess_features`` (``enabled``), ``quantile``, ``clamp``, ``layer_dims_a``, ...;
        any other keyword is a ``TypeError``, as for any function."""
        names = {f.name for f in fields(cls)} - {"enabled"}
        bad = [k for k in kw if k not in names and k != "preprocess_features"]
        if bad:
            raise TypeError(f"measure() got an unexpected keyword argument {bad[0]!r}")
        if "preprocess_features" in kw:
            kw["enabled"] = kw.pop("preprocess_features")
        return replace(base or cls(), **kw)


def measure(
    a: np.ndarray,
    b: np.ndarray,
    metric: str = "mutual_knn",
    k: int = 10,
    null: int = 0,
    bootstrap: int = 0,
    seed: int = 0,
    layers: tuple[int, int] | None = None,
    *,
    preprocessing: Preprocessing | None = None,
    level: float = 0.95,
    options: MetricOptions | None = None,
    name_a: str = "A",
    name_b: str = "B",
    cache: dict[Any, Any] | None = None,
    cache_keys: tuple[Any, Any] | None = None,
    progress: bool = False,
    label: str = "",
    null_stop: str = "fixed",
    **preprocess_keywords: Any,
) -> MeasureResult:
    """Alignment of two representations of the same samples, with null and interval.

    Parameters
    ----------
    a, b : np.ndarray
        ``(N, D_a)``/``(N, L_A, D_a)`` and ``(N, D_b)``/``(N, L_B, D_b)``; row ``i`` of each
        describes sample ``i``.
    metric : str
        One of :data:`METRICS`.
    k : int
        Neighbours for kNN metrics and CKNNA (overrides ``options.k``).
    null : int
        Permutations for the null (0: none).
    bootstrap : int
        Bootstrap resamples for the interval (0: none).
    seed : int
        Seeds the null and the bootstrap (independent streams).
    layers : (int, int), optional
        A fixed layer pair (negative counts from the end); default: the maximum over all pairs.
    preprocessing : Preprocessing, optional
        Clamp rule and quantile, true layer widths, per-layer clamping, or none at all (default:
        the reference preprocessing, ``Preprocessing()``).
    level : float
        Null quantile subtracted for ``calibrated``, and bootstrap interval coverage.
    options : MetricOptions, optional
        Kernel, bandwidth, SVCCA dimension, kNN block size and backend.
    name_a, name_b : str
        How to name the inputs in error messages (file paths).
    cache : dict, optional
        Per-side states (neighbour lists, kernel statistics) of the observed features, keyed by
        ``(name, layer)``; a caller measuring one file against many passes one dict per kind of
        state (:attr:`Metric.state`: metrics of one kind share it) and options, so each file's
        states are computed once (:class:`prh.metrics.states.StateCache` also counts them).
        Only use it with stable names.
        Without it, passing the same array as ``a`` and ``b`` (``X = Y``, same preprocessing)
        still computes its states (neighbour lists, ...) once.
    cache_keys : (hashable, hashable), optional
        Keys of ``a`` and ``b`` in ``cache`` instead of ``(name_a, name_b)``: a caller whose ``b``
        is a file's rows re-ordered by an id join keys it by file and row order.
    progress : bool
        Report the null's and the bootstrap's draws on stderr (:mod:`prh.progress`).
    label : str
        Named in each progress line (a matrix cell: ``"[0,1] bloomz-560m ~ dinov2"``).
    null_stop : {"fixed", "adaptive"}
        ``"fixed"``: all ``null`` draws. ``"adaptive"``: stop, every 25 draws, once the 99%
        interval of the p-value lies wholly below or above ``1 - level``
        (:func:`prh.metrics.calibrate.decided`), ``null`` being the cap; the draws made are the
        first draws of the fixed run, so ``p_value`` is the fixed run's at that many draws.
    **preprocess_keywords
        The older spelling of ``preprocessing``'s fields, still read: ``preprocess_features``,
        ``quantile``, ``clamp``, ``layer_dims_a``, ``layer_dims_b``, ``per_layer_a``,
        ``per_layer_b`` (:meth:`Preprocessing.from_keywords`).

    Returns
    -------
    MeasureResult

    Examples
    --------
    A rotation keeps every neighbour list; the reference clamp (per coordinate) does not
    commute with it, so the rows are compared as given:

    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(50, 8))
    >>> q = np.linalg.qr(rng.normal(size=(8, 8)))[0]  # (8, 8) orthogonal
    >>> measure(x, x @ q, k=5, preprocessing=Preprocessing(clamp="none")).score
    1.0
    """
    _check_settings(level, null_stop)
    prep = Preprocessing.from_keywords(preprocessing, **preprocess_keywords)
    options = MetricOptions(**{**(options or MetricOptions()).__dict__, "k": k})
    m = get_metric(metric, options)
    a, b, same = _inputs(m, metric, (a, b), k, prep, (name_a, name_b))
    n = a.shape[0]
    pair = resolve_pair(layers, (a.shape[1], b.shape[1])) if layers is not None else None
    if cache is None:  # this call's own: X = Y computes each layer's state once
        cache, cache_keys = {}, (("a",), ("a",) if same else ("b",))
    sa, sb = _observed_states(m, (a, b), pair, cache_keys or (name_a, name_b), cache)
    scores = layer_scores(m.score, sa, sb, None, pair)
    obs, best = best_pair(scores)[0], pair if pair is not None else best_pair(scores)[1]
    if not np.isfinite(obs):  # undefined score (a constant kernel): no null, no interval
        null = bootstrap = 0
    p, cal, crit, ci, null = _calibrate(
        m, ((a, b, same), (sa, sb), pair, obs), (n, null, bootstrap), seed, null_stop, level,
        (f"{label} {metric}".strip(), progress),
    )  # fmt: skip
    return MeasureResult(
        metric=metric, k=k if m.uses_k else None, n=n, score=obs, ci=ci, p_value=p,
        calibrated=cal, layers=best, layer_search="fixed" if pair is not None else "max",
        null_critical=crit, level=level, n_null=null,
        null_stop=null_stop if null > 0 else None, n_bootstrap=bootstrap,
        bootstrap_kind="queries" if m.rows else "distinct" if m.distinct_rows else "rows",
        layer_scores=scores,
    )  # fmt: skip


def _check_settings(level: float, null_stop: str) -> None:
    if not 0.0 < level < 1.0:
        raise InputError(f"level must be in (0, 1), got {level}")
    if null_stop not in NULL_STOPS:
        raise InputError(f"unknown null stop {null_stop!r}, expected one of {NULL_STOPS}")


def _observed_states(m, ab, pair, keys, cache: dict) -> tuple[list[Any], list[Any]]:
    """Each side's per-layer states of the observed rows (only the fixed pair's layers when
    ``pair`` is given), through ``cache`` under ``keys``."""
    (a, b), (key_a, key_b) = ab, keys
    sa = _states(m, a, None, pair[0] if pair else None, key_a, cache)
    sb = _states(m, b, None, pair[1] if pair else None, key_b, cache)
    return sa, sb


def _calibrate(m, observed, counts, seed: int, stop: str, level: float, shown) -> tuple:
    """``(p_value, calibrated, null_critical, ci, null draws made)`` of the observed score
    (None where no null or no bootstrap was asked): the permutation null, then the bootstrap,
    on independent streams of ``seed``; progress lines named ``shown[0]`` when ``shown[1]``."""
    (sides, states, pair, obs), (n, null, bootstrap) = observed, counts
    null_rng, boot_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))

    def bar(what: str, total: int) -> Progress:
        return Progress(total, f"{shown[0]} {what}".strip(), enabled=shown[1], unit="draw")

    p = cal = crit = ci = None
    if null > 0:
        with bar("null", null) as pb:
            draws = _null(m, states, pair, obs, (n, null, null_rng), stop, level, pb)
        null = len(draws)
        p, crit = calibrate.p_value(obs, draws), calibrate.critical_value(draws, level)
        cal = obs - crit
    if bootstrap > 0:
        with bar("bootstrap", bootstrap) as pb:
            draws = _bootstrap(m, sides, states, pair, bootstrap, boot_rng, pb)
        ci = calibrate.basic_interval(obs, draws, level)
    return p, cal, crit, ci, null


def _null(m, states, pair, obs: float, draw, stop: str, level: float, pb) -> np.ndarray:
    """The null's draws of the best-pair statistic, compared with ``obs``.

    A metric with a batched null (:attr:`Metric.null`) counts every layer pair of a draw at once
    (:func:`_counted`); the others redo the layer search pair by pair. The draws are the same.
    """
    (sa, sb), (n, r, rng) = states, draw
    la, lb = (sa, sb) if pair is None else ([sa[pair[0]]], [sb[pair[1]]])
    stopper = (lambda d: calibrate.decided(obs, d, 1 - level)) if stop == "adaptive" else None
    batched = m.batched(la, lb) if m.batched is not None else None
    if batched is not None:
        return calibrate.permutation_null_batched(
            _rescored(m, batched, la, lb, obs), n, r, rng, progress=pb, stop=stopper,
            batch=batched.batch,
        )  # fmt: skip
    if m.null is not None:
        statistic = _counted(m, la, lb, n)
    else:
        statistic = lambda perm: best_pair(layer_scores(m.score, la, lb, perm))[0]  # noqa: E731
    return calibrate.permutation_null(statistic, n, r, rng, progress=pb, stop=stopper)


def _rescored(m, batched, la: list, lb: list, obs: float) -> Callable[[np.ndarray], np.ndarray]:
    """The best pair's score of each draw of a batch from ``batched.scores``, except that a draw
    whose comparison with ``obs`` the rounding bound ``batched.tol`` leaves open (some pair
    within it of ``obs``, none surely above) is rescored by the pair loop: its comparison with
    the observed score comes out as the loop's, so the p-value is the loop's."""

    def statistics(perms: np.ndarray) -> np.ndarray:
        s = batched.scores(perms)  # (R, L_A, L_B), NaN where undefined
        best = np.nanmax(s.reshape(len(perms), -1), axis=1)  # (R,) obs finite: a pair is defined
        above = (s - batched.tol >= obs).any(axis=(1, 2))
        near = (s + batched.tol >= obs).any(axis=(1, 2))
        for t in np.flatnonzero(near & ~above):
            best[t] = best_pair(layer_scores(m.score, la, lb, perms[t]))[0]
        return best

    return statistics


def _counted(m, la: list, lb: list, n: int) -> Callable[[np.ndarray], float]:
    """The best pair's score under ``perm`` from integer counts: ``max h * scale``, except that a
    draw whose best count equals the observed one is scored as the pair loop scores it (the float
    mean over rows), so that its comparison with the observed score, a tie up to rounding, comes
    out as it always has: the p-value is the pair loop's, bit for bit."""
    counter = m.null(la, lb)
    top_obs = counter.counts(np.arange(n)).max()

    def statistic(perm: np.ndarray) -> float:
        h = counter.counts(perm)  # (L_A, L_B) int
        top = h.max()
        if top != top_obs:
            return float(top * counter.scale)
        return max(m.score(la[i], lb[j], perm) for i, j in np.argwhere(h == top))

    return statistic


def _inputs(m, metric, ab, k, prep: Preprocessing, names):
    """``(a, b, same)``: both sides checked and preprocessed as :func:`measure` says; ``same``
    when ``b`` is ``a`` with the same preprocessing (``X = Y``: computed once)."""
    (a, b), (name_a, name_b), clamp = ab, names, prep.clamp
    dims_a, per_a, dims_b, per_b = (prep.layer_dims_a, prep.per_layer_a, prep.layer_dims_b,
                                    prep.per_layer_b)  # fmt: skip
    a, b = as_layers(a, name_a), as_layers(b, name_b)
    check_pair(a, b, name_a, name_b)
    n = a.shape[0]
    if m.uses_k:
        check_k(k, n, name_a)
    if clamp not in CLAMPS:
        raise InputError(f"unknown clamp rule {clamp!r}, expected one of {', '.join(CLAMPS)}")
    same = b is a and (dims_a, per_a) == (dims_b, per_b)
    if prep.enabled:
        q, exact = (1.0 if clamp == "none" else prep.quantile), clamp == "exact"
        a = preprocess(a, q, exact, name_a, dims_a, per_a)
        b = a if same else preprocess(b, q, exact, name_b, dims_b, per_b)
    elif metric in KNN_METRICS:
        check_nonzero_rows(a, name_a)
        check_nonzero_rows(b, name_b)
    if n < m.min_rows:
        raise InputError(f"{name_a}: {metric} needs at least {m.min_rows} rows, got {n}")
    return a, b, same


def _states(m, x: np.ndarray, rows, only: int | None, key: Any, cache: dict) -> list[Any]:
    """Each layer's state of ``x (N, L, D)`` (``None`` for layers other than ``only``); the
    observed rows' states through ``cache`` (by ``(key, layer)``), a resample's fresh."""
    xs = x if rows is None else x[rows]
    out = []
    for layer in range(x.shape[1]):
        if only is not None and layer != only:
            out.append(None)
        elif rows is None:
            if (key, layer) not in cache:
                cache[key, layer] = m.prepare(xs[:, layer])
            out.append(cache[key, layer])
        else:
            out.append(m.prepare(xs[:, layer]))
    return out


def _bootstrap(m, sides, states, pair, bootstrap: int, rng, pb) -> np.ndarray:
    """Bootstrap draws of the best-pair score: by query rows where the metric has per-row
    scores (``m.rows``), else by recomputing the states of resampled rows."""
    (a, b, same), (sa, sb) = sides, states
    n = a.shape[0]
    if m.rows is not None:
        pairs = [pair] if pair is not None else list(np.ndindex(len(sa), len(sb)))
        per_row = np.stack([m.rows(sa[i], sb[j]) for i, j in pairs])  # (P, N)
        return calibrate.bootstrap(
            lambda rows: float(per_row[:, rows].mean(axis=1).max()), n, bootstrap, rng,
            progress=pb,
        )  # fmt: skip

    def boot(rows: np.ndarray) -> float:
        ra = _states(m, a, rows, pair[0] if pair else None, None, {})
        if same and (pair is None or pair[0] == pair[1]):
            rb = ra
        else:
            rb = _states(m, b, rows, pair[1] if pair else None, None, {})
        return best_pair(layer_scores(m.score, ra, rb, None, pair))[0]

    return calibrate.bootstrap(
        boot, n, bootstrap, rng, distinct=m.distinct_rows, min_rows=m.min_rows, progress=pb
    )
