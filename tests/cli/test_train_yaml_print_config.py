"""prh train: YAML configs (the same keys and rules as JSON) and --print-config (no run)."""

from __future__ import annotations

import json

import pytest

import prh.cli as cli

pytest.importorskip("yaml")


def print_config(capsys, *argv) -> dict:
    assert cli.main(["train", "--print-config", *map(str, argv)]) == 0
    return json.loads(capsys.readouterr().out)


def test_yaml_equals_json_and_print_config_reads_back(tmp_path, capsys):
    (tmp_path / "c.yaml").write_text(
        "# a small run\nsamples: 640\nlr: 3e-4\nviews: mixture\nrho: 0.25\n"
        "model:\n  d_model: 64\n  n_heads: 2\n"
    )
    (tmp_path / "c.json").write_text(json.dumps(
        {"samples": 640, "lr": 3e-4, "views": "mixture", "rho": 0.25,
         "model": {"d_model": 64, "n_heads": 2}}
    ))  # fmt: skip
    from_yaml = print_config(capsys, "--config", tmp_path / "c.yaml")
    assert from_yaml == print_config(capsys, "--config", tmp_path / "c.json")
    assert from_yaml["lr"] == 3e-4 and from_yaml["model.d_model"] == 64
    # flags over the file, and the printed config is itself a --config file
    over = print_config(capsys, "--config", tmp_path / "c.yaml", "--samples", 1280)
    assert over["samples"] == 1280
    (tmp_path / "printed.json").write_text(json.dumps(over))
    assert print_config(capsys, "--config", tmp_path / "printed.json") == over
    assert not any(p.is_dir() for p in tmp_path.iterdir())  # no run folder


def test_print_config_defaults_equal_the_config_defaults(capsys):
    from prh.training.config import train_config

    printed = print_config(capsys)
    want = train_config("tiny")
    assert printed["samples"] == want.samples and printed["lr"] == want.optim.lr


@pytest.mark.parametrize(
    "content, match",
    [
        ("lr: 0.001\nlearning_rate: 2\n", r"unknown key 'learning_rate'; known keys: .*lr"),
        ("samples: many\n", 'samples is int, got "many"'),
        ("doc_style: 1\n", "doc_style is bool, got 1"),
        ("- 1\n- 2\n", "expected a YAML mapping, got list"),
        ("lr: [1,\n", "not YAML"),
        ("model:\n  width: 8\n", "unknown key 'model.width'"),
        ("backbone: none\n", "backbone is a setting of image runs"),  # another run kind's key
        ("modality: image\nimage:\n  image_size: 32\n", "the config of an image run"),
    ],
)
def test_bad_yaml_is_one_line(bad_input, tmp_path, content, match):
    (tmp_path / "c.yml").write_text(content)
    argv = ["train", "--out", tmp_path / "r", "--config", tmp_path / "c.yml"]
    bad_input([str(a) for a in argv], [tmp_path / "c.yml"], match)
    assert not (tmp_path / "r").exists()


def test_print_config_with_resume_is_refused(bad_input, tmp_path):
    bad_input(["train", "--resume", str(tmp_path), "--print-config"], [], "--print-config")


@pytest.mark.parametrize("command, minimum", [("train", 50), ("embed", 35)])
def test_help_groups_its_flags_twelve_at_most(capsys, command, minimum):
    """`prh train --help` and `prh embed --help`: flags in groups by part (train: data, model,
    optimiser, world, images, evaluation, output, config), none over 12, none left in the
    catch-all "options"."""
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    text = capsys.readouterr().out
    groups: dict[str, int] = {}
    title = None
    for line in text.splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            title = line[:-1]
            groups[title] = 0
        elif title and line.startswith("  -"):
            groups[title] += 1
    assert groups.pop("options") == 1  # -h alone
    assert max(groups.values()) <= 12 and sum(groups.values()) >= minimum
    assert "cuda:N" in text  # one device convention: auto, cpu, cuda, cuda:N
