"""A run's own positive pairs on the moving world, embedded by the run (issue 22)."""

from __future__ import annotations

import numpy as np
import pytest

from prh.errors import InputError
from prh.training.api import _train, load_run
from prh.training.config import train_config
from prh.training.moving import lag_pairs_of, run_positive_pairs
from prh.world import make_world

pytestmark = pytest.mark.slow  # each module-scoped run trains a few steps (make test runs them)


@pytest.fixture(scope="module")
def moving_text_run(tmp_path_factory):
    """Two steps of a good-view text JEPA on the moving world (a few seconds)."""
    cfg = train_config("tiny", world="moving", views="good", samples=128, batch_size=64,
                       checkpoint_every=0, log_every=0)  # fmt: skip
    path, _ = _train(cfg, tmp_path_factory.mktemp("moving") / "run", False, False, None, 1,
                     None, None)  # fmt: skip
    return path


def test_pairs_are_lag_pairs_of_training_states_embedded_by_the_run(moving_text_run):
    run = load_run(moving_text_run, device="cpu")
    pairs = run_positive_pairs(run, 40, seed=3)
    world = make_world("moving", seed=run.config.world_seed)
    assert pairs.modality == "text" and pairs.lag == world.config.lag == 175
    assert pairs.a.shape == pairs.b.shape and pairs.a.shape[0] == 40 and pairs.a.ndim == 3
    assert np.isfinite(pairs.a).all() and np.isfinite(pairs.b).all()
    train = set(world.train_scenes(run.config.train_scenes).tolist())
    assert set(pairs.states_a.tolist()) | set(pairs.states_b.tolist()) <= train
    # each half has its own wording seed, and the row is the run's embedding of that caption
    assert (pairs.nuisance_a != pairs.nuisance_b).all()
    for i in (0, 17):
        text = world.captions(int(pairs.states_b[i]), 1, seed=int(pairs.nuisance_b[i]))[0]
        assert np.allclose(run.encode([text])[0], pairs.b[i], atol=1e-5)
    a, b = pairs.embedding()
    assert a.shape == (40, run.model_config.embed_dim) == b.shape
    # the second states follow Q^D from the first: each drawn pair has positive kernel mass
    kernel = world.pair_kernel()
    assert (kernel[pairs.states_a, pairs.states_b] > 0).all()


def test_the_second_state_follows_the_chain(moving_text_run):
    """Over many draws the pairs' law is the lag kernel restricted to the training states:
    the empirical state-pair correlation of one slow feature matches the kernel's."""
    run = load_run(moving_text_run, device="cpu")
    world, lag = lag_pairs_of(run.config)
    rng = np.random.default_rng(0)
    first, second = lag.draw(20000, rng)
    s, t = lag.scene_ids[first], lag.scene_ids[second]
    g = world.theory_embedding(np.arange(world.num_scenes), 1)[:, 0]  # the slowest feature
    drawn = np.corrcoef(g[s], g[t])[0, 1]
    expected = float(world.spectrum(1).nontrivial()[0])
    assert drawn == pytest.approx(expected, abs=0.05)
    assert drawn > 0.5  # far from independent draws (0)


def test_same_seed_same_pairs(moving_text_run):
    x = run_positive_pairs(moving_text_run, 12, seed=1)
    y = run_positive_pairs(moving_text_run, 12, seed=1)
    z = run_positive_pairs(moving_text_run, 12, seed=2)
    assert np.array_equal(x.a, y.a) and np.array_equal(x.states_b, y.states_b)
    assert not np.array_equal(x.states_a, z.states_a)


def test_save_writes_the_two_pair_files(moving_text_run, tmp_path):
    from prh.features import load_features

    pairs = run_positive_pairs(moving_text_run, 10, seed=0)
    a_path, b_path = pairs.save(tmp_path / "text")
    a = load_features(a_path)
    assert a_path.name == "text_a.safetensors" and b_path.name == "text_b.safetensors"
    assert np.array_equal(a.features, pairs.a)
    assert a.ids == [f"scene_{i}" for i in pairs.states_a]


def test_a_still_world_has_no_lag_pairs_but_its_own_good_views():
    with pytest.raises(InputError, match=r"the run's world 'cave' does not move \(no lag\)"):
        lag_pairs_of(train_config("tiny"))
    _, still = lag_pairs_of(train_config("tiny", train_scenes=50), still=True)
    first, second = still.draw(100, np.random.default_rng(0))
    assert np.array_equal(first, second) and set(still.scene_ids[first]) <= set(range(20000))
    assert len(still.scene_ids) == 50


def test_bad_counts_are_refused(moving_text_run):
    for n in (0, -3, 2.5, True):
        with pytest.raises(InputError, match=r"positive pairs: n must be a positive integer"):
            run_positive_pairs(moving_text_run, n)


def test_image_runs_give_their_own_pairs(tmp_path):
    """An image run's halves are two renders of two states at the lag, independent seeds."""
    from prh.training.image import train_image
    from prh.training.image_config import ImageConfig

    cfg = train_config("tiny", world="moving", checkpoint_every=0, log_every=0, samples=64,
                       batch_size=64, train_scenes=48)  # fmt: skip
    path, _ = train_image(cfg, ImageConfig(modality="image", image_size=16, render_views=2),
                          tmp_path / "img", progress=False, threads=1)  # fmt: skip
    pairs = run_positive_pairs(path, 8, seed=0)
    assert pairs.modality == "image" and pairs.embedding()[0].shape == (8, 8)
    run = load_run(path, device="cpu")
    world = make_world("moving", seed=cfg.world_seed)
    img = world.render(int(pairs.states_a[3]), int(pairs.nuisance_a[3]), 16)
    assert np.allclose(run.encode([img])[0], pairs.a[3], atol=1e-5)
    assert set(pairs.states_a.tolist()) <= set(world.train_scenes(48).tolist())


def test_saved_pairs_feed_prh_match_spectral(moving_text_run, tmp_path):
    """The files a run's pairs save to are what `prh match --method spectral` reads: the last
    layer (the JEPA embedding zero-padded to the layer width) gives k = the embedding width.
    The run against itself (two draws of its own pairs): whatever the verdict on two training
    steps, the report is written and says it."""
    import json

    from prh.cli import main
    from prh.features import save_features

    run = load_run(moving_text_run, device="cpu")
    world = make_world("moving", seed=run.config.world_seed)
    for side, seed in (("x", 0), ("y", 1)):
        run_positive_pairs(run, 300, seed=seed).save(tmp_path / side)
        states = world.split("test")[:60]
        texts = [world.captions(int(s), 1, seed=seed + 7)[0] for s in states]
        save_features(tmp_path / f"{side}.safetensors", run.encode(texts),
                      ids=[f"scene_{int(s)}" for s in states])  # fmt: skip
    argv = ["match", "--method", "spectral", "--x", tmp_path / "x.safetensors",
            "--y", tmp_path / "y.safetensors",
            "--pairs-x", tmp_path / "x_a.safetensors", tmp_path / "x_b.safetensors",
            "--pairs-y", tmp_path / "y_a.safetensors", tmp_path / "y_b.safetensors",
            "--json", tmp_path / "r.json"]  # fmt: skip
    rc = main([str(a) for a in argv])
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rc == (0 if rep["pinned"] else 1)
    assert rep["k"] == run.model_config.embed_dim < run.encode(["a"]).shape[-1]
    assert rep["accuracy"] is not None and len(rep["permutation"]) == 60
