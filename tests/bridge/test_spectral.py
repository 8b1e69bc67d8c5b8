"""Spectral pair-free alignment against planted rotations on real reversible chains.

Every check compares with the obviously correct reference, the planted map: features of
modality m are ``g*(s) R_m + noise`` (rows), so in whitened coordinates ``z_y = z_x R_x^T R_y``
and the true map is ``W = R_y^T R_x``.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from prh.bridge import spectral as spectral_module
from prh.bridge.planted_spectral import planted_features, probe_world, twin_world
from prh.bridge.procrustes import OrthogonalMap, load_map, save_map
from prh.bridge.spectral import SEPARATION_Z, check_spectral_inputs, spectral_align
from prh.bridge.synthetic import random_rotation
from prh.errors import InputError


@pytest.fixture(scope="module")
def probe():
    return probe_world()


def draw(world, n, seed, noise=0.1, unpaired=None, extra_dims=0):
    """Both modalities' own positive pairs and unpaired sets, and the true map."""
    rng = np.random.default_rng(seed)
    k = world.k
    rx, ry = random_rotation(k, rng), random_rotation(k, rng)

    def feats(states, r):
        f = planted_features(world, states, r, noise, rng)
        if extra_dims:  # private dimensions no positive pair shares
            f = np.hstack([f, rng.standard_normal((len(f), extra_dims))])
        return f

    def side(r):
        s, t = world.pairs(n, rng)
        return feats(s, r), feats(t, r)

    px, py = side(rx), side(ry)
    if unpaired is None:
        ux, uy = feats(world.states(n, rng), rx), feats(world.states(n, rng), ry)
        truth = None
    else:  # the same distinct states seen by both modalities, Y's rows shuffled
        states = rng.choice(world.num_states, unpaired, replace=False)
        truth = rng.permutation(unpaired)
        ux = feats(states, rx)
        uy = np.empty_like(ux)
        uy[truth] = feats(states, ry)
    return px, py, ux, uy, ry.T @ rx, truth


def rel_error(res, true):
    w = res.map[: true.shape[0], : true.shape[1]]
    return float(np.linalg.norm(w - true) / np.linalg.norm(true))


def test_recovered_rotation_converges_to_the_planted_one_as_pairs_grow(probe):
    errors = {}
    for n in (2000, 8000, 32000):
        px, py, ux, uy, true, _ = draw(probe, n, seed=n)
        res = spectral_align(px, py, ux, uy, assignment="none")
        errors[n] = rel_error(res, true)
        if n == 32000:
            assert res.pinned and res.reason == "", res.reason
            assert res.component_pinned.all()
            assert np.allclose(res.map @ res.map.T, np.eye(8), atol=1e-10)  # orthogonal
            # the eigenvalues are the planted ones shrunk by the noise (signal 1 / 1.01)
            assert np.allclose(res.eigenvalues_x, probe.eigenvalues[:8] / 1.01, atol=0.03)
    assert errors[32000] < 0.2, errors
    assert errors[2000] > 2 * errors[32000], errors
    assert errors[8000] > errors[32000], errors


def test_few_pairs_are_reported_as_not_pinned(probe):
    px, py, ux, uy, _, _ = draw(probe, 2000, seed=2)
    res = spectral_align(px, py, ux, uy, assignment="none")
    assert not res.pinned
    assert res.reason.startswith("cannot pin the rotation: ")
    assert "sampling errors (need >= 8)" in res.reason
    assert (res.relative_separation_x < SEPARATION_Z).any()


@pytest.mark.slow
def test_error_grows_as_separation_shrinks(probe):
    """Walks 33 times slower (rate_scale 0.03) put the top eigenvalues 0.0015 apart instead
    of 0.033. Near 1 the sampling error shrinks with ``1 - l`` as well (a milder slow-down,
    0.3, costs almost nothing; docs/benchmarks.md), down to the floor the feature noise sets;
    at 0.03 the gap is below it: at the same 32k pairs the map is further from the truth and
    is flagged, with a smaller relative separation."""
    slow = probe_world(rate_scale=0.03)
    assert slow.separation() < 0.1 * probe.separation()
    runs = {}
    for name, world in (("fast", probe), ("slow", slow)):
        runs[name] = []
        for seed in (0, 1):
            *args, true, _ = draw(world, 32000, seed)
            runs[name].append((spectral_align(*args, assignment="none"), true))
    err = {name: np.mean([rel_error(r, t) for r, t in rs]) for name, rs in runs.items()}
    weakest = {  # each run's least separated component, on either side
        name: np.mean(
            [min(r.relative_separation_x.min(), r.relative_separation_y.min()) for r, _ in rs]
        )
        for name, rs in runs.items()
    }
    assert err["slow"] > 1.8 * err["fast"], err
    assert weakest["slow"] < 0.5 * weakest["fast"], weakest
    assert all(r.pinned for r, _ in runs["fast"])
    assert not any(r.pinned for r, _ in runs["slow"])


