"""Checks of docs/theory.md sec. 3 to 5: Theorem 1, Theorem 2, good vs bad views, next-token."""

from __future__ import annotations

from itertools import combinations, pairwise

import numpy as np

from prh.prove.result import CheckResult, ProveConfig
from prh.theory import generators as gen
from prh.theory import views
from prh.theory.bound import theorem2, worst_case_perturbation
from prh.theory.jepa import solve_jepa
from prh.theory.measures import (
    cross_modal_moment,
    misalignment,
    mutual_knn,
    nuisance_fraction,
    procrustes_error,
    sample_by_state,
)
from prh.theory.world import random_world


def _embed_modality(W_grid: np.ndarray, render: np.ndarray, k: int) -> tuple[np.ndarray, float]:
    """Solve in observation order (through the rendering), return the grid (N, K, k) and the gap."""
    r = render.ravel()
    W = np.empty_like(W_grid)
    W[np.ix_(r, r)] = W_grid
    sol = solve_jepa(W, k)
    return sol.embedding[render], sol.gap


def check_platonic(config: ProveConfig) -> CheckResult:
    """Theorem 1: three modalities with good views through one kernel agree up to rotation."""
    rng = np.random.default_rng([config.seed, 3])
    ok = _platonic_case(rng, N=30, k=4)
    fail = _platonic_failure(rng, Nf=12)
    passed = (
        ok["gap"] > 1e-6
        and ok["l_k+1"] > 0
        and ok["max_pairwise_e_proc"] < 1e-8
        and ok["max_e_proc_to_g*"] < 1e-8
        and ok["max_nuisance_spread"] < 1e-8
        and fail["failure_min_e_cca"] >= fail["1/k"] - 1e-9
    )
    return CheckResult(
        name="platonic",
        statement="good views, one kernel: every modality is Q_m^T g*(s); l_{k+1} <= 0 breaks it",
        passed=passed,
        figures={**ok, **fail},
    )


def _platonic_case(rng: np.random.Generator, N: int, k: int) -> dict[str, float | int]:
    """A PSD kernel seen by three modalities: their errors to each other and to ``g*``."""
    prior = gen.random_prior(N, rng)
    pi = gen.state_kernel("geometric", prior, rng)  # PSD: l_{k+1} > 0
    world = random_world(prior, [2, 3, 4], rng)  # state-dependent nuisances, random renderings
    state = solve_jepa(pi, k)
    grids, gaps = [], []
    for mod in world.modalities:
        F, gap = _embed_modality(views.good_views(pi, mod.nuisance), mod.render, k)
        grids.append(F)
        gaps.append(gap)
    mods = world.modalities
    pair_err = max(
        procrustes_error(grids[i], mods[i].nuisance, grids[j], mods[j].nuisance, prior)
        for i, j in combinations(range(len(mods)), 2)
    )
    g_star = state.embedding[:, None, :]  # g*(s) = U_k(s) / sqrt(p(s)), as a 1-nuisance grid
    state_err = max(
        procrustes_error(F, m.nuisance, g_star, np.ones((N, 1)), prior) for F, m in zip(grids, mods)
    )
    return {
        "modalities": len(mods),
        "l_k+1": float(state.eigenvalues[k]),
        "gap": float(min(gaps)),
        "max_pairwise_e_proc": pair_err,
        "max_e_proc_to_g*": state_err,
        "max_nuisance_spread": max(float(np.abs(F - F[:, :1, :]).max()) for F in grids),
    }


def _platonic_failure(rng: np.random.Generator, Nf: int) -> dict[str, float | int]:
    """A kernel with ``l_{k+1} < 0`` (Erdos-Renyi weights): one nuisance direction enters."""
    prior_f = gen.random_prior(Nf, rng)
    while True:
        pi_f = gen.state_kernel("erdos-renyi", prior_f, rng)
        ev = solve_jepa(pi_f, 1).eigenvalues
        n_pos = int(np.sum(ev[1:] > 1e-9))
        if 1 <= n_pos <= Nf - 3 and ev[n_pos + 1] < -1e-6:
            break
    kf = n_pos + 1  # l_{kf+1} < 0: one nuisance direction enters the top kf
    world_f = random_world(prior_f, [2, 3, 4], rng)
    grids_f = [
        _embed_modality(views.good_views(pi_f, m.nuisance), m.render, kf)[0]
        for m in world_f.modalities
    ]
    mf = world_f.modalities
    e_cca_fail = min(
        misalignment(
            cross_modal_moment(grids_f[i], mf[i].nuisance, grids_f[j], mf[j].nuisance, prior_f)
        ).e_cca
        for i, j in combinations(range(len(mf)), 2)
    )
    return {
        "failure_k": kf,
        "failure_l_k+1": float(ev[kf]),
        "failure_min_e_cca": e_cca_fail,
        "1/k": 1 / kf,
    }


