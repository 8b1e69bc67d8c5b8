"""The demo's grid preset and the cave runner's curve options, without training anything."""

from __future__ import annotations

import pytest

from prh.errors import InputError
from prh.scaling.cave import CaveBackend
from prh.scaling.grid import Grid, demo_grid, off_grid_rhos


def test_demo_grid_cells():
    g = demo_grid("d", samples=8192, law_rhos=(0.5,), law_run_samples=4096, heldout_runs=2)
    cells = g.cells(7)
    curve = [c for c in cells if c.split == "curve"]
    assert [(c.views, c.samples, c.seed) for c in curve] == [
        ("good", 8192, 7), ("next-token", 8192, 7), ("bad", 8192, 7)
    ]  # fmt: skip
    held = [c for c in cells if c.split in ("heldout", "repeat")]
    assert [(c.split, c.seed, c.point) for c in held] == [
        ("heldout", 1007, 0), ("repeat", 2007, 0), ("heldout", 1008, 1), ("repeat", 2008, 1)
    ]  # fmt: skip
    assert {c.samples for c in held} == {4096} and held[0].rho == held[1].rho
    assert [c.rho for c in held[::2]] == off_grid_rhos(2, (0.5,), 7)


def test_off_grid_rhos_keep_their_margin_and_refuse_too_many():
    r = off_grid_rhos(5, (0.25, 0.5, 0.75), 0)
    assert r == off_grid_rhos(5, (0.25, 0.5, 0.75), 0) != off_grid_rhos(5, (0.25, 0.5, 0.75), 1)
    taken = [0.0, 1.0, 0.25, 0.5, 0.75]
    for i, x in enumerate(r):
        assert all(abs(x - g) > 0.05 for g in (*taken, *r[:i], *r[i + 1 :]))
    with pytest.raises(InputError, match="cannot place 30 held-out rho"):
        off_grid_rhos(30, (0.5,), 0)


def test_new_fields_at_their_defaults_keep_old_descriptions_and_cell_ids():
    # a sweep started before these options existed must still resume (same sweep.json, ids)
    g = Grid("g", rhos=(0.0, 1.0), samples=(10, 100), heldout=1)
    assert "curve_seed_offset" not in g.describe() and "heldout_rho_only" not in g.describe()
    assert {"curve_every", "warmup_max_batches"}.isdisjoint(CaveBackend().options())
    assert CaveBackend(curve_every=128).options()["curve_every"] == 128


def test_cave_train_config_curves_and_warmup_cap(tmp_path):
    from prh.scaling.grid import Cell
    from prh.training.config import train_config

    b = CaveBackend(train=train_config(batch_size=64), curve_every=128, warmup_max_batches=8)
    long, short = Cell("curve", "good", None, 64 * 400, 0), Cell("curve", "good", None, 640, 0)
    cfg = b.train_config(long, tmp_path)
    assert (cfg.eval_every, cfg.checkpoint_every) == (2, 0)
    assert cfg.eval_features == str(b.vision_path(tmp_path))
    assert cfg.optim.warmup_frac == pytest.approx(8 / 400)  # 8 batches, not 5% (20 batches)
    assert b.train_config(short, tmp_path).optim.warmup_frac == pytest.approx(0.05)
    with pytest.raises(InputError, match="not a multiple of the batch"):
        CaveBackend(curve_every=100).train_config(short, tmp_path)


def test_cave_runner_options_keep_the_names_of_older_sweeps():
    """The runner carries TrainConfigs; its options (the cell ids) read as when it took
    (key, value) pairs: none for the default recipe, the recipe's five and then any other
    change, and the next-token documents that differ (issue 32)."""
    from dataclasses import replace

    from prh.training.config import train_config

    assert CaveBackend().options() == {
        "vision": "efficientnet-lite0", "preset": "tiny", "eval_scenes": 500, "k": 10,
        "null": 100, "world_seed": 0, "caption_seed": 0, "nuisance_seed": 0, "image_size": 224,
        "train_overrides": [],
    }  # fmt: skip
    recipe = train_config(min_lr_frac=1.0, vocab_size=512)
    nt = replace(recipe, views="next-token", doc_captions=4, max_len=192)
    options = CaveBackend(train=recipe, next_token=nt).options()
    assert options["train_overrides"] == [["batch_size", 128], ["lr", 1e-3], ["max_len", 48],
        ["min_lr_frac", 1.0], ["train_scenes", 0], ["vocab_size", 512]]  # fmt: skip
    assert options["view_overrides"] == [["next-token", [["doc_captions", 4], ["max_len", 192]]]]
    with pytest.raises(InputError, match="next_token is the recipe of next-token runs"):
        CaveBackend(next_token=recipe)
