"""Sweeps resume without redoing or corrupting cells, survive a torn last line, and are
deterministic across worker counts."""

import fcntl
import json

import pytest

from prh.errors import InputError
from prh.scaling.backends import PlantedBackend, TheoryBackend
from prh.scaling.grid import Grid, preset_grid
from prh.scaling.sweep import RESULTS, read_results, run_sweep
from prh.scaling.theory_world import TheoryWorldConfig

GRID = Grid(
    "t",
    rhos=(0.0, 0.5, 1.0),
    samples=(300, 3000),
    heldout=3,
    curve_views=("good", "next-token"),
    curve_samples=(300, 3000),
    curve_seeds=2,
)


def _lines(path):
    return path.read_text().splitlines()


def test_resume_skips_finished_cells(tmp_path):
    s = run_sweep(GRID, PlantedBackend(), tmp_path)
    n = len(GRID.cells())
    assert (s.ran, s.skipped, s.failed) == (n, 0, [])
    rows = read_results(tmp_path / RESULTS)
    assert len(rows) == n and len({r["cell_id"] for r in rows}) == n
    assert {r["split"] for r in rows} == {"fit", "heldout", "repeat", "curve"}
    again = run_sweep(GRID, PlantedBackend(), tmp_path)
    assert (again.ran, again.skipped) == (0, n)
    assert len(_lines(tmp_path / RESULTS)) == n
    desc = json.loads((tmp_path / "sweep.json").read_text())
    assert desc["backend"] == "planted" and desc["grid"]["n_cells"] == n


def test_torn_last_line_is_cut_and_its_cell_rerun(tmp_path):
    run_sweep(GRID, PlantedBackend(), tmp_path)
    path = tmp_path / RESULTS
    whole = path.read_bytes()
    lines = whole.splitlines(keepends=True)
    torn = b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2]  # killed mid-write
    path.write_bytes(torn)
    assert len(read_results(path)) == len(lines) - 1  # reading ignores the fragment
    s = run_sweep(GRID, PlantedBackend(), tmp_path)
    assert (s.ran, s.skipped) == (1, len(lines) - 1)
    rows = read_results(path)
    assert len(rows) == len(lines) and path.read_bytes().endswith(b"\n")
    before = {json.loads(x)["cell_id"]: json.loads(x)["score"] for x in lines}
    assert {r["cell_id"]: r["score"] for r in rows} == before  # nothing corrupted, same result


def test_corrupt_middle_line_and_mismatched_grid_are_refused(tmp_path):
    run_sweep(GRID, PlantedBackend(), tmp_path)
    with pytest.raises(InputError, match="different grid"):
        run_sweep(preset_grid("demo", "planted"), PlantedBackend(), tmp_path)
    with pytest.raises(InputError, match="different options"):
        run_sweep(GRID, PlantedBackend(noise=0.5), tmp_path)
    path = tmp_path / RESULTS
    lines = _lines(path)
    lines[1] = lines[1][:10]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match="line 2 is not a JSON object"):
        run_sweep(GRID, PlantedBackend(), tmp_path)
    with pytest.raises(InputError, match="no such results file"):
        read_results(tmp_path / "nope.jsonl")


