"""Good views on the moving world: lag pairs, their caption source and text batches."""

from __future__ import annotations

import numpy as np
import pytest

from prh.errors import InputError
from prh.theory.markov import dense_pair_kernel, spectral_pair_kernel
from prh.views import TextTokenizer, make_view_dataset
from prh.views.lag import LagPairs, MovingCaptionSource
from prh.world import make_world
from prh.world.moving import MovingWorld, MovingWorldConfig

SMALL = {"colours": 3, "shapes": 2, "sizes": 2, "lag": 7}


class Tagged(MovingWorld):
    """A small moving world whose captions name their state (to read pairs back)."""

    def captions(self, i: int, n: int = 5, seed: int = 0) -> list[str]:
        return [f"state {i} wording {seed} {k}" for k in range(n)]


@pytest.fixture(scope="module")
def world() -> Tagged:
    return Tagged(MovingWorldConfig(**SMALL))


def test_spectral_kernel_is_the_matrix_power(world):
    K = spectral_pair_kernel(world.chain, 7)
    assert np.allclose(K, dense_pair_kernel(world.chain, 7), atol=1e-15)
    assert np.allclose(spectral_pair_kernel(world.chain, 0), np.diag(world.chain.p), atol=1e-15)


def test_lag_pairs_draw_the_restricted_kernel(world):
    ids = world.split("train")
    pairs = LagPairs(world, ids)
    s, t = pairs.draw(400_000, np.random.default_rng(0))
    emp = np.zeros((len(ids), len(ids)))
    np.add.at(emp, (s, t), 1.0)
    K = world.pair_kernel()[np.ix_(ids, ids)]
    K = K / K.sum()
    assert np.abs(emp / emp.sum() - K).max() < 4e-3  # about 4 standard errors at the largest
    assert np.allclose(pairs.weights, K.sum(axis=1))
    slots = pairs.slots(1 << 16)
    assert np.allclose(
        np.bincount(slots, minlength=len(ids)) / slots.size, pairs.weights, atol=2e-5
    )


def test_moving_source_good_draw_is_a_lag_pair(world):
    pairs = LagPairs(world, world.split("train"))
    src = MovingCaptionSource(world, pairs)
    rng = np.random.default_rng(1)
    j = 12345
    s = int(src.state_of(np.array([j]))[0])
    (cap,), _ = src.draw(j, 1, rng)
    assert cap.startswith(f"state {s} ")
    partners = [int(src.draw(j, 2, rng)[0][1].split()[1]) for _ in range(3000)]
    row = int(np.flatnonzero(pairs.scene_ids == s)[0])
    want = world.pair_kernel()[s, pairs.scene_ids]
    got = np.bincount(np.searchsorted(pairs.scene_ids, partners), minlength=len(pairs))
    assert np.abs(got / got.sum() - want / want.sum()).max() < 0.05
    assert row >= 0 and src.draw(j, 2, rng)[0][0].startswith(f"state {s} ")
    with pytest.raises(InputError, match="draws 1 or 2"):
        src.draw(j, 3, rng)


def test_refusals(world):
    with pytest.raises(InputError, match="no chain"):
        LagPairs(make_world("cave", seed=0, num_scenes=50), [0, 1])
    with pytest.raises(InputError, match="distinct"):
        LagPairs(world, [3, 3])
    with pytest.raises(InputError, match="outside"):
        LagPairs(world, [0, 10_000])
    with pytest.raises(InputError, match="wordings"):
        MovingCaptionSource(world, LagPairs(world, [0, 1, 2]), wordings=0)


def test_text_batches_deterministic_and_good_rows_move(world):
    src = MovingCaptionSource(world, LagPairs(world, world.split("train")), wordings=3)
    tok = TextTokenizer.train(world.corpus(world.split("train"), 3).texts(), vocab_size=200)

    def ds(kind: str, seed: int = 0):
        return make_view_dataset(src, kind, tok, batch_size=32, seed=seed)

    a, b = ds("good").batch(3), ds("good").batch(3)
    assert all(np.array_equal(a[k].numpy(), b[k].numpy()) for k in a)
    assert not np.array_equal(a["a"].numpy(), ds("good", seed=1).batch(3)["a"].numpy())
    stats = ds("good").stats(4)
    assert stats["identical"] < 0.2 and stats["good_fraction"] == 1.0
    bad = ds("bad").stats(4)
    assert bad["share_nuisance"] == 1.0 and bad["good_fraction"] == 0.0


def test_cached_and_rendered_image_pairs_move(world):
    from prh.views.image import ImageViewDataset
    from prh.views.render_cache import CachedViewDataset, render_views

    ids = world.split("train")[:40]
    pairs = LagPairs(world, ids)
    cache = np.zeros((len(ids), 3, 16, 16, 3), np.uint8)
    cache[:] = (np.arange(len(ids)) * 5)[:, None, None, None, None]  # a row's pixels name it
    cache[:, :, 0, 0, 0] = np.arange(3)[None, :]  # and pixel (0, 0) its view
    ds = CachedViewDataset(cache, ids, "mixture", 256, seed=4, rho=0.5, pairs=pairs)
    out = ds.batch(1)
    assert all(np.array_equal(v.numpy(), ds.batch(1)[k].numpy()) for k, v in out.items())
    good = out["good"].numpy()
    row_b = np.searchsorted(ids, out["state_b"].numpy())
    assert np.allclose(out["b"][good, 0, 1, 1].numpy(), row_b[good] * 5 / 255)
    assert (out["nuisance_a"] != out["nuisance_b"]).numpy()[good].all()
    assert (out["state"] == out["state_b"]).numpy()[~good].all()
    assert (out["state"] != out["state_b"]).numpy()[good].mean() > 0.2  # lag 7: often still
    fly = ImageViewDataset(world, "good", 16, 4, seed=0, scene_ids=ids, pairs=pairs).batch(0)
    assert set(fly) >= {"state", "state_b"} and fly["a"].shape == (4, 3, 16, 16)
    with pytest.raises(InputError, match="other states"):
        CachedViewDataset(cache, ids[::-1], "good", 8, pairs=pairs)
    assert render_views(0, "image", 16, 1, ids[:2], world="moving").shape == (2, 1, 16, 16, 3)
