"""Scene themes: an option that leaves the plain world untouched and keeps every marginal."""

import re

import numpy as np
import pytest

from prh.errors import InputError
from prh.world import COLOURS, SHAPES, SIZES, CaveWorld, WorldConfig
from prh.world.scenes import sample_scene_table
from prh.world.themes import sample_themed_scene_table, sinkhorn_rows, theme_tables


def _objects(world: CaveWorld) -> np.ndarray:
    t = world._table
    return t[t[..., 0] >= 0]  # (n_objects, 4)


def test_default_world_is_bit_identical_to_the_plain_table():
    w = CaveWorld(WorldConfig(num_scenes=2000))
    assert np.array_equal(w._table, sample_scene_table(2000, 0, 3))
    assert w.theme(5) == 0 and not w.themes_of([1, 2, 3]).any()


def test_sinkhorn_gives_distributions_with_uniform_column_means():
    W = np.exp(3 * np.random.default_rng(0).standard_normal((7, 5)))
    P = sinkhorn_rows(W)
    np.testing.assert_allclose(P.sum(1), 1.0, atol=1e-12)
    np.testing.assert_allclose(P.mean(0), 1 / 5, atol=1e-12)
    # A positive scaling of W: P = diag(r) W diag(c) has rank-1 ratio structure.
    R = P / W
    np.testing.assert_allclose(R / R[:, :1], np.broadcast_to(R[:1] / R[0, 0], R.shape), rtol=1e-9)


def test_themed_world_keeps_marginals_and_adds_co_occurrence():
    w = CaveWorld(WorldConfig(num_scenes=6000, themes=6, theme_strength=2.0))
    o = _objects(w)
    for col, n in ((0, len(SHAPES)), (1, len(COLOURS)), (2, len(SIZES))):
        freq = np.bincount(o[:, col], minlength=n) / len(o)
        np.testing.assert_allclose(freq * n, 1.0, atol=0.12)
    assert np.bincount(w.themes_of(range(6000))).tolist() == [1000] * 6  # balanced
    # Co-occurrence: the shape distribution given the theme differs from the marginal.
    themes = w.themes_of(range(6000))
    shapes = [w._table[themes == t][..., 0] for t in range(6)]
    cond = np.stack([np.bincount(s[s >= 0], minlength=8) for s in shapes])
    cond = cond / cond.sum(1, keepdims=True)  # (6, 8): P(shape | theme)
    assert np.abs(cond - 1 / 8).max() > 0.2
    # The theme's table, up to the (shape, colour) rejection (a frequent shape collides more).
    np.testing.assert_allclose(cond, theme_tables(6, 0, 2.0)["shape"], atol=0.08)


def test_themed_table_is_a_pure_function_of_its_arguments():
    a = sample_themed_scene_table(500, 3, 3, 4, 2.0, (0.15, 0.35, 0.5))
    b = sample_themed_scene_table(500, 3, 3, 4, 2.0, (0.15, 0.35, 0.5))
    c = sample_themed_scene_table(500, 4, 3, 4, 2.0, (0.15, 0.35, 0.5))
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])
    rows = {r.tobytes() for r in a[0]}
    assert len(rows) == 500  # distinct scenes
    for row in a[0]:  # no repeated (shape, colour), distinct cells
        used = row[row[:, 0] >= 0]
        assert len({(s, c) for s, c, _, _ in used}) == len(used)
        assert len(set(used[:, 3])) == len(used)


def test_captions_of_a_themed_world_name_its_objects():
    """Every caption of a themed scene names each object's shape and colour (by one of their
    words), and no shape or colour the scene lacks (captions that omit nothing)."""
    from prh.world.captions import COLOUR_WORDS, SHAPE_WORDS

    w = CaveWorld(WorldConfig(num_scenes=300, themes=3, omit_prob=0.0))
    for i in range(20):
        objs = w.scene(i).objects
        shapes = {o.shape_name for o in objs}
        colours = {o.colour_name for o in objs}
        for cap in w.captions(i, 5, seed=0):
            words = set(re.findall(r"[a-z-]+", cap.lower()))
            named_shapes = {s for s, ws in SHAPE_WORDS.items() if words & set(ws)}
            named_colours = {c for c, ws in COLOUR_WORDS.items() if words & set(ws)}
            assert named_shapes == shapes, (i, cap)
            assert named_colours == colours, (i, cap)


def test_negative_themes_are_refused():
    with pytest.raises(InputError, match="themes must be >= 0"):
        CaveWorld(WorldConfig(themes=-1))
