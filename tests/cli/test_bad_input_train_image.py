"""`prh train --modality image|sketch` refuses bad input in one line, exit 2, before any work."""

from __future__ import annotations

import pytest


def _train(tmp_path, *extra):
    return ["train", "--modality", "image", "--out", str(tmp_path / "run"), *extra]


@pytest.mark.parametrize("views", ["next-token"])
def test_text_only_views_are_refused(bad_input, tmp_path, views):
    bad_input(_train(tmp_path, "--views", views), match=r"--views next-token is text-only")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("size", ["8", "15", "257", "4096"])
def test_image_size_out_of_range(bad_input, tmp_path, size):
    bad_input(_train(tmp_path, "--image-size", size), match=rf"--image-size {size}: expected 16")
    assert not (tmp_path / "run").exists()


def test_image_size_not_a_number(bad_input, tmp_path):
    bad_input(_train(tmp_path, "--image-size", "0"), match=r"--image-size")


def test_text_only_corpus_is_refused(bad_input, tmp_path):
    corpus = tmp_path / "captions.jsonl"
    corpus.write_text('{"image_id": "a", "captions": ["a red cube"]}\n')
    line = bad_input(_train(tmp_path, "--corpus", str(corpus)), inputs=[corpus])
    assert "text-only" in line and str(corpus) in line
    assert not (tmp_path / "run").exists()


def test_image_flags_on_a_text_run(bad_input, tmp_path):
    argv = ["train", "--out", str(tmp_path / "run"), "--image-size", "32"]
    bad_input(argv, match=r"--image-size applies to --modality image or sketch")


def test_text_flag_on_an_image_run(bad_input, tmp_path):
    bad_input(_train(tmp_path, "--max-len", "16"), match=r"--max-len is text-only")


@pytest.mark.parametrize(
    "extra",
    [
        ["--world-themes", "6"],
        ["--theme-strength", "3"],
        ["--doc-captions", "4"],
        ["--doc-style"],
    ],
)
def test_text_world_flags_on_an_image_run(bad_input, tmp_path, extra):
    # image runs render the plain world: a themed world or documents would be silently ignored
    line = bad_input(_train(tmp_path, *extra), match=r"applies to text runs only")
    assert line.split(": error: ")[-1].startswith(extra[0])
    assert not (tmp_path / "run").exists()


def test_batch_too_small_for_the_embedding(bad_input, tmp_path):
    # tiny image preset: E = 32 needs 2 x batch >= 128
    bad_input(_train(tmp_path, "--batch-size", "32"), match=r"batch size 32 too small")


def test_one_cached_view_cannot_make_good_pairs(bad_input, tmp_path):
    bad_input(_train(tmp_path, "--render-views", "1"), match=r"--render-views 1")


