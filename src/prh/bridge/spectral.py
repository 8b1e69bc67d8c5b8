"""Spectral pair-free alignment: the rotation between two modalities from each one's own pairs.

A whitened JEPA of modality ``m`` learns ``f_m = g* R_m`` (rows), ``g*`` the top ``k``
eigenfunctions of the world's pair kernel (docs/theory.md sec. 3 and 8). Over the modality's
own positive pairs ``(a, b)`` (two observations of one trajectory at the lag, never a
cross-modal pair) the symmetrised cross-view covariance of whitened features is
``C_m = (Z_a^T Z_b + Z_b^T Z_a) / 2n ~ R_m^T Lambda R_m``: its eigenvectors ``V_m`` (descending
eigenvalues) recover ``g* = Z_m V_m`` up to the sign of each column when the eigenvalues are
distinct. The rotation between the two modalities is then ``V_x S V_y^T`` (row convention,
``z_y ~ z_x V_x S V_y^T``) with ``S = diag(s_x s_y)`` the product of the two sides' sign
conventions, each fixed from that modality's unpaired marginal (:func:`sign_references`).

Components are matched across the two modalities **by eigenvalue, not by rank**
(:func:`match_components`): when one modality's observations blur a slow feature (captions that
name the object's cell one time in six), its eigenvalue drops and that modality's component of
rank ``i`` is another eigenfunction than the other's; pairing ranks would then rotate one
eigenfunction onto another and still look pinned (on the moving cave at 131k pairs: "pinned",
held-out R^2 -0.31). Each of X's top ``k`` components is matched one to one (Hungarian) to the Y
component whose eigenvalue is closest in sampling errors of their difference; a match counts only
when the two agree (within :data:`AGREE_Z` errors), and a component whose match disagrees is
never called pinned.

What it cannot do, and says (``pinned``, ``reason``): eigenvalues closer than their sampling
error (about ``1 / sqrt(n)``) leave a rotation inside their eigenspace that nothing in the
pairs fixes; equal eigenvalues (the still world, a symmetric pair of factors) are flagged
(a false "pinned" has probability about 3e-4 per equal pair: :data:`SEPARATION_Z`).
A component whose every reference moment is within sampling error of zero (a symmetric
eigenfunction) has no identifiable sign. Both are reported per component; the map is still
returned (it is right on the pinned components) but flagged.

Spaces. Each side is centred and ZCA-whitened with its own marginal covariance, estimated on
the union of its pairs' halves: ``z = (x - mean) @ whiten`` (``whiten = Cov^{-1/2}``). The
result's ``map`` ``W (d_y, d_x)`` acts on those whitened coordinates, ``z_y ~ z_x W^T``, with
``W = V_y[:, :k] S V_x[:, :k]^T`` (a partial isometry of rank ``k``; orthogonal when
``k = d_x = d_y``). :meth:`SpectralResult.to_y` maps raw ``x`` features into ``y``'s raw
feature space (whiten, rotate, colour back with ``y``'s covariance, add ``y``'s mean), and
:meth:`SpectralResult.as_map` gives the same as a fitted
:class:`~prh.bridge.procrustes.SemiOrthogonalMap` / :class:`~prh.bridge.procrustes.OrthogonalMap`
(``whiten=True``), which :func:`~prh.bridge.procrustes.save_map` writes and
``prh bridge apply`` applies. :meth:`SpectralResult.components` gives either side's
sign-fixed component coordinates ``g`` (the common space the assignment is made in).

Layer: pure numpy (and scipy's Hungarian solver through :mod:`prh.bridge.assign`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from prh.bridge.assign import blocked_assignment, nearest_centroid
from prh.errors import InputError
from prh.linalg import zca_whitener

__all__ = [
    "SEPARATION_Z",
    "SIGN_Z",
    "SideSpectrum",
    "SpectralResult",
    "check_spectral_inputs",
    "cross_view_spectrum",
    "eigenspace_clusters",
    "match_components",
    "sign_references",
    "spectral_align",
    "spectral_align_until_separated",
]

# A component is pinned when, on both sides, its eigenvalue is at least SEPARATION_Z sampling
# errors of their coupling from every other one's (SideSpectrum.separation_z): the expected angle
# by which sampling mixes the two eigenvectors is then below 1/8 rad. Two EQUAL eigenvalues
# estimated from n pairs come out about 2 sqrt(chi^2_2) such errors apart (a 2 x 2 Wigner
# block), so they pass 8 with probability about exp(-8) = 3e-4; measured on
# planted_spectral.twin_world (300 draws at 5k and 20k pairs): median 2.5, 99th percentile 6.6,
# largest 7.9. The angle estimate itself is calibrated on the probe world (the test
# test_mixing_angles_match_their_predicted_sampling_error).
# Distinct ones at gap delta need n >~ (8 sigma / delta)^2 pairs, sigma ~ 0.3-1 the spread of
# one pair's coupling (about 32k pairs at the probe world's separation 0.033).
SEPARATION_Z = 8.0
# A sign is fixed when its reference moment is at least SIGN_Z sampling errors from zero on
# both sides (a wrong sign at z = 3 has probability about 1e-3 per side).
SIGN_Z = 3.0
# Two matched eigenvalues agree when they differ by less than AGREE_Z sampling errors of their
# difference (hypot of the two sides' eigenvalue_se; calibrated: over 30 draws of 20k pairs on
# the probe world the reported errors match the eigenvalues' spread, 0.0027-0.0079). Two estimates
# of one eigenvalue fail with probability about 6e-5 each, 5e-4 for all 8 of a map (at 3 it was
# 2%: a 3.6-error draw of two equal eigenvalues was seen).
AGREE_Z = 4.0
MOMENT_MAX = 24  # sign references use third moments among the first 24 components (cost m^3)
ASSIGNMENTS = ("auto", "hungarian", "nearest", "none")
SIGN_SETS = ("all", "unpaired")
Pair = tuple[np.ndarray, np.ndarray]  # the two halves (a, b) of n positive pairs, (n, d) each


# ----------------------------------------------------------------------------- input checks


def _matrix(x: Any, what: str) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2:
        raise InputError(f"{what}: expected a (rows, dims) matrix, got shape {a.shape}")
    bad = ~np.isfinite(a)
    if bad.any():
        row = int(np.argwhere(bad)[0][0])
        rows = int(bad.any(1).sum())
        raise InputError(f"{what}: {rows} rows hold NaN or infinite values (first: row {row})")
    return a


def check_spectral_inputs(
    pairs_x: tuple[Any, Any],
    pairs_y: tuple[Any, Any],
    unpaired_x: Any,
    unpaired_y: Any,
    k: int | None = None,
    names: dict[str, str] | None = None,
    rank_tol: float = 1e-6,
) -> tuple[Pair, Pair, np.ndarray, np.ndarray, int]:
    """Check every input of :func:`spectral_align` before any work (one line on the first
    fault): float64 copies and the number of components ``k``.

    ``names`` may label the inputs in the messages (keys ``pairs_x``, ``pairs_y``, ``x``,
    ``y``; a feature file's path, say). Without ``k``, it is the smaller numerical rank of the
    two sides' pairs (covariance eigenvalues above ``rank_tol`` times the largest).

    Raises
    ------
    InputError
        Not two halves per side; halves of different shapes; an unpaired set of another width
        than its side's pairs; ``k`` outside ``1..min(d_x, d_y)``; fewer rows than components
        (pairs need more rows than their width, to be whitened; unpaired sets more than ``k``);
        NaN or infinite rows.
    """
    names = {"pairs_x": "x's positive pairs", "pairs_y": "y's positive pairs",
             "x": "unpaired x", "y": "unpaired y", **(names or {})}  # fmt: skip
    halves = {}
    for side, pairs in (("x", pairs_x), ("y", pairs_y)):
        label = names[f"pairs_{side}"]
        if not isinstance(pairs, tuple | list) or len(pairs) != 2:
            raise InputError(f"{label}: expected two halves (a, b), got {type(pairs).__name__}")
        a = np.asarray(pairs[0])
        b = np.asarray(pairs[1])
        if a.shape != b.shape:
            raise InputError(
                f"{label}: the two halves differ in shape, {a.shape} and {b.shape} "
                "(row i of each is one positive pair)"
            )
        halves[side] = (_matrix(a, f"{label} (first halves)"), _matrix(b, f"{label} (second)"))
    ux, uy = _matrix(unpaired_x, names["x"]), _matrix(unpaired_y, names["y"])
    for side, u in (("x", ux), ("y", uy)):
        d = halves[side][0].shape[1]
        if u.shape[1] != d:
            raise InputError(
                f"{names[side]}: {u.shape[1]} columns, but {names[f'pairs_{side}']} have {d}"
            )
    d_x, d_y = ux.shape[1], uy.shape[1]
    kk = min(_rank(*halves["x"], rank_tol), _rank(*halves["y"], rank_tol)) if k is None else k
    if isinstance(kk, bool) or not isinstance(kk, int | np.integer) or not 1 <= kk <= min(d_x, d_y):
        raise InputError(f"k: expected 1 to min(d_x, d_y) = {min(d_x, d_y)} components, got {k!r}")
    kk = int(kk)
    for side, d in (("x", d_x), ("y", d_y)):
        n = len(halves[side][0])
        if n <= d:
            raise InputError(
                f"{names[f'pairs_{side}']}: {n} pairs, fewer rows than components: whitening "
                f"{d} dims needs more than {d} pairs"
            )
    for side, u in (("x", ux), ("y", uy)):
        if len(u) <= kk:
            raise InputError(
                f"{names[side]}: {len(u)} rows, fewer rows than components: needs more "
                f"than k = {kk}"
            )
    return halves["x"], halves["y"], ux, uy, kk


def _rank(a: np.ndarray, b: np.ndarray, tol: float = 1e-6) -> int:
    """Numerical rank of the pairs' union covariance: its eigenvalues above ``tol`` times the
    largest (the whitening's own floor, ``eps``). The default ``k``, so zero-padded columns (a
    JEPA embedding padded to a layer's width) and directions the whitening flattens are not
    taken for components."""
    both = np.concatenate([a, b])
    ev = np.linalg.eigvalsh(np.cov(both, rowvar=False).reshape(a.shape[1], a.shape[1]))
    return max(1, int((ev > tol * max(float(ev.max()), 1e-300)).sum()))


# ----------------------------------------------------------------------------- one side


@dataclass(frozen=True, eq=False)
class SideSpectrum:
    """One modality's whitening and cross-view spectrum, from its own positive pairs.

    Attributes
    ----------
    mean : np.ndarray
        ``(d,)`` mean of the union of the pairs' halves.
    whiten, colour : np.ndarray
        ``(d, d)`` ZCA ``Cov^{-1/2}`` and ``Cov^{1/2}`` of that union.
    eigenvalues : np.ndarray
        ``(d,)`` eigenvalues of ``C = (Z_a^T Z_b + Z_b^T Z_a) / 2n``, descending (the
        pair-kernel eigenvalues ``l_2, l_3, ...`` shrunk by the modality's noise).
    eigenvalue_se : np.ndarray
        ``(top,)`` sampling error of each of the first ``top`` eigenvalues (delta method for
        the generalised eigenproblem ``C_ab v = l C_union v``, so the whitening's own error
        counts: per pair, ``q = <z_a, v><z_b, v> - l (<z_a, v>^2 + <z_b, v>^2) / 2``).
    mixing_se : np.ndarray
        ``(top, top)``: sampling error of the coupling between components ``i`` and ``j``
        (the same statistic off the diagonal). The angle by which sampling rotates ``v_i``
        towards ``v_j`` is about ``mixing_se[i, j] / |l_i - l_j|`` radians.
    vectors : np.ndarray
        ``(d, d)`` eigenvectors as columns, same order (signs as ``eigh`` left them).
    n_pairs : int
        ``n``.
    """

    mean: np.ndarray
    whiten: np.ndarray
    colour: np.ndarray
    eigenvalues: np.ndarray
    eigenvalue_se: np.ndarray
    mixing_se: np.ndarray
    vectors: np.ndarray
    n_pairs: int

    def separation_z(self) -> np.ndarray:
        """``(top, top)``: ``|l_i - l_j| / mixing_se[i, j]``, each pair's gap in sampling
        errors of their coupling (the inverse of the expected mixing angle); ``inf`` on the
        diagonal."""
        ev = self.eigenvalues[: len(self.mixing_se)]
        z = np.abs(ev[:, None] - ev[None, :]) / np.maximum(self.mixing_se, 1e-300)
        np.fill_diagonal(z, np.inf)
        return z


def cross_view_spectrum(
    a: np.ndarray, b: np.ndarray, eps: float = 1e-6, top: int | None = None
) -> SideSpectrum:
    """Whiten one modality's pairs with its own marginal and diagonalise their cross-view
    covariance (see the module). ``a``, ``b``: ``(n, d)`` the two halves of ``n`` pairs;
    ``top``: how many leading components get sampling errors (default all ``d``)."""
    n, d = a.shape
    top = d if top is None else min(top, d)
    both = np.concatenate([a, b])
    mean = both.mean(0)
    white, colour = zca_whitener(both - mean, eps)
    za, zb = (a - mean) @ white, (b - mean) @ white
    c = (za.T @ zb + zb.T @ za) / (2.0 * n)
    ev, vec = np.linalg.eigh(0.5 * (c + c.T))
    order = np.argsort(-ev, kind="stable")
    ev, vec = ev[order], vec[:, order]
    lbar = 0.5 * (ev[:top, None] + ev[None, :top])  # (top, top)
    s1, s2 = np.zeros((top, top)), np.zeros((top, top))
    block = max(256, (1 << 22) // (top * top))
    for lo in range(0, n, block):  # bounded memory: (block, top, top) at a time
        p, q = za[lo : lo + block] @ vec[:, :top], zb[lo : lo + block] @ vec[:, :top]
        cross = 0.5 * (p[:, :, None] * q[:, None, :] + q[:, :, None] * p[:, None, :])
        union = 0.5 * (p[:, :, None] * p[:, None, :] + q[:, :, None] * q[:, None, :])
        r = cross - lbar * union
        s1 += r.sum(0)
        s2 += (r * r).sum(0)
    var = np.maximum(s2 / n - (s1 / n) ** 2, 0.0)
    mixing = np.sqrt(var / n)
    return SideSpectrum(mean, white, colour, ev, np.diag(mixing).copy(), mixing, vec, n)


def eigenspace_clusters(spec: SideSpectrum, k: int, z: float = SEPARATION_Z) -> list[list[int]]:
    """Groups of components the pairs cannot split: the connected components, among the
    first ``top`` (``k``, and the ``(k+1)``-th when it was computed), of "closer than ``z``
    sampling errors of their coupling" (:meth:`SideSpectrum.separation_z`). Only groups of two
    or more that hold one of the top ``k`` are returned, each sorted."""
    close = spec.separation_z() < z  # (top, top)
    top = len(close)
    label = list(range(top))

    def root(i: int) -> int:
        while label[i] != i:
            label[i] = label[label[i]]
            i = label[i]
        return i

    for i in range(top):
        for j in range(i + 1, top):
            if close[i, j]:
                label[root(j)] = root(i)
    groups: dict[int, list[int]] = {}
    for i in range(top):
        groups.setdefault(root(i), []).append(i)
    return [g for g in groups.values() if len(g) > 1 and g[0] < k]


def match_components(sx: SideSpectrum, sy: SideSpectrum, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Match each of X's top ``k`` components to one of Y's first ``m`` (those with sampling
    errors, ``m >= k``), one to one, minimising the eigenvalue differences in sampling errors.

    Returns
    -------
    perm : np.ndarray
        ``(k,)`` int: X component ``i`` is matched to Y component ``perm[i]``.
    z : np.ndarray
        ``(k,)`` ``|l_x,i - l_y,perm[i]| / hypot(se_x,i, se_y,perm[i])``: agreement in sampling
        errors (below :data:`AGREE_Z`: the two eigenvalues agree).
    """
    from scipy.optimize import linear_sum_assignment

    m = len(sy.eigenvalue_se)
    lx, ex = sx.eigenvalues[:k], sx.eigenvalue_se[:k]
    ly, ey = sy.eigenvalues[:m], sy.eigenvalue_se[:m]
    z = np.abs(lx[:, None] - ly[None, :]) / np.maximum(np.hypot(ex[:, None], ey[None, :]), 1e-300)
    # Most agreeing matches first, then the smallest differences: a disagreeing match costs more
    # than any set of k agreeing ones (minimising the plain sum would trade one certain match
    # for two near misses).
    cost = np.where(z < AGREE_Z, z, (k + 1) * AGREE_Z + z)
    rows, cols = linear_sum_assignment(cost)  # (k,) each: rows is 0..k-1 in order
    perm = cols[np.argsort(rows)]
    return perm.astype(np.int64), z[np.arange(k), perm]


# ----------------------------------------------------------------------------- signs


@dataclass(frozen=True, eq=False)
class _Signs:
    sx: np.ndarray  # (k,) +-1: x's columns times sx have positive reference moments
    sy: np.ndarray
    z: np.ndarray  # (k,) confidence on the weaker side, in errors (chained: capped)
    reference: list[str]  # the moment each sign was read from


def _standardise(u: np.ndarray) -> np.ndarray:
    u = u - u.mean(0)
    return u / np.maximum(u.std(0), 1e-300)


def third_moments(g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``T[u, v, w] = E[g_u g_v g_w]`` of standardised columns ``g (n, m)`` and the sampling
    error of each entry (``std`` of the per-row product over ``sqrt(n)``), ``(m, m, m)`` each."""
    n, m = g.shape
    t1, t2 = np.zeros((m, m, m)), np.zeros((m, m, m))
    block = max(256, (1 << 22) // max(m**3, 1))
    for lo in range(0, n, block):
        x = g[lo : lo + block]
        prod = x[:, :, None, None] * x[:, None, :, None] * x[:, None, None, :]
        t1 += prod.sum(0)
        t2 += (prod * prod).sum(0)
    t1 /= n
    return t1, np.sqrt(np.maximum(t2 / n - t1**2, 0.0) / n)


def _mixing_sd(t: np.ndarray, c: tuple[int, int, int], theta: np.ndarray) -> float:
    """Spread of the moment ``T[c]`` that the eigenvectors' own sampling error causes: rotating
    components ``p`` and ``q`` by a small angle changes it by ``d_pq`` per radian; the angles'
    sampling errors are ``theta[p, q]`` (first order, planes independent)."""
    m = len(t)
    lift = np.zeros((m, m))  # lift[r, j]: change of T[c] per unit of g_j added to g_r
    for pos in range(3):
        rest = [c[q] for q in range(3) if q != pos]
        lift[c[pos]] += t[:, rest[0], rest[1]]
    d = lift - lift.T  # (p, q): rotating g_p towards g_q (and g_q away from g_p)
    return float(np.sqrt((np.triu(d * theta, 1) ** 2).sum()))


def sign_references(
    gx: np.ndarray, gy: np.ndarray, theta_x: np.ndarray, theta_y: np.ndarray, k: int
) -> _Signs:
    """Fix each of the top ``k`` components' signs on both sides, by one convention, from
    unpaired marginals.

    ``gx (n_x, m)``, ``gy (n_y, m)``: each side's rows on its first ``m >= k`` eigenvectors
    (same order); ``theta_x``, ``theta_y`` ``(m, m)``: the sampling error, in radians, of the
    angle between each two of them (``1 / separation_z``). For component ``i`` the candidate
    reference moments, all odd in ``g_i``, are ``E[g_i^3]`` (its skew), ``E[g_a^2 g_i]`` for
    every other ``a`` (whatever ``a``'s sign) and ``E[g_a g_b g_i]`` for ``a < b < i`` (with
    ``a``, ``b`` already signed). Each one's error on each side combines its sampling error on
    the unpaired rows and the change that the eigenvectors' own errors would make to it
    (:func:`_mixing_sd`: a moment that a small mixing of two close components would flip is not
    trusted). The candidate strongest on the weaker side is used on both, and each side's column
    is flipped so that moment is positive; a triple product's confidence is capped by those of
    the two signs it leans on. Components beyond :data:`MOMENT_MAX` use their skew alone, with
    its sampling error only.
    """
    gx, gy = _standardise(gx), _standardise(gy)
    m = min(gx.shape[1], MOMENT_MAX)
    tx, ex = third_moments(gx[:, :m])
    ty, ey = third_moments(gy[:, :m])
    thx, thy = theta_x[:m, :m], theta_y[:m, :m]
    sx, sy, zs = np.ones(k), np.ones(k), np.zeros(k)
    refs: list[str] = []

    def z_of(c: tuple[int, int, int]) -> tuple[float, float]:
        zx = tx[c] / max(np.hypot(ex[c], _mixing_sd(tx, c, thx)), 1e-300)
        zy = ty[c] / max(np.hypot(ey[c], _mixing_sd(ty, c, thy)), 1e-300)
        return float(zx), float(zy)

    for i in range(k):
        if i >= m:  # too many components for the moment tensor: the skew, sampling error only
            vx, vy = _skew_z(gx[:, i]), _skew_z(gy[:, i])
            sx[i], sy[i] = np.sign(vx) or 1.0, np.sign(vy) or 1.0
            zs[i] = min(abs(vx), abs(vy))
            refs.append("skew")
            continue
        best = (-1.0, "", 1.0, 1.0)
        for a in range(m):  # E[g_a^2 g_i]; a = i: the skew
            zx, zy = z_of((a, a, i))
            score = min(abs(zx), abs(zy))
            if score > best[0]:
                name = "skew" if a == i else f"E[g{a + 1}^2 g{i + 1}]"
                best = (score, name, np.sign(zx), np.sign(zy))
        for a in range(i):
            for b in range(a + 1, i):
                zx, zy = z_of((a, b, i))
                zx, zy = zx * sx[a] * sx[b], zy * sy[a] * sy[b]
                score = min(abs(zx), abs(zy), zs[a], zs[b])
                if score > best[0]:
                    best = (score, f"E[g{a + 1} g{b + 1} g{i + 1}]", np.sign(zx), np.sign(zy))
        zs[i] = best[0]
        refs.append(best[1])
        sx[i] = -1.0 if best[2] < 0 else 1.0
        sy[i] = -1.0 if best[3] < 0 else 1.0
    return _Signs(sx, sy, zs, refs)


def _skew_z(u: np.ndarray) -> float:
    """``E[u^3]`` of a standardised column in sampling errors."""
    p = u**3
    return float(p.mean() / max(p.std() / np.sqrt(len(p)), 1e-300))


# ----------------------------------------------------------------------------- the result


@dataclass(frozen=True, eq=False)
class SpectralResult:
    """Outcome of :func:`spectral_align` (the map's spaces: see the module).

    Attributes
    ----------
    map : np.ndarray
        ``(d_y, d_x)`` ``W = V_y S V_x^T`` on whitened coordinates: ``z_y ~ z_x W^T``.
    k : int
        Components.
    x, y : SideSpectrum
        Each side's whitening and spectrum.
    signs : np.ndarray
        ``(k,)`` ``S``'s diagonal, ``s_x s_y``.
    sign_z : np.ndarray
        ``(k,)`` confidence of each sign: its reference moment, in sampling errors, on the
        weaker side (>= :data:`SIGN_Z` to count as fixed).
    sign_reference : list of str
        The moment each sign was read from (``skew``, ``E[g2^2 g5]``, ...).
    separation_x, separation_y : np.ndarray
        ``(k,)`` each component's smallest eigenvalue distance to a neighbour (the
        ``(k+1)``-th counts when ``d > k``).
    relative_separation_x, relative_separation_y : np.ndarray
        ``(k,)`` the same in sampling errors of the gap (>= :data:`SEPARATION_Z` to count as
        separated).
    component_pinned : np.ndarray
        ``(k,)`` bool: separated on both sides and its sign fixed.
    pinned : bool
        Every component pinned: the rotation is identified.
    reason : str
        Empty when pinned; else one line naming the components and why.
    assignment : np.ndarray or None
        ``(n_x,)`` int64: unpaired row ``i`` of X matched to row ``assignment[i]`` of Y.
    assignment_method : str
        ``hungarian`` (one to one), ``nearest`` (each X row's nearest Y row) or ``none``.
    accuracy : float or None
        Fraction of X rows matched to their true partner (rows with a known partner), when
        ``truth`` was given.
    info : dict
        Thresholds used, row counts.
    """

    map: np.ndarray
    k: int
    x: SideSpectrum
    y: SideSpectrum
    signs: np.ndarray
    sign_z: np.ndarray
    sign_reference: list[str]
    separation_x: np.ndarray
    separation_y: np.ndarray
    relative_separation_x: np.ndarray
    relative_separation_y: np.ndarray
    component_pinned: np.ndarray
    pinned: bool
    reason: str
    assignment: np.ndarray | None = None
    assignment_method: str = "none"
    accuracy: float | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def eigenvalues_x(self) -> np.ndarray:
        return self.x.eigenvalues[: self.k]

    @property
    def eigenvalues_y(self) -> np.ndarray:
        """Y's eigenvalues of the components matched to X's top ``k``, in X's order."""
        return self.y.eigenvalues[self.match]

    @property
    def match(self) -> np.ndarray:
        """``(k,)`` Y's component matched to each of X's (:func:`match_components`)."""
        return self.info.get("match", np.arange(self.k))

    def components(self, rows: np.ndarray, side: str = "x") -> np.ndarray:
        """Raw rows of ``side`` (``x`` or ``y``) in the common, sign-fixed component
        coordinates ``g`` ``(n, k)``: ``((rows - mean) @ whiten) @ V[:, :k] * s_side``."""
        if side == "x":
            spec, s, cols = self.x, self.info["sx"], np.arange(self.k)
        else:
            spec, s, cols = self.y, self.info["sy"], self.match
        rows = np.asarray(rows, dtype=np.float64)
        if rows.ndim != 2 or rows.shape[1] != len(spec.mean):
            raise InputError(f"expected {side} rows of width {len(spec.mean)}, got {rows.shape}")
        return ((rows - spec.mean) @ spec.whiten) @ spec.vectors[:, cols] * s

    def to_y(self, rows: np.ndarray) -> np.ndarray:
        """Raw ``x`` rows ``(n, d_x)`` mapped into ``y``'s raw feature space ``(n, d_y)``:
        ``((x - m_x) whiten_x) W^T colour_y + m_y``."""
        return self.as_map().transform(rows).astype(np.float64)

    def as_map(self):
        """The map as a fitted :class:`~prh.bridge.procrustes.SemiOrthogonalMap` (rank ``k``;
        an :class:`~prh.bridge.procrustes.OrthogonalMap` when ``k = d_x = d_y``) with
        ``whiten=True``: what :func:`~prh.bridge.procrustes.save_map` writes."""
        from prh.bridge.procrustes import OrthogonalMap, SemiOrthogonalMap

        d_y, d_x = self.map.shape
        if self.k == d_x == d_y:
            m = OrthogonalMap(whiten=True)
        else:
            m = SemiOrthogonalMap(rank=self.k, whiten=True)
        m.load_state_dict({
            "weight": self.map, "mean_x": self.x.mean, "mean_y": self.y.mean,
            "whiten_x": self.x.whiten, "whiten_y": self.y.whiten, "colour_y": self.y.colour,
            "scale": np.array([1.0]),
        })  # fmt: skip
        m.rank_ = self.k
        return m

    def to_dict(self) -> dict[str, Any]:
        """JSON-able summary (no matrices but the assignment)."""
        return {
            "method": "spectral",
            "k": self.k,
            "pinned": self.pinned,
            "reason": self.reason,
            "eigenvalues_x": self.eigenvalues_x.tolist(),
            "eigenvalues_y": self.eigenvalues_y.tolist(),
            "eigenvalue_se_x": self.x.eigenvalue_se[: self.k].tolist(),
            "eigenvalue_se_y": self.y.eigenvalue_se[self.match].tolist(),
            "match_y": [int(j) + 1 for j in self.match],
            "eigenvalue_agreement_z": self.info["agree_z"].tolist(),
            "separation_x": self.separation_x.tolist(),
            "separation_y": self.separation_y.tolist(),
            "relative_separation_x": self.relative_separation_x.tolist(),
            "relative_separation_y": self.relative_separation_y.tolist(),
            "signs": self.signs.astype(int).tolist(),
            "sign_z": self.sign_z.tolist(),
            "sign_reference": list(self.sign_reference),
            "component_pinned": self.component_pinned.tolist(),
            "assignment_method": self.assignment_method,
            "accuracy": self.accuracy,
            "permutation": None if self.assignment is None else self.assignment.tolist(),
            "thresholds": {
                "separation_z": self.info["separation_z"],
                "sign_z": self.info["sign_z"],
                "agree_z": self.info["agree_threshold"],
            },
            "pairs_x": self.x.n_pairs,
            "pairs_y": self.y.n_pairs,
            "pairs_drawn": self.info.get("pairs_drawn"),
            "stopped": self.info.get("stopped"),
        }


# ----------------------------------------------------------------------------- the method


def _angle_se(spec: SideSpectrum) -> np.ndarray:
    """``(top, top)`` sampling error of each mixing angle, ``1 / separation_z``, at most
    ``pi / 2`` (two components that nothing separates can be mixed by any angle; 0 on the
    diagonal)."""
    z = spec.separation_z()
    return np.where(z > 2.0 / np.pi, 1.0 / np.maximum(z, 2.0 / np.pi), np.pi / 2)


def _separation(spec: SideSpectrum, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(k,)`` each component's smallest eigenvalue distance to another of the first ``top``
    and its smallest :meth:`SideSpectrum.separation_z` (``inf`` when it has no neighbour)."""
    ev = spec.eigenvalues[: len(spec.mixing_se)]
    dist = np.abs(ev[:, None] - ev[None, :])
    np.fill_diagonal(dist, np.inf)
    return dist.min(1)[:k], spec.separation_z().min(1)[:k]


def _reason(specs: dict[str, SideSpectrum], sign_z: np.ndarray, k: int, sep_z: float,
            sign_min: float) -> str:  # fmt: skip
    """One line: which eigenspaces cannot be split and which signs cannot be read."""
    parts = []
    for side, spec in specs.items():
        zz = spec.separation_z()
        for group in eigenspace_clusters(spec, k, sep_z):
            shown = ", ".join(f"{spec.eigenvalues[i]:.4f}" for i in group)
            worst = float(zz[np.ix_(group, group)].min())
            names = ", ".join(str(i + 1) if i < k else f"{i + 1} (the first beyond k)"
                              for i in group)  # fmt: skip
            parts.append(
                f"{side} components {names}: eigenvalues {shown} are as close as {worst:.1f} "
                f"sampling errors (need >= {sep_z:g}), so the rotation inside their eigenspace "
                "cannot be pinned"
            )
    weak = [i for i in range(k) if sign_z[i] < sign_min]
    if weak:
        shown = ", ".join(f"{i + 1} (z {sign_z[i]:.1f})" for i in weak)
        parts.append(
            f"the sign of component {shown} is unidentifiable from the unpaired marginals "
            f"(need z >= {sign_min:g})"
        )
    return "cannot pin the rotation: " + "; ".join(parts) if parts else ""


def _matched_separations(sx: SideSpectrum, sy: SideSpectrum, k: int) -> tuple:
    """``(match, agree, (sep_x, rel_x), (sep_y, rel_y))``: the eigenvalue match
    (:func:`match_components`) and each side's separations (:func:`_separation`), Y's at the
    components matched to X's top ``k``."""
    match, agree = match_components(sx, sy, k)
    sep_y, rel_y = (v[match] for v in _separation(sy, len(sy.mixing_se)))
    return match, agree, _separation(sx, k), (sep_y, rel_y)


def _matched_signs(
    sx: SideSpectrum,
    sy: SideSpectrum,
    match: np.ndarray,
    k: int,
    sign_from: str,
    rows_x: tuple[np.ndarray, np.ndarray],
    rows_y: tuple[np.ndarray, np.ndarray],
) -> _Signs:
    """:func:`sign_references` with Y's columns in X's order (the match first, then the rest of
    Y's computed components), on the unpaired rows (and the pairs' first halves unless
    ``sign_from`` is ``unpaired``): ``rows_*`` is ``(unpaired, first halves)``."""
    my = len(sy.mixing_se)
    rest = [j for j in range(my) if j not in set(match.tolist())]
    order_y = np.concatenate([match, np.asarray(rest, dtype=np.int64)])
    m = min(len(sx.mixing_se), len(order_y))
    order_y = order_y[:m]
    sign_x = rows_x[0] if sign_from == "unpaired" else np.concatenate(rows_x)
    sign_y = rows_y[0] if sign_from == "unpaired" else np.concatenate(rows_y)
    proj_x = ((sign_x - sx.mean) @ sx.whiten) @ sx.vectors[:, :m]
    proj_y = ((sign_y - sy.mean) @ sy.whiten) @ sy.vectors[:, order_y]
    theta_x = _angle_se(sx)[:m, :m]
    theta_y = _angle_se(sy)[np.ix_(order_y, order_y)]
    return sign_references(proj_x, proj_y, theta_x, theta_y, k)


def _disagreements(sx: SideSpectrum, sy: SideSpectrum, match: np.ndarray, agree: np.ndarray) -> str:
    """One clause per X component whose matched Y eigenvalue disagrees (``""`` when none)."""
    bad = [i for i in range(len(match)) if agree[i] >= AGREE_Z]
    if not bad:
        return ""
    shown = "; ".join(
        f"x component {i + 1} (eigenvalue {sx.eigenvalues[i]:.4f}) has no partner in y: the "
        f"closest, y component {match[i] + 1} ({sy.eigenvalues[match[i]]:.4f}), is "
        f"{agree[i]:.1f} sampling errors away"
        for i in bad
    )
    return f"{shown} (need < {AGREE_Z:g}: the two modalities do not share that eigenfunction)"


def _join_reasons(reason: str, more: str) -> str:
    if not more:
        return reason
    return f"{reason}; {more}" if reason else f"cannot pin the rotation: {more}"


def spectral_align(
    pairs_x: tuple[np.ndarray, np.ndarray],
    pairs_y: tuple[np.ndarray, np.ndarray],
    unpaired_x: np.ndarray,
    unpaired_y: np.ndarray,
    k: int | None = None,
    *,
    assignment: str = "auto",
    truth: np.ndarray | None = None,
    sign_from: str = "all",
    separation_z: float = SEPARATION_Z,
    sign_z: float = SIGN_Z,
    eps: float = 1e-6,
    seed: int = 0,
    names: dict[str, str] | None = None,
) -> SpectralResult:
    """Pair-free alignment of modality X to Y from each one's own positive pairs (the module).

    Parameters
    ----------
    pairs_x, pairs_y : tuple of np.ndarray
        ``(a, b)``, each ``(n, d)``: row ``i`` of ``a`` and of ``b`` are one positive pair of
        that modality (two observations at the world's lag). No row of X is ever paired with
        a row of Y.
    unpaired_x, unpaired_y : np.ndarray
        ``(n_x, d_x)``, ``(n_y, d_y)``: the sets to align (and the marginals that fix signs).
    k : int, optional
        Components (default: the smaller numerical rank of the two sides' pairs, eigenvalues
        of the covariance above ``eps`` times the largest: ``min(d_x, d_y)`` unless a side has
        constant, zero-padded or collinear columns).
    assignment : str
        ``hungarian`` (one to one; needs ``n_x = n_y``; exact up to 1,024 rows, blocked above),
        ``nearest`` (each X row's nearest Y row), ``none``, or ``auto`` (hungarian when the
        counts agree, else nearest), all in the common component coordinates.
    truth : np.ndarray, optional
        ``(n_x,)`` the true Y row of each X row (``-1``: unknown); gives ``accuracy``.
    sign_from : str
        ``all``: signs from the unpaired rows plus the first halves of the pairs (independent
        draws of the same marginal); ``unpaired``: the unpaired rows only.
    separation_z, sign_z : float
        The pinning thresholds (:data:`SEPARATION_Z`, :data:`SIGN_Z`).
    eps : float
        Relative ridge of the whitening (:func:`prh.linalg.zca_whitener`).
    seed : int
        Seeds the blocked assignment's partitions (nothing else is random).
    names : dict, optional
        Labels of the inputs in error messages (:func:`check_spectral_inputs`).

    Returns
    -------
    SpectralResult

    Raises
    ------
    InputError
        Bad input (:func:`check_spectral_inputs`, an unknown option), before any work.

    Examples
    --------
    >>> from prh.bridge.planted_spectral import planted_features, probe_world
    >>> from prh.bridge.synthetic import random_rotation
    >>> w, rng = probe_world(), np.random.default_rng(0)
    >>> rx, ry = random_rotation(8, rng), random_rotation(8, rng)
    >>> def side(r):
    ...     s, t = w.pairs(20000, rng)
    ...     return (planted_features(w, s, r, 0.1, rng), planted_features(w, t, r, 0.1, rng))
    >>> px, py = side(rx), side(ry)
    >>> ux = planted_features(w, w.states(20000, rng), rx, 0.1, rng)
    >>> uy = planted_features(w, w.states(20000, rng), ry, 0.1, rng)
    >>> res = spectral_align(px, py, ux, uy, assignment="none")
    >>> bool(res.pinned), bool(np.abs(res.map - ry.T @ rx).max() < 0.25)
    (True, True)
    """
    _check_options(assignment, sign_from)
    (ax, bx), (ay, by), ux, uy, k = check_spectral_inputs(
        pairs_x, pairs_y, unpaired_x, unpaired_y, k, names, rank_tol=eps
    )
    truth = _check_assignment(assignment, truth, len(ux), len(uy))
    sx_spec = cross_view_spectrum(ax, bx, eps, top=k + 1)
    sy_spec = cross_view_spectrum(ay, by, eps, top=k + 1)
    match, agree, (sep_x, rel_x), (sep_y, rel_y) = _matched_separations(sx_spec, sy_spec, k)
    signs = _matched_signs(sx_spec, sy_spec, match, k, sign_from, (ux, ax), (uy, ay))
    s = signs.sx * signs.sy
    w = (sy_spec.vectors[:, match] * s) @ sx_spec.vectors[:, :k].T  # (d_y, d_x)
    comp = (rel_x >= separation_z) & (rel_y >= separation_z) & (signs.z >= sign_z)
    comp &= agree < AGREE_Z
    reason = _reason({"x": sx_spec, "y": sy_spec}, signs.z, k, separation_z, sign_z)
    reason = _join_reasons(reason, _disagreements(sx_spec, sy_spec, match, agree))
    info = {"separation_z": separation_z, "sign_z": sign_z, "sign_from": sign_from,
            "sx": signs.sx, "sy": signs.sy, "rows_x": len(ux), "rows_y": len(uy),
            "match": match, "agree_z": agree, "agree_threshold": AGREE_Z}  # fmt: skip
    res = SpectralResult(
        map=w, k=k, x=sx_spec, y=sy_spec, signs=s, sign_z=signs.z,
        sign_reference=signs.reference, separation_x=sep_x, separation_y=sep_y,
        relative_separation_x=rel_x, relative_separation_y=rel_y, component_pinned=comp,
        pinned=bool(comp.all()) and not reason, reason=reason, info=info,
    )  # fmt: skip
    return _assigned(res, ux, uy, assignment, truth, seed)


def _check_options(assignment: str, sign_from: str) -> None:
    if assignment not in ASSIGNMENTS:
        raise InputError(f"assignment {assignment!r}: expected one of {', '.join(ASSIGNMENTS)}")
    if sign_from not in SIGN_SETS:
        raise InputError(f"sign_from {sign_from!r}: expected one of {', '.join(SIGN_SETS)}")


def _check_assignment(
    assignment: str, truth: np.ndarray | None, n_x: int, n_y: int
) -> np.ndarray | None:
    """The assignment's row counts and ``truth`` checked; ``truth`` as a flat integer array."""
    if assignment == "hungarian" and n_x != n_y:
        raise InputError(
            f"a one-to-one (hungarian) assignment needs equal row counts, got {n_x} and "
            f"{n_y} (use nearest)"
        )
    if truth is None:
        return None
    truth = np.asarray(truth).reshape(-1)
    if truth.shape != (n_x,) or not np.issubdtype(truth.dtype, np.integer):
        raise InputError(f"truth: expected ({n_x},) integers, got {truth.shape}")
    if truth.max(initial=-1) >= n_y or truth.min(initial=0) < -1:
        raise InputError(f"truth: entries must be -1 or 0..{n_y - 1}")
    return truth


def _assigned(
    res: SpectralResult,
    ux: np.ndarray,
    uy: np.ndarray,
    assignment: str,
    truth: np.ndarray | None,
    seed: int,
) -> SpectralResult:
    """``res`` with the unpaired rows assigned in the common component coordinates."""
    from dataclasses import replace

    method = assignment
    if method == "auto":
        method = "hungarian" if len(ux) == len(uy) else "nearest"
    if method == "none":
        return res
    gx, gy = res.components(ux, "x"), res.components(uy, "y")
    if method == "hungarian":
        perm = blocked_assignment(gx, gy, seed=seed)
    else:
        perm = nearest_centroid(gx, gy)
    acc = None
    if truth is not None and (truth >= 0).any():
        known = truth >= 0
        acc = float((perm[known] == truth[known]).mean())
    return replace(res, assignment=perm, assignment_method=method, accuracy=acc)


# ----------------------------------------------------------------------------- pairs on demand

MIN_START = 64  # fewest pairs a side the adaptive draw starts from


def spectral_align_until_separated(
    draw_x: Callable[[int, int], Pair],
    draw_y: Callable[[int, int], Pair],
    unpaired_x: np.ndarray,
    unpaired_y: np.ndarray,
    k: int | None = None,
    *,
    start: int = 4096,
    cap: int = 131072,
    **options: Any,
) -> SpectralResult:
    """:func:`spectral_align` with pairs drawn until every one of the top ``k`` components is
    separated on both sides (:data:`SEPARATION_Z` sampling errors of its coupling from every
    other one, the pinning rule's first half), or ``cap`` pairs a side.

    ``draw_x(n, round)`` returns ``n`` new positive pairs of X (independent of earlier rounds:
    seed them by ``round``); the same for Y. Each round doubles the pairs held (the first draws
    ``start``), so the draws cost at most the final count. ``info["pairs_drawn"]`` is that count,
    ``info["rounds"]`` the rounds and ``info["stopped"]`` ``"separated"`` or ``"cap"``; ``options``
    go to :func:`spectral_align`.

    Raises
    ------
    InputError
        ``start`` below :data:`MIN_START` or ``cap`` below ``start`` (before any draw).
    """
    if not (isinstance(start, int) and isinstance(cap, int) and MIN_START <= start <= cap):
        raise InputError(
            f"spectral pairs: expected {MIN_START} <= start <= cap, got start {start!r}, cap "
            f"{cap!r} (the method needs more pairs than components to whiten a side)"
        )
    sep_z = float(options.get("separation_z", SEPARATION_Z))
    eps = float(options.get("eps", 1e-6))
    held_x: list[Pair] = []
    held_y: list[Pair] = []
    n, rnd = 0, 0
    while True:
        want = start if n == 0 else min(n, cap - n)  # double, never past the cap
        held_x.append(draw_x(want, rnd))
        held_y.append(draw_y(want, rnd))
        n, rnd = n + want, rnd + 1
        px = (np.concatenate([h[0] for h in held_x]), np.concatenate([h[1] for h in held_x]))
        py = (np.concatenate([h[0] for h in held_y]), np.concatenate([h[1] for h in held_y]))
        # the stopping rule needs the two spectra only; signs and the assignment once, at the end
        px, py, _, _, kk = check_spectral_inputs(px, py, unpaired_x, unpaired_y, k,
                                                 options.get("names"), rank_tol=eps)  # fmt: skip
        sx = cross_view_spectrum(*px, eps, top=kk + 1)
        sy = cross_view_spectrum(*py, eps, top=kk + 1)
        _, _, (_, rel_x), (_, rel_y) = _matched_separations(sx, sy, kk)
        separated = bool(np.all(rel_x >= sep_z) and np.all(rel_y >= sep_z))
        if separated or n >= cap:
            res = spectral_align(px, py, unpaired_x, unpaired_y, k, **options)
            res.info.update(pairs_drawn=n, rounds=rnd, stopped="separated" if separated else "cap")
            return res