@pytest.mark.parametrize("n, draws", [(3000, 16), (60000, 6)])
def test_equal_eigenvalues_are_flagged_every_time(n, draws):
    """Two identical factors: l_1 = l_2 exactly. Every draw, at few pairs or many, says so."""
    world = twin_world()
    assert world.eigenvalues[0] == pytest.approx(world.eigenvalues[1], abs=1e-12)
    for seed in range(draws):
        *args, _, _ = draw(world, n, seed)
        res = spectral_align(*args, assignment="none")
        assert not res.pinned
        assert not res.component_pinned[:2].any()
        assert "x components 1, 2: eigenvalues" in res.reason
        assert "y components 1, 2: eigenvalues" in res.reason
        assert "cannot be pinned" in res.reason
        if n == 60000:  # the distinct third eigenvalue is still resolved
            assert res.component_pinned[2]


def test_the_still_world_pins_nothing():
    """Same-state views (lag 0): the pair kernel is the identity, every eigenvalue equal."""
    rng = np.random.default_rng(3)
    states = rng.gamma(2.0, size=(400, 6))  # skewed per-state features: signs would be readable
    states -= states.mean(0)
    evals, evecs = np.linalg.eigh(states.T @ states / 400)
    states = states @ evecs / np.sqrt(evals)  # white under the uniform law: T_Pi = I exactly

    def side():
        s = rng.integers(0, 400, 20000)
        return states[s] + 0.3 * rng.standard_normal((20000, 6)), states[s] + 0.3 * (
            rng.standard_normal((20000, 6))
        )

    ux = states[rng.integers(0, 400, 5000)] + 0.3 * rng.standard_normal((5000, 6))
    uy = states[rng.integers(0, 400, 5000)] + 0.3 * rng.standard_normal((5000, 6))
    res = spectral_align(side(), side(), ux, uy, assignment="none")
    assert not res.pinned and not res.component_pinned.any()
    assert "x components 1, 2, 3, 4, 5, 6:" in res.reason


def test_assignment_through_the_map_matches_the_true_map(probe):
    px, py, ux, uy, true, truth = draw(probe, 32000, seed=5, unpaired=300)
    res = spectral_align(px, py, ux, uy, truth=truth)
    assert res.assignment_method == "hungarian"
    assert sorted(res.assignment.tolist()) == list(range(300))
    # reference: the same Hungarian matching through the planted map
    zx = (ux - res.x.mean) @ res.x.whiten
    zy = (uy - res.y.mean) @ res.y.whiten
    a = zx @ true.T
    cost = (a**2).sum(1)[:, None] + (zy**2).sum(1)[None, :] - 2 * a @ zy.T
    ref = float((linear_sum_assignment(cost)[1] == truth).mean())
    assert ref > 0.3  # the reference itself is far from chance (1/300)
    assert res.accuracy >= 0.9 * ref, (res.accuracy, ref)
    near = spectral_align(px, py, ux, uy, truth=truth, assignment="nearest")
    assert near.assignment_method == "nearest" and 0.5 * ref < near.accuracy <= 1.0


def test_map_spaces_and_the_saved_map(probe, tmp_path):
    px, py, ux, uy, _, _ = draw(probe, 8000, seed=7, extra_dims=2)  # d = 10, k = 8
    res = spectral_align(px, py, ux, uy, k=8, assignment="none")
    assert res.map.shape == (10, 10)
    assert np.allclose(res.map @ res.map.T @ res.map, res.map, atol=1e-10)  # partial isometry
    assert np.linalg.matrix_rank(res.map) == 8
    y_hat = res.to_y(ux[:50])
    # to_y lands in Y's raw space at the same component coordinates as X's rows
    assert np.allclose(res.components(y_hat, "y"), res.components(ux[:50], "x"), atol=1e-5)
    m = res.as_map()
    assert m.kind == "semi-orthogonal" and m.rank == 8
    save_map(tmp_path / "m.safetensors", m)
    back, _ = load_map(tmp_path / "m.safetensors")
    assert np.allclose(back.transform(ux[:50]), y_hat, atol=1e-5)
    full = spectral_align(px, py, ux, uy, k=10, assignment="none").as_map()
    assert isinstance(full, OrthogonalMap)


