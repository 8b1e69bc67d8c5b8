"""CPU threads: the launcher's OMP_NUM_THREADS is respected; ranks split the cores otherwise."""

import os

import torch
from fakes import fake_factory, tiny_config

from prh.training import train
from prh.training.distributed import default_threads


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def test_omp_num_threads_set_by_the_launcher_wins():
    assert default_threads({"OMP_NUM_THREADS": "3", "LOCAL_WORLD_SIZE": "8"}) == 3
    assert default_threads({"OMP_NUM_THREADS": "1"}) == 1


def test_without_it_local_ranks_split_the_cores():
    assert default_threads({}) == _cores()
    assert default_threads({"LOCAL_WORLD_SIZE": "2"}) == max(1, _cores() // 2)
    assert default_threads({"LOCAL_WORLD_SIZE": str(10 * _cores())}) == 1
    # Junk values fall back instead of crashing a rank.
    assert default_threads({"OMP_NUM_THREADS": "lots", "LOCAL_WORLD_SIZE": "x"}) == _cores()


def test_train_without_threads_uses_the_launchers_setting(tmp_path, monkeypatch):
    import json

    before = torch.get_num_threads()
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    try:
        run = train(tiny_config(samples=32), tmp_path / "run", progress=False,
                    data_factory=fake_factory, stop_after=0)  # fmt: skip
        assert json.loads((run / "meta.json").read_text())["threads"] == 2
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
