"""Narrations on the moving world: trajectories, one narrator style, verbs, lengths, batches."""

from __future__ import annotations

import re

import numpy as np
import pytest

from prh.errors import InputError
from prh.theory.markov import dense_pair_kernel
from prh.views import TextTokenizer, ViewConfig, make_view_dataset
from prh.views.lag import LagPairs
from prh.views.narration import (
    CONNECTORS,
    NarrationPaths,
    NarrationSource,
    max_narration_tokens,
    pieces,
)
from prh.world import make_world
from prh.world.captions import COLOUR_WORDS, FRAMES_ANY, SHAPE_WORDS
from prh.world.dynamics import MOBILITY
from prh.world.moving import MovingWorld, MovingWorldConfig
from prh.world.scenes import COLOURS, SHAPES

# Every shape (for the verbs), few colours and sizes: 8 x 2 x 2 x 9 = 288 states.
SMALL = MovingWorldConfig(colours=2, shapes=8, sizes=2, lag=7)
SHAPE_OF = {w: s for s, words in SHAPE_WORDS.items() for w in words}
COLOUR_OF = {w: c for c, words in COLOUR_WORDS.items() for w in words}
EVENT = re.compile(r"(?:^|\s)(then|now|next) the (\w+) (\w+) (.+?): ")


@pytest.fixture(scope="module")
def world() -> MovingWorld:
    return MovingWorld(SMALL)


@pytest.fixture(scope="module")
def source(world) -> NarrationSource:
    return NarrationSource(world, world.split("train"), 6, stride=5)


def _docs(source, n=400):
    return [source.document(j, w) for w, j in enumerate(range(0, source.num_items, 2621))][:n]


def test_a_document_is_a_pure_function_of_its_seed(world, source):
    again = NarrationSource(MovingWorld(SMALL), world.split("train"), 6, stride=5)
    assert source.document(1234, 7) == again.document(1234, 7)
    assert source.document(1234, 7) != source.document(1234, 8)
    tok = TextTokenizer.train(source.texts(64), vocab_size=400)
    kw = {"batch_size": 8, "max_len": max_narration_tokens(6), "seed": 3}
    cfg = ViewConfig(doc_captions=6)
    a = make_view_dataset(source, "next-token", tok, config=cfg, **kw).batch(5)
    b = make_view_dataset(again, "next-token", tok, config=cfg, **kw).batch(5)
    assert all(bool((a[k] == b[k]).all()) for k in a)


def test_frames_are_chain_steps_of_one_run_inside_the_training_states(world):
    train = set(world.split("train").tolist())
    Q = world.chain.Q.toarray()
    one = NarrationSource(world, world.split("train"), 12, stride=1)
    for doc in _docs(one, 200):
        assert set(doc.states) <= train
        for s, t in zip(doc.states[:-1], doc.states[1:]):
            assert Q[s, t] > 0  # one step of the chain: stay, or one edge of one line
    five = NarrationSource(world, world.split("train"), 4, stride=5)
    K = dense_pair_kernel(world.chain, 5)
    for doc in _docs(five, 200):
        assert all(K[s, t] > 0 for s, t in zip(doc.states[:-1], doc.states[1:]))


@pytest.mark.slow
def test_two_frames_are_the_lag_pairs_at_lag_stride(world):
    ids = world.split("train")
    paths = NarrationPaths(world, ids, 2, stride=5)
    rows = paths.draw(200_000, np.random.default_rng(0))
    emp = np.zeros((len(ids), len(ids)))
    np.add.at(emp, (rows[:, 0], rows[:, 1]), 1.0)
    K = dense_pair_kernel(world.chain, 5)[np.ix_(ids, ids)]
    assert np.abs(emp / emp.sum() - K / K.sum()).max() < 3e-3
    assert np.allclose(paths.weights, LagPairs(world, ids, lag=5).weights)


