"""prh.linalg: the one row normalisation, ZCA whitener and Procrustes rotation, against the
copies they replaced and against planted answers."""

from __future__ import annotations

import numpy as np
import pytest

from prh.caption.condition import ConditionNormalizer
from prh.errors import InputError
from prh.linalg import l2_normalize, procrustes_rotation, zca_whitener
from prh.theory.jepa import whiten


def test_l2_normalize_gives_unit_rows_in_the_asked_precision() -> None:
    x = np.random.default_rng(0).standard_normal((50, 7)) * 10
    for dtype in (np.float32, np.float64):
        out = l2_normalize(x, dtype=dtype)
        assert out.dtype == dtype
        np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-6)


def test_l2_normalize_float64_equals_the_caption_copy_bitwise() -> None:
    """Reference: the condition space's own copy (float64, norm floored at 1e-12)."""
    x = np.random.default_rng(1).standard_normal((40, 5))
    old = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    np.testing.assert_array_equal(l2_normalize(x, dtype=np.float64), old)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_l2_normalize_refuses_a_zero_row(dtype) -> None:
    """A zero row has no direction: refused (one copy silently kept it at zero, whose cosine
    with everything is 0 and hides a collapsed embedding)."""
    x = np.ones((4, 3))
    x[2] = 0.0
    with pytest.raises(InputError, match="row 2 is all zeros"):
        l2_normalize(x, "feats.npy", dtype=dtype)


def test_condition_normalizer_refuses_an_embedding_at_the_mean() -> None:
    y = np.random.default_rng(2).standard_normal((30, 4))
    norm = ConditionNormalizer().fit(y)
    with pytest.raises(InputError, match="embeddings: row 1 is all zeros"):
        norm.transform(np.stack([y[0], norm.mean_]))


def test_zca_whitener_equals_the_condition_normalizers_old_copy() -> None:
    y = np.random.default_rng(3).standard_normal((60, 5)) @ np.diag([3.0, 1.0, 0.5, 0.1, 2.0])
    yc = y - y.mean(0)
    cov = yc.T @ yc / (len(y) - 1)
    evals, evecs = np.linalg.eigh(cov)
    evals = np.clip(evals, 0.0, None) + 1e-4 * max(float(evals.max()), 1e-30)
    old = (evecs / np.sqrt(evals)) @ evecs.T
    white, colour = zca_whitener(yc, 1e-4)
    np.testing.assert_array_equal(white, old)
    np.testing.assert_allclose(colour @ white, np.eye(5), atol=1e-10)
    np.testing.assert_array_equal(ConditionNormalizer().fit(y).whiten_, old)


def test_procrustes_rotation_recovers_a_planted_rotation_and_equals_the_theorys_copy() -> None:
    rng = np.random.default_rng(4)
    a = rng.standard_normal((30, 4))
    q, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    np.testing.assert_allclose(procrustes_rotation(a, a @ q.T), q, atol=1e-12)
    b = rng.standard_normal((30, 4))
    u, _, vt = np.linalg.svd(a.T @ b)  # the theory's copy: argmax_Q tr(Q^T A^T B) = U V^T
    np.testing.assert_allclose(procrustes_rotation(a, b).T, u @ vt, atol=1e-12)


def test_weighted_whiten_is_white_and_drops_null_directions_on_request() -> None:
    rng = np.random.default_rng(5)
    w = rng.random(25)
    F = rng.standard_normal((25, 3))
    Fw = whiten(F, w)
    p = w / w.sum()
    np.testing.assert_allclose(p @ Fw, 0.0, atol=1e-12)
    np.testing.assert_allclose(Fw.T @ (p[:, None] * Fw), np.eye(3), atol=1e-10)
    stack = whiten(np.stack([F, 2 * F + 1]), w)  # a stack of tables at once
    np.testing.assert_allclose(stack[0], Fw, atol=1e-12)
    np.testing.assert_allclose(stack[1], Fw, atol=1e-10)  # affine invariance
    G = np.column_stack([F[:, 0], F[:, 0], F[:, 1]])  # rank 2
    with pytest.raises(InputError, match="singular"):
        whiten(G, w)
    Gw = whiten(G, w, drop_singular=True, rtol=1e-9)
    cov = Gw.T @ (p[:, None] * Gw)
    np.testing.assert_allclose(np.sort(np.linalg.eigvalsh(cov)), [0.0, 1.0, 1.0], atol=1e-9)


def test_pca_recovers_a_planted_subspace_and_its_rank():
    """Rows in a planted 2-d subspace of R^5 (plus a mean): the first two axes span it, the
    numerical rank is 2, and the scores reconstruct the rows."""
    from prh.linalg import pca

    rng = np.random.default_rng(0)
    basis, _ = np.linalg.qr(rng.standard_normal((5, 2)))  # (5, 2) orthonormal columns
    x = rng.standard_normal((50, 2)) * [3.0, 1.0] @ basis.T + 7.0  # (50, 5)
    p = pca(x)
    assert p.rank(1e-6) == 2
    overlap = p.components[:2] @ basis  # (2, 2): orthogonal when the axes span the plane
    assert np.allclose(np.linalg.svd(overlap, compute_uv=False), 1.0, atol=1e-8)
    assert np.allclose(p.scores(x, 2) @ p.components[:2] + p.mean, x)