def test_a_running_sweep_holds_the_folder(tmp_path):
    with open(tmp_path / ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(InputError, match="another sweep is running"):
            run_sweep(GRID, PlantedBackend(), tmp_path)


@pytest.mark.slow
def test_parallel_workers_match_serial(tmp_path):
    runner = TheoryBackend(TheoryWorldConfig(n_states=40, n_nuisance=2, k=6))
    grid = Grid("p", rhos=(0.2, 0.9), samples=(200, 2000), heldout=2)
    serial = run_sweep(grid, runner, tmp_path / "serial", workers=1)
    par = run_sweep(grid, runner, tmp_path / "par", workers=2)
    assert serial.ran == par.ran == len(grid.cells())
    key = lambda rows: {r["cell_id"]: (r["score"], r["extra"]) for r in rows}  # noqa: E731
    a = key(read_results(tmp_path / "serial" / RESULTS))
    b = key(read_results(tmp_path / "par" / RESULTS))
    assert a == b  # bit-identical scores whatever the worker count


def test_failed_cells_are_listed_not_written(tmp_path):
    grid = Grid("f", rhos=(0.5,), samples=(10,))
    runner = TheoryBackend(TheoryWorldConfig(n_states=10, n_nuisance=1, k=2))

    class Failing(TheoryBackend):
        def __call__(self, cell, out_dir):
            raise InputError("boom")

    s = run_sweep(grid, Failing(runner.world), tmp_path)
    assert s.ran == 0 and len(s.failed) == 1 and "boom" in s.failed[0][1]
    assert (tmp_path / RESULTS).read_text() == ""


def test_a_folder_without_results_takes_new_settings(tmp_path):
    """A sweep that stopped before its first cell (a bad option) must not block the fixed rerun."""

    class BadPrepare(PlantedBackend):
        def prepare(self, out_dir):
            raise InputError("no such vision encoder")

    with pytest.raises(InputError, match="no such vision encoder"):
        run_sweep(GRID, BadPrepare(noise=0.5), tmp_path)
    assert read_results(tmp_path / RESULTS) == []
    s = run_sweep(GRID, PlantedBackend(), tmp_path)  # other options, and nothing to mix with
    assert s.ran == len(GRID.cells())
    assert json.loads((tmp_path / "sweep.json").read_text())["options"]["noise"] == 0.01


def test_a_pool_starts_the_costliest_cells_first(tmp_path):
    """With a runner that prices its cells, a pool gets them longest first (a shorter makespan
    when one long run would otherwise start last); in-process keeps the grid's order; the results
    are the same cells either way."""
    import contextlib
    from dataclasses import dataclass

    from prh.scaling.executors import InProcess

    @dataclass(frozen=True)
    class Priced(PlantedBackend):
        def cost(self, cell):
            return cell.samples * (3 if cell.views == "next-token" else 1)

    class Recording:
        name = "recording"

        def __init__(self):
            self.order = []

        def describe(self):
            return "recording"

        @contextlib.contextmanager
        def session(self):
            with InProcess().session() as run_cells:

                def record(runner, cells, out):
                    self.order.extend(cells)
                    yield from run_cells(runner, cells, out)

                yield record

    runner = Priced()
    pool = Recording()
    run_sweep(GRID, runner, tmp_path / "pool", executor=pool)
    costs = [runner.cost(c) for c in pool.order]
    assert costs == sorted(costs, reverse=True) and len(costs) == len(GRID.cells())
    assert pool.order[0].views == "next-token" and pool.order[0].samples == 3000
    grid_order = GRID.cells()
    same_cost = [c for c in grid_order if runner.cost(c) == 300]  # ties keep the grid's order
    assert [c for c in pool.order if runner.cost(c) == 300] == same_cost
    run_sweep(GRID, runner, tmp_path / "serial", workers=1)
    a = {r["cell_id"]: r["score"] for r in read_results(tmp_path / "pool" / RESULTS)}
    b = {r["cell_id"]: r["score"] for r in read_results(tmp_path / "serial" / RESULTS)}
    assert a == b


def test_the_cave_runner_prices_cells_by_the_tokens_they_read():
    """Next-token cells read one document of the next-token recipe's length (the JEPA recipe's
    when there is none), a JEPA cell two views."""
    from dataclasses import replace

    from prh.scaling.cave import CaveBackend
    from prh.scaling.grid import Cell
    from prh.training import train_config

    jepa = train_config("tiny", world="moving", max_len=48)
    nt = train_config("tiny", world="moving", max_len=192, views="next-token")
    good, ntp = Cell("curve", "good", None, 1000, 0), Cell("curve", "next-token", None, 1000, 0)
    with_doc = CaveBackend(train=jepa, next_token=nt)
    assert with_doc.cost(good) == 1000 * 2 * 48 and with_doc.cost(ntp) == 1000 * 192
    alone = CaveBackend(train=jepa)  # no next-token recipe: its cells train on the JEPA's
    assert alone.cost(ntp) == 1000 * 48 and alone.cost(replace(good, samples=10)) == 10 * 96