@pytest.mark.slow
def test_three_frames_are_the_conditioned_chain(world):
    """On a set of 40% of the states (so that the conditioning matters), three frames follow the
    exact law ``p(s0) Q^k(s0, s1) Q^k(s1, s2)`` over the set (a dense matrix power), and the same
    law as free runs of the chain whose frames all fall in the set (rejection)."""
    n = world.num_scenes
    ids = np.sort(np.random.default_rng(5).choice(n, size=int(0.4 * n), replace=False))
    Qk = dense_pair_kernel(world.chain, 10)[np.ix_(ids, ids)] / world.chain.p[ids, None]
    joint = world.chain.p[ids, None, None] * Qk[:, :, None] * Qk[None, :, :]  # (s0, s1, s2)
    joint /= joint.sum()
    exact = [joint.sum(axis=(1, 2)), joint.sum(axis=(0, 2)), joint.sum(axis=(0, 1))]
    rows = NarrationPaths(world, ids, 3, stride=10).draw(200_000, np.random.default_rng(2))
    rng = np.random.default_rng(1)
    s = rng.choice(n, size=1_000_000, p=world.chain.p)
    frames = [s]
    for _ in range(2):
        for _ in range(10):
            s = world._step(s, rng)
        frames.append(s)
    inside = np.isin(np.arange(n), ids)
    keep = inside[frames[0]] & inside[frames[1]] & inside[frames[2]]
    for j in range(3):
        ours = np.bincount(rows[:, j], minlength=len(ids)) / len(rows)
        free = np.bincount(np.searchsorted(ids, frames[j][keep]), minlength=len(ids))
        assert 0.5 * np.abs(ours - exact[j]).sum() < 0.015  # total variation (noise ~0.009)
        assert 0.5 * np.abs(free / free.sum() - exact[j]).sum() < 0.015
    # the conditioning is not a small effect here: the unconditioned chain's law is far
    free_s1 = np.bincount(np.searchsorted(ids, frames[1][inside[frames[1]]]), minlength=len(ids))
    assert 0.5 * np.abs(free_s1 / free_s1.sum() - exact[1]).sum() > 0.03


def _frame_of(caption: str) -> str:
    """The longest caption frame of the grammar that ``caption`` fills with a noun phrase."""
    body = caption.rstrip(".")
    fits = [f for f in FRAMES_ANY if re.fullmatch(re.escape(f).replace(r"\{L\}", "an? .+"), body)]
    return max(fits, key=len)


def test_one_narrator_style_per_document(source):
    styles = set()
    for doc in _docs(source):
        styles.add(doc.style)
        text = doc.text.replace(":", " ").replace(",", " ").replace(".", " ")
        words = text.split()
        for w in words:  # every synonym is the style's own
            for table, of in ((SHAPE_WORDS, SHAPE_OF), (COLOUR_WORDS, COLOUR_OF)):
                if w in of:
                    syn = table[of[w]]
                    assert syn.index(w) == doc.style.vocab % len(syn), (w, doc.text)
        assert {w for w in words if w in CONNECTORS} <= {CONNECTORS[doc.style.vocab % 3]}
        captions = [f.split(": ")[-1] for f in doc.frames]
        assert len({c.endswith(".") for c in captions}) == 1  # one full-stop habit
        assert len({_frame_of(c) for c in captions}) == 1  # one frame ("a picture of ...")
    assert len(styles) > 20  # styles vary between documents


def test_verbs_follow_the_dynamics(world, source):
    verbs: dict[str, set[str]] = {}
    seen = 0
    for doc in _docs(source):
        events = EVENT.findall(doc.text)
        assert len(events) == len(doc.states) - 1
        for (_, colour, shape, told), a, b in zip(events, doc.states[:-1], doc.states[1:]):
            oa, ob = world.object(a), world.object(b)
            assert SHAPE_OF[shape] == SHAPES[oa.shape] and COLOUR_OF[colour] == COLOURS[oa.colour]
            move = re.search(r"(rolls|tumbles|slides) (\w+)(?: and (\w+))?", told)
            assert (move is not None) == ((oa.row, oa.col) != (ob.row, ob.col)), told
            if move:
                verbs.setdefault(SHAPES[oa.shape], set()).add(move.group(1))
                dirs = {d for d in move.groups()[1:] if d}
                want = {"left"} if ob.col < oa.col else {"right"} if ob.col > oa.col else set()
                want |= {"up"} if ob.row < oa.row else {"down"} if ob.row > oa.row else set()
                assert dirs == want, (told, oa, ob)
                seen += 1
            assert ("becomes" in told) == (oa.shape != ob.shape)
            assert ("turns" in told) == (oa.colour != ob.colour)
            grew = "grows" if ob.size > oa.size else "shrinks" if ob.size < oa.size else None
            assert all((w in told) == (w == grew) for w in ("grows", "shrinks"))
    assert seen > 100
    assert all(len(v) == 1 for v in verbs.values())  # one verb per shape
    verb = {s: v.pop() for s, v in verbs.items()}
    assert verb["sphere"] == "rolls" and verb["cube"] == "slides"
    rank = {"rolls": 2, "tumbles": 1, "slides": 0}
    by_mobility = sorted(verb, key=MOBILITY.__getitem__)
    assert [rank[verb[s]] for s in by_mobility] == sorted(rank[verb[s]] for s in by_mobility)