def test_same_seed_same_result(probe):
    a = spectral_align(*draw(probe, 4000, seed=11, unpaired=200)[:4], seed=3)
    b = spectral_align(*draw(probe, 4000, seed=11, unpaired=200)[:4], seed=3)
    assert np.array_equal(a.map, b.map)
    assert np.array_equal(a.assignment, b.assignment)
    assert a.to_dict() == b.to_dict()
    c = spectral_align(*draw(probe, 4000, seed=12, unpaired=200)[:4], seed=3)
    assert not np.array_equal(a.map, c.map)


def test_to_dict_is_json_ready(probe):
    import json

    res = spectral_align(*draw(probe, 4000, seed=1, unpaired=100)[:4])
    out = json.loads(json.dumps(res.to_dict()))
    assert out["method"] == "spectral" and out["k"] == 8 and len(out["eigenvalues_x"]) == 8
    assert out["thresholds"] == {"separation_z": 8.0, "sign_z": 3.0, "agree_z": 4.0}
    assert out["match_y"] == list(range(1, 9)) and len(out["eigenvalue_agreement_z"]) == 8
    assert len(out["permutation"]) == 100 and isinstance(out["pinned"], bool)


def _ok(n=50, d=4, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)), rng.standard_normal((n, d))


BAD = {
    "halves differ in shape": (
        lambda: ((_ok()[0], _ok()[1][:40]), _ok(), _ok()[0], _ok()[1]),
        r"x's positive pairs: the two halves differ in shape, \(50, 4\) and \(40, 4\)",
    ),
    "halves differ in width": (
        lambda: (_ok(), (_ok()[0], _ok(d=5)[1]), _ok()[0], _ok()[1]),
        r"y's positive pairs: the two halves differ in shape",
    ),
    "unpaired set of another width": (
        lambda: (_ok(), _ok(), _ok(d=3)[0], _ok()[1]),
        r"unpaired x: 3 columns, but x's positive pairs have 4",
    ),
    "fewer pairs than components": (
        lambda: (_ok(n=4), _ok(), _ok()[0], _ok()[1]),
        r"x's positive pairs: 4 pairs, fewer rows than components",
    ),
    "fewer unpaired rows than components": (
        lambda: (_ok(), _ok(), _ok()[0], _ok(n=3)[1]),
        r"unpaired y: 3 rows, fewer rows than components",
    ),
    "NaN row in a pair": (
        lambda: (
            _ok(),
            (_ok()[0], np.where(np.arange(50)[:, None] == 7, np.nan, _ok()[1])),
            _ok()[0],
            _ok()[1],
        ),
        r"y's positive pairs \(second\): 1 rows hold NaN or infinite values \(first: row 7\)",
    ),
    "NaN row unpaired": (
        lambda: (_ok(), _ok(), np.where(np.arange(50)[:, None] == 3, np.inf, _ok()[0]), _ok()[1]),
        r"unpaired x: 1 rows hold NaN or infinite .*row 3",
    ),
    "one half only": (
        lambda: ((_ok()[0],), _ok(), _ok()[0], _ok()[1]),
        r"x's positive pairs: expected two halves",
    ),
    "not a matrix": (
        lambda: (_ok(), _ok(), np.zeros(50), _ok()[1]),
        r"unpaired x: expected a \(rows, dims\) matrix",
    ),
}


@pytest.mark.parametrize("make, match", BAD.values(), ids=BAD.keys())
def test_bad_input_is_refused_before_any_work(monkeypatch, make, match):
    def no_work(*a, **kw):
        raise AssertionError("work started before the input was checked")

    monkeypatch.setattr(spectral_module, "cross_view_spectrum", no_work)
    with pytest.raises(InputError, match=match):
        spectral_align(*make())


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"k": 0}, r"k: expected 1 to min\(d_x, d_y\) = 4 components, got 0"),
        ({"k": 5}, r"got 5"),
        ({"assignment": "greedy"}, r"assignment 'greedy': expected one of auto, hungarian"),
        ({"sign_from": "pairs"}, r"sign_from 'pairs'"),
        ({"truth": np.arange(10)}, r"truth: expected \(50,\) integers"),
    ],
)
def test_bad_options_are_refused(monkeypatch, kw, match):
    monkeypatch.setattr(spectral_module, "cross_view_spectrum", None)
    with pytest.raises(InputError, match=match):
        spectral_align(_ok(), _ok(), _ok()[0], _ok()[1], **kw)


