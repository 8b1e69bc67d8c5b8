"""`prh train` flags of the fair next-token protocol: mapped onto TrainConfig, checked early."""

from __future__ import annotations

import argparse

from prh.cli import train as train_cli
from prh.training.config import TrainConfig


def _config(*argv: str) -> TrainConfig:
    p = argparse.ArgumentParser()
    train_cli.add_arguments(p)
    return train_cli.config_from_args(p.parse_args(list(argv)))


def test_flags_default_to_the_config_and_map_onto_it():
    plain = _config("--world", "cave")
    assert (plain.world_themes, plain.theme_strength, plain.doc_captions, plain.doc_style) == (
        TrainConfig.world_themes,
        TrainConfig.theme_strength,
        TrainConfig.doc_captions,
        TrainConfig.doc_style,
    )
    cfg = _config(
        *("--views", "next-token", "--world-themes", "6", "--theme-strength", "1.5"),
        *("--doc-captions", "4", "--doc-style", "--max-len", "192"),
    )
    assert (cfg.world_themes, cfg.theme_strength, cfg.doc_captions, cfg.doc_style) == (
        6,
        1.5,
        4,
        True,
    )


def test_document_flags_need_next_token(bad_input, tmp_path):
    argv = ["train", "--views", "good", "--doc-captions", "4", "--out", str(tmp_path / "r")]
    bad_input(argv, [], "doc_captions and doc_style apply to --views next-token only")


def test_negative_themes_are_one_line(bad_input, tmp_path):
    bad_input(["train", "--world-themes", "-2", "--out", str(tmp_path / "r")], [], "--world-themes")