def check_bound(config: ProveConfig) -> CheckResult:
    """Theorem 2: ``e_proc <= 2^(3/2) min(sqrt(k)||E||_op, ||E||_F) / delta_A`` on random worlds."""
    rng = np.random.default_rng([config.seed, 4])
    ratios, violations, degenerate = [], 0, 0
    for _ in range(config.worlds):
        pair = gen.random_kernel_pair(rng)
        r = theorem2(pair.pi_a, pair.pi_b, pair.k)
        violations += not r.holds
        if not np.isfinite(r.proc_bound):
            degenerate += 1
            continue
        ratios.append(r.ratio)
    # planted worst case: E = eta (u_2 u_3^T + u_3 u_2^T) at k = 1, eta -> 0
    wrng = np.random.default_rng([config.seed, 44])
    prior = gen.random_prior(40, wrng)
    # a floor keeps every entry of Pi_B = Pi_A + D^1/2 E D^1/2 positive
    pi = gen.sinkhorn_symmetric(gen.geometric_kernel(40, wrng) + 0.05, prior)
    gap = solve_jepa(pi, 1).gap
    worst = theorem2(pi, worst_case_perturbation(pi, 1, 1e-5 * gap), 1).ratio
    passed = violations == 0 and abs(worst - 1 / (2 * np.sqrt(2))) < 1e-3 and len(ratios) > 0
    return CheckResult(
        name="bound",
        statement="e_proc <= 2^1.5 min(sqrt(k)|E|op, |E|F)/gap on every random world (Thm 2)",
        passed=passed,
        figures={
            "worlds": config.worlds,
            "violations": violations,
            "degenerate": degenerate,
            "max_ratio": float(max(ratios)) if ratios else None,
            "median_ratio": float(np.median(ratios)) if ratios else None,
            "worst_case_ratio": worst,
            "1/(2sqrt2)": float(1 / (2 * np.sqrt(2))),
        },
    )


def _rho_grid(state_eigs, mus, k, limit=9) -> np.ndarray:
    """One rho inside every step of the predicted ``max(m_A, m_B)`` staircase (midpoints)."""
    fine = np.linspace(0.0, 1.0, 2001)
    m = np.array(
        [max(views.predicted_nuisance_count(state_eigs, mu, r, k) for mu in mus) for r in fine]
    )
    change = np.flatnonzero(np.diff(m)) + 1
    edges = np.concatenate([[0], change, [fine.size - 1]])
    mids = [0.0] + [0.5 * (fine[a] + fine[b]) for a, b in pairwise(edges[1:])]
    mids = sorted(set(mids))
    if len(mids) > limit:  # keep the ends, thin the middle
        keep = np.unique(np.linspace(0, len(mids) - 1, limit).round().astype(int))
        mids = [mids[i] for i in keep]
    return np.asarray(mids)


def check_views(config: ProveConfig) -> CheckResult:
    """Sec. 5: across rho, e_cca = max(m_A, m_B)/k; mutual-kNN reaches 1 past rho*."""
    rng = np.random.default_rng([config.seed, 5])
    N, k = (60 if config.quick else 100), 8
    prior = gen.random_prior(N, rng)
    pi = gen.state_kernel("geometric", prior, rng)
    state_eigs = solve_jepa(pi, k).eigenvalues
    qs = [np.full(3, 1 / 3), gen.random_prior(4, rng)]
    kbs = [views.nuisance_kernel(qs[0], 0.7, rng), views.nuisance_kernel(qs[1], 0.85, rng)]
    mus = [views.nuisance_spectrum(q, kb) for q, kb in zip(qs, kbs)]
    renders = [rng.permutation(N * q.size).reshape(N, q.size) for q in qs]
    star = max(views.rho_star(state_eigs, mu[1], k) for mu in mus)
    rhos = _rho_grid(state_eigs, mus, k)
    rows = [_views_at(rho, pi, prior, (qs, kbs, renders), k, config.seed) for rho in rhos]
    e_ccas, knns = (np.asarray([r[i] for r in rows]) for i in (0, 1))
    predicted = np.asarray(
        [max(views.predicted_nuisance_count(state_eigs, mu, rho, k) for mu in mus) / k
         for rho in rhos]
    )  # fmt: skip
    err = float(np.abs(e_ccas - predicted).max())
    past = rhos > star
    passed = (
        err < 1e-8
        and past.any()
        and float(knns[past].min()) == 1.0
        and float(knns[~past].max()) < 1.0
        and predicted[0] > 0
    )
    return CheckResult(
        name="views",
        statement="e_cca = max(m_A, m_B)/k for every rho; mutual-kNN@10 = 1 past rho*",
        passed=passed,
        figures={
            "k": k,
            "rho_star": star,
            "rho": [round(float(r), 4) for r in rhos],
            "e_cca": [round(float(e), 6) for e in e_ccas],
            "max_abs_error": err,
            "mutual_knn": [round(float(v), 4) for v in knns],
        },
    )


