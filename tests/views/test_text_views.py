"""Text views: purity in (seed, i), rank slicing, good/bad/next-token semantics, mixture(rho)."""

import numpy as np
import pytest
import torch

from prh.data import CaptionCorpus
from prh.errors import InputError
from prh.views import TextTokenizer, ViewConfig, WorldCaptionSource, distort, make_view_dataset
from prh.world import CaveWorld, WorldConfig


@pytest.fixture(scope="module")
def world():
    return CaveWorld(WorldConfig(seed=0, num_scenes=400))


@pytest.fixture(scope="module")
def tok(world):
    return TextTokenizer.train(world.corpus(range(200), 3).texts(), vocab_size=400)


@pytest.fixture(scope="module")
def corpus(world):
    return world.corpus(range(50), captions_per_scene=4, seed=1)


def rows(batch, key):
    ids, mask = batch[key], batch[key + "_mask"]
    return [ids[j][mask[j]].tolist() for j in range(len(ids))]


@pytest.mark.parametrize("kind", ["good", "bad", "next-token", "mixture"])
@pytest.mark.parametrize("use_world", [False, True])
def test_pure_in_seed_and_index(kind, use_world, world, corpus, tok):
    src = world if use_world else corpus
    d1 = make_view_dataset(src, kind, tok, rho=0.5, batch_size=16, seed=3)
    d2 = make_view_dataset(src, kind, tok, rho=0.5, batch_size=16, seed=3)
    d2.batch(7)  # history must not matter
    b1, b2 = d1.batch(2), d2.batch(2)
    assert b1.keys() == b2.keys()
    assert all(torch.equal(b1[k], b2[k]) for k in b1)
    assert not torch.equal(d1.batch(3)["state"], b1["state"])
    other = make_view_dataset(src, kind, tok, rho=0.5, batch_size=16, seed=4).batch(2)
    assert not torch.equal(other["state"], b1["state"])
    d1.start = 2
    assert torch.equal(next(iter(d1))["a"], b1["a"])


@pytest.mark.parametrize("kind", ["good", "bad", "next-token", "mixture"])
def test_rank_slicing(kind, corpus, tok):
    full = make_view_dataset(corpus, kind, tok, rho=0.5, batch_size=12, seed=5).batch(4)
    for world_size in (2, 3):
        parts = [
            make_view_dataset(
                corpus, kind, tok, rho=0.5, batch_size=12, seed=5, rank=r, world_size=world_size
            ).batch(4)
            for r in range(world_size)
        ]
        for r, part in enumerate(parts):
            assert part["index"].tolist() == list(range(r, 12, world_size))
            assert rows(part, "a") == [rows(full, "a")[j] for j in range(r, 12, world_size)]
            assert rows(part, "b") == [rows(full, "b")[j] for j in range(r, 12, world_size)]
            assert torch.equal(part["good"], full["good"][r::world_size])


def test_good_pairs_share_state_not_nuisance(corpus, tok):
    ds = make_view_dataset(corpus, "good", tok, batch_size=32, seed=0)
    b = ds.batch(0)
    text = dict(zip(corpus.image_ids, corpus.captions))
    for j in range(32):
        caps = text[corpus.image_ids[int(b["state"][j])]]
        a, bb = tok.decode(b["a"][j]), tok.decode(b["b"][j])
        enc = [tok.decode(tok.encode_batch([c])[0][0]) for c in caps]
        assert a in enc and bb in enc and a != bb  # two different captions of one image
    s = ds.stats(4)
    assert s["good_fraction"] == 1.0 and s["share_state"] == 1.0 and s["share_nuisance"] == 0.0
    assert s["identical"] == 0.0


def test_bad_pairs_share_nuisance(world, tok):
    ds = make_view_dataset(world, "bad", tok, batch_size=32, seed=0)
    s = ds.stats(4)
    assert s["good_fraction"] == 0.0 and s["share_state"] == 1.0 and s["share_nuisance"] == 1.0
    assert s["identical"] < 0.3  # the two distortions mostly differ