def test_lengths_in_frames_and_tokens(source):
    docs = _docs(source)
    assert all(len(d.frames) == 6 == len(d.states) for d in docs)
    bound = max_narration_tokens(6)
    assert max(pieces(d.text) + 2 for d in docs) <= bound
    tok = TextTokenizer.train(source.texts(256), vocab_size=2048)
    ids = tok.tokenize([d.text for d in docs])
    assert [len(x) for x in ids] == [pieces(d.text) for d in docs]  # every word one token
    assert 1 not in {t for x in ids for t in x}  # no [UNK]
    ds = make_view_dataset(
        source, "next-token", tok, config=ViewConfig(doc_captions=6), batch_size=16,
        max_len=bound, seed=0,
    )  # fmt: skip
    b = ds.batch(0)
    assert int(b["tokens_mask"].sum(1).max()) < bound  # nothing truncated
    text = tok.decode(b["tokens"][0])
    assert len(EVENT.findall(" " + text + ": ")) >= 4
    assert np.array_equal(b["state"].numpy(), source.state_of(ds.plan(0)[0]))


@pytest.mark.slow
def test_the_bound_holds_on_the_full_world():
    w = make_world("moving", seed=0)
    src = NarrationSource(w, w.split("train"), 8)
    lens = [pieces(t) + 2 for t in src.texts(300)]
    assert max(lens) <= max_narration_tokens(8) == 264
    assert 100 < np.mean(lens) < 170


def test_refusals(world, source):
    with pytest.raises(InputError, match="narration_len must be 2 to 64"):
        NarrationSource(world, world.split("train"), 1)
    with pytest.raises(InputError, match="narration_len must be 2 to 64"):
        NarrationSource(world, world.split("train"), 65)
    with pytest.raises(InputError, match="narration_stride must be 1 to 10,000"):
        NarrationSource(world, world.split("train"), 4, stride=0)
    with pytest.raises(InputError, match="does not move"):
        NarrationSource(make_world("cave", seed=0, num_scenes=50), [0, 1], 4)
    with pytest.raises(InputError, match="distinct"):
        NarrationSource(world, [3, 3], 4)
    with pytest.raises(InputError, match="documents of 6 frames"):
        source.draw(0, 2, np.random.default_rng(0))


def test_a_narration_run_reads_narrations(tmp_path):
    """``default_data_factory`` of ``--world moving --views next-token --narration-len L``: its
    rows are narrations of the run's training states, its tokenizer holds the narrator's words."""
    from prh.training import train_config
    from prh.training.data import default_data_factory

    cfg = train_config(
        "tiny", world="moving", views="next-token", narration_len=4, max_len=140,
        train_scenes=300, batch_size=16,
    )  # fmt: skip
    tok, ds = default_data_factory(cfg, tmp_path, 0, 1, True, lambda: None)
    assert isinstance(ds.source, NarrationSource) and ds.config.doc_captions == 4
    w = make_world("moving", seed=0)
    assert set(ds.source.paths.scene_ids.tolist()) == set(w.train_scenes(300).tolist())
    b = ds.batch(0)
    texts = [tok.decode(t) for t in b["tokens"]]
    assert all(len(EVENT.findall(" " + t + ": ")) >= 3 for t in texts)
    # (the first 300 training states are spheres and rings: they roll, nothing slides)
    words = ["rolls", "becomes", "turns", "grows", "shrinks", "then", "now", "next"]
    assert [len(ids) for ids in tok.tokenize(words)] == [1] * len(words)  # whole words
