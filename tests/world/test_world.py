"""The cave world: distinct scenes, true relations and captions, deterministic renders."""

import re

import numpy as np
import pytest

from prh.errors import InputError
from prh.world import COLOURS, SHAPES, SIZES, CaveWorld, WorldConfig
from prh.world.captions import COLOUR_WORDS, RELATION_WORDS, SHAPE_WORDS, SIZE_WORDS
from prh.world.render import ALBEDO, CELL_X, CELL_Y


@pytest.fixture(scope="module")
def world() -> CaveWorld:
    return CaveWorld(WorldConfig(seed=3, num_scenes=600))


def test_default_world_has_many_distinct_scenes():
    w = CaveWorld()
    assert w.num_scenes >= 10_000
    keys = {
        tuple((o.shape, o.colour, o.size, o.col, o.row) for o in w.scene(i).objects)
        for i in range(w.num_scenes)
    }
    assert len(keys) == w.num_scenes
    used = {(o.shape, o.colour, o.size) for i in range(2000) for o in w.scene(i).objects}
    assert {s for s, _, _ in used} == set(range(len(SHAPES))) and len(SHAPES) >= 6
    assert {c for _, c, _ in used} == set(range(len(COLOURS))) and len(COLOURS) >= 8
    assert {z for _, _, z in used} == set(range(len(SIZES)))


def test_scene_rules(world):
    counts = set()
    for i in range(world.num_scenes):
        objs = world.scene(i).objects
        counts.add(len(objs))
        assert 1 <= len(objs) <= 3
        assert len({(o.col, o.row) for o in objs}) == len(objs)  # distinct cells
        assert len({(o.shape, o.colour) for o in objs}) == len(objs)  # nameable
    assert counts == {1, 2, 3}


def test_determinism_and_seed_dependence():
    a, b = (
        CaveWorld(WorldConfig(seed=1, num_scenes=300)),
        CaveWorld(WorldConfig(seed=1, num_scenes=300)),
    )
    c = CaveWorld(WorldConfig(seed=2, num_scenes=300))
    assert [a.state(i) for i in range(50)] == [b.state(i) for i in range(50)]
    assert [a.state(i) for i in range(50)] != [c.state(i) for i in range(50)]
    assert a.captions(7, 4, seed=9) == b.captions(7, 4, seed=9)
    assert np.array_equal(a.render(7, 5), b.render(7, 5))
    assert np.array_equal(a.split("test"), b.split("test"))


def test_relations_match_pixel_positions(world):
    # Reference: compare the cells' pixel centres, not the cell indices.
    for i in range(200):
        s = world.scene(i)
        got = {(r.a, r.kind, r.b) for r in s.relations()}
        want = set()
        for a, oa in enumerate(s.objects):
            for b, ob in enumerate(s.objects):
                if a == b:
                    continue
                xa, ya, xb, yb = CELL_X[oa.col], CELL_Y[oa.row], CELL_X[ob.col], CELL_Y[ob.row]
                if xa < xb:
                    want.add((a, "left of", b))
                if xa > xb:
                    want.add((a, "right of", b))
                if ya < yb:
                    want.add((a, "above", b))
                if ya > yb:
                    want.add((a, "below", b))
                if abs(xa - xb) + abs(ya - yb) < 0.33 and (xa == xb or ya == yb):
                    want.add((a, "next to", b))
        assert got == want, i


def _words(table: dict) -> dict[str, str]:
    return {w: k for k, ws in table.items() for w in ws}


SHAPE_OF, COLOUR_OF, SIZE_OF = _words(SHAPE_WORDS), _words(COLOUR_WORDS), _words(SIZE_WORDS)
NP = re.compile(
    r"\b("
    + "|".join(sorted(COLOUR_OF, key=len, reverse=True))
    + r") ("
    + "|".join(SHAPE_OF)
    + r")\b"
)
REL = re.compile(
    r"the (\w+) (\w+) (?:is|sits|is placed) ("
    + "|".join(sorted({w for ws in RELATION_WORDS.values() for w in ws}, key=len, reverse=True))
    + r") the (\w+) (\w+)"
)


def test_captions_are_true(world):
    """Every colour-shape phrase names an object; every relation holds; counts are right."""
    rel_of = _words(RELATION_WORDS)
    n_rel = 0
    for i in range(300):
        s = world.scene(i)
        objs = {(COLOURS[o.colour], SHAPES[o.shape]): j for j, o in enumerate(s.objects)}
        for cap in world.captions(i, 6, seed=i):
            low = cap.lower()
            for colour, shape in NP.findall(low):
                assert (COLOUR_OF[colour], SHAPE_OF[shape]) in objs, (cap, s.to_state())
            words = set(re.findall(r"[a-z-]+", low))
            assert {SHAPE_OF[w] for w in words if w in SHAPE_OF} <= {
                SHAPES[o.shape] for o in s.objects
            }
            assert {SIZE_OF[w] for w in words if w in SIZE_OF} <= {SIZES[o.size] for o in s.objects}
            if "two " in low or "three " in low:
                assert ("two " in low) == (len(s.objects) == 2), cap
            for c1, s1, rel, c2, s2 in REL.findall(low):
                a, b = objs[(COLOUR_OF[c1], SHAPE_OF[s1])], objs[(COLOUR_OF[c2], SHAPE_OF[s2])]
                assert rel_of[rel] in s.relation_kinds[(a, b)], cap
                n_rel += 1
    assert n_rel > 50  # relations are actually exercised