def _views_at(
    rho: float, pi: np.ndarray, prior: np.ndarray, sides: tuple, k: int, seed: int
) -> tuple[float, float]:
    """Two modalities at good-view fraction ``rho``: their ``e_cca`` and mutual-kNN@10."""
    qs, kbs, renders = sides
    n = len(prior)
    grids = [
        _embed_modality(views.mixture_views(pi, q, rho, kb), R, k)[0]
        for q, kb, R in zip(qs, kbs, renders)
    ]
    qa, qb = (np.tile(q, (n, 1)) for q in qs)
    e_cca = misalignment(cross_modal_moment(grids[0], qa, grids[1], qb, prior)).e_cca
    srng = np.random.default_rng([seed, 55])
    knn = mutual_knn(sample_by_state(grids[0], qa, srng), sample_by_state(grids[1], qb, srng), k=10)
    return e_cca, knn


def check_next_token(config: ProveConfig) -> CheckResult:
    """Next-token pairs share a document's style: style enters, modalities misalign."""
    rng = np.random.default_rng([config.seed, 6])
    N, k = 40, 6
    prior = gen.random_prior(N, rng)
    pi = gen.state_kernel("geometric", prior, rng)  # consecutive topics along a document
    specs = [
        (gen.random_prior(3, rng), np.full(2, 0.5)),
        (gen.random_prior(4, rng), np.full(2, 0.5)),
    ]
    figs: dict = {"k": k}
    out = {}
    for kind in ("next-token", "good"):
        rho = 0.0 if kind == "next-token" else 1.0
        style_frac, e_cca, pred, knn = _documents_at(rho, pi, prior, specs, k, rng, config.seed)
        out[kind] = (style_frac, e_cca, pred, knn)
        key = kind.replace("-", "_")
        figs.update(
            {
                f"style_fraction_{key}": style_frac,
                f"e_cca_{key}": e_cca,
                f"predicted_{key}": pred,
                f"mutual_knn_{key}": knn,
            }
        )
    sf_n, e_n, pred_n, knn_n = out["next-token"]
    sf_g, e_g, _, knn_g = out["good"]
    passed = (
        pred_n > 0
        and abs(e_n - pred_n) < 1e-8
        and sf_n >= pred_n - 1e-8
        and sf_g < 1e-10
        and e_g < 1e-10
        and knn_g > knn_n
    )
    return CheckResult(
        name="next-token",
        statement="prefix/continuation pairs put document style in the embedding; good views don't",
        passed=passed,
        figures=figs,
    )


def _documents_at(
    rho: float,
    pi: np.ndarray,
    prior: np.ndarray,
    specs: list,
    k: int,
    rng: np.random.Generator,
    seed: int,
) -> tuple[float, float, float, float]:
    """Two document modalities at good-view fraction ``rho`` (0: next-token pairs).

    Returns the larger style fraction of the two embeddings, their ``e_cca``, the predicted
    ``max(m_A, m_B) / k`` and their mutual-kNN@10.
    """
    n, state_eigs = len(prior), solve_jepa(pi, k).eigenvalues
    grids, qs, ms = [], [], []
    for i, (style, wording) in enumerate(specs):
        q, K_next = views.document_nuisance(style, wording, 0.95, seed=seed + i)
        W = views.mixture_views(pi, q, rho, K_next)
        grids.append(_embed_modality(W, rng.permutation(W.shape[0]).reshape(n, q.size), k)[0])
        qs.append(np.tile(q, (n, 1)))
        ms.append(
            views.predicted_nuisance_count(state_eigs, views.nuisance_spectrum(q, K_next), rho, k)
        )
    style_frac = max(nuisance_fraction(F, q, prior) for F, q in zip(grids, qs))
    e_cca = misalignment(cross_modal_moment(grids[0], qs[0], grids[1], qs[1], prior)).e_cca
    srng = np.random.default_rng([seed, 66])
    knn = mutual_knn(
        sample_by_state(grids[0], qs[0], srng), sample_by_state(grids[1], qs[1], srng), k=10
    )
    return style_frac, e_cca, max(ms) / k, knn
