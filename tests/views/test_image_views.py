"""Image views over the world: good = two renders, bad = two crops of one render."""

import pytest
import torch

from prh.errors import InputError
from prh.views import ImageViewDataset
from prh.world import CaveWorld, WorldConfig


@pytest.fixture(scope="module")
def world():
    return CaveWorld(WorldConfig(seed=0, num_scenes=300))


@pytest.mark.parametrize("kind", ["good", "bad"])
def test_image_views(world, kind):
    ds = ImageViewDataset(world, kind, size=32, batch_size=6, seed=1)
    b = ds.batch(0)
    assert b["a"].shape == (6, 3, 32, 32) and b["a"].dtype == torch.float32
    assert 0 <= b["a"].min() and b["a"].max() <= 1
    assert torch.equal(
        b["a"], ImageViewDataset(world, kind, size=32, batch_size=6, seed=1).batch(0)["a"]
    )
    assert set(b["state"].tolist()) <= set(world.split("train").tolist())
    assert ((b["nuisance_a"] == b["nuisance_b"]) == (kind == "bad")).all()
    assert (b["a"] - b["b"]).abs().mean() > 0.01  # the two sides differ
    assert not torch.equal(b["a"], ds.batch(1)["a"])
    s = ds.stats(1)
    assert s["share_state"] == 1.0 and s["share_nuisance"] == (1.0 if kind == "bad" else 0.0)


def test_good_image_pair_is_two_renders(world):
    b = ImageViewDataset(world, "good", size=32, batch_size=2, seed=0, modality="sketch").batch(0)
    scene, n1 = int(b["state"][0]), int(b["nuisance_a"][0])
    assert torch.equal(
        b["a"][0], torch.from_numpy(world.sketch(scene, n1, 32)).permute(2, 0, 1).float() / 255
    )


def test_ranks_and_errors(world):
    full = ImageViewDataset(world, "good", size=16, batch_size=4, seed=2).batch(3)
    part = ImageViewDataset(
        world, "good", size=16, batch_size=4, seed=2, rank=1, world_size=2
    ).batch(3)
    assert torch.equal(part["a"], full["a"][1::2])
    with pytest.raises(InputError, match="unknown kind"):
        ImageViewDataset(world, "next-token")
    with pytest.raises(InputError, match="size"):
        ImageViewDataset(world, size=4)


def test_prefetch_in_workers_keeps_the_order(world):
    from prh.views import prefetch

    ds = ImageViewDataset(world, "good", size=16, batch_size=2, seed=4)
    got = list(prefetch(ds, start=3, stop=8, num_workers=2))
    assert [int(b["state"][0]) for b in got] == [int(ds.batch(i)["state"][0]) for i in range(3, 8)]
    assert all(torch.equal(b["a"], ds.batch(3 + k)["a"]) for k, b in enumerate(got))
    inline = list(prefetch(ds, start=3, stop=5, num_workers=0))
    assert torch.equal(inline[1]["b"], ds.batch(4)["b"])
