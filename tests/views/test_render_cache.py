"""The render cache holds exactly the world's renders, and its pairs follow the view contract."""

import numpy as np
import pytest
import torch

from prh.errors import InputError
from prh.views.render_cache import CachedViewDataset, cache_key, load_or_build, render_views
from prh.world import CaveWorld, WorldConfig

SCENES = [3, 11, 40, 7, 25]


@pytest.fixture(scope="module")
def cache():
    return render_views(0, "image", 16, 3, SCENES, workers=1)


def test_cache_equals_the_worlds_renders_and_sketches(cache):
    world = CaveWorld(WorldConfig(seed=0))
    assert cache.shape == (5, 3, 16, 16, 3) and cache.dtype == np.uint8
    for j, s in enumerate(SCENES):
        for v in range(3):
            assert np.array_equal(cache[j, v], world.render(s, v, 16))
    sketches = render_views(0, "sketch", 16, 2, SCENES[:2])
    assert np.array_equal(sketches[1, 1], world.sketch(SCENES[1], 1, 16))


def test_worker_processes_draw_the_same_bytes(cache):
    assert np.array_equal(render_views(0, "image", 16, 3, SCENES, workers=2), cache)


def test_load_or_build_saves_once_and_reloads(tmp_path):
    key = cache_key(0, "image", 16, 2, SCENES)
    first = load_or_build(tmp_path, key, SCENES)
    path = tmp_path / key.file_name
    stamp = path.stat().st_mtime_ns
    again = load_or_build(tmp_path, key, SCENES)
    assert path.stat().st_mtime_ns == stamp and np.array_equal(first, again)
    assert cache_key(0, "image", 16, 2, SCENES[::-1]).file_name != key.file_name


def test_good_pairs_are_two_distinct_views_of_one_scene(cache):
    ds = CachedViewDataset(cache, SCENES, "good", batch_size=32, seed=1)
    b = ds.batch(0)
    assert b["a"].shape == (32, 3, 16, 16) and b["a"].dtype == torch.float32
    assert (b["nuisance_a"] != b["nuisance_b"]).all() and b["good"].all()
    for r in range(32):
        j = SCENES.index(int(b["state"][r]))
        want = cache[j, int(b["nuisance_b"][r])].astype(np.float32) / 255.0
        assert torch.equal(b["b"][r], torch.from_numpy(want.transpose(2, 0, 1)))


def test_bad_pairs_share_one_view_and_mixture_mixes(cache):
    bad = CachedViewDataset(cache, SCENES, "bad", batch_size=16, seed=1).batch(0)
    assert (bad["nuisance_a"] == bad["nuisance_b"]).all() and not bad["good"].any()
    assert not torch.equal(bad["a"], bad["b"])  # two different crops / jitters
    mix = CachedViewDataset(cache, SCENES, "mixture", batch_size=400, seed=1, rho=0.25).batch(0)
    assert 0.15 < float(mix["good"].float().mean()) < 0.35


def test_batches_are_pure_and_ranks_partition_the_global_batch(cache):
    full = CachedViewDataset(cache, SCENES, "mixture", batch_size=8, seed=2, rho=0.5)
    again = CachedViewDataset(cache, SCENES, "mixture", batch_size=8, seed=2, rho=0.5)
    assert all(torch.equal(full.batch(3)[k], again.batch(3)[k]) for k in ("a", "b", "state"))
    assert not torch.equal(full.batch(3)["a"], full.batch(4)["a"])
    parts = [
        CachedViewDataset(cache, SCENES, "mixture", 8, 2, rho=0.5, rank=r, world_size=2).batch(3)
        for r in range(2)
    ]
    whole = full.batch(3)
    for r, part in enumerate(parts):
        assert torch.equal(part["a"], whole["a"][r::2]) and torch.equal(part["b"], whole["b"][r::2])


def test_refusals(cache):
    with pytest.raises(InputError, match="good pairs need >= 2"):
        CachedViewDataset(cache[:, :1], SCENES, "good")
    with pytest.raises(InputError, match="does not fit"):
        CachedViewDataset(cache, SCENES[:2], "bad")
    with pytest.raises(InputError, match="modality"):
        render_views(0, "text", 16, 2, SCENES)


def test_prefetched_batches_equal_the_datasets_in_any_order():
    from prh.views.image import ImageViewDataset
    from prh.views.render_cache import Prefetched

    world = CaveWorld(WorldConfig(seed=0, num_scenes=200))
    ds = ImageViewDataset(world, "good", 16, batch_size=4, seed=3, scene_ids=SCENES)
    ahead = Prefetched(ds, workers=2)
    for i in (2, 3, 4, 1, 2):  # in order, then a jump back restarts the workers
        assert torch.equal(ahead.batch(i)["a"], ds.batch(i)["a"])
