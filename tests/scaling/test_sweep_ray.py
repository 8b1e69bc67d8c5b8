"""`prh sweep --executor ray` on a real local Ray cluster (a head and a worker node on this
machine): the rows equal a local sweep's, and a driver killed midway resumes with nothing lost or
doubled."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

import prh
from prh.scaling.backends import PlantedBackend, TheoryBackend
from prh.scaling.executors import RayExecutor
from prh.scaling.grid import Grid, preset_grid
from prh.scaling.sweep import RESULTS, read_results, run_sweep

pytestmark = pytest.mark.slow

SRC = str(Path(prh.__file__).resolve().parents[1])
GRID = preset_grid("demo", "theory")  # 72 cells of the exact learner, ~0.05 s each


def _env() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": SRC + (os.pathsep + path if path else ""),
            "OMP_NUM_THREADS": "1"}  # fmt: skip


@pytest.fixture(scope="module")
def ray_cluster():
    """A head node and one worker node (one CPU each), torn down even when a test fails."""
    pytest.importorskip("ray", reason="ray is not installed (pip install 'prh[ray]')")
    from ray.cluster_utils import Cluster

    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "RAY_USAGE_STATS_ENABLED")}
    os.environ.update(PYTHONPATH=_env()["PYTHONPATH"], RAY_USAGE_STATS_ENABLED="0")
    node = {"num_cpus": 1, "object_store_memory": 80 * 1024**2, "include_dashboard": False}
    cluster = Cluster(shutdown_at_exit=True)
    try:
        cluster.add_node(**node)  # the head
        cluster.add_node(**{k: v for k, v in node.items() if k != "include_dashboard"})
        yield cluster
    finally:
        cluster.shutdown()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _sweep(out: Path, *extra: str) -> subprocess.Popen:
    argv = [sys.executable, "-m", "prh", "sweep", "--preset", "demo", "--backend", "theory",
            "--out", str(out), "--no-progress", *extra]  # fmt: skip
    return subprocess.Popen(argv, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip


def _finish(proc: subprocess.Popen) -> str:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, f"exit {proc.returncode}: {err[-2000:]}"
    return out


@pytest.fixture(scope="module")
def local_rows(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("local")
    run_sweep(GRID, TheoryBackend(), out, workers=1)
    return _by_id(read_results(out / RESULTS))


def _running_cells() -> list[int]:
    """Ray workers of this test's cluster (our descendants) busy with a cell (by process title)."""
    parent, title = {}, {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                parent[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
                title[int(d.name)] = (d / "cmdline").read_bytes()
            except (OSError, IndexError, ValueError):
                continue
    mine, frontier = set(), [os.getpid()]
    while frontier:
        up = frontier.pop()
        kids = [c for c, p in parent.items() if p == up]
        mine.update(kids)
        frontier += kids
    return [p for p in mine if title.get(p, b"").startswith(b"ray::_ray_cell")]


def _by_id(rows: list[dict]) -> dict:
    """What must not depend on where a cell ran (everything but the wall time)."""
    return {r["cell_id"]: {k: v for k, v in r.items() if k != "seconds"} for r in rows}


def test_ray_sweep_equals_local_sweep(ray_cluster, local_rows, tmp_path):
    out = tmp_path / "ray"
    stdout = _finish(_sweep(out, "--executor", "ray", "--address", ray_cluster.address))
    assert f"{len(GRID.cells())} run, 0 already done, 0 failed" in stdout
    rows = read_results(out / RESULTS)
    assert len(rows) == len(GRID.cells())
    assert _by_id(rows) == local_rows  # same cell ids, bit-identical scores and extras


def test_killed_ray_sweep_resumes_without_loss_or_duplicates(ray_cluster, local_rows, tmp_path):
    out = tmp_path / "ray"
    res = out / RESULTS
    # one cell in flight at a time, so the kill lands midway
    proc = _sweep(out, "--executor", "ray", "--address", ray_cluster.address, "--workers", "1")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if res.exists() and res.read_bytes().count(b"\n") >= 10:
            break
        time.sleep(0.02)
    assert proc.poll() is None, f"the sweep ended before the kill: {proc.communicate()[1][-2000:]}"
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    deadline = time.monotonic() + 15
    while _running_cells() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running_cells(), "the cluster kept running a dead driver's cells"
    before = read_results(res)
    assert 10 <= len(before) < len(GRID.cells())
    stdout = _finish(_sweep(out, "--executor", "ray", "--address", ray_cluster.address))
    assert f"{len(GRID.cells()) - len(before)} run, {len(before)} already done" in stdout
    rows = read_results(res)
    ids = [r["cell_id"] for r in rows]
    assert len(ids) == len(set(ids)) == len(GRID.cells())  # nothing lost, nothing twice
    assert _by_id(rows) == local_rows
    assert res.read_text().count("\n") == len(rows)  # no torn fragment left behind


def test_ray_without_address_runs_on_its_own_local_instance(tmp_path):
    pytest.importorskip("ray", reason="ray is not installed (pip install 'prh[ray]')")
    run_sweep(GRID, PlantedBackend(), tmp_path / "local", workers=1)
    proc = subprocess.Popen(
        [sys.executable, "-m", "prh", "sweep", "--preset", "demo", "--backend", "planted",
         "--out", str(tmp_path / "ray"), "--executor", "ray", "--workers", "1"],
        env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    assert "(a local Ray instance of 1 CPU(s))" in err and "0 failed" in out
    assert "WARNING" not in err  # Ray's start-up chatter stays out of the sweep's output
    ray_rows = _by_id(read_results(tmp_path / "ray" / RESULTS))
    assert ray_rows == _by_id(read_results(tmp_path / "local" / RESULTS))


@dataclass(frozen=True)
class _DiesOnOneCell(PlantedBackend):
    """The planted backend, except that one cell kills its worker process (a lost node, an OOM)."""

    def __call__(self, cell, out_dir):
        if cell.rho == 1.0 and cell.samples == 3000:
            os._exit(1)
        return super().__call__(cell, out_dir)


def test_a_dead_worker_fails_its_cell_not_the_sweep(ray_cluster, tmp_path):
    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import us
    grid = Grid("crash", rhos=(0.0, 1.0), samples=(300, 3000))
    executor = RayExecutor(address=ray_cluster.address, max_retries=0)
    s = run_sweep(grid, _DiesOnOneCell(), tmp_path, executor=executor)
    assert (s.ran, len(s.failed)) == (3, 1) and "WorkerCrashedError" in s.failed[0][1]
    assert len(read_results(tmp_path / RESULTS)) == 3
    again = run_sweep(grid, PlantedBackend(), tmp_path, executor=executor)  # same cell ids
    assert (again.ran, again.skipped, again.failed) == (1, 3, [])
