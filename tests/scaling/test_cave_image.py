"""The ``cave-image`` runner: image and sketch runs as sweep cells, trained in-process, with the
configs ``prh train --modality`` builds from the same settings; render caches drawn once;
finished cells reused, killed ones resumed bitwise; the local pool gives the same weights."""

from __future__ import annotations

import argparse
import json

import pytest

pytest.importorskip("torch")

from prh.errors import InputError
from prh.scaling.cave_image import CaveImageBackend, train_or_resume
from prh.scaling.grid import Cell, RunSet
from prh.scaling.sweep import RESULTS, read_results, run_sweep
from prh.training.config import train_config
from prh.training.image_config import ImageConfig


def _recipe(**train):
    """The runner's default recipe with ``train`` changes."""
    return train_config(**{"lr": 3e-4, "train_scenes": 1000, "checkpoint_every": 20, **train})


TOY = dict(train=_recipe(batch_size=64, train_scenes=8, checkpoint_every=1),
           image=ImageConfig(image_size=16, render_views=2))  # fmt: skip
RUNS = RunSet("toy", (("image", "good", 128), ("sketch", "good", 128)))


def _cli_configs(argv: list[str]):
    """What ``prh train ARGV`` would train (the CLI's own parser and config builder)."""
    from prh.cli.train import add_arguments
    from prh.cli.train_image import image_configs

    p = argparse.ArgumentParser()
    add_arguments(p)
    return image_configs(p.parse_args(argv))


@pytest.mark.parametrize(
    ("modality", "views", "backbone", "scratch"),
    [("image", "good", "none", False), ("sketch", "good", "none", False),
     ("image", "bad", "random:efficientnet-lite0", True)],
)  # fmt: skip
def test_configs_are_those_prh_train_builds_from_the_same_flags(
    tmp_path, modality, views, backbone, scratch
):
    image = ImageConfig(image_size=16, render_views=2, backbone=backbone, freeze_until=10,
                        backbone_size=32, scratch_branch=scratch)  # fmt: skip
    runner = CaveImageBackend(train=_recipe(batch_size=128, train_scenes=24), image=image,
                              render_cache=str(tmp_path / "c"))  # fmt: skip
    cell = Cell("run", views, None, 256, 7, modality=modality)
    argv = ["--modality", modality, "--views", views, "--backbone", backbone, "--freeze-until",
            "10", "--backbone-size", "32", "--samples", "256", "--batch-size", "128", "--lr",
            "0.0003", "--image-size", "16", "--train-scenes", "24", "--render-views", "2",
            "--seed", "7", "--checkpoint-every", "20", "--render-cache", str(tmp_path / "c"),
            *(["--scratch-branch"] if scratch else [])]  # fmt: skip
    assert runner.configs(cell, tmp_path) == _cli_configs(argv)


def test_cells_of_a_run_set_and_their_ids():
    text = Cell("curve", "good", None, 64, 0)
    assert "modality" not in text.key("cave", {})  # text cell ids are those of older sweeps
    image, sketch = RUNS.cells(3)
    assert (image.split, image.modality, image.seed) == ("run", "image", 3)
    assert (sketch.views, sketch.modality) == ("good", "sketch")
    assert image.cell_id("cave-image", {}) != Cell(
        "run", "good", None, 128, 3, modality="sketch"
    ).cell_id("cave-image", {})
    assert RunSet("toy", RUNS.runs[:1]).describe() == RUNS.describe()  # the family, not the pick
    for bad in ((("video", "good", 1),), (("image", "mixture", 1),), (("image", "good", 1),) * 2):
        with pytest.raises(InputError, match="run set"):
            RunSet("toy", bad)
    with pytest.raises(InputError, match="image or sketch"):
        CaveImageBackend().configs(text, ".")


def test_options_leave_out_what_does_not_change_the_weights():
    a = CaveImageBackend(threads=1, render_cache="/a", modalities=("image",), cache_workers=1)
    b = CaveImageBackend(threads=4, render_cache="/b", modalities=("sketch",), cache_workers=3)
    assert a.options() == b.options()
    assert CaveImageBackend(train=_recipe(lr=1e-3)).options() != a.options()
    # the options by the names they had before the runner carried its configs (the cell ids)
    assert a.options() == {
        "preset": "tiny", "batch_size": 128, "lr": 3e-4, "train_scenes": 1000, "world_seed": 0,
        "checkpoint_every": 20, "image_size": 64, "render_views": 2, "backbone": "none",
        "freeze_until": 10, "backbone_size": 128, "scratch_branch": False,
    }  # fmt: skip
    assert CaveImageBackend(train=_recipe(grad_clip=0.5)).options()["train"] == {"grad_clip": 0.5}
    moments = CaveImageBackend(image=ImageConfig(render_views=2, pool="moments")).options()
    assert moments == {**a.options(), "pool": "moments"}  # another pooling: another cell