def test_hungarian_needs_equal_counts():
    with pytest.raises(InputError, match=r"equal row counts, got 50 and 30 \(use nearest\)"):
        spectral_align(_ok(), _ok(), _ok()[0], _ok(n=30)[1], assignment="hungarian")


def test_names_label_the_messages():
    with pytest.raises(InputError, match=r"^a\.safetensors: 3 columns"):
        check_spectral_inputs(_ok(), _ok(), _ok(d=3)[0], _ok()[1], names={"x": "a.safetensors"})


def test_default_k_skips_zero_padded_columns(probe):
    """A JEPA embedding zero-padded to a layer's width (what `prh embed` stores as the last
    layer): the default k is its own width, and the map matches the unpadded one."""
    px, py, ux, uy, true, _ = draw(probe, 32000, seed=9)

    def pad(a):
        return np.hstack([a, np.zeros((len(a), 4))])

    padded = spectral_align(tuple(map(pad, px)), tuple(map(pad, py)), pad(ux), pad(uy),
                            assignment="none")  # fmt: skip
    plain = spectral_align(px, py, ux, uy, assignment="none")
    assert padded.k == 8 and padded.pinned and rel_error(padded, true) < 0.2
    assert np.allclose(padded.map[:8, :8], plain.map, atol=1e-6)
    assert np.abs(padded.map[8:]).max() < 1e-9 and np.abs(padded.map[:, 8:]).max() < 1e-9


def test_mixing_angles_match_their_predicted_sampling_error(probe):
    """The pinning rule rests on ``1 / separation_z``, the predicted angle by which sampling
    mixes two eigenvectors. Against the planted eigenvectors (the columns of ``R_x^T``) the
    actual mixing has about that size: RMS ratio near 1 (0.98 over these 5 draws), not 3x
    off either way."""
    ratios = []
    for seed in range(5):
        rng = np.random.default_rng([seed, 77])
        r = random_rotation(8, rng)
        s, t = probe.pairs(32000, rng)
        spec = spectral_module.cross_view_spectrum(
            planted_features(probe, s, r, 0.1, rng), planted_features(probe, t, r, 0.1, rng), top=8
        )
        overlap = spec.vectors[:, :8].T @ r.T  # (estimated i, planted j): ~ angle off the diagonal
        iu = np.triu_indices(8, 1)
        ratios.append(np.abs(overlap[iu]) * spec.separation_z()[iu])
    rms = float(np.sqrt(np.mean(np.concatenate(ratios) ** 2)))
    assert 0.6 < rms < 1.6, rms


def test_null_components_give_no_nan(probe):
    """k asked beyond the data's rank: two zero-padded columns inside the top k + 1 (equal
    eigenvalues 0 with no sampling error at all). Every figure stays finite, they are reported
    as not pinned, and the other components' map is the unpadded one."""
    import warnings

    px, py, ux, uy, _, _ = draw(probe, 8000, seed=13)

    def pad(a):
        return np.hstack([a, np.zeros((len(a), 2))])

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a divide by zero or a NaN would raise here
        res = spectral_align(tuple(map(pad, px)), tuple(map(pad, py)), pad(ux), pad(uy), k=9,
                             assignment="none")  # fmt: skip
    plain = spectral_align(px, py, ux, uy, assignment="none")
    assert np.isfinite(res.sign_z).all() and not res.pinned
    assert "components 9, 10 (the first beyond k)" in res.reason
    assert np.allclose(res.map[:8, :8], plain.map, atol=1e-6)


