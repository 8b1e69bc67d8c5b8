"""``prh readout RUN --k K``, and ``--embed-dim`` for image runs: a wide JEPA stored with its own
top-k read-out, refused in one line where it cannot be measured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prh.cli import main

FAST = ["--samples", "640", "--batch-size", "64", "--max-len", "24", "--threads", "1",
        "--checkpoint-every", "0", "--no-progress"]  # fmt: skip


def _train(out: Path, *flags: str) -> Path:
    argv = ["train", "--preset", "tiny", "--views", "good", "--embed-dim", "16", *FAST, *flags]
    assert main([*argv, "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def wide(tmp_path_factory) -> Path:
    return _train(tmp_path_factory.mktemp("ro") / "wide", "--world", "moving")


@pytest.mark.slow
def test_readout_is_stored_loaded_and_removed(wide, capsys):
    from prh.training.api import load_run

    capsys.readouterr()
    assert main(["readout", str(wide), "--k", "8", "--pairs", "512"]) == 0
    out = capsys.readouterr().out
    assert "cross-view eigenvalues (512 pairs, 16 wide)" in out and "kept the top 8" in out
    assert (wide / "readout.safetensors").is_file()
    assert load_run(wide, device="cpu").model_config.embed_dim == 8
    assert main(["readout", str(wide), "--remove"]) == 0
    assert not (wide / "readout.safetensors").exists()
    assert load_run(wide, device="cpu").model_config.embed_dim == 16


@pytest.mark.slow
@pytest.mark.parametrize(
    "flags, match",
    [
        (["--k", "0"], "--k 0: expected an integer in 1..16"),
        (["--k", "17"], "--k 17: expected an integer in 1..16"),
        (["--k", "8", "--pairs", "100"], "--pairs 100: need at least 256"),
        ([], "give --k K"),
        (["--remove", "--k", "8"], "--remove takes no --k"),
    ],
)
def test_bad_readout_flags(bad_input, wide, flags, match):
    bad_input(["readout", str(wide), *flags], match=match)
    assert not (wide / "readout.safetensors").exists()


def test_readout_of_a_folder_that_is_no_run(bad_input, tmp_path):
    bad_input(["readout", str(tmp_path), "--k", "8"], match="not a prh run folder")


@pytest.mark.slow
def test_readout_needs_a_moving_world(bad_input, tmp_path):
    still = _train(tmp_path / "still", "--world", "cave")
    bad_input(["readout", str(still), "--k", "8", "--pairs", "512"],
              match="needs a moving world's lag pairs")  # fmt: skip
    assert not (still / "readout.safetensors").exists()


IMAGE = ["train", "--modality", "image", "--world", "moving", "--views", "good"]


def test_image_embed_dim_round_trips_through_print_config(tmp_path, capsys):
    capsys.readouterr()
    assert main([*IMAGE, "--embed-dim", "16", "--print-config"]) == 0
    flat = json.loads(capsys.readouterr().out)
    assert flat["model.embed_dim"] == 16
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps(flat))
    assert main(["train", "--modality", "image", "--config", str(cfg), "--print-config"]) == 0
    assert json.loads(capsys.readouterr().out) == flat
    assert main([*IMAGE, "--set", "model.embed_dim=12", "--print-config"]) == 0
    assert json.loads(capsys.readouterr().out)["model.embed_dim"] == 12
    assert main([*IMAGE, "--print-config"]) == 0
    assert "model.embed_dim" not in json.loads(capsys.readouterr().out)  # the world's gap


def test_image_runs_refuse_other_model_shape_flags(bad_input):
    bad_input([*IMAGE, "--d-model", "32", "--print-config"], match="--d-model applies to text")
    bad_input([*IMAGE, "--embed-dim", "200", "--print-config"],
              match="too small to whiten a 200-dim embedding")  # fmt: skip


@pytest.mark.slow
def test_a_wide_image_run_keeps_its_width_and_refuses_another_on_resume(bad_input, tmp_path):
    from prh.training.image import read_image_config
    from prh.training.image_config import image_model_config

    run = tmp_path / "img"
    argv = [*IMAGE, "--out", str(run), "--samples", "64", "--batch-size", "32", "--image-size",
            "16", "--train-scenes", "32", "--render-views", "0", "--threads", "1",
            "--embed-dim", "12", "--checkpoint-every", "0", "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    train, image, _ = read_image_config(run)
    assert image_model_config(train, image).embed_dim == 12
    bad_input(["train", "--resume", str(run), "--embed-dim", "16"],
              match="--embed-dim 16: the run in .* was started with 12")  # fmt: skip


@pytest.mark.slow
def test_readout_of_an_unfinished_or_next_token_run(bad_input, wide, tmp_path):
    import shutil

    unfinished = tmp_path / "unfinished"
    shutil.copytree(wide, unfinished)
    (unfinished / "model.safetensors").unlink()
    bad_input(["readout", str(unfinished), "--k", "8"], match="no model.safetensors")
    lm = tmp_path / "lm"
    argv = ["train", "--preset", "tiny", "--world", "moving", "--views", "next-token", *FAST]
    assert main([*argv, "--samples", "64", "--out", str(lm)]) == 0
    bad_input(["readout", str(lm), "--k", "8", "--pairs", "1024"],
              match="a next-token run has no JEPA embedding")  # fmt: skip
    assert not (lm / "readout.safetensors").exists()
