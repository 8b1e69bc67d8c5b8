"""Image runs take --config, --set and --print-config as text runs do (issue 32): layers in the
order defaults < --config < --set < flags, image keys beside the training keys, refusals in one
line naming the key or the kind."""

from __future__ import annotations

import json

import pytest

from prh.cli import main


def _print_config(capsys, *extra) -> dict:
    assert main(["train", "--modality", "image", "--print-config", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_print_config_reads_back_as_the_same_run(capsys, tmp_path):
    backbone = ("--backbone", "random:efficientnet-lite0", "--freeze-until", "12")
    first = _print_config(capsys, "--image-size", "32", "--lr", "3e-4", "--samples", "2048",
                          *backbone)  # fmt: skip
    assert first["image_size"] == 32 and first["lr"] == 3e-4 and first["freeze_until"] == 12
    assert "vocab_size" not in first and "max_len" not in first  # text-only keys left out
    f = tmp_path / "image.json"
    f.write_text(json.dumps(first))
    assert _print_config(capsys, "--config", str(f)) == first


def test_layers_in_order_defaults_config_set_flags(capsys, tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("image_size: 32\nlr: 0.002\nsamples: 4096\nrender_views: 3\n")
    got = _print_config(capsys, "--config", str(f), "--set", "lr=0.003", "--set",
                        "render_views=5", "--render-views", "6")  # fmt: skip
    assert (got["image_size"], got["samples"]) == (32, 4096)  # the file over the defaults
    assert got["lr"] == 0.003  # --set over the file
    assert got["render_views"] == 6  # the flag over --set
    assert got["train_scenes"] == 4000 and got["world"] == "cave"  # an image run's defaults


def test_the_library_builds_the_configs_the_flags_build(tmp_path):
    import argparse

    from prh.cli.train import add_arguments
    from prh.cli.train_image import image_configs

    p = argparse.ArgumentParser()
    add_arguments(p)
    by_flags = image_configs(p.parse_args(["--modality", "sketch", "--image-size", "48",
                                           "--lr", "0.002", "--out", str(tmp_path)]))  # fmt: skip
    f = tmp_path / "c.json"
    f.write_text(json.dumps({"modality": "sketch", "image_size": 48, "lr": 0.002}))
    from prh.cli.train_checks import flag_rules

    rules = flag_rules(add_arguments)
    by_file = image_configs(p.parse_args(["--modality", "sketch", "--config", str(f)]), rules)
    assert by_flags == by_file


def test_a_stored_image_run_config_is_a_config_file(capsys, tmp_path):
    """An image run's config.json ({"modality", "train", "image", "model"}) as --config: the
    text-only keys its train section records and its model section are skipped."""
    from prh.training import train_config
    from prh.training.image_config import ImageConfig

    train = train_config("tiny", world="cave", views="bad", rho=0.0, samples=512, lr=5e-4)
    image = ImageConfig(modality="image", image_size=40, render_views=3)
    stored = {"modality": "image", "train": {**train.to_dict(), "steps": 4},
              "image": image.to_dict(), "model": {"d_model": 64}}  # fmt: skip
    f = tmp_path / "config.json"
    f.write_text(json.dumps(stored))
    got = _print_config(capsys, "--config", str(f))
    assert (got["views"], got["samples"], got["lr"]) == ("bad", 512, 5e-4)
    assert (got["image_size"], got["render_views"], got["rho"]) == (40, 3, 0.0)


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--set", "vocab_size=99"], r"--set vocab_size=99: vocab_size is a setting of text runs, "
         r"not of image runs"),
        (["--set", "model.d_model=64"], r"model\.d_model is a setting of text runs"),
        (["--set", "colour=red"], r"--set colour=red: unknown key 'colour'; known keys: "
         r".*image_size"),
        (["--set", "image_size=8"], r"image-size 8: expected 16\.\.256"),
        (["--set", "image_size=big"], r"--set image_size=big: image_size is int"),
        (["--set", "freeze_until=4"], r"--freeze-until applies to a backbone run"),
    ],
)  # fmt: skip
def test_bad_keys_are_refused_in_one_line(bad_input, tmp_path, extra, match):
    bad_input(["train", "--modality", "image", "--out", str(tmp_path / "r"), *extra], match=match)
    assert not (tmp_path / "r").exists()


def test_a_text_run_config_is_refused_by_an_image_run(bad_input, tmp_path):
    from prh.training import train_config

    f = tmp_path / "config.json"
    f.write_text(json.dumps({"train": train_config("tiny").to_dict(), "model": {}}))
    line = bad_input(["train", "--modality", "image", "--out", str(tmp_path / "r"), "--config",
                      str(f)], inputs=[f], match=r"the config of a text run")  # fmt: skip
    assert str(f) in line
    assert not (tmp_path / "r").exists()


def test_resume_refuses_new_layers(bad_input, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"modality": "image", "train": {}, "image": {}}))
    bad_input(["train", "--resume", str(run), "--set", "lr=1"],
              match=r"--config and --set start a new run")  # fmt: skip