def test_components_are_matched_by_eigenvalue_when_the_modalities_ranks_differ(probe):
    # Y's view of g3 is blurred (extra noise on that eigenfunction only): its eigenvalue falls
    # from 0.67 to about 0.67 / 2.3 = 0.29, below g8's, so Y's rank order is g1 g2 g4 .. g8 g3.
    # Rank pairing would map X's g3 onto Y's g4 and so on; matching by eigenvalue pairs g4..g8
    # with themselves, finds no partner for g3 (its two eigenvalues disagree) and does not call
    # the rotation pinned.
    rng = np.random.default_rng(5)
    rx, ry = random_rotation(8, rng), random_rotation(8, rng)
    blur = np.ones(8)
    blur[2] = np.sqrt(2.3)  # g3 seen with extra noise of variance 1.3 (its own is 1)

    def feats(states, r, blurred):
        g = probe.embedding[np.asarray(states)]
        if blurred:
            g = g + rng.standard_normal(g.shape) * np.sqrt(blur**2 - 1)
        return g @ r + 0.1 * rng.standard_normal(g.shape)

    def side(r, blurred):
        a, b = probe.pairs(40000, rng)
        return feats(a, r, blurred), feats(b, r, blurred)

    states = rng.choice(probe.num_states, 300, replace=False)
    px, py = side(rx, False), side(ry, True)
    ux, uy = feats(states, rx, False), feats(states, ry, True)
    res = spectral_align(px, py, ux, uy, k=8, assignment="none")
    assert res.y.eigenvalues[7] < res.y.eigenvalues[6]  # sorted
    assert res.match.tolist() == [0, 1, 7, 2, 3, 4, 5, 6]  # g3 is Y's 8th by rank
    agree = np.asarray(res.to_dict()["eigenvalue_agreement_z"])
    assert agree[2] > 10 and np.all(np.delete(agree, 2) < 4)
    assert not res.pinned and not res.component_pinned[2]
    assert "x component 3" in res.reason and "no partner" in res.reason
    # on the shared components the matched map is the planted one: each matched pair of
    # sign-fixed components correlates ~1 (g3's pair is weaker: Y sees it through noise)
    gx, gy = res.components(ux, "x"), res.components(uy, "y")
    corr = np.array([np.corrcoef(gx[:, i], gy[:, i])[0, 1] for i in range(8)])
    assert np.all(np.delete(corr, 2) > 0.95), corr
    # the rank pairing the method used before: X's g4 against Y's rank-4 component (g5)
    zy = ((uy - res.y.mean) @ res.y.whiten) @ res.y.vectors[:, :8]
    assert abs(np.corrcoef(gx[:, 3], zy[:, 3])[0, 1]) < 0.5


def _drawer(world, rotation, seed):
    def draw(n, rnd):
        rng = np.random.default_rng([seed, rnd])
        s, t = world.pairs(n, rng)
        return (planted_features(world, s, rotation, 0.1, rng),
                planted_features(world, t, rotation, 0.1, rng))  # fmt: skip

    return draw


def test_pairs_are_drawn_until_every_component_is_separated_or_the_cap(probe):
    from prh.bridge.spectral import spectral_align_until_separated

    rng = np.random.default_rng(0)
    rx, ry = random_rotation(8, rng), random_rotation(8, rng)
    ux = planted_features(probe, probe.states(300, rng), rx, 0.1, rng)
    uy = planted_features(probe, probe.states(300, rng), ry, 0.1, rng)
    res = spectral_align_until_separated(_drawer(probe, rx, 1), _drawer(probe, ry, 2), ux, uy,
                                         start=1024, cap=262144, assignment="none")  # fmt: skip
    n = res.info["pairs_drawn"]
    assert res.info["stopped"] == "separated" and n == 1024 * 2 ** (res.info["rounds"] - 1)
    assert 2048 <= n < 262144 and res.x.n_pairs == res.y.n_pairs == n
    assert np.all(res.relative_separation_x >= SEPARATION_Z)
    assert np.all(res.relative_separation_y >= SEPARATION_Z)
    # one round fewer was not enough: the rule decided when to stop
    half = spectral_align_until_separated(_drawer(probe, rx, 1), _drawer(probe, ry, 2), ux, uy,
                                          start=1024, cap=n // 2, assignment="none")  # fmt: skip
    assert half.info["stopped"] == "cap" and half.info["pairs_drawn"] == n // 2
    # equal eigenvalues never separate: the cap stops it, and says so
    twin = twin_world()
    r3 = random_rotation(3, rng)
    tu = planted_features(twin, twin.states(200, rng), r3, 0.1, rng)
    t = spectral_align_until_separated(_drawer(twin, r3, 3), _drawer(twin, r3, 4), tu, tu, k=3,
                                       start=512, cap=4096, assignment="none")  # fmt: skip
    assert t.info["stopped"] == "cap" and t.info["pairs_drawn"] == 4096 and not t.pinned
    assert res.to_dict()["pairs_drawn"] == n
    with pytest.raises(InputError, match="start <= cap"):
        spectral_align_until_separated(_drawer(probe, rx, 1), _drawer(probe, ry, 2), ux, uy,
                                       start=1024, cap=512)  # fmt: skip
    with pytest.raises(InputError, match="start <= cap"):
        spectral_align_until_separated(_drawer(probe, rx, 1), _drawer(probe, ry, 2), ux, uy,
                                       start=8, cap=512)  # fmt: skip
