"""A toy cave sweep: real training, real frozen vision features, real measure, at toy size."""

import pytest

pytest.importorskip("torch")

from prh.scaling.cave import CaveBackend
from prh.scaling.grid import Grid
from prh.scaling.sweep import RESULTS, read_results, run_sweep
from prh.training.config import train_config


@pytest.mark.slow
def test_toy_cave_sweep_trains_measures_and_resumes(tmp_path):
    runner = CaveBackend(
        vision="random:efficientnet-lite0",  # no weights needed; the pipeline is what is tested
        eval_scenes=24,
        k=5,
        null=10,
        image_size=64,
        train=train_config(train_scenes=64, batch_size=64, vocab_size=200),
    )
    grid = Grid("toy", rhos=(1.0,), samples=(128,), curve_views=("next-token",),
                curve_samples=(128,), curve_seeds=1)  # fmt: skip
    s = run_sweep(grid, runner, tmp_path)
    assert (s.ran, s.failed) == (2, [])
    rows = read_results(tmp_path / RESULTS)
    assert {r["views"] for r in rows} == {"mixture", "next-token"}
    for r in rows:
        assert 0.0 <= r["score"] <= 1.0 and r["calibrated"] is not None
        assert (tmp_path / r["extra"]["run_dir"] / "model.safetensors").is_file()
    assert len(list(tmp_path.glob("vision-*.safetensors"))) == 1  # cached once per sweep
    again = run_sweep(grid, runner, tmp_path)
    assert (again.ran, again.skipped) == (0, 2)
