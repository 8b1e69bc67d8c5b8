"""``prh train --restarts N``: N seeds, the one with the largest held-out objective kept."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from prh.cli import main

MOVING = ["train", "--world", "moving", "--views", "good", "--preset", "tiny"]
FAST = ["--samples", "128", "--batch-size", "64", "--max-len", "24", "--threads", "1",
        "--checkpoint-every", "0", "--no-progress", "--restart-pairs", "256"]  # fmt: skip


@pytest.mark.parametrize(
    "flags, match",
    [
        (["--restarts", "1"], "--restarts 1: give 2 or more"),
        (["--restarts", "2", "--restart-pairs", "100"], "--restart-pairs 100: at least 256"),
        (["--restart-pairs", "512"], "--restart-pairs applies to --restarts N"),
    ],
)
def test_bad_restart_flags(bad_input, tmp_path, flags, match):
    argv = [*MOVING, "--out", str(tmp_path / "r"), *flags]
    bad_input(argv, match=match)
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    "flags, match",
    [
        (["--views", "bad"], "--views bad trains on other pairs"),
        (["--world", "cave"], "needs a world that moves"),
    ],
)
def test_restarts_need_good_views_on_a_moving_world(bad_input, tmp_path, flags, match):
    argv = ["train", "--preset", "tiny", "--views", "good", *flags, "--restarts", "2",
            "--out", str(tmp_path / "r")]  # fmt: skip
    bad_input(argv, match=match)
    assert not (tmp_path / "r").exists()


def test_restarts_refused_on_a_corpus(bad_input, tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"image": "a", "captions": ["a red cube", "one red cube"]}\n')
    argv = ["train", "--corpus", str(corpus), "--restarts", "2", "--out", str(tmp_path / "r")]
    bad_input(argv, inputs=[corpus], match=f"--corpus {corpus} has no pair kernel")
    assert not (tmp_path / "r").exists()


def test_restarts_refused_under_torchrun_and_with_resume(bad_input, tmp_path, monkeypatch):
    bad_input([*MOVING, "--resume", str(tmp_path), "--restarts", "2"],
              match="--restarts starts new runs; --resume takes one run")  # fmt: skip
    monkeypatch.setenv("WORLD_SIZE", "2")
    bad_input([*MOVING, "--restarts", "2", "--out", str(tmp_path / "r")], match="under torchrun")
    assert not (tmp_path / "r").exists()


def test_a_foreign_out_is_refused(bad_input, tmp_path):
    out = tmp_path / "r"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    bad_input([*MOVING, *FAST, "--restarts", "2", "--out", str(out)], match="holds notes.txt")
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def _restarts(out: Path, capsys, *extra: str) -> tuple[int, str]:
    code = main([*MOVING, *FAST, "--restarts", "2", "--out", str(out), *extra])
    return code, capsys.readouterr().out.strip()


@pytest.mark.slow
def test_restarts_train_every_seed_and_keep_the_largest_objective(tmp_path, capsys):
    from prh.training.restarts import heldout_eigenvalues

    out = tmp_path / "best"
    code, printed = _restarts(out, capsys, "--seed", "3")
    assert code == 0
    record = json.loads((out / "restarts.json").read_text())
    assert [r["run"] for r in record["restarts"]] == ["seed-3", "seed-4"]
    # Each seed is an ordinary run, trained with its own seed.
    for r in record["restarts"]:
        cfg = json.loads((out / r["run"] / "config.json").read_text())["train"]
        assert cfg["seed"] == r["seed"] and (out / r["run"] / "model.safetensors").exists()
    # The objective is the sum of the run's own cross-view eigenvalues on fresh pairs, largest
    # first, all of its 8 directions; the chosen run is the larger, and it is what is printed.
    for r in record["restarts"]:
        ev = heldout_eigenvalues(out / r["run"], 256)
        assert np.allclose(r["eigenvalues"], ev) and len(ev) == 8
        assert np.isclose(r["objective"], sum(ev)) and list(ev) == sorted(ev, reverse=True)
    best = max(record["restarts"], key=lambda r: r["objective"])
    assert record["chosen"] == best["run"] and printed == str(out / best["run"])
    assert record["restarts"][0]["objective"] != record["restarts"][1]["objective"]

    # A rerun continues: nothing is retrained, the same choice is made.
    before = {r["run"]: (out / r["run"] / "model.safetensors").stat().st_mtime_ns
              for r in record["restarts"]}  # fmt: skip
    code, again = _restarts(out, capsys, "--seed", "3")
    assert code == 0 and again == printed
    assert json.loads((out / "restarts.json").read_text()) == record
    assert all((out / n / "model.safetensors").stat().st_mtime_ns == t for n, t in before.items())

    # Another recipe into the same folder: one line, exit 2, the runs untouched.
    code = main([*MOVING, *FAST, "--restarts", "2", "--out", str(out), "--seed", "3",
                 "--lr", "5e-4"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "seed-3: started with another lr" in err and err.count("\n") == 1
    assert json.loads((out / "restarts.json").read_text()) == record


@pytest.mark.slow
def test_image_restarts_share_one_render_cache_and_continue(tmp_path, capsys):
    out, cache = tmp_path / "img", tmp_path / "cache"
    argv = ["train", "--world", "moving", "--modality", "image", "--views", "good",
            "--image-size", "16", "--render-views", "2", "--train-scenes", "64", "--samples",
            "64", "--batch-size", "32", "--threads", "1", "--render-workers", "1",
            "--checkpoint-every", "0", "--no-progress", "--restarts", "2", "--restart-pairs",
            "256", "--render-cache", str(cache), "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out.strip()
    record = json.loads((out / "restarts.json").read_text())
    assert printed == str(out / record["chosen"])
    assert len(list(cache.glob("*.npy"))) == 1  # renders do not depend on the seed
    for r in record["restarts"]:
        stored = json.loads((out / r["run"] / "config.json").read_text())
        assert stored["train"]["seed"] == r["seed"] and stored["image"]["modality"] == "image"
    assert main(argv) == 0 and capsys.readouterr().out.strip() == printed
    assert json.loads((out / "restarts.json").read_text()) == record
