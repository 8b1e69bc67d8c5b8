"""A JEPA read through its own top-k cross-view components: the read-out recovers the pairs'
shared directions, is stored with the run, is what the loaded run gives, and refuses other
weights."""

from __future__ import annotations

import numpy as np
import pytest

from prh.errors import CheckpointError, InputError
from prh.training.readout import (
    FILE,
    Readout,
    load_readout,
    readout_of_pairs,
    save_readout,
)

RHO = (0.9, 0.75, 0.6, 0.45, 0.2, 0.15, 0.1, 0.05, 0.0, 0.0, 0.0, 0.0)  # cross-view correlations


def planted_pairs(n: int, seed: int = 0):
    """Pairs of 12 latent unit-variance directions, direction j correlated ``RHO[j]`` across the
    two views, mixed into 12 observed coordinates by one random invertible map (the same map
    for every ``seed``); returns the observed halves and the latent ones."""
    rng = np.random.default_rng(seed)
    rho = np.asarray(RHO)
    s = rng.standard_normal((n, len(rho)))
    a = np.sqrt(rho) * s + np.sqrt(1 - rho) * rng.standard_normal(s.shape)
    b = np.sqrt(rho) * s + np.sqrt(1 - rho) * rng.standard_normal(s.shape)
    mix = np.random.default_rng(99).standard_normal((len(rho), len(rho))) + 3 * np.eye(len(rho))
    return a @ mix + 5.0, b @ mix + 5.0, a, b


def test_the_readout_recovers_the_top_shared_directions_of_planted_pairs():
    x, y, _, _ = planted_pairs(40_000)
    r = readout_of_pairs(x, y, 4)
    assert r.width == 12 and r.k == 4
    assert np.allclose(r.eigenvalues[:5], RHO[:5], atol=0.02), r.eigenvalues
    # On fresh pairs the four outputs are the four most shared latent directions, up to sign
    fresh = planted_pairs(20_000, seed=1)
    out, latent = r.apply(fresh[0]), fresh[2]
    corr = np.corrcoef(out.T, latent.T)[:4, 4:]
    assert np.allclose(np.abs(corr[:, :4]), np.eye(4), atol=0.06), corr[:, :4]
    assert np.abs(corr[:, 4:]).max() < 0.06  # none of the less shared ones
    # ... whitened, with the eigenvalues as their cross-view covariance
    za, zb = r.apply(x), r.apply(y)
    assert np.allclose(np.cov(np.r_[za, zb].T), np.eye(4), atol=0.02)
    assert np.allclose(np.diag(za.T @ zb / len(za)), r.eigenvalues[:4], atol=0.02)


def test_an_invertible_map_of_the_embedding_leaves_the_readout_output_unchanged():
    x, y, _, _ = planted_pairs(20_000)
    m = np.random.default_rng(3).standard_normal((12, 12)) + 4 * np.eye(12)
    r1, r2 = readout_of_pairs(x, y, 4), readout_of_pairs(x @ m, y @ m, 4)
    o1, o2 = r1.apply(x[:500]), r2.apply((x @ m)[:500])
    # the same outputs up to sign (and the whitener's small ridge)
    assert np.allclose(np.abs(np.sum(o1 * o2, 0) / np.linalg.norm(o1, axis=0) ** 2), 1, atol=0.01)


@pytest.fixture(scope="module")
def wide_run(tmp_path_factory):
    """A 16-wide good-view text JEPA on the moving world (20 steps of batch 64)."""
    from prh.training.api import train
    from prh.training.config import train_config

    wide = {"embed_dim": 16}
    cfg = train_config("tiny", world="moving", views="good", samples=1280, batch_size=64,
                       checkpoint_every=0, log_every=0, model_overrides=wide)  # fmt: skip
    return train(cfg, tmp_path_factory.mktemp("wide") / "run", progress=False, threads=1)


@pytest.mark.slow
def test_a_run_loads_through_its_stored_readout(wide_run):
    from prh.training.api import load_run
    from prh.training.moving import run_positive_pairs
    from prh.training.readout_fit import fit_readout

    raw = load_run(wide_run, device="cpu", readout=False)
    r = fit_readout(raw, 8, 512)
    assert r.width == 16 and r.k == 8 and r.pairs == 512
    assert fit_readout(raw, 8, 512).projection.tolist() == r.projection.tolist()  # fixed draw
    save_readout(wide_run, r)
    run = load_run(wide_run, device="cpu")
    assert run.model_config.embed_dim == 8 and run.model.cfg.embed_dim == 8
    texts = ["a small red cube", "a large blue sphere near the top", "a green cone"]
    got, before = run.encode(texts), raw.encode(texts)
    assert np.allclose(got[:, :-1], before[:, :-1])  # the layers are the run's own
    assert np.allclose(got[:, -1, :8], r.apply(before[:, -1, :16]), atol=1e-4)
    assert not got[:, -1, 8:].any()
    assert run_positive_pairs(run, 64).embedding()[0].shape == (64, 8)
    assert load_run(wide_run, device="cpu", readout=False).model_config.embed_dim == 16


@pytest.mark.slow
def test_a_readout_of_other_weights_or_another_width_is_refused(wide_run, tmp_path):
    import shutil

    from prh.io import write_tensors
    from prh.training.api import load_run

    run = tmp_path / "copy"
    shutil.copytree(wide_run, run)
    w = np.eye(16)[:, :8]
    save_readout(run, Readout(np.zeros(16), w, np.zeros(16), 512, 0))
    assert load_readout(run, 16) is not None
    with pytest.raises(CheckpointError, match="reads a 16-wide embedding; the run's is 12"):
        load_readout(run, 12)
    arrays = {"mean": np.zeros(16), "projection": w, "eigenvalues": np.zeros(16)}
    meta = {"k": "8", "width": "16", "pairs": "512", "draw": "0", "weights_sha256": "0" * 64}
    write_tensors(run / FILE, arrays, meta)
    with pytest.raises(CheckpointError, match="fitted to other weights"):
        load_run(run, device="cpu")
    assert load_run(run, device="cpu", readout=False).model_config.embed_dim == 16


@pytest.mark.slow
def test_readouts_that_cannot_be_measured_are_refused_in_one_line(wide_run):
    from prh.training.api import load_run
    from prh.training.readout_fit import check_readout

    raw = load_run(wide_run, device="cpu", readout=False)
    for k, pairs, what in (
        (0, 512, "--k 0: expected an integer in 1..16"),
        (17, 512, "--k 17"),
        (8, 100, "--pairs 100: need at least 256"),
    ):
        with pytest.raises(InputError, match=what):
            check_readout(raw, k, pairs)


def test_a_malformed_readout_file_is_one_checkpoint_error(tmp_path):
    from prh.io import write_tensors

    meta = {"k": "1", "width": "4", "pairs": "512", "draw": "0", "weights_sha256": "0" * 64}
    arrays = {"mean": np.zeros(4), "projection": np.array(1.0), "eigenvalues": np.zeros(4)}
    write_tensors(tmp_path / FILE, arrays, meta)
    with pytest.raises(CheckpointError, match="not a prh read-out"):
        load_readout(tmp_path, 4)