@pytest.mark.slow
def test_run_set_sweep_trains_reuses_and_resumes(tmp_path):
    runner = CaveImageBackend(**TOY, render_cache=str(tmp_path / "cache"))
    s = run_sweep(RUNS, runner, tmp_path / "sweep")
    assert (s.ran, s.failed) == (2, [])
    caches = sorted(p.name for p in (tmp_path / "cache").glob("*.npy"))
    assert len(caches) == 2 and caches[0].startswith("image") and caches[1].startswith("sketch")
    rows = read_results(tmp_path / "sweep" / RESULTS)
    assert [(r["modality"], r["score"]) for r in rows] == [("image", None), ("sketch", None)]
    runs = [tmp_path / "sweep" / r["extra"]["run_dir"] for r in rows]
    for run in runs:
        stored = json.loads((run / "config.json").read_text())
        assert stored["image"]["cache_dir"] == str(tmp_path / "cache")  # the shared caches
    weights = [(run / "model.safetensors").read_bytes() for run in runs]
    assert run_sweep(RUNS, runner, tmp_path / "sweep").skipped == 2
    # a killed cell: no weights, no row; the rerun trains it, and only it, to the same bytes
    (runs[1] / "model.safetensors").unlink()
    (tmp_path / "sweep" / RESULTS).write_text(json.dumps(rows[0]) + "\n")
    again = run_sweep(RUNS, runner, tmp_path / "sweep")
    assert (again.ran, again.skipped) == (1, 1)
    assert [(run / "model.safetensors").read_bytes() for run in runs] == weights
    # the local pool (spawned workers) trains the same weights
    pool = run_sweep(RUNS, runner, tmp_path / "pool", workers=2)
    assert pool.ran == 2
    rows = read_results(tmp_path / "pool" / RESULTS)
    got = {r["modality"]: (tmp_path / "pool" / r["extra"]["run_dir"]) for r in rows}
    assert [(got[m] / "model.safetensors").read_bytes() for m in ("image", "sketch")] == weights


@pytest.mark.slow
def test_a_run_stopped_mid_way_resumes_to_the_same_weights(tmp_path):
    from prh.training.image import train_image

    runner = CaveImageBackend(**TOY, render_cache=str(tmp_path / "cache"))
    train, image = runner.configs(Cell("run", "good", None, 192, 0, modality="image"), tmp_path)
    assert train_or_resume(train, image, tmp_path / "whole", 1) == "trained"
    train_image(train, image, tmp_path / "killed", False, threads=1, stop_after=2)
    assert not (tmp_path / "killed" / "model.safetensors").exists()
    assert train_or_resume(train, image, tmp_path / "killed", 1) == "resumed"
    assert train_or_resume(train, image, tmp_path / "killed", 1) == "reused"
    whole, killed = (tmp_path / d / "model.safetensors" for d in ("whole", "killed"))
    assert killed.read_bytes() == whole.read_bytes()
    (tmp_path / "early").mkdir()  # killed before its config: fit clears it, started again
    (tmp_path / "early" / ".config.json.x1y2.tmp").write_text("{")
    assert train_or_resume(train, image, tmp_path / "early", 1) == "trained"
    assert (tmp_path / "early" / "model.safetensors").read_bytes() == whole.read_bytes()
    (tmp_path / "foreign").mkdir()  # not a run's files: refused by fit's rule, never deleted
    (tmp_path / "foreign" / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="not a prh run"):
        train_or_resume(train, image, tmp_path / "foreign", 1)
    assert (tmp_path / "foreign" / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("modality", ["image", "sketch"])
def test_a_moving_world_run_is_the_one_prh_train_builds_with_world_moving(tmp_path, modality):
    """The runner and ``prh train --world moving --modality M`` train on the moving world (the
    CLI once recorded the cave for every image run, whatever ``--world`` said)."""
    runner = CaveImageBackend(train=_recipe(batch_size=128, train_scenes=24, world="moving"),
                              image=ImageConfig(image_size=16, render_views=2),
                              render_cache=str(tmp_path / "c"))  # fmt: skip
    cell = Cell("run", "good", None, 256, 7, modality=modality)
    argv = ["--world", "moving", "--modality", modality, "--views", "good", "--samples", "256",
            "--batch-size", "128", "--lr", "0.0003", "--image-size", "16", "--train-scenes", "24",
            "--render-views", "2", "--seed", "7", "--checkpoint-every", "20", "--render-cache",
            str(tmp_path / "c")]  # fmt: skip
    train, image = _cli_configs(argv)
    assert (train, image) == runner.configs(cell, tmp_path) and train.world == "moving"
    assert "world" in runner.options() and "world" not in CaveImageBackend().options()