def test_existing_run_folder_is_not_overwritten(bad_input, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    keep = run / "notes.txt"
    keep.write_text("mine")
    bad_input(_train(tmp_path, "--samples", "64"), inputs=[keep], match=r"not empty")


def test_cli_defaults_are_the_config_defaults(tmp_path):
    import argparse

    from prh.cli import train as train_cli
    from prh.cli.train_image import image_configs
    from prh.training.image_config import DEFAULT_TRAIN_SCENES, ImageConfig

    p = argparse.ArgumentParser()
    train_cli.add_arguments(p)
    train, image = image_configs(p.parse_args(["--modality", "image", "--out", str(tmp_path)]))
    assert image == ImageConfig(modality="image")
    assert train.train_scenes == DEFAULT_TRAIN_SCENES and train.views == "good"


@pytest.fixture
def stored_image_run(tmp_path):
    """An image run folder as `prh train --modality image` leaves it after its first
    checkpoint (no weights needed: the refusal comes before any work)."""
    import json

    from prh.training import train_config
    from prh.training.image_config import ImageConfig

    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    cfg = train_config("tiny", world="cave", views="mixture", rho=0.5, samples=256, seed=3)
    image = ImageConfig(modality="image", image_size=32, render_views=3, cache_dir=None)
    stored = {"modality": "image", "train": cfg.to_dict(), "image": image.to_dict(), "model": {}}
    (run / "config.json").write_text(json.dumps(stored))
    (run / "meta.json").write_text(json.dumps({"threads": 2}))
    (run / "checkpoints" / "step_00000002.json").write_text("{}")
    return run


@pytest.mark.parametrize(
    "flags, match",
    [
        (["--samples", "512"], "--samples 512: the run in .* was started with 256"),
        (["--views", "good"], "--views good: .* started with mixture"),
        (["--rho", "0.3"], "--rho 0.3: .* started with 0.5"),
        (["--seed", "4"], "--seed 4"),
        (["--lr", "0.1"], "--lr 0.1"),
        (["--image-size", "64"], "--image-size 64: .* started with 32"),
        (["--render-views", "5"], "--render-views 5: .* started with 3"),
        (["--train-scenes", "16"], "--train-scenes 16: .* started with"),
        (["--modality", "sketch"], "--modality sketch: .* started with image"),
        (["--threads", "4"], "--threads 4: the run in .* used 2 threads"),
        (["--out", "elsewhere"], "--out and --resume name different folders"),
    ],
)
def test_image_resume_refuses_flags_that_change_the_run(bad_input, stored_image_run, flags, match):
    files = [stored_image_run / "config.json", stored_image_run / "meta.json"]
    bad_input(["train", "--resume", stored_image_run, *flags], inputs=files, match=match)


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--backbone", "resnet-50"], r"--backbone 'resnet-50': expected one of none, eff"),
        (["--backbone", "random:efficientnet-lite0", "--freeze-until", "16"],
         r"--freeze-until 16: random:efficientnet-lite0 has blocks 0..15"),
        (["--freeze-until", "4"], r"--freeze-until applies to a backbone run"),
        (["--scratch-branch"], r"--scratch-branch applies to a backbone run"),
        (["--backbone", "random:efficientnet-lite0", "--backbone-size", "300"],
         r"--backbone-size 300: expected 16..256"),
        (["--backbone", "random:efficientnet-lite0", "--views", "mixture", "--rho", "0.5"],
         r"not mixture"),
        (["--backbone", "random:efficientnet-lite0", "--views", "bad", "--render-views", "1"],
         r"need --render-views >= 2, got 1"),
    ],
)  # fmt: skip
def test_bad_backbone_flags(bad_input, tmp_path, extra, match):
    bad_input(_train(tmp_path, *extra), match=match)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("flags", [["--d-model", "64"], ["--vocab-size", "99"]])
def test_text_only_knobs_on_an_image_run(bad_input, tmp_path, flags):
    argv = ["train", "--modality", "image", "--out", str(tmp_path / "r"), *flags]
    bad_input(argv, match=f"{flags[0]} applies to text runs")
    assert not (tmp_path / "r").exists()


def test_a_render_cache_beyond_the_machine_is_refused_by_an_estimate(bad_input, tmp_path):
    """Issue 36: the sample count of an image run (scenes x render views) priced before work."""
    bad_input(["train", "--modality", "image", "--out", tmp_path / "r", "--render-views",
               "100000", "--samples", "64", "--batch-size", "64"],
              match=r"a render cache of [\d,]+ scenes x 100,000 views at 64 px needs about "
              r"[\d,.]+ GiB of memory")  # fmt: skip
    assert sorted(tmp_path.iterdir()) == []


def test_the_render_cache_estimate_counts_its_bytes_and_the_free_disk(tmp_path, monkeypatch):
    import shutil
    from collections import namedtuple

    from prh.errors import InputError
    from prh.training.image_config import ImageConfig
    from prh.training.preflight import check_render_cache_fits

    image = ImageConfig(modality="image", image_size=32, render_views=2)  # 6,144 B a scene
    check_render_cache_fits(100, image, str(tmp_path / "new" / "r"), available=2 * 614_400)
    with pytest.raises(InputError, match=r"needs about 0\.0 GiB of memory"):
        check_render_cache_fits(100, image, str(tmp_path), available=2 * 614_400 - 1)
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(10**9, 10**9, 614_399))
    with pytest.raises(InputError, match=r"GiB of disk, 0\.0 GiB free in "):
        check_render_cache_fits(100, image, str(tmp_path / "new" / "r"), available=10**12)
    check_render_cache_fits(100, ImageConfig(modality="image", render_views=0), str(tmp_path))
