"""Grid sizes, seeds, off-grid held-out points, stable ids and the held-out-vs-fit refusal."""

import pytest

from prh.errors import InputError
from prh.scaling.grid import Cell, Grid, preset_grid


def test_paper_grid_sizes_and_seeds():
    g = preset_grid("paper-grid", "theory")
    cells = g.cells(seed=0)
    by = {s: [c for c in cells if c.split == s] for s in ("fit", "heldout", "repeat", "curve")}
    fit_cells = {(c.rho, c.samples) for c in by["fit"]}
    assert len(fit_cells) == 45 and len(g.rhos) == 9 and len(g.samples) == 5
    assert len(by["fit"]) == 90  # two seeds per fit cell
    assert len(by["heldout"]) == 85 and len(by["repeat"]) == 85
    # held-out points are off-grid in both coordinates, inside the fit range, with fresh seeds
    for c in by["heldout"]:
        assert c.rho not in g.rhos and c.samples not in g.samples
        assert min(g.samples) <= c.samples <= max(g.samples) and 0 <= c.rho <= 1
    fit_seeds = {c.seed for c in by["fit"]}
    assert not fit_seeds & {c.seed for c in by["heldout"] + by["repeat"]}
    rep = {c.point: c for c in by["repeat"]}
    for c in by["heldout"]:
        assert (rep[c.point].rho, rep[c.point].samples) == (c.rho, c.samples)
        assert rep[c.point].seed != c.seed
    ids = [c.cell_id("theory", {}) for c in cells]
    assert len(set(ids)) == len(ids)
    assert g.cells(seed=0) == cells  # deterministic
    assert g.heldout_points(1) != g.heldout_points(0)


def test_more_heldout_than_fit_is_refused():
    with pytest.raises(InputError, match="8 held-out points but only 4 fit runs"):
        Grid("bad", rhos=(0.0, 1.0), samples=(10, 100), heldout=8)
    Grid("ok", rhos=(0.0, 1.0), samples=(10, 100), fit_seeds=2, heldout=8)  # 8 fit runs


def test_grid_errors():
    with pytest.raises(InputError, match="rho values must be in"):
        Grid("x", rhos=(1.5,), samples=(10,))
    with pytest.raises(InputError, match="unknown curve views"):
        Grid(
            "x",
            rhos=(0.5,),
            samples=(10,),
            curve_views=("jepa",),
            curve_samples=(1,),
            curve_seeds=1,
        )
    with pytest.raises(InputError, match="unknown grid preset 'huge'"):
        preset_grid("huge")
    with pytest.raises(InputError, match="unknown backend"):
        preset_grid("demo", "gpu")


def test_cell_id_is_stable_and_depends_on_what_matters():
    c = Cell("fit", "mixture", 0.5, 1000, 3)
    a = c.cell_id("theory", {"k": 1})
    assert a == Cell("heldout", "mixture", 0.5, 1000, 3, point=7).cell_id("theory", {"k": 1})
    assert a != Cell("fit", "mixture", 0.5, 1000, 4).cell_id("theory", {"k": 1})
    assert a != c.cell_id("theory", {"k": 2}) and a != c.cell_id("cave", {"k": 1})
    assert a == "f9aaeea83c398e4f"  # stable across processes and versions: resume depends on it


def test_a_run_set_of_several_seeds_keeps_seed_zero_s_cells_and_adds_the_others():
    from prh.scaling.grid import RunSet

    one = RunSet("toy", (("text", "good", 256),))
    three = RunSet("toy", (("text", "good", 256), ("text", "bad", 256)), seeds=3)
    assert [(c.views, c.seed) for c in three.cells(5)] == [
        ("good", 5), ("good", 6), ("good", 7), ("bad", 5), ("bad", 6), ("bad", 7),
    ]  # fmt: skip
    # seed 0's cell is the one-seed set's: a sweep that ran it keeps it (same id)
    assert three.cells(5)[0].cell_id("cave", {}) == one.cells(5)[0].cell_id("cave", {})
    assert len({c.cell_id("cave", {}) for c in three.cells(5)}) == 6
    assert three.describe() == one.describe()  # the family, not the seeds picked
    with pytest.raises(InputError, match=r"^run set toy: seeds must be >= 1, got 0$"):
        RunSet("toy", one.runs, seeds=0)
