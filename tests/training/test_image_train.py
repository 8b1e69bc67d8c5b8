"""Image and sketch JEPA runs: they train, resume bitwise, load back and embed, and learn colour."""

import json

import numpy as np
import pytest
import torch
from fakes import assert_same_training
from safetensors.torch import load_file

from prh.training import load_run, train_config
from prh.training.checkpoint import latest_checkpoint
from prh.training.image import build_image_model, draw_scenes, encode_images, train_image
from prh.training.image_config import ImageConfig
from prh.training.rundir import read_metrics

TINY = {"d_model": 16, "image_stages": 2, "embed_dim": 8}  # 2 x batch >= 4 x E: batch >= 16


def tiny(**kw):
    base = dict(samples=16 * 8, batch_size=16, train_scenes=24, checkpoint_every=4,
                log_every=1, model_overrides=TINY, lr=3e-3)  # fmt: skip
    return train_config("tiny", **{**base, **kw})


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("render-cache"))


def _train(cfg, image, out, **kw):
    return train_image(cfg, image, out, progress=False, threads=1, workers=1, **kw)[0]


@pytest.mark.slow
def test_killed_and_resumed_image_run_equals_uninterrupted_bitwise(tmp_path, cache):
    cfg, image = tiny(), ImageConfig(image_size=16, render_views=3, cache_dir=cache)
    straight = _train(cfg, image, tmp_path / "straight")
    killed = _train(cfg, image, tmp_path / "killed", stop_after=6)
    assert not (killed / "model.safetensors").exists()
    assert latest_checkpoint(killed / "checkpoints").name == "step_00000004.json"
    _train(None, None, killed, resume=True)
    a = load_file(str(straight / "model.safetensors"))
    b = load_file(str(killed / "model.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    # byte-identical files, not only equal tensors (safetensors' metadata order is normalised)
    assert (straight / "model.safetensors").read_bytes() == (
        killed / "model.safetensors"
    ).read_bytes()
    losses = [r["loss"] for r in read_metrics(killed)]
    assert [r["step"] for r in read_metrics(killed)] == list(range(1, 9))
    assert losses == [r["loss"] for r in read_metrics(straight)]
    assert min(losses[-3:]) < losses[0]  # the loss falls
    # The run folder describes itself; load_run recognises the modality and embeds every stage.
    config = json.loads((straight / "config.json").read_text())
    assert config["modality"] == "image" and config["image"]["image_size"] == 16
    assert json.loads((straight / "meta.json").read_text())["seed"] == 0
    run = load_run(straight, device="cpu")
    assert run.modality == "image" and not hasattr(run, "encode_texts")
    imgs = draw_scenes(cfg, image, [0, 1, 2])
    feats = run.encode_images(imgs, batch_size=2)
    assert feats.shape == (3, 2 + 2, 16) and feats.dtype == np.float32  # stem, 2 stages, E
    assert (feats[:, -1, 8:] == 0).all()
    assert np.allclose(run.embed_images(imgs), feats[:, -1, :8])


@pytest.mark.parametrize(("modality", "views"), [("sketch", "good"), ("image", "bad"),
                                                 ("image", "mixture")])  # fmt: skip
def test_sketch_bad_and_mixed_views_train(tmp_path, cache, modality, views):
    cfg = tiny(views=views, rho=0.5, samples=32)
    run = _train(cfg, ImageConfig(modality, 16, 3, cache), tmp_path / "r")
    assert json.loads((run / "config.json").read_text())["modality"] == modality
    assert all(np.isfinite(r["loss"]) for r in read_metrics(run))


def test_same_seed_same_weights(tmp_path, cache):
    cfg, image = tiny(samples=32), ImageConfig(image_size=16, render_views=3, cache_dir=cache)
    a = load_file(str(_train(cfg, image, tmp_path / "a") / "model.safetensors"))
    b = load_file(str(_train(cfg, image, tmp_path / "b") / "model.safetensors"))
    c = load_file(
        str(_train(tiny(samples=32, seed=1), image, tmp_path / "c") / "model.safetensors")
    )
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)


def test_cli_trains_resumes_and_embeds_an_image_run(tmp_path, cache):
    from prh.cli import main
    from prh.features import load_features
    from prh.world import CaveWorld, WorldConfig

    run = tmp_path / "run"
    argv = ["train", "--modality", "sketch", "--out", run, "--samples", 128, "--batch-size", 64,
            "--image-size", 16, "--train-scenes", 16, "--render-views", 2, "--render-cache",
            cache, "--threads", 1, "--render-workers", 1, "--no-progress"]  # fmt: skip
    assert main([str(a) for a in argv]) == 0
    assert main(["train", "--resume", str(run), "--no-progress", "--threads", "1"]) == 0
    out = tmp_path / "f.safetensors"
    argv = ["embed", run, "--world", "cave", "--modality", "sketch", "--n", 12, "--image-size",
            16, "--out", out, "--no-progress", "--threads", 1]  # fmt: skip
    assert main([str(a) for a in argv]) == 0
    fs = load_features(out)
    assert fs.features.shape == (12, 4 + 2, 64)  # tiny image preset: 4 stages, d_model 64
    test = CaveWorld(WorldConfig(seed=0)).split("test")[:12]
    assert list(fs.ids) == [f"scene_{i}" for i in test]
    # The features are the run's own: the same as encoding the sketches directly.
    direct = load_run(run, device="cpu").encode_images(
        [CaveWorld(WorldConfig(seed=0)).sketch(int(i), 0, 16) for i in test]
    )
    assert np.allclose(fs.features, direct, atol=1e-5)


def _knn_accuracy(f, y, k=5):
    """Leave-one-out kNN accuracy on cosine similarity (majority vote, ties to the lower label)."""
    f = f / np.linalg.norm(f, axis=1, keepdims=True)
    s = f @ f.T
    np.fill_diagonal(s, -np.inf)
    nn = np.argsort(-s, axis=1, kind="stable")[:, :k]
    pred = np.array([np.bincount(y[r], minlength=y.max() + 1).argmax() for r in nn])
    return float((pred == y).mean())


@pytest.mark.slow
def test_trained_image_encoder_beats_its_random_init_on_colour(tmp_path, cache):
    from prh.world import CaveWorld, WorldConfig

    ov = {"d_model": 32, "image_stages": 3, "embed_dim": 8}
    cfg = tiny(samples=32 * 40, batch_size=32, train_scenes=128, checkpoint_every=0,
               model_overrides=ov)  # fmt: skip
    image = ImageConfig(image_size=32, render_views=4, cache_dir=cache)
    _, model = train_image(cfg, image, tmp_path / "run", progress=False, threads=1, workers=2)
    world = CaveWorld(WorldConfig(seed=0))
    single = [int(i) for i in world.split("test")[:400] if len(world.scene(int(i)).objects) == 1]
    y = np.array([world.scene(i).objects[0].colour for i in single])
    imgs = draw_scenes(cfg, image, single)
    random_init, _ = build_image_model(cfg)
    trained = encode_images(model, imgs, 32)[:, 1:3]  # (N, 2, D): the first two stages
    base = encode_images(random_init, imgs, 32)[:, 1:3]
    acc_t = max(_knn_accuracy(trained[:, i], y) for i in range(2))
    acc_r = max(_knn_accuracy(base[:, i], y) for i in range(2))
    chance = np.bincount(y).max() / len(y)
    assert acc_t > acc_r + 0.1 and acc_t > chance + 0.1, (acc_t, acc_r, chance)


@pytest.mark.slow
def test_two_process_image_run_matches_one_process(tmp_path):
    from pathlib import Path

    from torchrun_launch import launch

    worker = Path(__file__).parent / "image_ddp_worker.py"
    launch(worker, [str(tmp_path)], 31500, timeout=180)
    r0, r1 = (load_file(str(tmp_path / f"rank{r}.st")) for r in (0, 1))
    assert all(torch.equal(r0[k], r1[k]) for k in r0)  # DDP keeps the ranks identical
    assert (tmp_path / "run" / "model.safetensors").exists()
    cfg = train_config(
        "tiny",
        samples=16 * 4,
        batch_size=16,
        train_scenes=24,
        checkpoint_every=2,
        model_overrides=TINY,
    )  # as in the worker; fmt: skip
    image = ImageConfig(image_size=16, render_views=3, cache_dir=str(tmp_path / "cache"))
    _, single = train_image(cfg, image, tmp_path / "single", False, threads=1, workers=1)
    # Same global batch in one process: equal up to float summation order.
    assert_same_training(r0, single.state_dict(), cfg.optim.lr, cfg.steps)


def test_eval_hook_measures_alignment_with_a_feature_file(tmp_path, cache):
    from prh.features import save_features
    from prh.metrics import measure

    ids = [3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610]
    target = tmp_path / "target.safetensors"
    feats = np.random.default_rng(0).normal(size=(len(ids), 2, 6)).astype(np.float32)
    save_features(target, feats, [f"scene_{i}" for i in ids])
    cfg = tiny(samples=16 * 4, eval_features=str(target), eval_every=2)
    image = ImageConfig(image_size=16, render_views=2, cache_dir=cache)
    run, model = train_image(cfg, image, tmp_path / "run", progress=False, threads=1)
    evals = [r for r in read_metrics(run) if "eval_mutual_knn" in r]
    assert [r["step"] for r in evals] == [2, 4]
    # The final evaluation is the mutual-kNN of the final model's features of those scenes.
    mine = encode_images(model, draw_scenes(cfg, image, ids), 16)
    want = measure(mine, feats, metric="mutual_knn", k=10).score
    assert evals[-1]["eval_mutual_knn"] == pytest.approx(float(want))


def test_renders_on_the_fly_prefetched_by_workers_train_like_one_process(tmp_path):
    cfg, image = tiny(samples=32), ImageConfig(image_size=16, render_views=0)
    one = train_image(cfg, image, tmp_path / "one", progress=False, threads=1, workers=1)[1]
    two = train_image(cfg, image, tmp_path / "two", progress=False, threads=1, workers=2)[1]
    a, b = one.state_dict(), two.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not (tmp_path / "one" / "render_cache").exists()


def test_diverging_image_run_is_a_training_error_and_keeps_only_finite_checkpoints(tmp_path, cache):
    from prh.errors import TrainingError

    image = ImageConfig(modality="image", image_size=16, cache_dir=cache)
    with pytest.raises(TrainingError, match=r"step \d+.*stopped"):
        _train(tiny(lr=1e30, warmup_frac=0.0), image, tmp_path / "run")
    assert not (tmp_path / "run" / "model.safetensors").exists()
    good = latest_checkpoint(tmp_path / "run" / "checkpoints")
    if good is not None:  # any checkpoint kept holds finite weights
        tensors = load_file(str(good.with_suffix(".safetensors")))
        assert all(torch.isfinite(v).all() for v in tensors.values())


def test_weights_are_checked_before_every_checkpoint_and_the_final_model(
    tmp_path, cache, monkeypatch
):
    import prh.training.lifecycle as lifecycle
    from prh.errors import TrainingError

    seen = []

    def check(model, step):  # a weight check that fails from step 8 on
        seen.append(step)
        if step >= 8:
            raise TrainingError(f"non-finite weights (w) after step {step}")

    monkeypatch.setattr(lifecycle, "check_finite_weights", check)
    image = ImageConfig(modality="image", image_size=16, cache_dir=cache)
    with pytest.raises(TrainingError, match=r"after step 8.*last good checkpoint"):
        _train(tiny(), image, tmp_path / "run")
    assert seen[:2] == [4, 8]  # before the checkpoint of step 4, then of step 8
    assert latest_checkpoint(tmp_path / "run" / "checkpoints").name.startswith("step_00000004")
    assert not (tmp_path / "run" / "model.safetensors").exists()


@pytest.mark.slow
def test_eval_hook_measures_an_image_run_against_the_theory(tmp_path, cache):
    from prh.features import save_features
    from prh.metrics.theory_cca import heldout_cc
    from prh.world import make_world

    world = make_world("moving", seed=0)
    train, test = world.split("train"), world.split("test")
    ids = [int(i) for i in train[::60][:16]] + [int(i) for i in test[::40][:8]]
    target = tmp_path / "g.safetensors"
    save_features(target, world.theory_embedding(ids, 8), [f"scene_{i}" for i in ids])
    cfg = tiny(samples=16 * 4, world="moving", eval_theory=str(target), eval_every=2)
    image = ImageConfig(image_size=16, render_views=2, cache_dir=cache)
    run, model = train_image(cfg, image, tmp_path / "run", progress=False, threads=1)
    evals = [r for r in read_metrics(run) if "eval_theory_cc" in r]
    assert [r["step"] for r in evals] == [2, 4] and "eval_mutual_knn" not in evals[-1]
    # the final evaluation: the final model's last layer of those renders against g*, fitted on
    # the 16 training-split states, scored on the 8 test-split ones
    x = encode_images(model, draw_scenes(cfg, image, ids), 16)[:, -1].astype(np.float64)
    g = world.theory_embedding(ids, 8)
    # width-fair (each side through its top 8 principal directions), the raw read-out beside it
    want = heldout_cc(x[:16], g[:16], x[16:], g[16:], components=8, max_dim=8, n_boot=1).mean
    assert evals[-1]["eval_theory_cc"] == pytest.approx(want, abs=1e-6)
    raw = heldout_cc(x[:16], g[:16], x[16:], g[16:], components=8, max_dim=64, n_boot=1).mean
    assert evals[-1]["eval_theory_cc_raw"] == pytest.approx(raw, abs=1e-6)