def test_next_token_prefix_and_continuation(corpus, tok):
    b = make_view_dataset(corpus, "next-token", tok, batch_size=16, seed=2).batch(0)
    for a, c, whole in zip(rows(b, "a"), rows(b, "b"), rows(b, "tokens")):
        assert whole[0] == tok.bos_id and whole[-1] == tok.eos_id
        assert a[1:-1] + c[1:-1] == whole[1:-1]
        assert len(a) > 2 and len(c) > 2
    assert not b["good"].any()
    doc = make_view_dataset(
        corpus, "next-token", tok, batch_size=8, config=ViewConfig(doc_captions=3)
    ).batch(0)
    assert doc["tokens_mask"].sum(1).float().mean() > b["tokens_mask"].sum(1).float().mean()


@pytest.mark.parametrize("rho", [0.0, 0.3, 0.8, 1.0])
def test_mixture_fraction_is_rho(rho, world, tok):
    ds = make_view_dataset(
        WorldCaptionSource(world, wordings=5), "mixture", tok, rho=rho, batch_size=200, seed=1
    )
    plans = [ds.plan(i)[1] for i in range(10)]
    good = np.concatenate(plans)
    n = len(good)
    assert abs(good.mean() - rho) <= 4 * np.sqrt(rho * (1 - rho) / n) + 1e-12
    s = ds.stats(2)  # the sampled pairs agree with the plan: good rows differ in nuisance
    assert s["share_nuisance"] == pytest.approx(1 - s["good_fraction"])


def test_distortions_reference():
    rng = np.random.default_rng(0)
    cfg = ViewConfig()
    ids = list(range(10, 30))
    for _ in range(50):
        m = distort(ids, "mask", rng, cfg, mask_id=4)
        assert (
            len(m) == len(ids)
            and all(x in (4, y) for x, y in zip(m, ids))
            and m.count(4) < len(ids)
        )
        c = distort(ids, "crop", rng, cfg, mask_id=4)
        assert len(c) >= 10 and any(ids[k : k + len(c)] == c for k in range(len(ids)))
        d = distort(ids, "drop", rng, cfg, mask_id=4)
        it = iter(ids)
        assert 1 <= len(d) and all(x in it for x in d)  # an ordered subsequence
    with pytest.raises(InputError, match="unknown bad-view op"):
        distort(ids, "shuffle", rng, cfg, 4)


def test_errors(corpus, tok):
    with pytest.raises(InputError, match="unknown kind"):
        make_view_dataset(corpus, "great", tok)
    with pytest.raises(InputError, match="rho must be"):
        make_view_dataset(corpus, "mixture", tok, rho=1.5)
    with pytest.raises(InputError, match="rank"):
        make_view_dataset(corpus, "good", tok, rank=2, world_size=2)
    few = CaptionCorpus(["a", "b", "c"], [["x y", "z w"], ["only one"], ["one more"]])
    with pytest.raises(InputError, match="2 of 3 images have fewer"):
        make_view_dataset(few, "good", tok)
    make_view_dataset(few, "bad", tok).batch(0)  # bad views need one caption
    with pytest.raises(InputError, match="expected a CaptionCorpus"):
        make_view_dataset(["a"], "good", tok)


def test_world_good_pairs_describe_their_scene(world, tok):
    from prh.world import SHAPES
    from prh.world.captions import SHAPE_WORDS

    shape_of = {w: k for k, ws in SHAPE_WORDS.items() for w in ws}
    b = make_view_dataset(world, "good", tok, batch_size=24, seed=9).batch(0)
    train = set(world.split("train").tolist())
    for j in range(24):
        scene = int(b["state"][j])
        assert scene in train  # training draws from train scenes only
        shapes = {SHAPES[o.shape] for o in world.scene(scene).objects}
        for key in ("a", "b"):
            words = tok.decode(b[key][j]).split()
            assert {shape_of[w] for w in words if w in shape_of} <= shapes
        assert tok.decode(b["a"][j]) != tok.decode(b["b"][j])
