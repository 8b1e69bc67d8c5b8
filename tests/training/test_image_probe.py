"""The scene-factor kNN probe against a brute-force reference and planted answers."""

import numpy as np
import pytest

from prh.errors import InputError
from prh.training.image_probe import (
    chance,
    knn_accuracy,
    probe_run,
    probe_table,
    scene_factors,
)
from prh.world import CaveWorld, WorldConfig


def _reference(x, y, k):
    """Row by row: sort the others by cosine, count the k nearest's labels, smallest on ties."""
    keep = y >= 0
    x, y = x[keep], y[keep]
    hits = 0
    for i in range(len(y)):
        sims = [(-(x[i] @ x[j]) / np.linalg.norm(x[i]) / np.linalg.norm(x[j]), j)
                for j in range(len(y)) if j != i]  # fmt: skip
        near = [j for _, j in sorted(sims)[:k]]
        counts = np.bincount(y[near], minlength=y.max() + 1)
        hits += int(np.flatnonzero(counts == counts.max())[0] == y[i])
    return hits / len(y)


def test_knn_accuracy_equals_the_reference():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 5))
    y = rng.integers(-1, 4, size=60)
    for k in (1, 3, 10):
        assert knn_accuracy(x, y, k) == pytest.approx(_reference(x, y, k))


def test_planted_clusters_are_found_and_noise_is_at_chance():
    rng = np.random.default_rng(1)
    y = np.repeat(np.arange(4), 30)
    centres = rng.normal(size=(4, 16)) * 5
    assert knn_accuracy(centres[y] + rng.normal(size=(120, 16)), y, 10) == 1.0
    noise = knn_accuracy(rng.normal(size=(120, 16)), y, 10)
    assert abs(noise - chance(y)) < 0.15
    with pytest.raises(InputError, match="need more than k"):
        knn_accuracy(rng.normal(size=(5, 2)), np.arange(5), 10)


def test_scene_factors_follow_the_largest_object():
    world = CaveWorld(WorldConfig(seed=0))
    ids = world.split("test")[:50]
    f = scene_factors(world, ids)
    for j, i in enumerate(ids):
        objs = world.scene(int(i)).objects
        assert f["count"][j] == len(objs)
        sizes = [o.size for o in objs]
        if sizes.count(max(sizes)) == 1:
            big = objs[sizes.index(max(sizes))]
            assert (f["shape"][j], f["colour"][j]) == (big.shape, big.colour)
        else:
            assert f["shape"][j] == f["colour"][j] == -1
    table = probe_table(np.random.default_rng(0).normal(size=(50, 2, 4)), f, k=5)
    assert set(table) == {"shape", "colour", "count"} and len(table["shape"]) == 2


@pytest.mark.slow
def test_probe_run_reads_a_trained_run_and_its_random_init(tmp_path):
    from prh.training import train_config
    from prh.training.image import train_image
    from prh.training.image_config import ImageConfig

    tiny = {"d_model": 16, "image_stages": 2, "embed_dim": 8}
    cfg = train_config(
        "tiny", samples=32, batch_size=16, train_scenes=16, checkpoint_every=0, model_overrides=tiny
    )
    image = ImageConfig(image_size=16, render_views=2, cache_dir=str(tmp_path / "cache"))
    run, _ = train_image(cfg, image, tmp_path / "run", progress=False, threads=1, workers=1)
    table, base = probe_run(run, n=40, k=3)
    untrained, _ = probe_run(run, n=40, k=3, random_init=True)
    assert set(table) == {"shape", "colour", "count"} and len(table["colour"]) == 2 + 2
    assert all(0.0 <= a <= 1.0 for accs in table.values() for a in accs)
    assert 0.0 < base["count"] < 1.0
    assert table != untrained
