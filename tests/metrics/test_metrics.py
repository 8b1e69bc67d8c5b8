"""Every metric against a slow reference; invariances; orderings; determinism."""

import _metric_reference as ref
import numpy as np
import pytest

from prh.errors import InputError
from prh.metrics import (
    cka,
    cknna,
    cycle_knn,
    edit_distance_knn,
    lcs_knn,
    mutual_knn,
    svcca,
    unbiased_cka,
)
from prh.metrics.kernel import cka_from_sides, kernel_side


def paired(n=60, d=8, noise=0.7, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, d)).astype(np.float32)
    b = (a @ rng.standard_normal((d, d + 3)) + noise * rng.standard_normal((n, d + 3))).astype(
        np.float32
    )
    return a, b


def rotated(a, seed=1):
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((a.shape[1], a.shape[1])))
    return (a.astype(np.float64) @ q).astype(np.float32)


@pytest.mark.parametrize(
    ("fn", "reference"),
    [
        (mutual_knn, ref.mutual_knn),
        (cycle_knn, ref.cycle_knn),
        (lcs_knn, ref.lcs_knn),
        (edit_distance_knn, ref.edit_distance_knn),
    ],
)
@pytest.mark.parametrize("seed", [0, 1])
def test_knn_metrics_match_reference(fn, reference, seed):
    a, b = paired(seed=seed)
    assert fn(a, b, k=5) == pytest.approx(reference(a, b, 5), abs=1e-12)


@pytest.mark.parametrize("kind", ["linear", "rbf"])
@pytest.mark.parametrize("unbiased", [False, True])
def test_cka_matches_dense_reference(kind, unbiased):
    a, b = paired(n=40)
    got = cka(a, b, kernel=kind, sigma=2.0, unbiased=unbiased)
    assert got == pytest.approx(ref.cka(a, b, kind, 2.0, unbiased), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("kind", ["linear", "rbf"])
def test_cka_large_n_path_matches_gram_path(kind, monkeypatch):
    import prh.metrics.kernel as kernel

    a, b = paired(n=50)
    perm = np.random.default_rng(0).permutation(50)
    small = [cka_from_sides(kernel_side(a, kind), kernel_side(b, kind), p) for p in (None, perm)]
    monkeypatch.setattr(kernel, "_GRAM_CACHE_MAX_N", 10)
    monkeypatch.setattr(kernel, "_BLOCK", 7)
    big = [cka_from_sides(kernel_side(a, kind), kernel_side(b, kind), p) for p in (None, perm)]
    assert big == pytest.approx(small, rel=1e-10)
    assert small[1] == pytest.approx(ref.cka(a, b[perm], kind, 1.0), rel=1e-9)


def test_cknna_matches_dense_reference():
    a, b = paired(n=50)
    a, b = ref.unit(a).astype(np.float32), ref.unit(b).astype(np.float32)
    assert cknna(a, b, k=6) == pytest.approx(ref.cknna(a, b, 6), rel=1e-6)


def test_svcca_matches_classical_cca():
    a, b = paired(n=80, d=12)
    assert svcca(a, b, dim=5) == pytest.approx(ref.svcca(a, b, 5), rel=1e-8)


def test_rotated_copy_scores_one():
    a, _ = paired(n=80, d=10)
    r = rotated(a)
    assert mutual_knn(a, r, k=5) == 1.0
    assert lcs_knn(a, r, k=5) == 1.0
    assert cka(a, r) == pytest.approx(1.0, abs=1e-9)
    assert unbiased_cka(a, r) == pytest.approx(1.0, abs=1e-9)
    assert svcca(a, r, dim=10) == pytest.approx(1.0, abs=1e-9)  # all directions: span equal


def test_cka_invariant_to_isotropic_scaling():
    a, b = paired()
    assert cka(a, 7.5 * b) == pytest.approx(cka(a, b), rel=1e-6)  # float32 rounding of 7.5 b
    assert unbiased_cka(0.01 * a, b) == pytest.approx(unbiased_cka(a, b), rel=1e-6)


@pytest.mark.parametrize(
    "fn", [mutual_knn, cycle_knn, lcs_knn, edit_distance_knn, cka, unbiased_cka, cknna, svcca]
)
def test_paired_beats_shuffled(fn):
    a, b = paired(n=120, noise=0.5, seed=2)
    shuffled = b[np.random.default_rng(9).permutation(len(b))]
    kw = {"dim": 4} if fn is svcca else {"k": 5} if fn not in (cka, unbiased_cka) else {}
    assert fn(a, b, **kw) > fn(a, shuffled, **kw) + 0.05


def test_metric_argument_errors():
    a, b = paired(n=10)
    with pytest.raises(InputError, match="CKNNA needs k >= 2"):
        cknna(a, b, k=1)
    with pytest.raises(InputError, match="SVCCA dim"):
        svcca(a, b, dim=20)
    with pytest.raises(InputError, match="unknown CKA kernel"):
        cka(a, b, kernel="poly")
    with pytest.raises(InputError, match="N >= 4"):
        unbiased_cka(a[:3], b[:3])


@pytest.mark.parametrize("unbiased", [False, True])
def test_cka_of_features_that_vary_little_around_a_large_mean_is_defined(unbiased):
    """Columns varying by 1e-3 around 0.8 (a LayerNorm'd block: the centred kernel is ~1e-12 of
    the raw one) carry real signal: CKA equals that of the same features centred first, where
    nothing cancels; exactly constant features stay undefined."""
    rng = np.random.default_rng(0)
    z = rng.standard_normal((120, 6))
    a = (0.8 + 1e-3 * z @ rng.standard_normal((6, 32))).astype(np.float32)
    b = z @ rng.standard_normal((6, 16)) + 0.3 * rng.standard_normal((120, 16))
    centred = a.astype(np.float64) - a.astype(np.float64).mean(0)
    want = cka(centred, b, unbiased=unbiased)
    assert want > 0.5  # one latent on both sides
    assert cka(a, b, unbiased=unbiased) == pytest.approx(want, rel=1e-3)
    const = np.full((120, 32), 0.8, dtype=np.float32)
    assert np.isnan(cka(const, b, unbiased=unbiased))