def test_captions_differ_and_are_sometimes_partial(world):
    partial = total = 0
    for i in range(200):
        caps = world.captions(i, 5, seed=0)
        assert len(set(caps)) == 5
        assert world.captions(i, 2, seed=0) == caps[:2]  # a prefix: n does not change the first
        assert caps != world.captions(i, 5, seed=1)
        n = len(world.scene(i).objects)
        for c in caps:
            named = {SHAPE_OF[w] for w in re.findall(r"[a-z]+", c.lower()) if w in SHAPE_OF}
            if n >= 2:
                total += 1
                partial += len(named) < n
    assert 0.05 < partial / total < 0.5  # omit_prob = 0.2, plus shapes shared by two objects


def test_renders(world):
    a, b, c = world.render(5, 0), world.render(5, 0), world.render(5, 1)
    assert a.shape == (64, 64, 3) and a.dtype == np.uint8
    assert np.array_equal(a, b)
    assert np.abs(a.astype(int) - c).mean() > 5  # another nuisance: another image
    assert world.render(5, 0, size=224).shape == (224, 224, 3)
    s = world.sketch(5, 0)
    assert s.shape == (64, 64, 3) and np.array_equal(s, world.sketch(5, 0))
    assert not np.array_equal(s, world.sketch(5, 1))


def test_render_shows_the_colour():
    """Planted answer: the chromaticity of the most saturated pixels names the object's colour."""
    w = CaveWorld(WorldConfig(seed=0, num_scenes=1000, max_objects=1))
    pal = {k: np.array(v) / sum(v) for k, v in ALBEDO.items() if k != "gray"}
    hits = n = 0
    for i in range(120):
        colour = COLOURS[w.scene(i).objects[0].colour]
        if colour == "gray":
            continue
        img = w.render(i, nuisance_seed=i, size=96).astype(float) / 255
        sat = img.max(-1) - img.min(-1)
        top = img.reshape(-1, 3)[np.argsort(sat.ravel())[-40:]].mean(0)
        chroma = top / top.sum()
        guess = min(pal, key=lambda k: np.abs(pal[k] - chroma).sum())
        hits += guess == colour
        n += 1
    assert hits / n > 0.8


def test_splits_and_corpus(world):
    tr, te = world.split("train"), world.split("test")
    assert len(np.intersect1d(tr, te)) == 0 and len(tr) + len(te) == world.num_scenes
    assert 0.05 < len(te) / world.num_scenes < 0.15
    c = world.corpus(te[:10], captions_per_scene=4, seed=2)
    assert c.image_ids == [f"scene_{i}" for i in te[:10]]
    assert all(len(caps) == 4 for caps in c.captions)
    assert c.captions[0] == world.captions(int(te[0]), 4, seed=2)
    assert c.splits["test"] == c.image_ids and c.splits["train"] == []


def test_errors(world):
    with pytest.raises(InputError, match="out of range"):
        world.scene(world.num_scenes)
    with pytest.raises(InputError, match="unknown split"):
        world.split("val")
    with pytest.raises(InputError, match="16 to 1024 pixels, got 8"):
        world.render(0, 0, size=8)
    with pytest.raises(InputError, match="16 to 1024 pixels"):
        world.sketch(0, 0, size=2000)
    with pytest.raises(InputError, match="exceeds"):
        CaveWorld(WorldConfig(num_scenes=5000, max_objects=1))
    # Bounded before any memory is spent (10**8 scenes once grew to 22.5 GB).
    with pytest.raises(InputError, match="num_scenes must be 2 to 1,000,000, got 100,000,000"):
        CaveWorld(WorldConfig(num_scenes=10**8))


def test_too_few_wordings_is_an_input_error(world, monkeypatch):
    import prh.world.captions as captions_mod

    monkeypatch.setattr(captions_mod, "caption", lambda *a, **k: "a red cube.")
    with pytest.raises(InputError, match="gave only 1 distinct captions, asked for 2"):
        world.captions(0, 2)


def test_captions_do_not_depend_on_the_process_hash_seed(world):
    import json
    import os
    import subprocess
    import sys

    code = (
        "import json; from prh.world import CaveWorld, WorldConfig; "
        "w = CaveWorld(WorldConfig(seed=3, num_scenes=600)); "
        "print(json.dumps(w.captions(11, 3, seed=5)))"
    )
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == world.captions(11, 3, seed=5)
